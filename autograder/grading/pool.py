"""The trusted side of the workers: one process per task, and calls into it that are a request and an answer.

Shape, chosen so that nothing races: nothing runs in the background. The
grader's one thread starts each task's worker early (`Pool.prepare`), writes
it its setup and its *plan* (the calls earlier runs made, in order), and goes
on collecting tests while the worker runs that plan ahead on its own. A call
(`Pool.call`) sends one request and reads one answer, with a deadline, on the
worker's socket, which only its `Worker` ever touches. An answer computed
ahead comes back at once; the worker sends it only for a request identical to
the planned one (it could answer anything anyway, so nothing is lost in
trust), and the grader checks that each answer carries the id of the request
it made.

How workers start, by platform (`start_method`):

- `fork` (Linux): a warm *zygote* per set of preloaded modules forks one
  worker per task; the grader makes the worker's socket pair itself and
  passes one end through the zygote, so it holds its end from the start.
- `spawn` (macOS and Windows by default, anywhere on request): a fresh
  interpreter per task, all started at once. On POSIX it inherits its socket;
  on Windows, which cannot pass a socket on a command line, it connects back
  over the loopback with a token it reads from stdin (`Listener`).

A call's time limit is CPU time (`Budget`): the worker's own CPU-time alarm stops learner code that used
its budget, and the grader, which reads the worker's CPU time where the system lets it, kills code that never
returns to Python once it has. Wall-clock time is only a backstop, `BACKSTOP` times the limit, for a call
that uses no CPU at all (it waits on something) or a machine too busy to run it: a call stopped there is
`WorkerGone` with `backstop` set, which the grader asks of the reference before it charges anyone.

A zygote forks only while it is single-threaded; one that refuses (`wire.REFUSED`) turns the pool to
spawning its workers, and `Pool.spawned_because` says why.

Failure is charged where it belongs. A worker that never comes up raises
`StartFailed` (the machine's problem, never the learner's); one that ends or
passes its deadline while running a call the grader asked for raises
`WorkerGone`; one that may have been running a planned call nobody asked for
yet, or that ended while idle, raises `Diverged`: the grader asks a fresh
worker, with no plan, so a learner is charged only for what a plain run
would charge.
"""

from __future__ import annotations

import enum
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.grading import isolation
from autograder.grading.limits import BACKSTOP, ONE_THREAD
from autograder.worker import wire

START_TIMEOUT = 60.0  # seconds for a worker to come up (its zygote may be importing torch)
DUMP_GRACE = 0.5  # seconds a worker past its deadline has to say where it is before it is killed
# a frame line of a worker's stack dump (what its code may have written itself: a line number Python can convert)
STACK_LINE = re.compile(rb'^  File "(.*)", line (\d{1,9}) in (.*)$', re.MULTILINE)


def _has_fcntl() -> bool:
    try:
        import fcntl  # noqa: F401  (Windows has none)
    except ImportError:
        return False
    return True


POSIX_SOCKETS = os.name == "posix" and _has_fcntl()  # a child can inherit one


def start_method(requested: str = "auto") -> str:
    """`fork` only on Linux (macOS cannot fork safely once torch is loaded; Windows cannot fork): else `spawn`."""
    can_fork = sys.platform == "linux" and hasattr(os, "fork") and hasattr(socket, "send_fds")
    if requested == "fork" and not can_fork:
        raise RuntimeError("--workers fork works on Linux only; this system spawns workers")
    return "fork" if requested in ("auto", "fork") and can_fork else "spawn"


class StartFailed(Exception):
    """The grader's own worker process could not start (a broken install, say): no learner code has run.

    Its text is what went wrong, for `verdicts.start_failed` to word for the reader.
    """


class ForkRefused(Exception):
    """The zygote will not fork (it has threads): the pool spawns this worker, and every later one, instead."""


class Lost(enum.Enum):
    """How a worker failed a call, as the grader saw it (`verdicts` words it for the learner)."""

    ENDED = "ended without an answer"
    GARBLED = "sent something that is not an answer"
    TIMED_OUT = "did not finish in time"


class WorkerGone(Exception):
    """The worker did not answer the call: `how` (it ended, sent nonsense or ran out of time), with a detail."""

    def __init__(self, how: Lost, detail: str = "", stack: list[tuple[str, int, str]] = (), backstop: bool = False):
        super().__init__(f"{how.value} ({detail})" if detail else how.value)
        self.how, self.detail = how, detail
        self.stack = list(stack)  # (file, line, function), innermost first: where a stopped worker was
        self.backstop = backstop  # stopped by the wall clock, with its CPU budget not (known to be) used up

    @property
    def timed_out(self) -> bool:
        return self.how is Lost.TIMED_OUT


