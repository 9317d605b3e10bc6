"""A submission as a grading platform hands it in (Gradescope, PrairieLearn): found, staged and graded.

Each platform's exporter (`gradescope.py`, `prairielearn.py`) says where the submission is and how its results
are written; this is what they share: the course's files found wherever the learner put them (a missing one is
graded as its stub), copied as regular files, and graded as a graded run, out of sight of the platform's folder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from pathlib import Path

from autograder.course.regions import EXERCISES, REPO, solution_files
from autograder.grading.options import GradeOptions

SOURCE_PARTS = ("autograder", "solutions", "exercises", "pyproject.toml", "README.md")
REQUIREMENTS = "requirements-grading.txt"  # the `grading` extra's packages, which a platform's image installs


def grading_requirements() -> list[str]:
    """The `grading` extra of pyproject.toml: what a platform's grading image installs (no Jupyter, no mkdocs)."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return project["optional-dependencies"]["grading"]


def copy_grader(into: Path) -> Path:
    """The course's grader as a platform's image installs it: its sources, and the requirements of grading alone."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.bak")
    into.mkdir(parents=True, exist_ok=True)
    for part in SOURCE_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, into / part, ignore=ignore)
        else:
            shutil.copy2(src, into / part)
    (into / REQUIREMENTS).write_text("".join(f"{line}\n" for line in grading_requirements()), encoding="utf-8")
    return into


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


def platform_options(root: Path, platform: str) -> GradeOptions:
    """How a platform's submission is graded: the course's limits, the platform's folder hidden from the workers,
    and the platform's words in the results (`batch.grade_one` adds the copy, its seed and its results files)."""
    return GradeOptions(hide=(root,), platform=platform)


SHARED_FOLDERS = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock", "/var/lock", "/dev/mqueue")
SHARED_VARIABLE = "AUTOGRADER_SHARED_FOLDERS"  # a test's stand-ins for SHARED_FOLDERS, on a fake platform tree


def close_shared_folders(root: Path, platform_root: Path) -> None:
    """In the platform's container, which grades this one submission, nobody but root may write the folders that
    every user may: the workers run as users of their own, and a folder they all could write would pass data
    between them (a hidden check's inputs into a visible message) or fill the disk. The grader, root, still
    writes there. Only in the container itself (`root` is its own /autograder or /grade), or in the stand-ins a
    test names: never a developer's machine."""
    named = os.environ.get(SHARED_VARIABLE)
    folders = named.split() if named is not None else SHARED_FOLDERS if root == platform_root else ()
    for folder in map(Path, folders):
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(folder.stat().st_mode & 0o7775)


def grade_staged(submission: Path, hide: Path, platform: str, platform_root: Path, deadline: float):
    """The one way a platform grades a submission (Gradescope's, PrairieLearn's): the course's files found in
    `submission` (a missing one graded as its stub), copied as regular files, and graded as a batch grades one
    submission: a graded run (inputs drawn for it alone: answers known from the pages are worth nothing), in a
    grader process of its own that saves its results after every check, with `hide` out of the workers' sight.

    `deadline`: seconds of wall time, below the platform's own timeout. A run still going then is stopped, and
    what it finished is scored (what it did not reach earns nothing): the platform always gets results.

    Returns the `Results` (None when the grader could not run at all) and the notes for the learner about what
    was missing, left out, or not reached; what the grader printed goes to the platform's log (stdout)."""
    from autograder.grading import batch

    close_shared_folders(hide, platform_root)
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
        (Path(tmp) / "results").mkdir()
        with batch.adopting_leftovers():
            outcome = batch.grade_one(staged, Path(tmp) / "results", deadline, platform_options(hide, platform))
        print((Path(tmp) / "results" / "staged" / "grader.log").read_text(errors="replace")[-20_000:])
    if outcome.status == "timed out":
        notes.append(
            f"The grader stopped at its time limit ({deadline:g} s) before it finished: the checks it had not reached "
            "earn nothing (they say 'did not run'). Code that runs for long, or waits, is the usual cause."
        )
    if outcome.results is None or (outcome.status == "crashed" and not outcome.results.tests):
        return None, notes
    return outcome.results, notes
