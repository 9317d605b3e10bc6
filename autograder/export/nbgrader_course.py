"""The nbgrader course, generated from the single source: `solutions/`, the course's data and the grading tests.

`python -m autograder export nbgrader --out DIR` writes `DIR/nbgrader_config.py` and one master notebook per
lesson, `DIR/source/lessonNN/lessonNN.ipynb`, with
- read-only instruction cells: the lesson's title, its module's docstring, and per task the docstrings of the
  code it lives in and the registry's hints (`lesson_code.task_markdown`);
- one autograded-answer cell holding the lesson's code (`%%answer lessonNN_code/MODULE.py`), as
  `lesson_code.py` selects it: the lesson's own solution regions keep their markers, which nbgrader's
  `generate_assignment` turns into stubs;
- one autograder-test cell per grading test (`grading_tests`), worth the test's points; it calls the test
  (`check("test_name")`: one run of `pytest autograder` per version of the code), so no check is written twice;
  the seeded hidden tests' calls sit between nbgrader's hidden-test markers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import nbformat

from autograder.course import registry
from autograder.course.regions import has_sources
from autograder.export.lesson_code import is_partial, lesson_modules, lesson_source, module_docstring, task_markdown
from autograder.export.notebooks import KERNEL, graded_lessons, new_cell, notebook_name

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
        new_cell("markdown", "\n".join(intro), "intro", _nbgrader("intro", locked=True)),
        new_cell(
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
        cells.append(new_cell("markdown", task_markdown(task), grade_id, _nbgrader(grade_id, locked=True)))
    for module in modules:
        source = f"%%answer {folder}/{module}.py\n{lesson_source(lesson.number, module)}".rstrip("\n")
        cells.append(new_cell("code", source, f"answer_{module}", _nbgrader(f"answer_{module}", solution=True)))
    cells.append(
        new_cell(
            "code", "# Try your code here: run the answer cell first, then every name it defines is here.", "scratch"
        )
    )
    for task in own:
        mine = [t for t in tests if t.task == task.id]
        hidden = sum(t.points for t in mine if t.hidden)
        grade_id = f"checks_{task.id.replace('.', '_')}"
        text = f"### Checks of task {task.id} · {task.title}: {sum(t.points for t in mine)} points" + (
            f", {hidden} of them hidden" if hidden else ""
        )
        cells.append(new_cell("markdown", text, grade_id, _nbgrader(grade_id, locked=True)))
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
                new_cell("code", source, test.name, _nbgrader(test.name, grade=True, locked=True, points=test.points))
            )
    return nbformat.v4.new_notebook(cells=cells, metadata=dict(KERNEL))


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
