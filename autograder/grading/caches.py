"""What the grader remembers between runs, on disk: one owner, one fingerprint.

`.cache/grading/<fingerprint>/` holds the *call plans* (the calls each task's
checks made, sent ahead to the next run's workers) and the *reference
answers* (the expected values the trusted side computed, PyTorch's among
them). The fingerprint covers everything that decides a call or an expected
value: the reference (`solutions/`), the grading tests (`autograder/lessons/`),
the judgement kit (`autograder/kit/`), everything that runs in a worker
(`autograder/worker/`: the scenario helpers, the loader), and the Python and
PyTorch versions. Change any of them and the next run starts from nothing.

Learner code must not be able to write what a verdict depends on: at the
`processes` level it runs as the grader's own user, so there nothing is read
from or written to disk (a warm process, watch mode, still keeps its memory),
and after such a run as root the cache is deleted (its workers were root
too). A file is read only if it belongs to this process's user and nobody
else may write it or its folders: a worker of another user could not have.

The site build's local cache (`.cache/site/`, what this machine's builds ran:
`course/_build/buildcache.py` reads and writes it) lives here too, and its
keys, like the committed results', are made with `sources_digest`: one digest
of source folders for every cache of the course.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import stat
import sys
from functools import cache
from pathlib import Path

from autograder.course.regions import REPO, SOLUTIONS
from autograder.worker.wire import Level

CACHE = REPO / ".cache"
ROOT = CACHE / "grading"
SITE = Path(os.environ.get("COURSE_SITE_CACHE") or CACHE / "site")  # the site build's (another folder: for a test)
AUTOGRADER = Path(__file__).resolve().parents[1]
SOURCES = (SOLUTIONS, AUTOGRADER / "lessons", AUTOGRADER / "kit", AUTOGRADER / "worker")
MAX_FILE = 50_000_000  # bytes: a file larger than any real run's is not read
_MEMORY: dict[tuple[str, str], dict] = {}  # (fingerprint, what) -> data, for a process that grades again


def sources_digest(folders: tuple[Path, ...], digest=None, skip: tuple[str, ...] = ()) -> str:
    """A digest of every .py file under `folders` (but their top-level `skip` names), read now, with its path.

    The same on every machine (a Windows checkout's line ends are read as
    Unix ones), so the site's committed results can be keyed with it; the void
    check of a grading run compares two of them.
    """
    digest = digest or hashlib.sha256()
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts and path.relative_to(folder).parts[0] not in skip:
                text = path.read_bytes().replace(b"\r\n", b"\n")
                digest.update(path.relative_to(REPO).as_posix().encode() + b"\0" + text + b"\0")
    return digest.hexdigest()


@cache
def fingerprint(sources: tuple[Path, ...] = SOURCES) -> str:
    """A digest of every source that decides a call or an expected value, and of the Python and PyTorch versions."""
    digest = hashlib.sha256(sys.version.encode())
    sources_digest(sources, digest)
    torch = importlib.util.find_spec("torch")  # its version file, without importing it
    if torch is not None and torch.origin:
        version = Path(torch.origin).with_name("version.py")
        digest.update(version.read_bytes() if version.is_file() else torch.origin.encode())
    return digest.hexdigest()[:24]


class NotRegular(ValueError):
    """A file the grader will not read: its message says why (a symbolic link, a pipe, too large)."""


def read_regular(path: Path, cap: int) -> bytes:
    """The bytes of `path`, opened as a regular file of at most `cap` bytes: no symbolic link followed, no pipe or
    device to block on. Raises FileNotFoundError if it is missing, `NotRegular` (saying why) otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        why = "is a symbolic link: the grader reads only regular files" if path.is_symlink() else None
        raise NotRegular(why or f"cannot be read: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular("is not a regular file")
        if info.st_size > cap:
            raise NotRegular(f"is {info.st_size} bytes; the limit is {cap}")
        data = f.read(cap + 1)
    if len(data) > cap:  # it grew while being read
        raise NotRegular(f"is over {cap} bytes; the limit is {cap}")
    return data


def _ours_alone(path: Path) -> bool:
    """Whether `path` belongs to this process's user and nobody else may write it (no worker of another user could)."""
    try:
        info = path.stat()
    except OSError:
        return False
    return not hasattr(os, "geteuid") or (info.st_uid == os.geteuid() and not info.st_mode & 0o022)


class GradingCache:
    """The call plans and reference answers of this course's current fingerprint, for one isolation level."""

    def __init__(self, level: str, root: Path = ROOT):
        self.on_disk = Level(level).trusted_cache  # elsewhere learner code could have written the files
        self.folder = root / fingerprint()

    def load(self, what: str) -> dict:
        """`plans` or `answers`: the dict kept in memory for this fingerprint, first read from disk where safe."""
        key = (self.folder.name, what)
        if key not in _MEMORY:
            _MEMORY[key] = {}
            path = self.folder / f"{what}.json"
            if self.on_disk and all(map(_ours_alone, (path, self.folder, self.folder.parent))):
                try:
                    if path.stat().st_size < MAX_FILE:
                        _MEMORY[key].update(json.loads(path.read_text()))
                except (OSError, ValueError):
                    pass
        return _MEMORY[key]

    def forget_if_workers_could_write(self) -> None:
        """After a `processes` run as root, whose workers were root too: nothing they may have written is kept."""
        if not self.on_disk and hasattr(os, "geteuid") and os.geteuid() == 0:
            shutil.rmtree(self.folder.parent, ignore_errors=True)

    def save(self, what: str) -> None:
        """Write `what` for the next run (where safe), and drop every other fingerprint's folder: it is stale."""
        if not self.on_disk:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            for stale in self.folder.parent.iterdir():
                if stale != self.folder:
                    shutil.rmtree(stale, ignore_errors=True)
            partial = self.folder / f".{what}.json.partial"
            partial.write_text(json.dumps(self.load(what), separators=(",", ":")))
            partial.replace(self.folder / f"{what}.json")  # another run reading meanwhile sees the old file whole
        except OSError:
            pass  # a cache that cannot be written only costs time
