"""How a worker shuts itself in before it runs learner code: the isolation levels, applied.

The trusted side picks the level (`grading.isolation`); the worker applies it
here, in its own process, before the first line of learner code.

`sandbox` (the grader runs as root on Linux, with bubblewrap: CI, GitHub's
runners under sudo, a grading server). The worker, or the zygote it is
forked from, was started inside bubblewrap (`grading.isolation.sandbox_command`):
it sees the system's programs and libraries, the interpreter's folders and its
own package, read-only, and nothing else of the host's files. Here each worker
adds what bubblewrap cannot give the forks of one zygote: its own PID, mount,
network and IPC namespaces, a private `/tmp` and `/dev/shm`, its own `/proc`;
then it becomes a user of its own (a uid no other process has) with no groups,
no capabilities and no way to gain privileges, nor to make a user namespace of
its own (a seccomp filter). It may not start processes or threads (RLIMIT_NPROC
1 for its uid), so the memory cap covers its whole tree, and it is PID 1 of its
namespace: when the grader kills it, everything it started dies with it.

`user` (root on Linux, but the system forbids new namespaces: some
containers). As `sandbox` without the namespaces: its own uid, no processes or
threads, the limits; the grader's files are protected only by their
permissions.

`processes` (no root: a learner's laptop, macOS, Windows). The same split
between the grader and the worker, with the time limits, the memory cap where
the system enforces one (Linux), and a process group of its own where there
are process groups (POSIX), killed with the check; but the worker runs as the
learner's user.

Every Linux-only call (`prctl`, `unshare`, `mount`, `RLIMIT_*`) stays behind a
check of the platform or of the call's presence: macOS and Windows reach only
what they have.
"""

from __future__ import annotations

import os
import signal
import sys

from autograder.worker.wire import Level

LINUX = sys.platform == "linux"
HAS_GROUPS = hasattr(os, "setpgid") and hasattr(os, "killpg")  # POSIX process groups (not Windows)
CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUSER = 0x20000000, 0x40000000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 1, 2, 4, 8, 32, 0x1000
MS_REC, MS_PRIVATE, MNT_DETACH = 0x4000, 0x40000, 2
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS, PR_SET_CHILD_SUBREAPER = 1, 38, 36
FIRST_SANDBOX_UID = 200_000  # far above any real account; a worker's uid adds its forking process's pid (unique)
PRIVATE_TMP = ("/tmp", "/var/tmp", "/dev/shm")


def libc():
    """The C library, for the calls Python 3.11 lacks (Linux only: macOS's has no prctl, unshare or mount)."""
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def die_with_parent() -> None:
    """Linux: this process is killed when the one that started it ends. Elsewhere the grader's kill is the only way."""
    if LINUX and hasattr(signal, "SIGKILL"):
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def enter_namespaces() -> None:
    """Before the worker's fork: its child will be PID 1 of a new PID namespace, with new mount and network ones."""
    _check(libc().unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")


def shut_in(level: Level, memory_mb: int, uid: int, file_mb: int = 16, cgroup: str | None = None) -> None:
    """In the worker, before any learner code: apply the level's walls. Irreversible."""
    die_with_parent()
    if cgroup and memory_mb:  # a memory limit that counts everything: memfd and tmpfs files too
        join_memory_cgroup(cgroup, f"w{uid}", memory_mb)
    if level.namespaces:
        _private_mounts(cgroup)
    elif level.process_group and HAS_GROUPS and os.getpgid(0) != os.getpid():
        os.setpgid(0, 0)  # a group of its own, killed with the check (a spawned worker leads one already)
    _limits(level, memory_mb, file_mb)
    if level.own_user:
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
        libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        forbid_user_namespaces()
    # a folder it may not write to: its own /tmp at `sandbox`; at `user` there may be no folder it can write at all
    os.chdir("/tmp" if level.namespaces else "/" if level.own_user else _scratch())


def forbid_user_namespaces() -> bool:
    """Linux: no new user namespace from here on, so no way to be root in one (and mount a tmpfs, say).

    A seccomp filter, compiled by libseccomp (the library Docker, systemd and
    bubblewrap use): `unshare` and `clone` with CLONE_NEWUSER fail with EPERM;
    `clone3`, whose flags a filter cannot read, fails with ENOSYS, and the C
    library then falls back to `clone`, as under Docker's default profile.
    Returns False where libseccomp is missing (`doctor` says so).
    """
    import ctypes
    import errno

    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return False

    class ArgCmp(ctypes.Structure):  # struct scmp_arg_cmp
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]

    allow, masked_eq = 0x7FFF0000, 7  # SCMP_ACT_ALLOW, SCMP_CMP_MASKED_EQ

    def fail_with(code: int) -> ctypes.c_uint32:  # SCMP_ACT_ERRNO(code)
        return ctypes.c_uint32(0x00050000 | code)

    def done(result: int, what: str) -> None:  # libseccomp returns -errno
        if result < 0:
            raise OSError(-result, f"{what}: {os.strerror(-result)}")

    lib.seccomp_init.restype = ctypes.c_void_p
    ctx = ctypes.c_void_p(lib.seccomp_init(ctypes.c_uint32(allow)))
    if not ctx.value:
        raise OSError("seccomp_init failed")
    try:
        clone_flags = 1 if os.uname().machine.startswith("s390") else 0  # where clone() takes its flags
        for call, arg in (("unshare", 0), ("clone", clone_flags)):
            newuser = ArgCmp(arg, masked_eq, CLONE_NEWUSER, CLONE_NEWUSER)
            number = lib.seccomp_syscall_resolve_name(call.encode())
            done(lib.seccomp_rule_add_array(ctx, fail_with(errno.EPERM), number, 1, ctypes.byref(newuser)), call)
        number = lib.seccomp_syscall_resolve_name(b"clone3")
        if number >= 0:  # a libseccomp older than clone3 knows no such call: nothing to close
            done(lib.seccomp_rule_add_array(ctx, fail_with(errno.ENOSYS), number, 0, None), "clone3")
        done(lib.seccomp_load(ctx), "seccomp_load")
    finally:
        lib.seccomp_release(ctx)
    return True


