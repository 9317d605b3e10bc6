"""`python -m autograder dev check`: the course's data agrees with every file it names, and each omission is found.

The course is checked as it is (no problem), then a copy of what the check
reads (the data, `solutions/`, `exercises/`, the lessons' test files, the pages)
is broken one way at a time: each break must come back as a problem that names
the file to fix. The spec that the data gives a task is said the same on its
page, in its stub's docstring and in its hints.
"""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import registry
from autograder.course.check import check_course

from .conftest import REPO

PARTS = ("autograder/course/data", "solutions", "exercises", "autograder/lessons", "course")


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("course")
    for part in PARTS:
        ignore = shutil.ignore_patterns("__pycache__", "_build", "assets", "*.json", "*.ipynb", "notebooks")
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    parsed = "autograder/course/data/parsed.json"  # what tomllib reads from the data, kept beside it
    shutil.copy2(REPO / parsed, root / parsed)
    return root


@pytest.fixture
def course(pristine, tmp_path) -> Path:
    root = tmp_path / "course"
    shutil.copytree(pristine, root)
    return root


def edit(root: Path, name: str, old: str, new: str, count: int = 1) -> None:
    path = root / name
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= 1, f"{name} no longer holds {old!r}: update this test"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def problems(root: Path) -> list[str]:
    return [str(p) for p in check_course(root)]


def test_the_course_agrees_with_its_data():
    assert problems(REPO) == []


def test_dev_check_is_a_command():
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "dev", "check"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"agree ({len(registry.TASKS)} tasks)" in proc.stdout


def test_one_omission_is_one_problem(course):
    assert problems(course) == []
    edit(course, "autograder/course/data/04-backprop-by-hand.toml", 'needs = ["5.2", "5.3"]', 'needs = ["5.2", "5.9"]')
    assert problems(course) == [
        "autograder/course/data/04-backprop-by-hand.toml: task 4.3 needs task 5.9, which no lesson's data declares"
    ]


def unmark(root: Path, name: str, task_id: str) -> None:
    """Take a task's solution markers out of a file (its code stays, unmarked)."""
    path = root / name
    lines, out, inside = path.read_text(encoding="utf-8").splitlines(keepends=True), [], False
    for line in lines:
        if line.strip() == f"### BEGIN SOLUTION (task {task_id})":
            inside = True
        elif inside and line.strip() == "### END SOLUTION":
            inside = False
        else:
            out.append(line)
    path.write_text("".join(out), encoding="utf-8")


def mark(root: Path, name: str, old_id: str, new_id: str, count: int = 1) -> None:
    """Mark `count` checks of task `old_id` as checks of `new_id` instead."""
    path = root / name
    text = path.read_text(encoding="utf-8")
    assert f'"{old_id}", points' in text
    path.write_text(text.replace(f'"{old_id}", points', f'"{new_id}", points', count), encoding="utf-8")


DATA_04 = "autograder/course/data/04-backprop-by-hand.toml"
PAGE_04 = "course/04-backprop-by-hand.md"
TEST_04 = "autograder/lessons/test_04_backprop_by_hand.py"

