"""The docstring is a task's specification: the page, the stub's given code and the hints say the same.

A lesson page introduces each task in a few sentences above its stub (the `<!-- course: task L.N -->`
directive shows the stub, docstring included). These tests read those sentences, the code a stub keeps
around the learner's part, and the hints, and compare them with the docstrings of the functions the
task fills:

- every spec fragment the page quotes (a code span with an op string, a format, a keyword or an
  attribute) is written, character for character, in one of the task's docstrings;
- an order the page states ("before/after its children") is the docstring's;
- an attribute that the stub's given code reads (a `__repr__`, say) is named in a docstring, so a
  learner who follows the docstrings stores it;
- every task has a few words of its own on its page, not only its stub;
- a task whose code a later task revisits (lesson 5's closures, fixed in lesson 7) does not ask, in its
  hints, for what the later lesson teaches.
"""

from __future__ import annotations

import ast
import re

import pytest

from autograder.course import registry
from autograder.course.regions import SOLUTIONS, all_regions, module_of, owners_of

SECTION = re.compile(r"^### Task (?P<id>\d+\.\d+) .*?$(?P<body>.*?)^<!-- course: task (?P=id) -->", re.M | re.S)
CODE_SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
# A code span is a spec fragment when it pins down text the grader compares: a string (an op, a format),
# a record's fields, a keyword argument or an attribute of self.
FRAGMENT = re.compile(r"['\"|{]|\w=|^self\.\w+$")
ORDER = re.compile(r"\b(before|after)\s+(?:(?:all|each)\s+of\s+)?(?:its|the\s+node's)\s+children", re.I)


def coding_tasks() -> list[registry.Task]:
    return [t for t in registry.TASKS.values() if not t.runs_whole]


def page_sections() -> dict[str, str]:
    """Each task's own words on its page: from its heading to the directive that shows its stub."""
    sections = {}
    for lesson in registry.LESSONS:
        text = (SOLUTIONS.parent / lesson.page).read_text()
        sections.update({m["id"]: m["body"] for m in SECTION.finditer(text)})
    return sections


def definitions(module: str) -> dict[str, ast.FunctionDef | ast.ClassDef]:
    """The module's functions, classes and methods by qualified name (`Value.__add__`)."""
    tree = ast.parse((SOLUTIONS / f"{module}.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.ClassDef):
            found[node.name] = node
        if isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{f.name}": f for f in node.body if isinstance(f, ast.FunctionDef)})
    return found


def docstrings(task_id: str) -> str:
    """The docstrings of the functions a task fills, as one text with each run of spaces made one."""
    found = definitions(module_of(task_id))
    texts = [ast.get_docstring(found[name]) or "" for name in sorted(owners_of(task_id))]
    return " ".join(" ".join(texts).split())


def check_hints() -> dict[str, list[str]]:
    """The hints of each check, read from the lesson test files' `@pytest.mark.task(..., hint=...)`."""
    hints: dict[str, list[str]] = {}
    for path in sorted((SOLUTIONS.parent / "autograder" / "lessons").glob("test_*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "task" and node.args:
                hint = next((k.value for k in node.keywords if k.arg == "hint"), None)
                if isinstance(hint, ast.Constant):
                    hints.setdefault(node.args[0].value, []).append(hint.value)
    return hints


SECTIONS = page_sections()


@pytest.mark.parametrize("task", coding_tasks(), ids=lambda t: t.id)
def test_the_page_quotes_the_docstring(task):
    """Every spec fragment in the page's words about a task is written so in the task's docstrings."""
    spec = docstrings(task.id)
    quoted = [span for span in CODE_SPAN.findall(SECTIONS[task.id]) if FRAGMENT.search(span)]
    missing = [span for span in quoted if " ".join(span.split()) not in spec]
    assert not missing, f"task {task.id}: the page says {missing}; the docstring does not: {spec!r}"
    for said in ORDER.finditer(SECTIONS[task.id]):
        assert said[1].lower() in [w.lower() for w in ORDER.findall(spec)], (
            f"task {task.id}: the page says each node comes {said[1]} its children; the docstring does not"
        )


@pytest.mark.parametrize("task", coding_tasks(), ids=lambda t: t.id)
def test_every_task_has_words_of_its_own(task):
    """A task's heading is followed by at least a sentence before its stub."""
    words = re.sub(r"<!--.*?-->", "", SECTIONS[task.id], flags=re.S).split()
    assert len(words) >= 8, f"task {task.id} has no prose on its page, only its stub"


def test_given_code_reads_only_what_a_docstring_asks_for():
    """An attribute of `self` that code outside every solution region reads (a `__repr__`) is set there too
    or named in a docstring of its class: a learner writes only what the docstrings ask for."""
    problems = []
    regions = all_regions()
    for module in sorted({r.module for r in regions}):
        source = (SOLUTIONS / f"{module}.py").read_text()
        inside = {n for r in regions if r.module == module for n in range(r.begin, r.end + 1)}
        for cls in [n for n in ast.parse(source).body if isinstance(n, ast.ClassDef)]:
            documented = " ".join(
                ast.get_docstring(n) or "" for n in ast.walk(cls) if isinstance(n, ast.FunctionDef | ast.ClassDef)
            )
            given = {
                (node.attr, isinstance(node.ctx, ast.Store))
                for node in ast.walk(cls)
                if isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.lineno not in inside
            }
            set_by_given = {name for name, store in given if store}
            methods = {f.name for f in cls.body if isinstance(f, ast.FunctionDef)}
            for name in sorted({name for name, store in given if not store} - set_by_given - methods):
                if f"self.{name}" not in documented:
                    problems.append(f"{module}.{cls.name}: given code reads self.{name}, which no docstring names")
    assert not problems, "\n".join(problems)


def test_a_revisited_task_does_not_ask_for_the_later_fix():
    """Lesson 5's closures assign the gradient (`=`); lesson 7 teaches to add to it. A hint of a task whose code
    a later task revisits must not ask for the later task's `+=` (or 'add ... to ... grad') a lesson early."""
    later_fix = re.compile(r"\+=|\badd\b.*?\bto\b.*?\bgrad\b", re.I | re.S)
    hints = check_hints()
    problems = []
    for region in all_regions():
        for task_id in region.tasks[:1] if len(region.tasks) > 1 else ():
            said = [*registry.task(task_id).hints, *hints.get(task_id, []), SECTIONS.get(task_id, "")]
            problems += [f"task {task_id}: {text!r}" for text in said if later_fix.search(text)]
    assert not problems, "\n".join(problems)
