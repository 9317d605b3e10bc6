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
learner's user. It may start processes: on Linux they stay below it (it is
their "subreaper"), where the grader counts their CPU time with its own. As
root (`--isolation processes`, or no bubblewrap), the worker still becomes a
user of its own, as at `user`: no learner code ever runs as root.

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
    if level.process_group and LINUX:  # what it starts stays below it, orphans too: the grader counts their CPU time
        libc().prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    _limits(level, memory_mb, file_mb)
    # a folder it may not write to: its own /tmp at `sandbox`; at `user` there may be no folder it can write at all
    folder = "/tmp" if level.namespaces else "/" if level.own_user else _scratch()
    if level.own_user or as_root():  # `processes` as root: no learner code runs as root either
        become(uid)
    if level.own_user:
        allow_only_what_workers_need()
    os.chdir(folder)


def as_root() -> bool:
    """Whether this process runs as root (POSIX)."""
    return getattr(os, "geteuid", lambda: -1)() == 0


def become(uid: int) -> None:
    """Become user and group `uid`, with no other group and no way to gain privileges again. Irreversible."""
    os.setgroups([])
    if hasattr(os, "setresuid"):
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    else:  # macOS: as root, these set the real, effective and saved ids all
        os.setgid(uid)
        os.setuid(uid)
    if LINUX:
        libc().prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # /proc/self/* stays root's (autogroup, comm), whatever the system
        libc().prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)


# The system calls a shut-in worker may make (`allow_only_what_workers_need`), by family. What workers called while
# grading the whole course (the reference, the stubs, mutants, a graded run; forked and spawned: `strace -f`, after
# each worker's `setresuid`), and what the C library and Python call instead on other kernels and versions (`statx`
# for `newfstatat`, `ppoll` for `pselect6`, ...) or on paths those runs did not take (a signal handler's return, a
# stack dump on SIGUSR1). Every other call fails with EPERM: new sockets, programs, processes in new namespaces,
# System V and POSIX IPC, keyrings, io_uring, ptrace, perf events, BPF, mounts, user and group changes, file locks.
SYSCALLS = {
    "files it has or opens": (
        "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
        "lseek", "close", "close_range", "open", "openat", "openat2", "creat", "stat", "fstat", "lstat",
        "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat", "faccessat2", "getdents", "getdents64",
        "readlink", "readlinkat", "getcwd", "chdir", "fchdir", "dup", "dup2", "dup3", "pipe", "pipe2",
        "fsync", "fdatasync", "ftruncate", "fadvise64", "unlink", "unlinkat", "mkdir", "mkdirat", "rmdir",
        "rename", "renameat", "renameat2", "umask", "fchmod", "utimensat", "sendfile", "copy_file_range",
        "memfd_create",
    ),
    "memory": (
        "brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "mincore", "msync", "mbind", "get_mempolicy",
        "set_mempolicy", "membarrier",
    ),
    "time": (
        "clock_gettime", "clock_getres", "clock_nanosleep", "nanosleep", "gettimeofday", "time", "setitimer",
        "getitimer", "alarm", "times",
    ),
    "signals": (
        "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
        "sigaltstack", "restart_syscall", "pause", "kill", "tgkill", "tkill",
    ),
    "itself": (
        "getpid", "getppid", "gettid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid",
        "getgroups", "getpgid", "getpgrp", "getsid", "getpriority", "setpriority", "uname", "sysinfo", "getrlimit",
        "prlimit64", "getrusage", "sched_getaffinity", "sched_yield", "sched_getparam", "sched_getscheduler",
        "getcpu", "getrandom", "arch_prctl", "set_tid_address", "set_robust_list", "get_robust_list",
        "rseq", "futex", "futex_waitv", "exit", "exit_group", "wait4", "waitid",
    ),
    "the socket it was given": (
        "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockopt", "setsockopt", "getsockname",
        "getpeername", "poll", "ppoll", "select", "pselect6", "epoll_create1", "epoll_ctl", "epoll_wait",
        "epoll_pwait",
    ),
}  # fmt: skip
NAMESPACE_FLAGS = CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWUSER | 0x02000000
PR_SET_DUMPABLE = 4
# Calls allowed only for some values of one argument: (call, the argument's position, where the values are named,
# their names). Each value is matched on all 64 bits of the argument, where the kernel reads 32 (a value a
# denylist refuses would pass it with high bits set). Left out: what workers could pass data to each other
# through, or signal each other by: a lock on a file they all read (`fcntl`'s record and open-file locks and
# leases; `flock` is not in `SYSCALLS` either), a pty pair (unlocking its other end, TIOCSPTLCK; TIOCSTI, which
# types into a terminal), /proc/self/* made its own (PR_SET_DUMPABLE: /proc/self/autogroup renices the whole
# session) and a new name (PR_SET_NAME, which every user reads in /proc at `user`).
ARGUMENTS = (
    ("fcntl", 1, "fcntl", "F_DUPFD F_DUPFD_CLOEXEC F_GETFD F_SETFD F_GETFL F_SETFL F_GETPIPE_SZ F_SETPIPE_SZ"),
    ("fcntl", 1, "fcntl", "F_ADD_SEALS F_GET_SEALS"),  # on a memfd of its own
    ("fcntl64", 1, "fcntl", "F_DUPFD F_DUPFD_CLOEXEC F_GETFD F_SETFD F_GETFL F_SETFL"),
    ("ioctl", 1, "termios", "TCGETS TIOCGWINSZ FIONREAD FIONBIO FIOCLEX FIONCLEX"),  # isatty, sizes, blocking
    # PR_GET_PDEATHSIG, _DUMPABLE, _NAME, _SECCOMP, PR_CAPBSET_READ, PR_GET_TIMERSLACK, _NO_NEW_PRIVS,
    # _THP_DISABLE: what it may ask of itself; PR_SET_VMA: the C library names a map of its own
    ("prctl", 0, "", "2 3 16 21 23 30 39 42 0x53564d41"),
)


