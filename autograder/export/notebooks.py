"""The course's notebooks, generated from the single source: `solutions/`, the course's data and the grading tests.

- **Learner notebooks** (`exercises/notebooks/lessonNN.ipynb`, committed):
  `python -m autograder dev notebooks` writes them and `--check` says whether they
  are up to date. Each runs a few examples with the learner's `exercises/` code
  for the lesson and with the reference, side by side (`autograder.jupyter.Lesson`);
  the examples are the lesson's data's (`[[example]]`).
- **An nbgrader course**: `python -m autograder export nbgrader --out DIR` writes
  `DIR/nbgrader_config.py` and one master notebook per lesson,
  `DIR/source/lessonNN/lessonNN.ipynb`, with
  - read-only instruction cells: the lesson's title, its module's docstring, and
    per task the docstrings of the code it lives in and the registry's hints;
  - one autograded-answer cell holding the lesson's code (`%%answer
    lessonNN_code/MODULE.py`): the lesson's own solution regions keep their
    markers, which nbgrader's `generate_assignment` turns into stubs. When the
    module also holds other lessons' tasks (`engine.py`: lessons 2 and 5 to 8),
    the cell holds only the methods with this lesson's code; inside them an
    earlier lesson's region is solved (the lesson builds on it: the backward of
    `__add__` runs after its forward) and a later one is the exercise stub.
    Everything else is the reference, in the notebook and when graded;
  - one autograder-test cell per grading test, worth the test's points; it calls
    the test (`check("test_name")`: one run of `pytest autograder` per version
    of the code), so no check is written twice; the seeded hidden tests' calls
    sit between nbgrader's hidden-test markers.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import hashlib
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat

from autograder import jupyter
from autograder.course import registry
from autograder.course.regions import (
    EXERCISES,
    SOLUTIONS,
    Region,
    all_regions,
    has_sources,
    owners_of,
    parse,
    stub_lines,
)

LEARNER_NOTEBOOKS = EXERCISES / "notebooks"
GRADER_DIR = Path(__file__).resolve().parent
KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def graded_lessons() -> list[registry.Lesson]:
    return [lesson for lesson in registry.LESSONS if lesson.tasks]


def notebook_name(lesson: int) -> str:
    return f"lesson{lesson:02d}"


# ---------------------------------------------------------------------------------------------- the grading tests


@dataclass(frozen=True)
class GradingTest:
    name: str  # the test function, e.g. "test_trace_running_example"
    task: str
    points: int
    hint: str
    hidden: bool
    description: str


@cache
def grading_tests() -> tuple[GradingTest, ...]:
    """Every grading test, in collection order, with its task marker (the grader's own catalogue)."""
    from autograder.grading.runner import catalogue

    return tuple(
        GradingTest(r.nodeid.rsplit("::", 1)[-1], r.task, r.points, r.hint, r.hidden, r.description)
        for r in catalogue().tests
    )


def lesson_tests(lesson: int) -> list[GradingTest]:
    """The lesson's checks a notebook can run on its own code (a capstone runs the whole course: not here)."""
    return [
        t for t in grading_tests() if registry.task(t.task).lesson == lesson and not registry.task(t.task).runs_whole
    ]


# ------------------------------------------------------------------------------------ the lesson's code, selected


def lesson_modules(lesson: int) -> list[str]:
    """The files (stems) that hold the lesson's code, e.g. `['graph']`."""
    ids = {t.id for t in registry.lesson(lesson).tasks}
    return sorted({r.module for r in all_regions() if ids & set(r.tasks)})


def _in_lesson(region: Region, lesson: int) -> bool:
    return any(registry.task(t).lesson == lesson for t in region.tasks)


def _owner_lines(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """The lines (first decorator to last line) of each top-level function and each method, by owner name."""
    spans = {}

    def span(node) -> tuple[int, int]:
        return min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans[node.name] = span(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    spans[f"{node.name}.{item.name}"] = span(item)
    return spans


def lesson_source(lesson: int, module: str) -> str:
    """The module as the lesson's notebook holds it (see the module docstring); the lesson's regions keep their "
    "markers."""
    path = SOLUTIONS / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    regions = parse(text, module, str(path))
    mine = {r.owner for r in regions if _in_lesson(r, lesson)}
    spans = _owner_lines(ast.parse(text, str(path)))
    dropped: set[int] = set()
    for owner in {r.owner for r in regions} - mine:
        first, last = spans[owner]
        last = max(
            [last] + [r.end for r in regions if r.owner == owner]
        )  # a closing marker is a comment: not in the AST
        dropped.update(range(first, last + 1))
        if last < len(lines) and not lines[last].strip():
            dropped.add(last + 1)  # and the blank line after it
    by_begin = {r.begin: r for r in regions}
    out: list[str] = []
    number = 1
    while number <= len(lines):
        region = by_begin.get(number)
        if number in dropped:
            number += 1
        elif region is None:
            out.append(lines[number - 1])
            number += 1
        else:
            if _in_lesson(region, lesson):
                out.extend(lines[region.begin - 1 : region.end])
            elif registry.task(region.task).lesson < lesson:
                out.extend(lines[region.begin : region.end - 1])
            else:
                out.extend(stub_lines(region.tasks, region.indent))
            number = region.end + 1
    return "\n".join(out).rstrip() + "\n"


def _signature_and_doc(module: str, owner: str) -> tuple[str, str]:
    """`def name(args) -> result` and the docstring of a function or method of a solution file."""
    tree = ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))
    cls, _, name = owner.rpartition(".")
    scope = next(n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls) if cls else tree.body
    node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    doc = ast.get_docstring(node) or ""
    bare = copy.copy(node)
    bare.body, bare.decorator_list = [ast.Pass()], []
    header = ast.unparse(bare)
    return header.splitlines()[0].rstrip(":"), doc


def task_markdown(task: registry.Task, heading: str = "##") -> str:
    """A task's spec: the signature and docstring of each function or method it lives in, then its hints."""
    parts = [f"{heading} Task {task.id} · {task.title}", ""]
    module = next(iter({r.module for r in _regions_of(task.id)}))
    for owner in sorted(owners_of(task.id), key=lambda o: _order(module, o)):
        header, doc = _signature_and_doc(module, owner)
        where = f"class {owner.split('.')[0]}: " if "." in owner else ""
        parts += [f"`{where}{header}`", "", doc, ""]
    parts += ["<details><summary>Hints</summary>", ""]
    parts += [f"{n}. {hint}" for n, hint in enumerate(task.hints, start=1)]
    parts += ["", f"Page: `{registry.LESSON_OF[task.id].page}#{task.anchor}`", "</details>"]
    return "\n".join(parts)


def _regions_of(task_id: str) -> list[Region]:
    return [r for r in all_regions() if task_id in r.tasks]


def _order(module: str, owner: str) -> int:
    spans = _owner_lines(ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")))
    return spans[owner][0]


def module_docstring(module: str) -> str:
    return ast.get_docstring(ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))) or ""


