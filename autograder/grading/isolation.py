"""Which isolation level a run can have, and what its workers must not see (the trusted side's decisions).

The levels themselves are applied by the worker (`autograder.worker.sandbox`);
here the grader finds the strongest one this machine allows, or refuses a
level it was asked for that the machine cannot give, saying why.
"""

from __future__ import annotations

import os
import re
import sys

from autograder.worker import sandbox
from autograder.worker.wire import LEVELS, Level

_bubblewrap_says: str | None = None  # why `sandbox_command` fails here ('' if it works), once per process


def best_level() -> Level:
    """The strongest level this process can set up; RuntimeError, saying why, where there is none (root, with
    neither bubblewrap nor a Python that the workers' own users can reach)."""
    reasons = {level: why_not(level) for level in LEVELS}
    possible = [level for level in LEVELS if not reasons[level]]
    if not possible:
        why = "; ".join(f"{level}: {reason}" for level, reason in reasons.items())
        raise RuntimeError(f"no isolation level is possible here ({why})")
    return possible[0]


def why_not(level: Level | str) -> str:
    """Why this machine cannot give `level` ('' if it can): root where it needs it, and the level's own probe."""
    level = Level(level)
    if level.needs_root and (sys.platform != "linux" or getattr(os, "geteuid", lambda: -1)() != 0):
        return "it needs root on Linux"
    return PROBES[level]()


def _why_python_unreachable() -> str:
    """`user`: without a mount namespace, the worker's own user must be able to reach Python where it lives."""
    closed = sorted({a for p in sandbox.interpreter_paths() if (a := blocking_ancestor(p))})
    return f"Python lives under {closed[0]}, which other users may not enter" if closed else ""


def _why_not_processes() -> str:
    """`processes`: as root, each worker becomes a user of its own (`sandbox.shut_in`): no learner code runs as
    root, where it could leave the run's cgroup, outlive the run, and write the grader's caches. That user must
    reach Python too; elsewhere the level needs nothing."""
    if not sandbox.as_root():
        return ""
    unreachable = _why_python_unreachable()
    if not unreachable:
        return ""
    return (
        f"as root, its workers run as users of their own, and {unreachable}: grade as an ordinary user, or install "
        "Python where every user may read it, or install bubblewrap (`apt-get install bubblewrap`) for `sandbox`"
    )


def blocking_ancestor(path: str) -> str | None:
    """The outermost folder above `path` that other users may not enter (a home folder such as /root)."""
    parts = path.strip(os.sep).split(os.sep)
    for i in range(1, len(parts)):
        folder = os.sep + os.sep.join(parts[:i])
        if not os.stat(folder).st_mode & 0o001:
            return folder
    return None


def level_for(requested: str) -> Level:
    """The isolation level to use: the best this process can set up, unless a weaker one is asked for."""
    if requested == "auto":
        return best_level()
    reason = why_not(requested)
    if reason:
        raise RuntimeError(f"--isolation {requested} is not possible here: {reason}")
    return Level(requested)