# (what breaks, the file the problem names, words of the problem)
BREAKS = {
    "an unknown need": (
        lambda r: edit(r, DATA_04, 'needs = ["5.2", "5.3"]', 'needs = ["5.2", "55.1"]'),
        DATA_04,
        "needs task 55.1, which no lesson's data declares",
    ),
    "a need of itself": (
        lambda r: edit(r, DATA_04, 'needs = ["5.2", "5.3"]', 'needs = ["4.3"]'),
        DATA_04,
        "task 4.3 needs itself",
    ),
    "a misspelt key": (
        lambda r: edit(r, DATA_04, 'needs = ["5.2", "5.3"]', 'neds = ["5.2", "5.3"]'),
        DATA_04,
        "task 4.3 has unknown key(s) ['neds']",
    ),
    "a task declared twice": (
        lambda r: edit(r, DATA_04, 'id = "4.3"', 'id = "4.2"'),
        DATA_04,
        "task 4.2 is declared twice",
    ),
    "a spec of a function the task does not own": (
        lambda r: edit(r, DATA_04, "[task.spec.numerical_gradient]", "[task.spec.hand_gradients]"),
        DATA_04,
        "task 4.1 has a spec of hand_gradients, which is not one of its owners",
    ),
    "a hint that quotes a spec the task does not have": (
        lambda r: edit(r, DATA_04, "Each leaf's `.grad` says", "{raises}: each leaf's `.grad` says"),
        DATA_04,
        "task 4.3: a hint quotes {raises} of a task with 0 specs",
    ),
    "a task without a marker": (
        lambda r: unmark(r, "solutions/backprop_by_hand.py", "4.3"),
        "solutions/backprop_by_hand.py",
        "task 4.3 (ascent_step) has no region `### BEGIN SOLUTION (task 4.3)`",
    ),
    "a marker of an undeclared task": (
        lambda r: edit(r, "solutions/backprop_by_hand.py", "(task 4.3)\n", "(task 4.7)\n"),
        "solutions/backprop_by_hand.py",
        "a marker of task 4.7, which no lesson's data declares",
    ),
    "a marker in another function than the data's owner": (
        lambda r: edit(r, DATA_04, 'owners = ["ascent_step"]', 'owners = ["step"]'),
        "solutions/backprop_by_hand.py",
        "task 4.3's markers sit in ['ascent_step']; its data's owners are ['step']",
    ),
    "a task without a check": (
        lambda r: mark(r, TEST_04, "4.3", "4.2", count=99),
        TEST_04,
        'task 4.3 (ascent_step) has no check `@pytest.mark.task("4.3", ...)`',
    ),
    "a task without a hidden check": (
        lambda r: edit(r, TEST_04, '@pytest.mark.hidden\n@pytest.mark.task("4.3"', '@pytest.mark.task("4.3"', count=99),
        TEST_04,
        "task 4.3 has no hidden check",
    ),
    "a check of an undeclared task": (
        lambda r: mark(r, TEST_04, "4.3", "4.9"),
        TEST_04,
        "is marked task '4.9', which no lesson's data declares",
    ),
    "a task without a heading": (
        lambda r: edit(r, PAGE_04, "### Task 4.3 · `ascent_step` {#task-4-3}\n", ""),
        PAGE_04,
        "task 4.3 (ascent_step) has no heading ### Task 4.3 · TITLE {#task-4-3}",
    ),
    "a heading without its anchor": (
        lambda r: edit(r, PAGE_04, "### Task 4.3 · `ascent_step` {#task-4-3}", "### Task 4.3 · `ascent_step`"),
        PAGE_04,
        "task 4.3's heading has no anchor {#task-4-3}",
    ),
    "a heading with another title": (
        lambda r: edit(r, PAGE_04, "### Task 4.3 · `ascent_step` {#task-4-3}", "### Task 4.3 · `ascend` {#task-4-3}"),
        PAGE_04,
        "task 4.3's heading says '`ascend`'; its data's title is 'ascent_step'",
    ),
    "a task without its directive": (
        lambda r: edit(r, PAGE_04, "<!-- course: task 4.3 -->\n", ""),
        PAGE_04,
        "task 4.3's section does not show its spec, stub and hints: add <!-- course: task 4.3 -->",
    ),
    "a page that names an exception the spec does not": (
        lambda r: edit(r, PAGE_04, "One line in a loop:", "Raise a ValueError for an empty graph. One line in a loop:"),
        PAGE_04,
        "the words about task 4.3 name ValueError, which its spec does not say it raises",
    ),
    "a spec that the solution's docstring lacks": (
        lambda r: edit(r, "solutions/backprop_by_hand.py", "    Leaves unchanged:\n", "    Leaves as it is:\n"),
        "solutions/backprop_by_hand.py",
        "the docstring of numerical_gradient does not end in its spec as the course's data says it",
    ),
    "a spec that the stub's docstring lacks": (
        lambda r: edit(r, "exercises/backprop_by_hand.py", "nudge a copy.\n", "nudge it.\n"),
        "exercises/backprop_by_hand.py",
        "the docstring of numerical_gradient does not end in its spec as the course's data says it",
    ),
    "an exception a check expects and the spec leaves out": (
        lambda r: edit(
            r, TEST_04, 'expect_raised(got["unknown"], "KeyError"', 'expect_raised(got["unknown"], "LookupError"'
        ),
        TEST_04,
        "task 4.1's checks expect LookupError, which its spec does not say it raises",
    ),
    "an exception the spec says and no check expects": (
        lambda r: edit(r, DATA_04, "raises.KeyError =", 'raises.LookupError = "when it cannot"\nraises.KeyError ='),
        DATA_04,
        "task 4.1's spec says it raises LookupError; no check of test_04_backprop_by_hand.py expects it",
    ),
    "a check's hint that names an exception the spec does not": (
        lambda r: edit(r, TEST_04, "raise KeyError otherwise", "raise LookupError otherwise"),
        TEST_04,
        "names LookupError, which task 4.1's spec does not say it raises",
    ),
    "a page without its lesson's your-turn box": (
        lambda r: edit(r, PAGE_04, "<!-- course: your-turn 4 -->", ""),
        PAGE_04,
        'no "your turn" box: <!-- course: your-turn 4 -->',
    ),
    "a page that no longer says what the student edition replaces": (
        lambda r: edit(
            r, "course/14-tensors.md", "over the reference `Tensor` and", "over the reference's `Tensor` and"
        ),
        "course/14-tensors.md",
        "no longer says 'The grader runs them over the reference `Tensor` and compares', which the student edition "
        "replaces: update [[edition]] in autograder/course/data/14-tensors.toml",
    ),
    "a guide that no longer says what the student edition replaces": (
        lambda r: edit(r, "course/guides/grading.md", "so one bug costs points once", "so one bug costs points"),
        "course/guides/grading.md",
        "which the student edition replaces: update [[edition]] in autograder/course/data/pages/guides/grading.toml",
    ),
    "a guide's data without its guide": (
        lambda r: (r / "course/guides/grading.md").unlink(),
        "autograder/course/data/pages/guides/grading.toml",
        "there is no page course/guides/grading.md",
    ),
    "a page the student edition ships that names the reference in words it shares": (
        lambda r: edit(r, "course/03-graph.md", "A correct `trace` does that", "The reference `trace` does that"),
        "course/03-graph.md",
        "the student edition shows these words too, and it has no reference: reword them, or give the edition its "
        "own sentence ([[edition]] in autograder/course/data/03-graph.toml)",
    ),
    "the recap naming the reference outside the edition's sentences": (
        lambda r: edit(r, "course/recap.md", "with a correct `Value`", "with the reference `Value`"),
        "course/recap.md",
        "([[edition]] in autograder/course/data/pages/recap.toml): Each row builds one operation with the reference",
    ),
    "a lesson without its page": (
        lambda r: (r / PAGE_04).unlink(),
        PAGE_04,
        "lesson 4 (Backpropagation by hand) has no page",
    ),
}