# --------------------------------------------------------------------------------------------------- nbgrader


def _nbgrader(
    grade_id: str, *, grade: bool = False, solution: bool = False, locked: bool = False, points: int | None = None
) -> dict:
    meta = {
        "grade": grade,
        "grade_id": grade_id,
        "locked": locked,
        "schema_version": 3,
        "solution": solution,
        "task": False,
    }
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def _cell(kind: str, source: str, cell_id: str, metadata: dict | None = None) -> nbformat.NotebookNode:
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source, metadata=metadata or {})
    cell_id = cell_id.replace("_", "-")
    if len(cell_id) > 64:  # nbformat's limit: keep it unique with a digest
        cell_id = cell_id[:55] + "-" + hashlib.sha1(cell_id.encode()).hexdigest()[:8]
    cell["id"] = cell_id  # fixed ids: the same sources make the same file
    return cell


def code_folder(lesson: int) -> str:
    return f"{notebook_name(lesson)}_code"


def nbgrader_notebook(lesson_number: int) -> nbformat.NotebookNode:
    """The master (instructor's) notebook of one lesson, with solutions and hidden tests."""
    lesson = registry.lesson(lesson_number)
    modules = lesson_modules(lesson_number)
    tests = lesson_tests(lesson_number)
    folder = code_folder(lesson_number)
    files = ", ".join(f"`{folder}/{m}.py`" for m in modules)
    partial = [m for m in modules if is_partial(lesson_number, m)]
    intro = [
        f"# Lesson {lesson.number} · {lesson.title}",
        "",
        *(module_docstring(m) for m in modules),
        "",
        f"The course page of this lesson: `{lesson.page}`.",
        "",
        (
            "**How this notebook works.** Write your code in the answer cell, the one that starts with `%%answer`, "
            "in place of each `raise NotImplementedError()`. Run it: it saves your code as "
            f"{files} and runs it, so you can try your functions in a new cell. Each check cell runs one of the "
            "grader's tests on that file and is worth the points it shows. The first check you run grades the whole "
            "lesson (a few seconds); the other checks reuse that result until you change your code. Some checks are "
            "hidden: their cells look empty here, and they run, with seeded inputs, when your work is graded."
        ),
    ]
    if partial:
        intro += [
            "",
            (
                "The answer cell holds only the methods of `Value` that this lesson's tasks are in: the other "
                "methods are the reference's, here and when your work is graded."
            ),
        ]
    cells = [
        _cell("markdown", "\n".join(intro), "intro", _nbgrader("intro", locked=True)),
        _cell(
            "code",
            "%load_ext autograder.jupyter\nfrom autograder.jupyter import Checks\n\n"
            f'check = Checks(lesson={lesson.number}, folder="{folder}", tests={len(tests)})',
            "setup",
            _nbgrader("setup", locked=True),
        ),
    ]
    own = [task for task in lesson.tasks if not task.runs_whole]  # a capstone runs the whole course: not here
    for task in own:
        grade_id = f"task_{task.id.replace('.', '_')}"
        cells.append(_cell("markdown", task_markdown(task), grade_id, _nbgrader(grade_id, locked=True)))
    for module in modules:
        source = f"%%answer {folder}/{module}.py\n{lesson_source(lesson.number, module)}".rstrip("\n")
        cells.append(_cell("code", source, f"answer_{module}", _nbgrader(f"answer_{module}", solution=True)))
    cells.append(
        _cell("code", "# Try your code here: run the answer cell first, then every name it defines is here.", "scratch")
    )
    for task in own:
        mine = [t for t in tests if t.task == task.id]
        hidden = sum(t.points for t in mine if t.hidden)
        grade_id = f"checks_{task.id.replace('.', '_')}"
        text = f"### Checks of task {task.id} · {task.title}: {sum(t.points for t in mine)} points" + (
            f", {hidden} of them hidden" if hidden else ""
        )
        cells.append(_cell("markdown", text, grade_id, _nbgrader(grade_id, locked=True)))
        for test in mine:
            if test.hidden:
                source = (
                    f"# task {test.task} · {test.points} point{'s' * (test.points != 1)} · a hidden check: "
                    "seeded inputs that the pages never show; it runs when your work is graded\n"
                    f'### BEGIN HIDDEN TESTS\ncheck("{test.name}")\n### END HIDDEN TESTS'
                )
            else:
                source = (
                    f"# task {test.task} · {test.points} point{'s' * (test.points != 1)} · {test.description}\n"
                    f'check("{test.name}")'
                )
            cells.append(
                _cell("code", source, test.name, _nbgrader(test.name, grade=True, locked=True, points=test.points))
            )
    return nbformat.v4.new_notebook(cells=cells, metadata=dict(KERNEL))


