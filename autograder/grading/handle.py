"""The grader's handle on one task's worker process (`Worker`): its socket, its calls, its end.

A call sends one request and reads one answer, with a deadline (`budget.Budget`),
on the worker's socket, which only its `Worker` ever touches. Failure is charged
where it belongs: a worker that never comes up raises `StartFailed` (the
machine's problem, never the learner's); one that ends or passes its deadline
while running a call the grader asked for raises `WorkerGone`; one that may have
been running a planned call nobody asked for yet, or that ended while idle,
raises `Diverged`, and the grader asks a fresh worker with no plan.
"""

from __future__ import annotations

import enum
import os
import re
import select
import signal
import socket
import subprocess
import time

from autograder.grading.budget import Budget, cpu_seconds, tree_seconds
from autograder.worker import wire

START_TIMEOUT = 60.0  # seconds for a worker to come up (its zygote may be importing torch)
DUMP_GRACE = 0.5  # seconds a worker past its deadline has to say where it is before it is killed
# a frame line of a worker's stack dump (what its code may have written itself: a line number Python can convert)
STACK_LINE = re.compile(rb'^  File "(.*)", line (\d{1,9}) in (.*)$', re.MULTILINE)


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


def stack_of(dump: bytes) -> list[tuple[str, int, str]]:
    """The frames of a `faulthandler` dump, innermost first."""
    return [(f.decode(errors="replace"), int(n), fn.decode(errors="replace")) for f, n, fn in STACK_LINE.findall(dump)]


def tail(log, limit: int = 2000) -> str:
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
            said = tail(self.log)
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
                return tree_seconds(self.pid, reaped_only=True)
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
                detail = f"no answer after {budget.backstop_seconds:g} s{spent}"
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