def can_filter_syscalls() -> bool:
    """Whether a worker at `sandbox` or `user` shuts itself in to the system calls it needs here (tried in a child:
    a new user namespace and a new socket are refused)."""
    if sys.platform != "linux" or not hasattr(os, "fork"):
        return True  # no such calls to refuse: these systems have no such levels

    def shut_out() -> bool:
        import socket

        sandbox.libc().prctl(sandbox.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if not sandbox.allow_only_what_workers_need() or sandbox.libc().unshare(sandbox.CLONE_NEWUSER) == 0:
            return False
        try:
            socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        except PermissionError:
            return True
        return False

    return _in_a_child(shut_out)


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


def memory_cgroup(purpose: str = "") -> str | None:
    """A memory cgroup for this run's workers (root on Linux, where the host offers one), or None.

    `purpose`: another one of this process's, apart from the first (the reference's re-asks: "reference").

    Under it each worker makes its own, with the memory limit, so that everything it uses counts: RLIMIT_AS
    counts only address space, and a file in a tmpfs or a memfd written but never mapped escapes it. Removed
    by `remove_cgroup` once the workers are gone.
    """
    if sys.platform != "linux" or getattr(os, "geteuid", lambda: -1)() != 0:
        return None
    for base in memory_cgroup_bases():
        remove_cgroups_of_ended_graders(base)
        run = os.path.join(base, f"autograder-{os.getpid()}" + (f"-{purpose}" if purpose else ""))
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


def _kill_all(cgroup: str, patience: float = 5.0) -> None:
    """Kill every process of `cgroup` (`cgroup.kill` where the kernel has it, else each one in `cgroup.procs`) and
    wait until it is empty, for `patience` seconds at most."""
    import signal
    import time

    end = time.monotonic() + patience
    while time.monotonic() < end:
        try:
            with open(os.path.join(cgroup, "cgroup.procs")) as f:
                pids = [int(line) for line in f if line.strip()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        try:
            with open(os.path.join(cgroup, "cgroup.kill"), "w") as f:
                f.write("1")
        except OSError:
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
        time.sleep(0.02)


def remove_cgroup(run: str | None) -> None:
    """Kill whatever is left in the run's workers' cgroups (a daemon a worker started, which left its process
    group), then remove them and the run's: nothing a run starts outlives it."""
    if not run or not os.path.isdir(run):
        return
    for entry in os.scandir(run):
        if entry.is_dir(follow_symlinks=False):
            _kill_all(entry.path)
            try:
                os.rmdir(entry.path)
            except OSError:
                pass
    try:
        os.rmdir(run)
    except OSError:
        pass


CGROUP_NAME = re.compile(r"autograder-(\d+)(-[a-z]+)?")  # `memory_cgroup`'s: the grader's pid, what it is for


def remove_cgroups_of_ended_graders(base: str, pid: int | None = None) -> None:
    """The memory cgroups under `base` of graders that ended without removing them (killed from outside), with
    whatever is still in them; or, with `pid`, that grader's, once it has ended (batch, after a grader it stopped).

    A grader whose pid is alive keeps its own: a pid reused since is only a cgroup left for a later sweep.
    """
    try:
        entries = list(os.scandir(base))
    except OSError:
        return
    for entry in entries:
        match = CGROUP_NAME.fullmatch(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False) or (pid is not None and int(match[1]) != pid):
            continue
        try:
            os.kill(int(match[1]), 0)
            continue  # its grader runs
        except ProcessLookupError:
            remove_cgroup(entry.path)
        except OSError:
            continue


def memory_cgroup_bases() -> list[str]:
    """Where `memory_cgroup` makes the runs' cgroups: this process's own memory cgroup (v1 and v2)."""
    try:
        own = dict(line.strip().split(":", 2)[1:] for line in open("/proc/self/cgroup") if line.count(":") >= 2)
    except OSError:
        return []
    bases = []
    if "memory" in own:  # cgroup v1: the memory hierarchy
        bases.append("/sys/fs/cgroup/memory" + own["memory"])
    if "" in own and os.path.exists("/sys/fs/cgroup/cgroup.subtree_control"):  # cgroup v2, where it is the root
        bases.append("/sys/fs/cgroup" + own[""])
    return bases


# --- the `sandbox` level's file system: bubblewrap's ------------------------------------------------------------------

SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # a program's own files (merged /usr or not)
LINKER = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")  # how libraries are found
# What a worker's setup needs of root (`sandbox.shut_in`): namespaces and mounts of its own, then its own user.
SETUP_CAPABILITIES = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID")


def sandbox_command(hidden: list[str], cgroup: str | None) -> list[str]:
    """The `bwrap` command that a `sandbox` run starts its zygotes (or spawned workers) under, up to the program.

    Bubblewrap builds the file system that the workers see: an empty root with the system's programs and
    libraries, the interpreter's folders and the worker's own package (`autograder/worker`), all read-only,
    and nothing else: no home, no repository, no `/run`, no `/var`, no submissions. Of the interpreter's
    folders, whatever is `hidden` inside them (an installed `solutions`, say) is covered. Its `/dev` has only
    the harmless devices; the environment is `launchers.worker_env`'s allowlist. No user namespace (a worker
    becomes a real user of its own) and no PID namespace (each worker makes its own, and the grader kills it
    by its pid): the zygote keeps just the capabilities that a worker's setup needs, and every worker drops
    them when it becomes its own user (`sandbox.shut_in`), which also gives it its own PID, mount, network
    and IPC namespaces, a private `/tmp` and `/dev/shm`, and its own `/proc`.
    """
    hidden = sorted({os.path.realpath(p) for p in hidden if p})
    system = [p for p in SYSTEM if os.path.isdir(p) and not os.path.islink(p)]
    command = ["bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-net", "--unshare-uts"]
    command += ["--cap-drop", "ALL", *(arg for cap in SETUP_CAPABILITIES for arg in ("--cap-add", cap))]
    for path in SYSTEM:
        if os.path.islink(path):
            command += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            command += ["--ro-bind", path, path]
    command += [arg for path in LINKER for arg in ("--ro-bind-try", path, path)]
    command += ["--proc", "/proc", "--dev", "/dev", "--dir", "/tmp"]
    folders = _interpreter_folders(hidden)
    package = os.path.dirname(os.path.dirname(os.path.abspath(sandbox.__file__)))  # autograder/: the worker's only
    worker_code = [os.path.join(package, part) for part in ("__init__.py", "worker")]
    # the folders above them, open to all (bubblewrap would copy a closed home's mode, and a worker is nobody)
    above = {a for p in [*folders, *worker_code] for a in _ancestors(os.path.dirname(p))} - {os.sep}
    for folder in sorted(a for a in above if not sandbox.under(a, [*SYSTEM, *folders])):
        command += ["--perms", "0755", "--dir", folder]
    for folder in folders:
        command += ["--ro-bind", folder, folder]
    # an installed grader or reference inside what is bound (site-packages, or /usr/local's), covered (read-only
    # once the worker's code, which may lie inside an installed grader, is bound back into it)
    shown = [*folders, *system]
    covered = [p for p in hidden if os.path.isdir(p) and any(_inside(p, folder) for folder in shown)]
    for path in hidden:
        if path in covered:
            command += ["--tmpfs", path]
        elif any(_inside(path, folder) for folder in shown):
            command += ["--ro-bind", os.devnull, path]
    for path in worker_code:
        command += ["--ro-bind", path, path]
    command += [arg for path in covered for arg in ("--remount-ro", path)]
    if cgroup:  # the grader's own cgroup, where each worker makes its own under the run's (then unmounts it)
        command += ["--bind", os.path.dirname(cgroup), os.path.dirname(cgroup)]
    return [*command, "--remount-ro", "/", "--chdir", "/", "--"]


def _interpreter_folders(hidden: list[str]) -> list[str]:
    """The interpreter's folders to bind: its prefixes always (a venv in the repository), the rest unless hidden."""
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    library_path = os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep)
    found = prefixes | {os.path.realpath(p) for p in library_path if p and os.path.isdir(p)}
    found |= {p for p in sandbox.interpreter_paths() if not sandbox.under(p, hidden)}
    found = {p for p in found if not sandbox.under(p, SYSTEM)}  # /usr is bound whole already
    return sorted(p for p in found if not any(_inside(p, other) for other in found))


def _ancestors(path: str) -> list[str]:
    """`path` and every folder above it: /a/b/c, /a/b, /a, /."""
    out = [path]
    while os.path.dirname(out[-1]) != out[-1]:
        out.append(os.path.dirname(out[-1]))
    return out


def _inside(path: str, folder: str) -> bool:
    return path.startswith(folder.rstrip(os.sep) + os.sep)


def _why_no_bubblewrap() -> str:
    """Why the `sandbox` level cannot start here: bubblewrap missing, or unable to build its sandbox ('' if it can).

    Tried once per process: bubblewrap's sandbox, with a worker's own namespaces made inside it.
    """
    global _bubblewrap_says
    if _bubblewrap_says is None:
        import shutil
        import subprocess

        if not shutil.which("bwrap"):
            _bubblewrap_says = "it needs bubblewrap (`bwrap`), which is not installed: `apt-get install bubblewrap`"
        else:
            flags = sandbox.CLONE_NEWNS | sandbox.CLONE_NEWPID | sandbox.CLONE_NEWNET | sandbox.CLONE_NEWIPC
            probe = f"import ctypes, sys; sys.exit(ctypes.CDLL(None).unshare({flags}))"
            command = [*sandbox_command([], None), sys.executable, "-S", "-c", probe]
            try:
                done = subprocess.run(command, capture_output=True, timeout=30, env={})
                said = done.stderr.decode(errors="replace").strip()[-300:] or f"exit status {done.returncode}"
                ok = done.returncode == 0
            except (OSError, subprocess.TimeoutExpired) as exc:
                ok, said = False, str(exc)
            _bubblewrap_says = "" if ok else f"bubblewrap cannot make its sandbox here (a container's default): {said}"
    return _bubblewrap_says


# What each level needs of this machine beyond root (`why_not`): a new level adds its probe here.
PROBES = {Level.SANDBOX: _why_no_bubblewrap, Level.USER: _why_python_unreachable, Level.PROCESSES: _why_not_processes}