def is_partial(lesson: int, module: str) -> bool:
    """Whether the notebook holds only part of the module (it also holds other lessons' functions or methods)."""
    regions = parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"), module)
    return any(
        not any(_in_lesson(r, lesson) for r in regions if r.owner == owner) for owner in {r.owner for r in regions}
    )


NBGRADER_CONFIG = '''"""The backprop course's nbgrader configuration, written by `python -m autograder export nbgrader`.

Run nbgrader from this folder (the course root), for example:

    nbgrader generate_assignment lesson03
    nbgrader autograde lesson03
    nbgrader export

Each notebook is one lesson, `source/lessonNN/lessonNN.ipynb`. Its check cells
call the course's grader, `pytest autograder` (installed with the course), on
the code of the notebook's answer cell.
"""

import os

c = get_config()  # noqa: F821 - nbgrader provides it

c.CourseDirectory.course_id = "backprop-course"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))

# The first check cell of a notebook grades the whole lesson in one run of the grader: every check
# at its time limit (the installed grader's, unless AUTOGRADER_TIMEOUT says otherwise), {most} checks
# in the largest lesson, and start-up: the grader's own budget.
from autograder.grading.limits import lesson_budget  # noqa: E402
from autograder.grading.options import for_notebooks  # noqa: E402

c.ExecutePreprocessor.timeout = lesson_budget({most}, for_notebooks().check_timeout)

# nbgrader replaces each solution region with this stub (its default, given here to be explicit).
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
'''