def _values(module: str, names: str) -> list[int]:
    """The values `names` stand for: numbers, or constants of `module` (those this platform's Python knows)."""
    if not module:
        return [int(name, 0) for name in names.split()]
    import importlib

    found = importlib.import_module(module)
    return sorted({getattr(found, name) for name in names.split() if hasattr(found, name)})


def allow_only_what_workers_need() -> bool:
    """Linux: from here on, only the system calls of `SYSCALLS` succeed; every other one fails with EPERM.

    A seccomp filter, compiled by libseccomp (the library Docker, systemd and bubblewrap use), whose default
    action refuses. Some calls are allowed with a condition on their arguments: `clone` without a namespace flag
    (and RLIMIT_NPROC refuses a new process anyway), and `fcntl`, `ioctl` and `prctl` for the requests of
    `ARGUMENTS` only. `clone3`, whose flags a filter cannot read, fails with ENOSYS, and the C library then falls
    back to `clone`, as under Docker's default profile. Returns False where libseccomp is missing (`doctor` says so).
    """
    import ctypes
    import errno

    try:
        lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    except OSError:
        return False

    class ArgCmp(ctypes.Structure):  # struct scmp_arg_cmp
        _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int), ("a", ctypes.c_uint64), ("b", ctypes.c_uint64)]

    allow, equal, masked_eq = ctypes.c_uint32(0x7FFF0000), 4, 7  # SCMP_ACT_ALLOW, SCMP_CMP_EQ, SCMP_CMP_MASKED_EQ

    def fail_with(code: int) -> ctypes.c_uint32:  # SCMP_ACT_ERRNO(code)
        return ctypes.c_uint32(0x00050000 | code)

    def done(result: int, what: str) -> None:  # libseccomp returns -errno
        if result < 0:
            raise OSError(-result, f"{what}: {os.strerror(-result)}")

    def rule(action, call: str, *conditions: ArgCmp) -> None:
        number = lib.seccomp_syscall_resolve_name(call.encode())
        if number < 0:  # not a call of this architecture (or of this libseccomp): nothing to allow
            return
        array = (ArgCmp * len(conditions))(*conditions) if conditions else None
        done(lib.seccomp_rule_add_array(ctx, action, number, len(conditions), array), call)

    lib.seccomp_init.restype = ctypes.c_void_p
    ctx = ctypes.c_void_p(lib.seccomp_init(fail_with(errno.EPERM)))
    if not ctx.value:
        raise OSError("seccomp_init failed")
    try:
        for call in (call for family in SYSCALLS.values() for call in family):
            rule(allow, call)
        clone_flags = 1 if os.uname().machine.startswith("s390") else 0  # where clone() takes its flags
        rule(allow, "clone", ArgCmp(clone_flags, masked_eq, NAMESPACE_FLAGS, 0))
        for call, position, module, names in ARGUMENTS:
            for value in _values(module, names):
                rule(allow, call, ArgCmp(position, equal, value, 0))
        rule(fail_with(errno.ENOSYS), "clone3")
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
    # no pty: bubblewrap's devpts is one for every worker of a zygote, and a pty pair one worker made, whose other
    # end it opened to all, carries data to another (/dev/ptmx, which points into it, then leads nowhere)
    if os.path.ismount("/dev/pts"):
        _check(c.umount2(b"/dev/pts", MNT_DETACH), "unmount /dev/pts")
    # its own /proc: the processes of its PID namespace only (the host's showed every grader's command line)
    _check(c.mount(b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None), "mount /proc")


def under(path: str, folders: list[str] | tuple[str, ...]) -> bool:
    """Whether `path` is one of `folders` or lies inside one."""
    return any(path == f or path.startswith(f.rstrip(os.sep) + os.sep) for f in folders)


def interpreter_paths() -> list[str]:
    """The folders Python imports from: they must stay readable for the worker's user, wherever they are."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, *(p for p in sys.path if p)}
    return sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
