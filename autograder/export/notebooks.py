"""The learner notebooks, generated from the single source: `solutions/` and the course's data.

`exercises/notebooks/lessonNN.ipynb`, committed: `python -m autograder dev notebooks` writes them and `--check`
says whether they are up to date. Each runs a few examples with the learner's `exercises/` code for the lesson
and with the reference, side by side (`autograder.jupyter.Lesson`); the examples are the lesson's data's
(`[[example]]`).

Here too is what every notebook the course makes shares: the lessons that have one (`graded_lessons`), its name
(`notebook_name`), the kernel (`KERNEL`) and cells with fixed ids (`new_cell`). The nbgrader course
(`nbgrader_course.py`) and a student edition's recorded examples (`recorded_examples.py`) build on them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import nbformat

from autograder.course import registry
from autograder.course.regions import EXERCISES
from autograder.export.lesson_code import lesson_modules

LEARNER_NOTEBOOKS = EXERCISES / "notebooks"

KERNEL = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}


def graded_lessons() -> list[registry.Lesson]:
    return [lesson for lesson in registry.LESSONS if lesson.tasks]


def notebook_name(lesson: int) -> str:
    return f"lesson{lesson:02d}"


def new_cell(kind: str, source: str, cell_id: str, metadata: dict | None = None) -> nbformat.NotebookNode:
    make = nbformat.v4.new_markdown_cell if kind == "markdown" else nbformat.v4.new_code_cell
    cell = make(source, metadata=metadata or {})
    cell_id = cell_id.replace("_", "-")
    if len(cell_id) > 64:  # nbformat's limit: keep it unique with a digest
        cell_id = cell_id[:55] + "-" + hashlib.sha1(cell_id.encode()).hexdigest()[:8]
    cell["id"] = cell_id  # fixed ids: the same sources make the same file
    return cell


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
        setup.append("from autograder.jupyter import draw_dot  # draw_dot(v): a picture of v's graph")
    setup += ["", f"lesson = Lesson({lesson.number})", "lesson"]
    cells = [new_cell("markdown", intro, "intro"), new_cell("code", "\n".join(setup), "setup")]
    for n, (text, code) in enumerate(examples, start=1):
        cells.append(new_cell("markdown", text, f"example-{n}-text"))
        cells.append(new_cell("code", code, f"example-{n}"))
    cells.append(
        new_cell(
            "markdown",
            (
                f"Your scorecard for lesson {lesson.number}: the grader's checks on your saved "
                f"files, as `pytest autograder --lesson {lesson.number}` gives it."
            ),
            "grade-text",
        )
    )
    cells.append(new_cell("code", "lesson.grade()", "grade"))
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
