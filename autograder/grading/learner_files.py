"""Reading the learner's files, on the trusted side, and what the workers must not see.

`read_learner_file` reads a learner's file once, as text, for the workers it is sent to: a regular file inside
the graded folder (no symbolic link), not too large, UTF-8 (else `LearnerFileError`); `display` names a file as
a message shows it. `installed_packages` finds every folder the grader or the reference is installed in, which
a run hides from its workers (`Grader.new_pool`).
"""

from __future__ import annotations

import glob
import importlib.util
import os
import sys
from pathlib import Path

from autograder.grading import caches
from autograder.grading.limits import MAX_SOURCE


class LearnerFileError(Exception):
    """A learner file the grader will not read (a symlink, not a regular file, too large, not UTF-8)."""


def read_learner_file(root: Path, module: str) -> str | None:
    """The text of `root/module.py`, read as a regular file inside `root` (no symlinks); None if it is missing."""
    path = root / f"{module}.py"
    try:
        data = caches.read_regular(path, MAX_SOURCE)
    except FileNotFoundError:
        return None
    except caches.NotRegular as exc:
        raise LearnerFileError(f"{display(path)} {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LearnerFileError(f"{display(path)} is not UTF-8 text (byte {exc.start})") from None


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# Where any Python of this machine keeps installed packages (one that does not grade may still hold a copy)
SITE_FOLDERS = ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages", "/opt/*/lib/python3*/*-packages")


def installed_packages() -> list[str]:
    """Every folder the grader or the reference is installed in, outside the repository too: found by what it is.

    The one `import` would find first, any copy on `sys.path`, where an
    editable install's finder points, and every package an installed
    distribution of this course put in any Python's site folders (its
    RECORD): a worker must find none of them.
    """
    folders = set()
    sites = {entry for entry in sys.path if entry} | {p for pattern in SITE_FOLDERS for p in glob.glob(pattern)}
    for name in ("autograder", "solutions"):
        spec = importlib.util.find_spec(name)
        folders.update(spec.submodule_search_locations or []) if spec else None
        folders.update(str(Path(entry) / name) for entry in sites if (Path(entry) / name).is_dir())
    for record in (r for site in sites for r in glob.glob(os.path.join(site, "backprop_course-*.dist-info/RECORD"))):
        try:
            lines = Path(record).read_text().splitlines()
        except OSError:
            continue
        tops = {line.split("/", 1)[0] for line in lines if "/" in line.split(",", 1)[0]}
        site = Path(record).parent.parent
        folders.update(str(site / top) for top in tops if top.isidentifier() and top != "__pycache__")  # packages
    for module in list(sys.modules.values()):
        mapping = getattr(module, "MAPPING", None)  # setuptools' editable finders map package names to folders
        if getattr(module, "__name__", "").startswith("__editable__") and isinstance(mapping, dict):
            folders.update(str(mapping[name]) for name in ("autograder", "solutions") if name in mapping)
    return sorted(str(Path(folder).resolve()) for folder in folders if Path(folder).is_dir())