@pytest.mark.parametrize("name", BREAKS)
def test_each_omission_is_found_naming_its_file(course, name):
    breaks, path, words = BREAKS[name]
    breaks(course)
    found = problems(course)
    assert any(p.startswith(f"{path}: ") and words in p for p in found), f"{name}: {found}"


def test_a_hint_that_names_an_exception_the_spec_does_not_is_found(course):
    edit(
        course,
        DATA_04,
        "Move every leaf's `.data`",
        "Raise a TypeError for a leaf without a grad. Move every leaf's `.data`",
    )
    assert f"{DATA_04}: hint 2 of task 4.3 names TypeError, which its spec does not say it raises" in problems(course)


# --- the spec, said the same on the page, in the stub and in the hints ------------------------------------------


def _directives():
    sys.path.insert(0, str(REPO / "course" / "_build"))
    try:
        import directives
    finally:
        sys.path.remove(str(REPO / "course" / "_build"))
    return directives


def _stub_docstrings(task: registry.Task) -> dict[str, str]:
    """The docstrings of the task's functions in the learner's stub file, each as one line."""
    tree = ast.parse((REPO / "exercises" / f"{task.file}.py").read_text(encoding="utf-8"))
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            found.update({f"{node.name}.{f.name}": f for f in node.body if isinstance(f, ast.FunctionDef)})
    return {owner: " ".join((ast.get_docstring(found[owner]) or "").split()) for owner in task.owners}


SPECIFIED = [t for t in registry.TASKS.values() if t.spec]


def test_the_drifted_specs_have_specs():
    """The three specs that had drifted apart on page, stub and hint are declared once, in the data."""
    said = {t.id: t.spec[0] for t in SPECIFIED}
    assert said["4.1"].unchanged and ("KeyError" in dict(said["4.1"].raises))
    assert "IndexError" in dict(said["1.3"].raises)
    assert "column (n, 1)" in said["14.6"].returns and said["14.6"].owner == "squared_error"