class Diverged(WorkerGone):
    """This worker cannot fairly answer the request: ask a fresh one (with no plan)."""


class Budget:
    """A call's time: `limit` seconds of the worker's CPU time, and `BACKSTOP` times that of wall-clock time.

    `wait()` says how long to wait for the answer before looking again, and raises TimeoutError once the call
    is out of time (`stopped_by`: "cpu" or "backstop"). `cpu()` reads the worker's CPU time (None where the
    system does not tell): the CPU is looked at only once the wall clock says the budget could be used up.
    `cores`: how many of the worker's processes may run at once (1 where it can start none), which use the CPU
    that much faster than the clock; `start`: the CPU time to count from, if not `cpu()` now.
    """

    def __init__(self, limit: float, cpu=lambda: None, cores: int = 1, start: float | None = None):
        self.limit, self.cpu, self.cores = limit, cpu, cores
        self.start = time.monotonic()
        self.backstop = self.start + BACKSTOP * limit
        self.cpu_start = cpu() if start is None else start
        self.stopped_by = ""

    def used(self) -> float | None:
        now = self.cpu() if self.cpu_start is not None else None
        return None if now is None else now - self.cpu_start

    def wait(self) -> float:
        now = time.monotonic()
        if now >= self.backstop:
            self.stopped_by = "backstop"
            raise TimeoutError
        left = self.start + self.limit / self.cores - now  # nor can CPU time run faster than that
        if left > 0:
            return left
        used = self.used()
        if used is not None and used >= self.limit:
            self.stopped_by = "cpu"
            raise TimeoutError
        return min(self.backstop - now, max(0.05, self.limit - used) if used is not None else self.backstop - now)

    def overrun(self) -> bool:
        """Whether the call, answered, used more than its limit (processes of the worker's, side by side, can)."""
        if self.cores == 1 or time.monotonic() - self.start < self.limit / self.cores:
            return False
        used = self.used()
        return used is not None and used > self.limit


