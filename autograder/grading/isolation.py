"""Which isolation level a run can have, and what its workers must not see (the trusted side's decisions).

The levels themselves are applied by the worker (`autograder.worker.sandbox`);
here the grader finds the strongest one this machine allows, or refuses a
level it was asked for that the machine cannot give, saying why.
"""

from __future__ import annotations

import os
import sys

from autograder.worker import sandbox
from autograder.worker.wire import LEVELS, PROCESSES, SANDBOX, USER

_unshare_ok: bool | None = None


def best_level() -> str:
    """The strongest level this process can set up."""
    return next(level for level in LEVELS if not why_not(level))


def why_not(level: str) -> str:
    """Why this machine cannot give `level` ('' if it can)."""
    if level == PROCESSES:
        return ""
    if sys.platform != "linux" or getattr(os, "geteuid", lambda: -1)() != 0:
        return "it needs root on Linux"
    if level == SANDBOX and not _can_unshare():
        return "this system forbids new namespaces (a container's default, say)"
    if level == USER:
        closed = sorted({a for p in sandbox.interpreter_paths() if (a := sandbox.blocking_ancestor(p))})
        if closed:  # without a mount namespace, another user cannot reach Python there
            return f"Python lives under {closed[0]}, which other users may not enter"
    return ""


def level_for(requested: str) -> str:
    """The isolation level to use: the best this process can set up, unless a weaker one is asked for."""
    if requested == "auto":
        return best_level()
    reason = why_not(requested)
    if reason:
        raise RuntimeError(f"--isolation {requested} is not possible here: {reason}")
    return requested


def can_forbid_user_namespaces() -> bool:
    """Whether a worker at `sandbox` or `user` shuts itself out of new user namespaces here (tried in a child)."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return True  # no such namespaces to make

    def shut_out() -> bool:
        sandbox.libc().prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        return sandbox.forbid_user_namespaces() and sandbox.libc().unshare(sandbox.CLONE_NEWUSER) != 0

    return _in_a_child(shut_out)


def _can_unshare() -> bool:
    """Whether new namespaces can be made here (a container may forbid it even to root)."""
    global _unshare_ok
    if _unshare_ok is None:
        flags = sandbox.CLONE_NEWNS | sandbox.CLONE_NEWPID | sandbox.CLONE_NEWNET
        _unshare_ok = _in_a_child(lambda: sandbox.libc().unshare(flags) == 0)
    return _unshare_ok


def _in_a_child(test) -> bool:
    """`test()` in a forked child, whose process it may change for good: whether it returned true."""
    pid = os.fork()
    if pid == 0:
        try:
            ok = bool(test())
        except BaseException:  # noqa: BLE001 - whatever went wrong, the answer is no
            ok = False
        os._exit(0 if ok else 1)
    return os.waitpid(pid, 0)[1] == 0


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


def memory_cgroup() -> str | None:
    """A memory cgroup for this run's workers (root on Linux, where the host offers one), or None.

    Under it each worker makes its own, with the memory limit, so that everything it uses counts: RLIMIT_AS
    counts only address space, and a file in a tmpfs or a memfd written but never mapped escapes it. Removed
    by `remove_cgroup` once the workers are gone.
    """
    if sys.platform != "linux" or getattr(os, "geteuid", lambda: -1)() != 0:
        return None
    try:
        own = dict(line.strip().split(":", 2)[1:] for line in open("/proc/self/cgroup") if line.count(":") >= 2)
    except OSError:
        return None
    bases = []
    if "memory" in own:  # cgroup v1: the memory hierarchy
        bases.append("/sys/fs/cgroup/memory" + own["memory"])
    if "" in own and os.path.exists("/sys/fs/cgroup/cgroup.subtree_control"):  # cgroup v2, where it is the root
        bases.append("/sys/fs/cgroup" + own[""])
    for base in bases:
        run = os.path.join(base, f"autograder-{os.getpid()}")
        try:
            os.makedirs(run, exist_ok=True)
            if os.path.exists(os.path.join(run, "memory.limit_in_bytes")):
                return run
            with open(os.path.join(run, "cgroup.subtree_control"), "w") as f:
                f.write("+memory")  # v2: its children get memory.max
            return run
        except OSError:
            remove_cgroup(run)
    return None


def remove_cgroup(run: str | None) -> None:
    """Remove the run's cgroup and its workers' (all of their processes have ended)."""
    if not run or not os.path.isdir(run):
        return
    for entry in os.scandir(run):
        if entry.is_dir(follow_symlinks=False):
            try:
                os.rmdir(entry.path)
            except OSError:
                pass
    try:
        os.rmdir(run)
    except OSError:
        pass