@pytest.mark.parametrize("task", SPECIFIED, ids=lambda t: t.id)
def test_page_stub_and_hints_say_the_spec(task):
    page = " ".join(_directives().expand("task", task.id).split())
    stubs = _stub_docstrings(task)
    hints = " ".join(task.hints)
    for item in task.spec:
        md, name = _directives().md_text, f"`{item.owner}`"
        said = [("Returns:", f"{name} **returns**", item.returns)]
        said += [
            ("Raises: " * (n == 0) + f"{error}:", f"{name} **raises** `{error}`", when)
            for n, (error, when) in enumerate(item.raises)
        ]
        said += [("Leaves unchanged:", f"{name} **leaves unchanged**", item.unchanged)]
        for section, listed, phrase in said:
            if not phrase:
                continue
            phrase = " ".join(phrase.split())
            assert f"{section} {phrase}." in stubs[item.owner], f"task {task.id}: the stub of {item.owner} lacks it"
            assert f"- {listed} {md(phrase)}." in page, f"task {task.id}: the page does not list {listed} {phrase!r}"
        for error, when in item.raises:
            if error in hints:  # a hint that names the exception quotes the spec's words for it
                assert f"`{error}` {when}" in hints, f"task {task.id}: a hint names {error} in other words"


def test_a_hint_quotes_the_spec(tmp_path):
    """`{raises}` in a hint becomes the spec's words, `{OWNER.returns}` picks one owner's; a quote of a spec the
    task does not have stops the loading, naming the file."""
    data = tmp_path / "autograder" / "course" / "data"
    data.mkdir(parents=True)
    lesson = data / "01-one.toml"
    lesson.write_text(
        'title = "One"\nfile = "one"\n\n[[task]]\nid = "1.1"\ntitle = "f"\nowners = ["f", "g"]\n'
        "hints = '''\nFirst\nlevel.\n\nRefuse: {f.raises}. It returns {g.returns}.\n'''\n\n"
        '[task.spec.f]\nraises.ValueError = "when `x` < 0"\nraises.TypeError = "when `x` is a string"\n\n'
        '[task.spec.g]\nreturns = "a float"\n'
    )
    (task,) = registry.load_lesson(lesson).tasks
    assert task.hints == (
        "First level.",
        "Refuse: `ValueError` when `x` < 0; `TypeError` when `x` is a string. It returns a float.",
    )
    lesson.write_text(lesson.read_text().replace("{f.raises}", "{raises}"))
    with pytest.raises(registry.CourseDataError, match=r"^autograder/course/data/01-one.toml: task 1.1: .*OWNER"):
        registry.load_lesson(lesson)
    lesson.write_text(lesson.read_text().replace("{raises}", "{g.raises}"))
    with pytest.raises(registry.CourseDataError, match="quotes {g.raises}, which the spec does not say"):
        registry.load_lesson(lesson)
    lesson.write_text(lesson.read_text().replace('"a float"', '"a float."'))
    with pytest.raises(registry.CourseDataError, match="without a final period"):
        registry.load_lesson(lesson)


# --- parsed.json: what tomllib reads, kept beside the data ---------------------------------------------------------


def test_the_kept_parse_is_read_only_where_the_files_are_unchanged(course):
    data = course / "autograder" / "course" / "data"
    kept = registry.load(data)
    assert kept == registry.LESSONS
    edit(course, DATA_04, 'title = "ascent_step"', 'title = "ascend"')  # parsed.json now holds an older text
    assert registry.task("4.3").title == "ascent_step"
    assert {t.id: t.title for lesson in registry.load(data) for t in lesson.tasks}["4.3"] == "ascend"


def test_a_kept_parse_that_says_other_things_than_its_files_is_found(course):
    edit(course, "autograder/course/data/parsed.json", '"title": "ascent_step"', '"title": "ascend"')
    assert problems(course) == [
        "autograder/course/data/parsed.json: it says other things than the .toml files beside it: "
        "run python -m autograder dev build"
    ]


def test_a_page_block_that_imports_the_reference_by_its_name_is_found(course):
    """A page's code imports `exercises` (which the site's build binds to the reference): a block that imports
    `solutions` would show a student edition's learners an import of code their copy does not have."""
    edit(course, "course/10-nn.md", "from exercises.nn import", "from solutions.nn import")
    edit(course, "course/recap.md", "import os\n", "import os\nimport solutions\n")
    found = [p for p in problems(course) if "imports `solutions`" in p]
    assert [p.split(": a Python")[0].split(": line")[0] for p in found] == ["course/10-nn.md", "course/recap.md"]
    prose = (course / "course/guides/grading.md").read_text()
    assert "`pytest autograder --impl solutions`" in prose  # words about the reference are not code that imports it