def join_memory_cgroup(run: str, name: str, memory_mb: int) -> None:
    """Move this process into a memory cgroup of its own under the run's (`grading.isolation.memory_cgroup`)."""
    folder = os.path.join(run, name)
    os.mkdir(folder)
    limit = str(memory_mb << 20)
    v1 = os.path.exists(os.path.join(folder, "memory.limit_in_bytes"))
    files = ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes") if v1 else ("memory.max", "memory.swap.max")
    for file, value in zip(files, (limit, limit if v1 else "0"), strict=True):
        path = os.path.join(folder, file)
        if os.path.exists(path) or file == files[0]:
            with open(path, "w") as f:
                f.write(value)
    with open(os.path.join(folder, "cgroup.procs"), "w") as f:
        f.write("0")  # this process, whatever its number in its own PID namespace


def _scratch() -> str:
    import tempfile

    return tempfile.gettempdir()


def _limits(level: Level, memory_mb: int, file_mb: int) -> None:
    try:
        import resource
    except ImportError:  # Windows: the grader's deadline is the only limit
        return
    if memory_mb and LINUX and hasattr(resource, "RLIMIT_AS"):  # macOS does not enforce RLIMIT_AS
        limit = memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    for name, value in (("RLIMIT_CORE", 0), ("RLIMIT_FSIZE", file_mb << 20)):
        if hasattr(resource, name):
            resource.setrlimit(getattr(resource, name), (value, value))
    if level.own_user:
        resource.setrlimit(resource.RLIMIT_NPROC, (1, 1))


def _private_mounts(cgroup: str | None) -> None:
    """In bubblewrap's file system, what is this worker's alone: `/tmp`, `/dev/shm` and `/proc`; the cgroups gone."""
    c = libc()
    _check(c.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
    if cgroup:  # joined already: the grader's cgroups, bound in for that, are nobody's business now
        _check(c.umount2(os.path.dirname(cgroup).encode(), MNT_DETACH), "unmount the cgroups")
    # opened before /tmp is covered: an interpreter's folder under /tmp (a venv there, say) is bound back from these
    interpreter = {p: os.open(p, os.O_PATH | os.O_DIRECTORY) for p in interpreter_paths() if under(p, PRIVATE_TMP)}
    for folder in PRIVATE_TMP:
        if os.path.isdir(folder):
            options = b"size=64m,mode=1777"
            _check(c.mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"private {folder}")
    for path, fd in sorted(interpreter.items()):
        os.makedirs(path, exist_ok=True)
        _check(c.mount(f"/proc/self/fd/{fd}".encode(), path.encode(), None, MS_BIND | MS_REC, None), f"bind {path}")
        flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV
        _check(c.mount(None, path.encode(), None, flags, None), f"read-only {path}")
        os.close(fd)
    # its own /proc: the processes of its PID namespace only (the host's showed every grader's command line)
    _check(c.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")


def under(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    """Whether `path` is one of `folders` or lies inside one."""
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def interpreter_paths() -> list[str]:
    """The folders Python imports from: they must stay readable for the worker's user, wherever they are."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sys.path if p)}
    return sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
