"""A submission as a grading platform hands it in (Gradescope, PrairieLearn): found, staged and graded.

Each platform's exporter (`gradescope.py`, `prairielearn.py`) says where the submission is and how its results
are written; this is what they share: the course's files found wherever the learner put them (a missing one is
graded as its stub), copied as regular files, and graded as a graded run, out of sight of the platform's folder.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from pathlib import Path

from autograder.course.regions import EXERCISES, solution_files
from autograder.grading.options import GradeOptions


def expected_files() -> list[str]:
    return [p.name for p in solution_files() if p.name != "__init__.py"]


def find_submitted(submission: Path) -> dict[str, Path]:
    """Each expected file of the submission: in the folder that holds most of them (top level or exercises/)."""
    names = set(expected_files())
    folders: dict[Path, int] = {}
    for path in submission.rglob("*.py"):
        if path.name in names and "__MACOSX" not in path.parts and not path.is_symlink():
            folders[path.parent] = folders.get(path.parent, 0) + 1
    if not folders:
        return {}
    best = max(folders, key=lambda folder: (folders[folder], -len(folder.parts)))
    return {name: best / name for name in names if (best / name).is_file()}


def submission_options(root: Path, graded: Path) -> GradeOptions:
    """How a submission is graded: the course's limits, Gradescope's folder hidden, inputs drawn for it alone
    (a graded run: answers known from the pages are worth nothing)."""
    return GradeOptions(impl=graded, hide=(root,), fresh_inputs=secrets.randbelow(2**31))


def grade_staged(submission: Path, hide: Path):
    """The one way a platform grades a submission (Gradescope's, PrairieLearn's): the course's files found in
    `submission` (a missing one graded as its stub), copied as regular files, graded as a graded run with `hide`
    out of the workers' sight. Returns the `Results` (or the exception that stopped the grader) and the notes for
    the learner about what was missing or left out."""
    from autograder.grading import runner
    from autograder.grading.batch import private_copy

    found = find_submitted(submission)
    missing = sorted(set(expected_files()) - set(found))
    notes = [f"Not in your submission (graded as the empty stubs): {', '.join(missing)}."] if missing else []
    with tempfile.TemporaryDirectory() as tmp:
        staged = Path(tmp) / "staged"
        staged.mkdir()
        for name in expected_files():
            source = found.get(name)
            if source is None or source.is_symlink() or not source.is_file():
                source = EXERCISES / name
            shutil.copyfile(source, staged / name)
        graded, left = private_copy(staged, Path(tmp) / "graded")
        notes += [f"Not graded: {item}." for item in left]
        try:
            return runner.grade(submission_options(hide, graded)), notes
        except Exception as exc:  # noqa: BLE001 - the learner must get valid results whatever happens
            return exc, notes
