"""How a worker is shut in before it runs learner code: the isolation levels.

`sandbox` (the grader runs as root: Gradescope's containers, CI, GitHub's
runners under sudo). The worker gets its own PID, mount, network, IPC and UTS
namespaces, then becomes a user of its own (a uid no other process has) with
no groups and no way to gain privileges. In its mount namespace the grader's
folder, the submissions, the results and `/autograder` are covered by empty
read-only file systems, and `/tmp`, `/var/tmp` and `/dev/shm` are private. It
may not start processes or threads (RLIMIT_NPROC 1 for its uid), so the memory
cap (RLIMIT_AS) covers its whole tree, and it is PID 1 of its namespace: when
the grader kills it, everything it started dies with it. It cannot see,
signal or trace the grader, reach the network, or write a file outside its
private /tmp.

`user` (root, but the system forbids new namespaces: some containers). As
`sandbox` without the namespaces: its own uid, no processes or threads, the
limits; the grader's files are protected only by their permissions (the
Gradescope bundle's `setup.sh` makes them unwritable), and it can see other
processes but not signal them.

`processes` (no root: a learner's laptop). The same split between the grader
and the worker, with the memory cap, the time limits, and a process group of
its own that is killed with the check; but the worker runs as the learner's
user, so it could read the grader's files, write where the learner can, or
start a process that leaves the group.

Only kernel calls from the standard library (and `ctypes` for `unshare` and
`mount`, which Python 3.11 lacks), because the zygote forks workers from a warm
process: an external wrapper such as bubblewrap would mean a fresh interpreter
per worker. Windows and macOS get `processes` through spawned workers.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

SANDBOX, USER, PROCESSES = "sandbox", "user", "processes"
LEVELS = (SANDBOX, USER, PROCESSES)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET = 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 0x1000, 0x4000, 0x40000
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_DUMPABLE, PR_SET_CHILD_SUBREAPER = 1, 38, 4, 36
MNT_DETACH = 2
FIRST_SANDBOX_UID = 200_000  # far above any real account; a worker's uid adds its forking process's pid (unique)
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")


def best_level() -> str:
    """The strongest level this process can set up."""
    if sys.platform == "linux" and os.geteuid() == 0:
        return SANDBOX if _can_unshare() else USER
    return PROCESSES


_unshare_ok: bool | None = None


def _can_unshare() -> bool:
    """Whether new namespaces can be made here (a container may forbid it even to root)."""
    global _unshare_ok
    if _unshare_ok is None:
        pid = os.fork()
        if pid == 0:
            os._exit(0 if _libc().unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET) == 0 else 1)
        _unshare_ok = os.waitpid(pid, 0)[1] == 0
    return _unshare_ok


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def enter_namespaces() -> None:
    """Before the worker's fork: its child will be PID 1 of a new PID namespace, with new mount and network ones."""
    _check(_libc().unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")


def shut_in(level: str, hidden: list[str], memory_mb: int, uid: int, file_mb: int = 16) -> None:
    """In the worker, before any learner code: apply the level's walls. Irreversible."""
    if sys.platform == "win32":
        return  # spawned, with the grader's deadline as the only wall
    import resource

    libc = _libc()
    if sys.platform == "linux":
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)  # the worker never outlives the process that forked it
    if level == SANDBOX:
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
        for path in hidden:
            if os.path.isdir(path):
                _check(
                    libc.mount(
                        b"tmpfs",
                        path.encode(),
                        b"tmpfs",
                        MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                        b"size=4k,mode=0555",
                    ),
                    f"hide {path}",
                )
            elif os.path.exists(path):
                _check(libc.mount(b"/dev/null", path.encode(), None, MS_BIND, None), f"hide {path}")
        for path in PRIVATE_TMP:
            if os.path.isdir(path):
                _check(
                    libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=64m,mode=1777"),
                    f"private {path}",
                )
        _keep_reachable(libc, [p for p in _interpreter_paths() if not any(_inside(p, h) for h in hidden)])
    elif level == PROCESSES:
        os.setpgid(0, 0)  # a group of its own, killed with the check
    if memory_mb and sys.platform == "linux":  # macOS does not enforce RLIMIT_AS
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_mb << 20, file_mb << 20))
    if level in (SANDBOX, USER):
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    os.chdir("/tmp" if level == SANDBOX else os.environ.get("TMPDIR", "/tmp"))


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _interpreter_paths() -> list[str]:
    """The folders Python imports from: they must stay readable for the worker's user."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sys.path if p)}
    return sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})


def _blocking_ancestor(path: str) -> str | None:
    """The outermost folder above `path` that other users may not enter (a home folder such as /root)."""
    parts = path.strip(os.sep).split(os.sep)
    for i in range(1, len(parts)):
        folder = os.sep + os.sep.join(parts[:i])
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def _keep_reachable(libc, paths: list[str]) -> None:
    """Where Python lives under a folder the worker's user may not enter (pyenv in /root), let it through.

    In the worker's own mount namespace, the closed folder is covered by an
    empty one that anyone may enter, and the interpreter's folders are bound
    back in at their usual paths: the rest of the closed folder stays out of sight.
    """
    by_ancestor: dict[str, list[str]] = {}
    for path in paths:
        ancestor = _blocking_ancestor(path)
        if ancestor:
            by_ancestor.setdefault(ancestor, []).append(path)
    for n, (ancestor, inner) in enumerate(sorted(by_ancestor.items())):
        stages = []
        for m, path in enumerate(inner):
            stage = f"/tmp/.interpreter-{n}-{m}"
            os.makedirs(stage)
            _check(libc.mount(path.encode(), stage.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
            stages.append((stage, path))
        _check(
            libc.mount(b"tmpfs", ancestor.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, b"size=1m,mode=0755"),
            f"open {ancestor}",
        )
        for stage, path in stages:
            os.makedirs(path, exist_ok=True)
            _check(libc.mount(stage.encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind back {path}")
            libc.umount2(stage.encode(), MNT_DETACH)
            os.rmdir(stage)


def hidden_paths(paths: list[str]) -> list[str]:
    """The folders to cover, except that the running Python's own prefix (a venv inside the repo) stays visible."""
    prefix = os.path.realpath(sys.prefix)
    out = []
    for path in {os.path.realpath(p) for p in paths if p and os.path.isdir(p)}:
        if prefix == path or prefix.startswith(path + os.sep):
            keep = prefix[len(path) + 1 :].split(os.sep)[0]
            out += [os.path.join(path, name) for name in os.listdir(path) if name != keep]
        else:
            out.append(path)
    return sorted(set(out))
