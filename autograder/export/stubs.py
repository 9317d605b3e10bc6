"""Generate `exercises/` from `solutions/`: each solution region becomes a TODO and a NotImplementedError.

`python -m autograder dev sync` writes the stubs; `--check` only compares and
prints a diff. A file the learner has changed since it was last generated is
never overwritten, unless `--force` is given, and then a backup is kept. What
was last generated is remembered in `exercises/.sync-manifest.json` (a hash
per file). The docstrings of the functions that hold a task's code end in the
spec the course's data gives them (`autograder/course/spec.py`), as `build`
writes it into `solutions/` too.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import stat
import tempfile
import time
from pathlib import Path

from autograder.course.regions import (
    EXERCISES,
    SOLUTIONS,
    edition_manifest,
    generate,
    has_sources,
    solution_files,
)
from autograder.course.spec import with_spec

MANIFEST = ".sync-manifest.json"

EXERCISES_INIT = '''"""Your work: the stubs you fill in, lesson by lesson.

Each `raise NotImplementedError("task L.N: ...")` marks code for you to write;
the docstring above it says what it must do, and `pytest autograder --task L.N`
grades it; `python -m autograder reset L.N` puts a task's stub back.
"""
'''


def expected_files(solutions: Path = SOLUTIONS, keep: frozenset[str] = frozenset()) -> dict[str, str]:
    """Every exercise file's expected content, by file name."""
    if solutions == SOLUTIONS and not has_sources(solutions):
        if keep:
            raise RuntimeError("a student edition has no solution sources to keep solved")
        return dict(edition_manifest()["stubs"])
    files = {}
    for path in solution_files(solutions):
        if path.name == "__init__.py":
            files[path.name] = EXERCISES_INIT
        else:
            text = with_spec(path.read_text(), path.stem, str(path))
            files[path.name] = generate(text, path.stem, keep, str(path))
    return files


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def check(exercises: Path = EXERCISES) -> list[str]:
    """Return a unified diff for each exercise file that differs from what sync would write."""
    diffs = []
    for name, expected in expected_files().items():
        path = exercises / name
        current = path.read_text() if path.exists() else ""
        if current != expected:
            diffs.append(
                "".join(
                    difflib.unified_diff(
                        current.splitlines(keepends=True),
                        expected.splitlines(keepends=True),
                        f"{path} (now)",
                        f"{path} (generated from solutions/)",
                    )
                )
            )
    stale = sorted(p.name for p in exercises.glob("*.py") if p.name not in expected_files())
    diffs.extend(f"{exercises / name} has no counterpart in solutions/\n" for name in stale)
    return diffs


def save_copy(path: Path, data: bytes) -> Path:
    """Keep `data` (a learner's version of `path`) beside it as `NAME.YYYYmmdd-HHMMSS.bak`, never over another copy."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        copy = path.with_name(f"{path.name}.{stamp}{f'-{n}' if n else ''}.bak")
        try:
            with copy.open("xb") as f:  # "x": a copy made in the same second is not overwritten
                f.write(data)
            return copy
        except FileExistsError:
            continue
    raise FileExistsError(f"{path}: too many copies made this second")


def write_inside(path: Path, data: bytes) -> None:
    """Make `path`, a file of the learner's folder, hold `data`: a new file takes its name (a rename), so nothing is
    written through a symbolic link there or into a file that another name (a hard link) shares. Its mode is kept."""
    try:
        before = os.lstat(path)
    except FileNotFoundError:
        before = None
    fd, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".new", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(temporary, stat.S_IMODE(before.st_mode) if before else 0o644)
        if before and hasattr(os, "chown") and os.geteuid() == 0:  # root resetting a learner's file: still theirs
            os.chown(temporary, before.st_uid, before.st_gid)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def sync(exercises: Path = EXERCISES, force: bool = False) -> tuple[list[str], list[str]]:
    """Write the exercises; return (written, refused) file names.

    A file is refused when it differs both from the new stub and from what sync
    last wrote there: the learner has worked on it.
    """
    manifest_path = exercises / MANIFEST
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    exercises.mkdir(exist_ok=True)
    written, refused = [], []
    for name, expected in expected_files().items():
        path = exercises / name
        if path.is_symlink() or path.exists() and not path.is_file():  # sync writes only the folder's own files
            refused.append(name)
            continue
        if path.exists():
            current = path.read_text()
            if current == expected:
                manifest[name] = _digest(expected)
                continue
            if _digest(current) != manifest.get(name):
                if not force:
                    refused.append(name)
                    continue
                save_copy(path, path.read_bytes())
        write_inside(path, expected.encode())
        manifest[name] = _digest(expected)
        written.append(name)
    manifest_path.write_text(json.dumps(dict(sorted(manifest.items())), indent=2) + "\n")
    return written, refused