def nbgrader_config() -> str:
    most = max(len(lesson_tests(lesson.number)) for lesson in graded_lessons())
    return NBGRADER_CONFIG.format(most=most)


def write_nbgrader_course(
    out: Path, lessons: list[int] | None = None, force: bool = False
) -> tuple[list[Path], list[Path]]:
    """Write the course directory; return (written, kept) paths. An edited nbgrader_config.py is kept unless `force`."""
    if not has_sources():
        raise RuntimeError(
            "the nbgrader course is made from the solution sources: run this in the full repository, "
            "not in a student edition"
        )
    written, kept = [], []
    for number in lessons or [lesson.number for lesson in graded_lessons()]:
        name = notebook_name(number)
        path = out / "source" / name / f"{name}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nbgrader_notebook(number), path)
        written.append(path)
    config = out / "nbgrader_config.py"
    text = nbgrader_config()
    if config.exists() and config.read_text(encoding="utf-8") != text and not force:
        kept.append(config)
    else:
        config.write_text(text, encoding="utf-8")
        written.append(config)
    return written, kept


# ---------------------------------------------------------------------------------------------- learner notebooks

# Per lesson: (what the example shows, the example), from the lesson's data (`[[example]]` in
# `autograder/course/data/NN-slug.toml`). Each runs once with your code and once with the reference.
EXAMPLES: dict[int, list[tuple[str, str]]] = {
    lesson.number: list(lesson.examples) for lesson in registry.LESSONS if lesson.examples
}


HOW_EXAMPLES_RUN = (
    "Each example below runs twice: with **your** code for this lesson (over the reference for everything "
    "else, as the grader runs it) and with the **reference**, then says where yours first differs."
)
# what a student edition's notebooks say instead (`export/edition.py`): it has no reference code
HOW_EXAMPLES_RUN_IN_EDITION = (
    "Each example below runs with **your** code (this edition has no reference code, so your code runs for "
    "everything), then is compared with the **reference's answer**, recorded when this edition was made, and "
    "says where yours first differs. Where no answer was recorded, it says that no comparison is available."
)