def cpu_seconds(pid: int, process: subprocess.Popen | None = None, tree: bool = False) -> float | None:
    """The CPU time (user and system) process `pid` has used so far, or None where this system does not say.

    `tree` (Linux): its children's too, those it has reaped and every process below it still there.
    """
    try:
        if sys.platform == "linux" and tree:
            return _tree_seconds(pid)
        if sys.platform == "linux":
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # after the command's name, which may hold spaces
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if os.name == "nt" and process is not None:
            return _windows_cpu(int(process._handle))
        if sys.platform == "darwin":
            said = subprocess.run(["ps", "-o", "time=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
            return _clock_seconds(said.stdout.strip())
    except (OSError, ValueError, IndexError, AttributeError, subprocess.SubprocessError):
        pass
    return None


def _tree_seconds(pid: int, reaped_only: bool = False) -> float | None:
    """Linux: the CPU time of `pid` and of its children it has reaped (`reaped_only`), or of every process below
    it too (all of /proc is read: done only for a call that has run as long as its time could be used up)."""
    below: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for entry in [str(pid)] if reaped_only else os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            below.setdefault(int(fields[1]), []).append(int(entry))
            used[int(entry)] = sum(int(field) for field in fields[11:15])  # its own, and its reaped children's
    if pid not in used:
        return None
    total, todo, seen = 0, [pid], set()
    while todo:
        process = todo.pop()
        if process not in seen:  # a pid taken again while /proc was read cannot make a loop
            seen.add(process)
            total += used.get(process, 0)
            todo.extend(() if reaped_only else below.get(process, ()))
    return total / os.sysconf("SC_CLK_TCK")


def _clock_seconds(text: str) -> float:
    """`ps`'s time, `[[dd-]hh:]mm:ss.ss`, in seconds."""
    days, _, clock = text.rpartition("-")
    seconds = 0.0
    for part in clock.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds + 86400 * int(days or 0)


def _windows_cpu(handle: int) -> float | None:
    import ctypes
    from ctypes import wintypes

    times = [wintypes.FILETIME() for _ in range(4)]  # creation, exit, kernel, user: in 100 ns steps
    if not ctypes.windll.kernel32.GetProcessTimes(wintypes.HANDLE(handle), *map(ctypes.byref, times)):
        return None
    return sum((t.dwHighDateTime << 32 | t.dwLowDateTime) for t in times[2:]) / 1e7


def stack_of(dump: bytes) -> list[tuple[str, int, str]]:
    """The frames of a `faulthandler` dump, innermost first."""
    return [(f.decode(errors="replace"), int(n), fn.decode(errors="replace")) for f, n, fn in STACK_LINE.findall(dump)]


def _tail(log, limit: int = 2000) -> str:
    """The end of what a process wrote to `log` (a file it had as stderr): its last error, usually."""
    if log is None:
        return "it ended without a word"
    log.seek(0)
    text = log.read().decode("utf-8", "replace").strip()
    return text[-limit:] or "it ended without a word"


class Worker:
    """One task's worker process, seen from the trusted side; the only owner of its socket.

    States: *starting* (no greeting yet) → *ready* (greeted and set up) → *dead*.
    Every method runs on the grader's thread; a call blocks until its answer
    or its deadline.
    """

    def __init__(self, task: str, planned: int, log=None, process: subprocess.Popen | None = None, own_log=True):
        self.task = task
        self.planned = planned  # how many calls the worker may run ahead of the grader
        self.own_log = own_log  # a spawned worker's own stderr, or its zygote's (which outlives it)
        self.relaunch: tuple | None = None  # a forked worker's (preload, setup, planned), to start it again
        self.retry = False  # its zygote had forked before: if it does not come up, the zygote may have died since
        self.calls = 0  # requests sent so far; each carries its number as its id
        self.sock: socket.socket | None = None
        self.pending = b""  # the start of the conversation, not yet written in full
        self.connect = None  # the loopback's way to get the socket, until the worker connects
        self.log, self.process = log, process  # a spawned worker's own Popen and its stderr until it is up
        self.pid = 0
        self.group = False
        self.ready = False
        self.dead = False
        self.tree = False  # it may start processes, whose CPU time counts with its own (`Pool._keep`)
        self.cores = 1  # how many of its processes may run at once

    # --- the conversation --------------------------------------------------------------------------------------------

    def attach(self, sock: socket.socket, first_frames: bytes) -> None:
        self.sock = sock
        self.pending = first_frames
        self.flush(wait=False)

    def flush(self, wait: bool) -> None:
        """Write what is still pending of the setup; without `wait`, only what fits now."""
        if self.sock is None or not self.pending or self.dead:
            return
        try:
            if wait:
                self.sock.settimeout(START_TIMEOUT)
                self.sock.sendall(self.pending)
                self.pending = b""
            else:
                self.sock.setblocking(False)
                self.pending = self.pending[self.sock.send(self.pending) :]
        except (BlockingIOError, InterruptedError):
            pass
        except OSError:
            self.pending = b""  # it is gone: reading says how

    def call(self, request: dict, limit: float) -> dict:
        """Send one request; return its answer, or raise (and kill the worker) if none comes in time."""
        if self.dead:
            raise Diverged(Lost.ENDED, "before this call")
        self.come_up()
        n = self.calls
        self._check_idle(ahead=n < self.planned)
        self.calls += 1
        may_run_ahead = n + 1 < self.planned  # a failure now may belong to a call nobody asked for yet
        try:
            self.sock.settimeout(limit)
            self.sock.sendall(wire.encode({**request, "id": n}))
        except OSError:
            self.kill()
            raise (Diverged if may_run_ahead else WorkerGone)(Lost.ENDED) from None
        budget = Budget(limit, self.cpu, self.cores, self._cpu_so_far())
        answer = self._read(budget, may_run_ahead)
        if budget.overrun():  # it answered, but its processes had used the call's time, side by side
            self.kill()
            raise (Diverged if may_run_ahead else WorkerGone)(Lost.TIMED_OUT, f"{limit:g} s of CPU time") from None
        if type(answer) is not dict or answer.get("id") != n:
            self.kill()
            raise (Diverged if may_run_ahead else WorkerGone)(Lost.GARBLED, "an answer nobody asked for")
        if answer.get("diverged") is True and n < self.planned:
            self.kill()
            raise Diverged(Lost.GARBLED, "it had run planned calls that this run did not make")
        try:
            answer = wire.check_answer(answer)
        except wire.WireError as exc:
            self.kill()
            raise WorkerGone(Lost.GARBLED, str(exc)) from None
        if "error" in answer and answer["error"]["kind"] == wire.ErrorKind.TIMED_OUT:
            self.kill()  # its task's later checks are skipped: nothing more to run here
        return answer

    def come_up(self) -> None:
        """Wait for the greeting (which pid to kill) and the setup's acknowledgement."""
        if self.ready:
            return
        deadline = time.monotonic() + START_TIMEOUT
        if self.sock is None:
            self.attach(*self.connect(deadline))
        self.flush(wait=True)
        try:
            greeting = self._frame(deadline)
            if type(greeting) is dict and type(greeting.get(wire.REFUSED)) is str:  # its zygote has threads
                self.kill()
                raise ForkRefused(greeting[wire.REFUSED][:500])
            if type(greeting) is dict and type(greeting.get("error")) is dict:  # no learner code has run yet
                raise wire.WireError(str(greeting["error"].get("message"))[:500])
            if type(greeting) is not dict or type(greeting.get("pid")) is not int or greeting["pid"] <= 0:
                raise wire.WireError(f"a greeting without a pid: {str(greeting)[:200]}")
            self.pid, self.group = greeting["pid"], greeting.get("group") is True
            setup = self._frame(deadline)
        except (wire.Closed, wire.WireError, OSError) as exc:
            if self.process is not None and isinstance(exc, wire.Closed):
                try:
                    self.process.wait(1)  # its last words reach the log
                except subprocess.TimeoutExpired:
                    pass
            said = _tail(self.log)
            self.kill()
            raise StartFailed(f"its worker for task {self.task} {_why(exc)}: {said}") from None
        if type(setup) is not dict or setup.get("ready") is not True:
            self.kill()
            detail = setup.get("error", {}).get("message", "") if type(setup) is dict else ""
            raise StartFailed(f"its worker for task {self.task} could not be set up: {detail}")
        self.ready = True
        self._close_log()

    def _check_idle(self, ahead: bool) -> None:
        """Before a request: a worker that ended while idle never started it; bytes waiting are nobody's answer.

        Bytes written while the worker ran planned calls `ahead` may come from a call this run never makes:
        then a fresh worker, with no plan, decides.
        """
        if not select.select([self.sock], [], [], 0)[0]:  # a look, without waiting
            return
        try:
            self.sock.setblocking(False)
            data = self.sock.recv(1)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        self.kill()
        if not data:
            raise Diverged(Lost.ENDED, "before this call")
        raise (Diverged if ahead else WorkerGone)(Lost.GARBLED, "an answer nobody asked for")

    def cpu(self) -> float | None:
        """The CPU time the worker process has used so far (None where this system does not say); where it may start
        processes, theirs too (Linux)."""
        return cpu_seconds(self.pid, self.process, tree=self.tree) if self.pid else None

    def _cpu_so_far(self) -> float | None:
        """What a call's CPU time counts from: where the worker may start processes, its own and its reaped
        children's only (a process still running from an earlier call counts whole against this one)."""
        if self.tree and self.pid:
            try:
                return _tree_seconds(self.pid, reaped_only=True)
            except (OSError, ValueError, IndexError):
                return None
        return None

    def _read(self, budget: Budget, may_run_ahead: bool) -> object:
        """The answer to the request just sent, within `budget`; past it, ask where the worker is, then kill it."""
        try:
            return self._frame(budget.wait)
        except TimeoutError:
            used = budget.used()  # while it is still there to be read
            stack = self._where()
            self.kill()
            if may_run_ahead:
                raise Diverged(Lost.TIMED_OUT, "busy with a planned call") from None
            if budget.stopped_by == "backstop":
                spent = f", {used:.1f} s of it computing" if used is not None else ""
                detail = f"no answer after {BACKSTOP * budget.limit:g} s{spent}"
                raise WorkerGone(Lost.TIMED_OUT, detail, stack, backstop=True) from None
            raise WorkerGone(Lost.TIMED_OUT, f"{budget.limit:g} s of CPU time", stack) from None
        except wire.Closed:
            self.kill()
            raise (Diverged if may_run_ahead else WorkerGone)(Lost.ENDED) from None
        except (wire.WireError, OSError) as exc:
            self.kill()
            raise WorkerGone(Lost.GARBLED, str(exc)) from None

    def _frame(self, wait) -> object:
        """The next frame; `wait`: an absolute deadline, or a function that says how long to wait (see `Budget`)."""
        if not callable(wait):
            wait = _until(wait)
        header = self._recv(wire.HEADER.size, wait)
        size = wire.HEADER.unpack(header)[0]
        if size > wire.MAX_FRAME:
            raise wire.WireError(f"an answer of {size} bytes (the limit is {wire.MAX_FRAME})")
        return wire.decode(self._recv(size, wait))

    def _recv(self, size: int, wait) -> bytes:
        """Exactly `size` bytes before `wait()` raises TimeoutError, however slowly they trickle in."""
        chunks, missing = [], size
        while missing:
            self.sock.settimeout(wait())
            try:
                chunk = self.sock.recv(min(missing, 1 << 20))
            except TimeoutError:
                continue  # `wait` decides whether the time is up
            except ConnectionResetError:  # it died with our request unread: ended, like any other end
                chunk = b""
            if not chunk:
                raise wire.Closed("end of stream")
            chunks.append(chunk)
            missing -= len(chunk)
        return b"".join(chunks)

    def _where(self) -> list[tuple[str, int, str]]:
        """Past its deadline: its stack, from the faulthandler it registered on SIGUSR1 (POSIX only)."""
        if not self.pid or not hasattr(signal, "SIGUSR1"):
            return []
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except OSError:
            return []
        dump, end = b"", time.monotonic() + DUMP_GRACE
        try:
            while (left := end - time.monotonic()) > 0 and len(dump) < 1 << 16:
                self.sock.settimeout(left)
                chunk = self.sock.recv(1 << 16)
                if not chunk:
                    break
                dump += chunk
                end = min(end, time.monotonic() + 0.05)  # the rest comes within a moment
        except OSError:
            pass
        return stack_of(dump)

    # --- the end -----------------------------------------------------------------------------------------------------

    def kill(self) -> None:
        """Kill the process and everything it started (its group, or its PID namespace); return once it is gone."""
        if self.dead:
            return
        self.dead = True
        if self.pid:  # what it greeted with: its group, or the PID 1 of its namespace
            _kill(self.pid, self.group)
        if self.process is not None:  # spawned: our own child
            self.process.kill()
            try:
                self.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        elif self.pid:
            _wait_gone(self.pid)
        if self.sock is not None:
            self.sock.close()
        self._close_log()

    def _close_log(self) -> None:
        if self.log is not None and self.own_log:
            self.log.close()
        self.log = None

    def finish(self, deadline: float) -> None:
        """At the end of the run: learn its pid if it has come up meanwhile (by `deadline`), then kill it."""
        if not self.dead and not self.pid and self.sock is not None and self.process is None:
            try:
                greeting = self._frame(deadline)
                self.pid = greeting["pid"] if type(greeting) is dict and type(greeting.get("pid")) is int else 0
            except (TimeoutError, wire.Closed, wire.WireError, OSError):
                pass  # it has run nothing of the learner's: it ends when it finds its socket closed
        self.kill()


def _until(deadline: float):
    """A `wait` for `Worker._frame`: the seconds left until `deadline`, then TimeoutError."""

    def wait() -> float:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        return left

    return wait


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"did not come up within {START_TIMEOUT:g} s"
    if isinstance(exc, wire.Closed):
        return "ended as it started"
    return f"failed as it started ({exc})"


def _kill(pid: int, group: bool) -> None:
    try:
        if group and hasattr(os, "killpg"):
            os.killpg(pid, signal.SIGKILL)
        else:  # PID 1 of its namespace: the kernel kills all the rest. Windows: SIGTERM is TerminateProcess
            os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    except (ProcessLookupError, PermissionError, OSError):
        pass


def _wait_gone(pid: int, timeout: float = 5.0) -> None:
    """Return once `pid` has exited (it is not our child, so poll its pidfd, or /proc)."""
    if hasattr(os, "pidfd_open"):
        try:
            fd = os.pidfd_open(pid)
        except OSError:
            return
        try:
            select.select([fd], [], [], timeout)
        finally:
            os.close(fd)
        return
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.01)


# --- how workers start -----------------------------------------------------------------------------------------------


def python() -> list[str]:
    """How a worker process starts: without `site` (-S), whose work the grader has done already.

    `site` reads every .pth file of every package folder on each start: with a worker per task, spawned,
    that is most of a worker's start-up. The grader hands its own `sys.path` over instead (`worker_env`),
    and the worker imports `sitecustomize` itself, as `site` would.
    """
    return [sys.executable, "-S", "-m", "autograder.worker"]


# What a worker keeps of the grader's environment: what Python and its libraries need to start and find their
# files, nothing else (a token or a password in an instructor's or a container's environment stays out of reach).
KEPT_ENV = {
    "PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "DYLD_FALLBACK_LIBRARY_PATH", "HOME", "USERPROFILE",
    "SYSTEMROOT", "SYSTEMDRIVE", "WINDIR", "COMSPEC", "PATHEXT", "TEMP", "TMP", "TMPDIR", "LANG", "LANGUAGE",
    "LC_ALL", "LC_CTYPE", "PYTHONIOENCODING", "PYTHONUTF8", "VIRTUAL_ENV", "CONDA_PREFIX",
}  # fmt: skip


def worker_env() -> dict:
    """The workers' environment: a few of the grader's variables (`KEPT_ENV`), importing this very `autograder`."""
    env = {k: v for k, v in os.environ.items() if k.upper() in KEPT_ENV}
    # the workers import the very `autograder` this process runs, whatever the install says (a moved checkout)
    package_root = str(Path(__file__).resolve().parents[2])
    folders = [package_root, *(p for p in sys.path if p and os.path.isdir(p))]
    path = os.pathsep.join(dict.fromkeys(folders))  # PYTHONPATH's own entries are on sys.path already
    return {**env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", **ONE_THREAD}


class Zygote:
    """A warm process that forks workers (`python -m autograder.worker zygote`), with some modules imported."""

    def __init__(self, preload: tuple[str, ...], cwd: str, sandbox: tuple[str, ...] = ()):
        mine, theirs = socket.socketpair()
        # the zygote's own errors only: a forked worker points its stderr at /dev/null before any learner code runs
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [*sandbox, *python(), "zygote", str(theirs.fileno()), *preload],
            pass_fds=(theirs.fileno(),),
            cwd=cwd,
            env=worker_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
            start_new_session=True,  # a scheduling group of its own: its workers may renice theirs, no one else's
        )
        theirs.close()
        self.ctrl = mine
        self.forked = 0  # workers asked of it so far

    @property
    def usable(self) -> bool:
        return self.process.poll() is None and self.ctrl.fileno() != -1

    def fork(self, options: dict) -> socket.socket:
        """A new worker's socket: the grader keeps one end, the zygote forks a worker on the other."""
        grader_end, worker_end = socket.socketpair()
        frame = wire.encode(options)
        try:
            socket.send_fds(self.ctrl, [frame[: wire.HEADER.size]], [worker_end.fileno()])
            self.ctrl.sendall(frame[wire.HEADER.size :])
        except OSError:
            self.ctrl.close()  # a dead zygote: the worker's end closes below, so its greeting reads "ended"
        worker_end.close()
        return grader_end

    def close(self) -> None:
        self.ctrl.close()
        self.process.kill()  # it holds nothing to save, and torch's clean exit alone takes a tenth of a second
        self.process.wait()
        self.log.close()


class Zygotes:
    """The zygotes, one per set of preloaded modules: the tasks that need torch do not make the others wait for it.

    One grading run owns its own; a caller that grades again and again (watch mode) keeps one `Zygotes` and
    passes it to every run, and closes it when it is done. A zygote holds no learner code and no expected values.
    At `sandbox` each runs inside bubblewrap (`sandbox`: the command it starts under), so it is kept per command.
    """

    def __init__(self):
        self._zygotes: dict[tuple[tuple[str, ...], tuple[str, ...]], Zygote] = {}
        self._cwd = tempfile.mkdtemp(prefix="autograder-zygote-")
        self.refused = ""  # why a zygote would not fork: later runs that share these zygotes spawn at once

    def get(self, preload: tuple[str, ...], sandbox: tuple[str, ...] = ()) -> Zygote:
        """A running zygote with `preload` imported, started under `sandbox`; a dead one is replaced."""
        zygote = self._zygotes.get((preload, sandbox))
        if zygote is None or not zygote.usable:
            if zygote is not None:
                zygote.close()
            zygote = self._zygotes[preload, sandbox] = Zygote(preload, self._cwd, sandbox)
        return zygote

    def discard(self, preload: tuple[str, ...], sandbox: tuple[str, ...] = ()) -> None:
        zygote = self._zygotes.pop((preload, sandbox), None)
        if zygote is not None:
            zygote.close()

    def close(self) -> None:
        for zygote in self._zygotes.values():
            zygote.close()
        self._zygotes.clear()
        try:
            os.rmdir(self._cwd)
        except OSError:
            pass


class Listener:
    """The loopback for spawned workers that cannot inherit a socket (Windows): each proves itself with a token.

    Connections are read side by side, without blocking, so a stray one (or
    one that says nothing) costs nothing but its own socket.
    """

    TOKEN_BYTES = 33  # 32 hex digits and a newline

    def __init__(self):
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.setblocking(False)
        self.port = self.server.getsockname()[1]
        self.arrived: dict[bytes, socket.socket] = {}  # token -> its connection, for workers not yet asked for
        self.unproven: dict[socket.socket, bytes] = {}

    def wait_for(self, token: bytes, deadline: float) -> socket.socket:
        while token not in self.arrived:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready = select.select([self.server, *self.unproven], [], [], left)[0]
            for sock in ready:
                if sock is self.server:
                    self._accept()
                else:
                    self._read(sock)
        return self.arrived.pop(token)

    def _accept(self) -> None:
        try:
            conn, _ = self.server.accept()
        except (BlockingIOError, InterruptedError):
            return
        conn.setblocking(False)
        self.unproven[conn] = b""

    def _read(self, conn: socket.socket) -> None:
        try:
            chunk = conn.recv(self.TOKEN_BYTES - len(self.unproven[conn]))
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        line = self.unproven[conn] + chunk
        if chunk and len(line) < self.TOKEN_BYTES:
            self.unproven[conn] = line
            return
        del self.unproven[conn]
        if chunk and line.endswith(b"\n"):
            self.arrived[line[:-1]] = conn  # a token nobody expects is never asked for, and closed at the end
        else:
            conn.close()  # not one of ours

    def close(self) -> None:
        for conn in [*self.arrived.values(), *self.unproven]:
            conn.close()
        self.server.close()


class ForkLauncher:
    """Linux: a zygote per set of preloaded modules forks the worker (`python -m autograder.worker zygote`).

    The grader makes the worker's socket pair and passes one end through the zygote, so it holds its end from the
    start. A worker whose zygote had forked before may find it dead (killed by a worker, say): `retry` says so.
    """

    name = "fork"

    def __init__(self, zygotes: Zygotes, sandbox: tuple[str, ...], options: dict):
        self.zygotes, self.sandbox, self.options = zygotes, sandbox, options

    def launch(self, task: str, preload: tuple[str, ...], setup: dict, planned: int, nice: int = 0) -> Worker:
        zygote = self.zygotes.get(preload, self.sandbox)
        worker = Worker(task, planned, log=zygote.log, own_log=False)
        worker.relaunch, worker.retry = (preload, setup, planned), zygote.forked > 0
        zygote.forked += 1
        worker.attach(zygote.fork(self.options), wire.encode({**setup, "nice": nice}))  # it lowers itself
        return worker

    def relaunch(self, worker: Worker) -> Worker:
        """The worker again, once, from a fresh zygote: its own did not fork it."""
        self.zygotes.discard(worker.relaunch[0], self.sandbox)
        fresh = self.launch(worker.task, *worker.relaunch)
        fresh.retry = False
        return fresh

    def close(self) -> None:
        pass  # the zygotes are the pool's, or its caller's


class SpawnLauncher:
    """POSIX (macOS, and Linux with `--workers spawn`): a fresh interpreter per worker, on a socket it inherits
    (`python -m autograder.worker spawn FD`), in a process group of its own."""

    name = "spawn"

    def __init__(self, sandbox: tuple[str, ...], options: dict, cwd: str):
        self.sandbox, self.options, self.cwd = sandbox, options, cwd

    def launch(self, task: str, preload: tuple[str, ...], setup: dict, planned: int, nice: int = 0) -> Worker:
        first_frames = wire.encode({**self.options, "preload": list(preload)}) + wire.encode(setup)
        log = tempfile.TemporaryFile()  # its own errors until it is up; then its stderr goes to /dev/null
        grader_end, worker_end = socket.socketpair()
        process = subprocess.Popen(
            [*self.sandbox, *python(), "spawn", str(worker_end.fileno()), "--nice", str(nice)],
            pass_fds=(worker_end.fileno(),),
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group, killed with it
            cwd=self.cwd,
            env=worker_env(),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        worker_end.close()
        worker = Worker(task, planned, log, process)
        worker.attach(grader_end, first_frames)
        return worker

    def close(self) -> None:
        pass


class LoopbackLauncher:
    """Windows, which cannot hand a socket to a child on its command line: a fresh interpreter per worker that reads
    a token from stdin and connects back over the loopback (`python -m autograder.worker connect PORT`)."""

    name = "spawn"

    def __init__(self, options: dict, cwd: str):
        self.options, self.cwd = options, cwd
        self.listener: Listener | None = None

    def launch(self, task: str, preload: tuple[str, ...], setup: dict, planned: int, nice: int = 0) -> Worker:
        first_frames = wire.encode({**self.options, "preload": list(preload)}) + wire.encode(setup)
        if self.listener is None:
            self.listener = Listener()
        token = secrets.token_hex(16).encode()
        log = tempfile.TemporaryFile()
        process = subprocess.Popen(
            [*python(), "connect", str(self.listener.port), "--nice", str(nice)],
            stdin=subprocess.PIPE,
            creationflags=getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0),
            cwd=self.cwd,
            env=worker_env(),
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        try:
            process.stdin.write(token + b"\n")
            process.stdin.close()
        except OSError:
            pass  # it died at once: waiting for it says so
        worker = Worker(task, planned, log, process)
        listener = self.listener

        def connect(deadline: float) -> tuple[socket.socket, bytes]:
            try:
                return listener.wait_for(token, deadline), first_frames
            except TimeoutError:
                said = _tail(log)
                worker.kill()
                raise StartFailed(f"its worker for task {task} never connected: {said}") from None

        worker.connect = connect
        return worker

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()


class Pool:
    """The workers of one grading run: one per task, started early, each called synchronously.

    Workers start through the launcher of the start method (`ForkLauncher`, `SpawnLauncher`, `LoopbackLauncher`);
    a zygote that refuses to fork turns the pool to spawning, for good.
    """

    def __init__(
        self,
        level: str,
        memory_mb: int,
        hidden: list[str],
        start: str = "auto",
        zygotes: Zygotes | None = None,
        cgroup: str | None = None,
    ):
        # `cgroup`: the run's memory cgroup (`isolation.memory_cgroup`), under which each worker makes its own
        self.options = {"level": wire.Level(level), "memory_mb": memory_mb, "cgroup": cgroup}
        # `sandbox`: every worker process starts inside bubblewrap, which shows it nothing of `hidden`
        self.sandbox = tuple(isolation.sandbox_command(hidden, cgroup)) if wire.Level(level).namespaces else ()
        self.spawned_because = ""  # why a run that would fork spawns its workers (its zygote had threads)
        self.workers: dict[str, Worker] = {}
        self._all: list[Worker] = []
        self._own_zygotes = zygotes is None  # a shared set outlives the run: its caller closes it
        self._zygotes = Zygotes() if zygotes is None else zygotes
        self._cwd = tempfile.mkdtemp(prefix="autograder-worker-")
        self.launcher = ForkLauncher(self._zygotes, self.sandbox, self.options)
        if start_method(start) == "spawn" or self._zygotes.refused:
            self.spawn_instead(self._zygotes.refused)
        self._planned = 0  # workers given a plan so far
        self._cores = max(1, os.cpu_count() or 1)

    @property
    def start(self) -> str:
        """How this run's workers start now: "fork" or "spawn"."""
        return self.launcher.name

    def spawn_instead(self, because: str = "") -> None:
        """From now on, spawn workers (on an inherited socket where the system can pass one, else the loopback)."""
        self.spawned_because = self._zygotes.refused = because
        if POSIX_SOCKETS:
            self.launcher = SpawnLauncher(self.sandbox, self.options, self._cwd)
        else:
            self.launcher = LoopbackLauncher(self.options, self._cwd)

    def prepare(self, task: str, setup: dict, preload: tuple[str, ...] = (), plan: list[dict] = ()) -> None:
        """Start the task's worker now, with its setup and the calls it may run ahead (`plan`)."""
        nice = 0
        if plan:  # runs ahead in the order the run will ask, behind the grader's own work: one tier per core
            nice, self._planned = min(19, 1 + self._planned // self._cores), self._planned + 1
        worker = self.launcher.launch(task, preload, {**setup, "plan": list(plan)}, len(plan), nice)
        self._keep(task, worker)
        for other in self._all:  # room in their sockets now: the setups that did not fit go on
            other.flush(wait=False)

    def _keep(self, task: str, worker: Worker) -> None:
        if not self.options["level"].own_user and sys.platform == "linux":  # it may start processes: count theirs
            worker.tree, worker.cores = True, self._cores
        if task in self.workers and self.workers[task] is not worker:
            self.workers[task].kill()
        self.workers[task] = worker
        self._all.append(worker)

    def call(self, task: str, request: dict, limit: float) -> dict:
        worker = self.workers[task]
        try:
            return worker.call(request, limit)
        except ForkRefused as exc:  # its zygote has threads: this worker and every later one are spawned
            if self.start == "fork":
                self.spawn_instead(str(exc))
            fresh = self.launcher.launch(task, *worker.relaunch)
        except StartFailed:
            if not worker.retry:
                raise
            fresh = self.launcher.relaunch(worker)  # its zygote may have been killed since it last forked
        self._keep(task, fresh)
        return fresh.call(request, limit)

    def ended(self, task: str) -> bool:
        return self.workers[task].dead

    def stop(self, task: str) -> None:
        """Kill the task's worker now: nothing it runs will be asked for (a later call gets a fresh worker)."""
        if task in self.workers:
            self.workers[task].kill()

    def close(self) -> None:
        """Kill every worker of the run, and the zygotes unless they are shared; return when they are all gone."""
        end = time.monotonic() + 2.0  # workers that have not greeted yet have run no learner code: a short wait
        for worker in self._all:
            worker.finish(end)
        if self._own_zygotes:
            self._zygotes.close()
        self.launcher.close()
        isolation.remove_cgroup(self.options["cgroup"])  # its workers are gone: their cgroups are empty
        try:
            os.rmdir(self._cwd)
        except OSError:
            pass
