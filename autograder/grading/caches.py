"""What the grader remembers between runs, on disk: one owner, one fingerprint.

`.cache/grading/<fingerprint>/` holds the *call plans* (the calls each task's
checks made, sent ahead to the next run's workers) and the *reference
answers* (the expected values the trusted side computed, PyTorch's among
them). The fingerprint covers everything that decides a call or an expected
value: the reference (`solutions/`), the grading tests (`autograder/lessons/`),
the judgement kit (`autograder/kit/`), everything that runs in a worker
(`autograder/worker/`: the scenario helpers, the loader), and the Python and
PyTorch versions. Change any of them and the next run starts from nothing.

Each isolation level and user has a folder of its own there
(`<fingerprint>/processes-1000/`), read by no run at another level or of
another user. At `sandbox` and `user` the workers are other users, who cannot
write it. At `processes` learner code runs as the grader's own user, so that
folder is a learner's *feedback* cache: it speeds up their own runs at that
level, a learner who poisons it fools only themselves, and a graded run
(`--fresh-inputs`) at `processes` neither reads nor writes it. A run reads
the files before any learner code runs (the constructor), so what its own
workers write during the run is not read; and every file is *sealed*: written
with a seal beside it that records the file's identity as the run that wrote
it left it (inode, size, modification and change times), so a file written
again afterwards, by anything the learner's code left running after the
grader exited, is refused. A file is read only if it is a regular file (no
symbolic link followed), belongs to this process's user and nobody else may
write it or its folders. After a `processes` run as root, whose workers were
root too, the whole cache is deleted.

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
import tempfile
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
    """A digest of every .py and .toml file under `folders` (but their top-level `skip` names), read now, with its
    path (the course's data, `autograder/course/data/*.toml`, is a source of the grader's like its code).

    The same on every machine (a Windows checkout's line ends are read as
    Unix ones), so the site's committed results can be keyed with it; the void
    check of a grading run compares two of them.
    """
    digest = digest or hashlib.sha256()
    for folder in folders:
        for path in sorted(p for p in folder.rglob("*") if p.suffix in (".py", ".toml")):
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
    return open_regular(path, cap)[0]


def open_regular(path: Path, cap: int) -> tuple[bytes, os.stat_result]:
    """`read_regular`, with the status of the file that was read (of the open file, not of the path)."""
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
    return data, info


def _ours_alone(info: os.stat_result) -> bool:
    """Whether a file or folder belongs to this process's user and nobody else may write it."""
    return not hasattr(os, "geteuid") or (info.st_uid == os.geteuid() and not info.st_mode & 0o022)


def _private_folder(path: Path) -> bool:
    """Whether `path` is a folder (not a link to one) of this process's user that nobody else may write."""
    try:
        info = path.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and _ours_alone(info)


def _identity(info: os.stat_result) -> list[int]:
    """What changes whenever a file is written again, or replaced: a seal records it."""
    return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns]


def _user() -> str:
    return str(os.geteuid()) if hasattr(os, "geteuid") else os.environ.get("USERNAME", "user")


class GradingCache:
    """The call plans and reference answers of this course's current fingerprint, for one isolation level and user.

    `graded`: a graded run (`--fresh-inputs`): at `processes` it uses no file that learner code could have written.
    """

    def __init__(self, level: str, graded: bool = False, root: Path = ROOT):
        self.level = Level(level)
        # a graded run reads nothing that learner code could have written (at a level without a user of its own)
        self.on_disk = self.level.trusted_cache or not graded
        self.folder = root / fingerprint() / f"{level}-{_user()}"
        for what in ("plans", "answers"):  # now, before any learner code runs
            self.load(what)

    def load(self, what: str) -> dict:
        """`plans` or `answers`: the dict kept in memory for this folder, first read from disk where safe."""
        key = (str(self.folder), what)
        if key not in _MEMORY:
            _MEMORY[key] = self._read(what) if self.on_disk else {}
        return _MEMORY[key]

    def _read(self, what: str) -> dict:
        """The sealed file `what`, or nothing if it, its seal or a folder above it fails a check."""
        if not all(map(_private_folder, (self.folder, self.folder.parent, self.folder.parent.parent))):
            return {}
        try:
            seal, seal_info = open_regular(self.folder / f"{what}.seal", 1000)
            data, info = open_regular(self.folder / f"{what}.json", MAX_FILE)
            if _ours_alone(seal_info) and _ours_alone(info) and json.loads(seal) == _identity(info):
                found = json.loads(data)
                return found if isinstance(found, dict) else {}
        except (OSError, NotRegular, ValueError):
            pass
        return {}

    def forget_if_workers_could_write(self) -> None:
        """After a `processes` run as root, whose workers were root too: nothing they may have written is kept."""
        if not self.level.own_user and hasattr(os, "geteuid") and os.geteuid() == 0:
            shutil.rmtree(self.folder.parent.parent, ignore_errors=True)

    def save(self, what: str) -> None:
        """Write `what` for the next run (where safe), and drop every other fingerprint's folder: it is stale."""
        if not self.on_disk:
            return
        try:
            for folder in (self.folder.parent.parent, self.folder.parent, self.folder):
                folder.mkdir(mode=0o700, exist_ok=True)
                info = folder.lstat()
                if (
                    hasattr(os, "geteuid")
                    and info.st_uid == os.geteuid()
                    and stat.S_ISDIR(info.st_mode)
                    and info.st_mode & 0o022
                ):
                    folder.chmod(0o700)  # made by an older grader under a umask that lets the group write
            for stale in self.folder.parent.parent.iterdir():
                if stale != self.folder.parent:
                    shutil.rmtree(stale, ignore_errors=True)
            self.store(what, self.load(what))
        except OSError:
            pass  # a cache that cannot be written only costs time

    def store(self, what: str, data: dict) -> None:
        """Write `what.json`, then seal it."""
        write_whole(self.folder / f"{what}.json", json.dumps(data, separators=(",", ":")).encode())
        self.seal(what)

    def seal(self, what: str) -> None:
        """Write the seal of `what.json`: the identity of the file as this run left it."""
        write_whole(
            self.folder / f"{what}.seal", json.dumps(_identity((self.folder / f"{what}.json").lstat())).encode()
        )


def write_whole(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write `path` whole or not at all, as a new file of its own (`mode`: this user's alone by default): made
    beside it, never opened through a link someone left there, then put in its place (a link at `path` is
    replaced, its target untouched). Another run reading meanwhile sees the old file whole.

    The grader's one way to write a file: caches, results, the last run, the hints seen."""
    fd, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with os.fdopen(fd, "wb") as f:
            if mode != 0o600 and hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            f.write(data)
        os.replace(partial, path)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