def learner_notebook(number: int) -> nbformat.NotebookNode:
    """The learner's notebook of one lesson: examples run with your `exercises/` code and with the reference."""
    lesson = registry.lesson(number)
    modules = lesson_modules(number)
    # Links relative to the notebook: JupyterLab opened at the repository root opens the file next to it.
    files = ", ".join(f"[`exercises/{m}.py`](../{m}.py)" for m in modules)
    tasks = "\n".join(f"- {t.id} · {t.title}" for t in lesson.tasks)
    intro = "\n".join(
        [
            f"# Lesson {lesson.number} · {lesson.title}",
            "",
            f"Read the page `{lesson.page}`, write the tasks in {files}, and look at what your code does here.",
            "",
            tasks,
            "",
            HOW_EXAMPLES_RUN + " Save your file and run the cells again to see your changes. Grade the lesson "
            f"from a terminal with `pytest autograder --lesson {lesson.number}`, or with the last cell, "
            "`lesson.grade()`.",
        ]
    )
    examples = EXAMPLES.get(number, [])
    draws = any("draw_dot(" in code and "m.draw_dot(" not in code for _, code in examples)
    setup = ["%load_ext autograder.jupyter", "from autograder.jupyter import Lesson"]
    if draws:
        setup.append("from autograder.jupyter import draw_dot  # the reference's drawing of any Value")
    setup += ["", f"lesson = Lesson({lesson.number})", "lesson"]
    cells = [_cell("markdown", intro, "intro"), _cell("code", "\n".join(setup), "setup")]
    for n, (text, code) in enumerate(examples, start=1):
        cells.append(_cell("markdown", text, f"example-{n}-text"))
        cells.append(_cell("code", code, f"example-{n}"))
    cells.append(
        _cell(
            "markdown",
            (
                f"Your scorecard for lesson {lesson.number}: the grader's checks on your saved "
                f"files, as `pytest autograder --lesson {lesson.number}` gives it."
            ),
            "grade-text",
        )
    )
    cells.append(_cell("code", "lesson.grade()", "grade"))
    return nbformat.v4.new_notebook(cells=cells, metadata=dict(KERNEL))


def learner_notebooks() -> dict[str, nbformat.NotebookNode]:
    return {f"{notebook_name(lesson.number)}.ipynb": learner_notebook(lesson.number) for lesson in graded_lessons()}


def _sources(nb: nbformat.NotebookNode) -> list[tuple[str, str]]:
    return [(cell.cell_type, cell.source) for cell in nb.cells]


def stale_learner_notebooks(folder: Path = LEARNER_NOTEBOOKS) -> list[str]:
    """The learner notebooks whose cells differ from the generated ones (outputs do not count), or are missing."""
    stale = []
    for name, nb in learner_notebooks().items():
        path = folder / name
        if not path.exists() or _sources(nbformat.read(path, as_version=4)) != _sources(nb):
            stale.append(name)
    expected = set(learner_notebooks())
    stale += sorted(p.name for p in folder.glob("*.ipynb") if p.name not in expected)
    return stale


def write_learner_notebooks(folder: Path = LEARNER_NOTEBOOKS) -> list[str]:
    """Write the learner notebooks whose cells are out of date; return their names."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for name, nb in learner_notebooks().items():
        path = folder / name
        if path.exists() and _sources(nbformat.read(path, as_version=4)) == _sources(nb):
            continue
        nbformat.write(nb, path)
        written.append(name)
    return written


# --- a student edition's recorded examples ----------------------------------------------------------------------


class _Recorder:
    """What `lesson` is while `record_examples` runs a notebook's example cells: each example, run on the reference."""

    def __init__(self, number: int):
        self.number, self.answers = number, {}

    def compare(self, example: Callable) -> Callable:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            result = example(jupyter.Lesson(self.number, "solutions").objects())
        self.answers[jupyter.example_key(self.number, example)] = {
            "printed": printed.getvalue(),
            "shown": jupyter.plain(result),
            "kind": type(result).__name__,
        }
        return example


def record_examples(path: Path) -> None:
    """Record the reference's answer to every learner notebook's example, for a student edition's notebooks."""
    answers = {}
    for number, examples in sorted(EXAMPLES.items()):
        recorder = _Recorder(number)
        scope = {"lesson": recorder, "draw_dot": jupyter.draw_dot}
        for _, code in examples:
            exec(compile(code, f"<lesson {number} example>", "exec"), scope)
        answers.update(recorder.answers)
    path.write_text(json.dumps(answers, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
