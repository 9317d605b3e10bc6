"""The trusted side of the workers: start one per task, ask it to run scenarios, keep the deadlines, kill it.

`Workers` owns a zygote (`worker.py`), which forks a worker for each task the
run grades; with `start="spawn"` (Windows, macOS, or asked for) each worker is
a fresh interpreter that connects back over the loopback instead. Every call
has a deadline kept here, from the moment the call is sent; when it passes,
the worker is killed, and with it everything it started. `close()` returns
only when every worker is gone.

A long-lived caller (watch mode) may hand every run the same `Zygotes`, so
that each run forks from zygotes that are already up: a zygote holds no
learner code and no expected values (it only forks), and the workers are
still per run, killed when the run closes.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from autograder.grading import sandbox, wire

START_TIMEOUT = 60.0  # seconds for a worker to come up (the zygote may be importing torch)


class StartFailed(Exception):
    """The grader's own worker process could not start (a broken install, say): no learner code has run yet."""


def _tail(log, limit: int = 2000) -> str:
    """The end of what a process wrote to `log` (a file it had as stderr): its last error, usually."""
    log.seek(0)
    text = log.read().decode("utf-8", "replace").strip()
    return text[-limit:] or "it ended without a word"


class WorkerGone(Exception):
    """The worker did not answer: `timed_out` if its deadline passed, else it died or spoke nonsense."""

    def __init__(self, message: str, timed_out: bool = False, stack: list[tuple[str, int, str]] = ()):
        super().__init__(message)
        self.timed_out = timed_out
        self.stack = list(stack)  # (file, line, function), innermost first: where a stopped worker was


STACK_LINE = re.compile(rb'^  File "(.*)", line (\d+) in (.*)$', re.MULTILINE)
DUMP_GRACE = 0.5  # seconds a worker past its deadline has to say where it is before it is killed


def stack_of(dump: bytes) -> list[tuple[str, int, str]]:
    """The frames of a `faulthandler` dump, innermost first."""
    return [(f.decode(errors="replace"), int(n), fn.decode(errors="replace")) for f, n, fn in STACK_LINE.findall(dump)]


class Diverged(WorkerGone):
    """The request cannot be answered by this worker, through no fault of the request: ask a fresh worker.

    The run asked for something other than what the worker was sent ahead, or
    the worker ended (stopped, crashed) before it started on this request.
    """

    def __init__(self, message: str = "was sent ahead calls that this run did not make"):
        super().__init__(message)


@dataclass(eq=False)
class Request:
    """One request to a worker, from the moment it is queued until the grader takes its reply."""

    frame: bytes  # as sent: two requests are the same request exactly when their frames are equal
    limit: float  # wall seconds the worker has for it, counted from when it can start on it
    planned: bool = False  # sent ahead because earlier runs made this call here; nobody has asked for it yet
    setup: bool = False  # the task's sources: its reply is checked, never handed to a scenario
    reply: dict | None = None
    gone: Exception | None = None  # WorkerGone, or StartFailed when the grader's own process could not start

    @property
    def settled(self) -> bool:
        return self.reply is not None or self.gone is not None


@dataclass(eq=False)
class Worker:
    """One task's worker, seen from the trusted side.

    Its requests are answered in order. `Workers`' dispatcher thread sends them
    and reads the replies; the grader's thread queues a request with `call` and
    waits for its reply. Requests sent ahead (`planned`) are answered before
    anyone asks; `call` takes such an answer only if it asks for exactly that
    request, in that order, so the worker has run what it would have run anyway.
    """

    task: str
    cond: threading.Condition
    wake: Callable[[], None]  # tells the dispatcher there is something to send
    sock: socket.socket | None = None
    pid: int = 0
    group: bool = False
    greeted: bool = False
    dead: bool = False
    requests: deque = field(default_factory=deque)  # not yet taken by the grader, oldest first
    sent: int = 0  # how many of `requests` have been written (all of them before any unwritten one)
    started: float | None = None  # when the oldest sent, unanswered request could start (its deadline counts)
    inbuf: bytearray = field(default_factory=bytearray)
    outbuf: bytearray = field(default_factory=bytearray)
    dump: bytearray | None = None  # past its deadline: what its faulthandler wrote (then it is killed)
    dump_until: float = 0.0

    def call(self, request: dict, timeout: float) -> dict:
        """Send one request; return the worker's reply, or raise WorkerGone (and kill it) if none comes in time."""
        frame = wire.encode(request)
        with self.cond:
            self._take_setup()
            head = self.requests[0] if self.requests else None
            if head is not None and head.planned:
                if head.frame != frame:
                    self.kill()
                    raise Diverged()
                head.planned = False
                if self.requests.index(head) >= self.sent:  # still unsent: it no longer waits for a free slot
                    self.wake()
            elif head is None and self.dead:  # it ended while idle: this call never started, so a fresh one runs it
                raise Diverged("had ended before this call")
            else:
                head = Request(frame, timeout)
                self.requests.append(head)
                self.wake()
            self._wait(head)
            self.requests.popleft()
            self.sent -= 1
        if head.gone is not None:
            raise head.gone
        return head.reply

    @property
    def ended(self) -> bool:
        """Dead, with no answer left to hand out: a new worker must take the task's next call."""
        return self.dead and not self.requests

    def _take_setup(self) -> None:
        while self.requests and self.requests[0].setup:
            setup = self.requests[0]
            self._wait(setup)  # it was sent as soon as the worker came up
            self.requests.popleft()
            self.sent -= 1
            if setup.gone is not None:
                raise setup.gone
            if "error" in setup.reply:
                self.kill()
                message = setup.reply["error"].get("message", "") if isinstance(setup.reply["error"], dict) else ""
                raise WorkerGone(f"sent something that is not an answer: could not set up: {message}")

    def _wait(self, request: Request) -> None:
        # a backstop: whatever keeps the dispatcher from settling it, the grader waits at most this long
        give_up = time.monotonic() + START_TIMEOUT + request.limit
        while not request.settled:
            self.cond.wait(1.0)
            if not request.settled and time.monotonic() > give_up:
                self.kill(WorkerGone(f"did not finish within {request.limit:g} s and was stopped", timed_out=True))
                if not request.settled:
                    request.gone = WorkerGone(f"did not finish within {request.limit:g} s and was stopped", True)

    # --- the dispatcher's side: called with `cond` held --------------------------------------------------------------

    def kill(self, why: Exception | None = None) -> None:
        """Kill the process; the request it was running gets `why`, the ones it never started go to a fresh worker."""
        if self.dead:
            return
        self.dead = True
        if self.pid:
            try:
                if self.group:
                    os.killpg(self.pid, signal.SIGKILL)
                else:
                    os.kill(self.pid, signal.SIGKILL)  # PID 1 of its namespace: the kernel kills all the rest
            except (ProcessLookupError, PermissionError):
                pass
            _wait_gone(self.pid)
        if self.sock:
            self.sock.close()
        running = self._running()
        if running is None and why is not None and not self.greeted:  # it never came up: the first request learns why
            running = next((r for r in self.requests if not r.settled), None)
        if running is not None:  # the grader may still ask for it: it gets what a non-speculating run would get
            running.gone = why or WorkerGone(
                "ended without an answer (sys.exit, os._exit, a crash, or the memory limit?)"
            )
        for request in self.requests:  # never started: whoever asks (or is waiting) gets it from a fresh worker
            if not request.settled:
                request.gone = Diverged("ended before it started on this call")
        self.sent = len(self.requests)
        self.started = None
        self.cond.notify_all()

    def _running(self) -> Request | None:
        return next((r for r in list(self.requests)[: self.sent] if not r.settled), None)

    def next_unsent(self) -> Request | None:
        return self.requests[self.sent] if self.sent < len(self.requests) else None

    @property
    def busy(self) -> bool:
        return not self.dead and self._running() is not None

    def send(self, request: Request) -> None:
        if not self.busy:
            self.started = time.monotonic()
        self.outbuf += request.frame
        self.sent += 1

    def received(self, frame: dict) -> None:
        """A frame from the worker: its greeting first, then one reply per request, in order."""
        if not self.greeted:
            self.greeted = True
            self.pid, self.group = int(frame["pid"]), bool(frame["group"])
            return
        running = self._running()
        if running is None:
            raise wire.WireError("an answer nobody asked for")
        if type(frame) is not dict or not ("ok" in frame or type(frame.get("error")) is dict):
            raise wire.WireError("data of the wrong shape (an answer is a dict with `ok` or `error`)")
        running.reply = frame
        self.started = time.monotonic() if self._running() is not None else None
        error = frame.get("error")
        if isinstance(error, dict) and error.get("type") == "timed out":
            self.kill()  # its task's later checks are skipped: nothing more to run here
        self.cond.notify_all()

    def deadline(self) -> float | None:
        """When the request it is running must be answered by (None if it runs nothing)."""
        if self.dump is not None and not self.dead:
            return self.dump_until
        running = None if self.dead or self.started is None else self._running()
        return None if running is None else self.started + running.limit

    def ask_where(self) -> bool:
        """Past its deadline: ask it for its stack (the worker's faulthandler answers even inside C code)."""
        try:
            os.kill(self.pid, signal.SIGUSR1)
        except (OSError, AttributeError):  # no such process, or no SIGUSR1 (Windows)
            return False
        self.dump, self.dump_until = bytearray(), time.monotonic() + DUMP_GRACE
        return True


def _lost(exc: BaseException) -> str:
    """What a check is told when a bug in the grader's own code lost its call: the error and where it was raised."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    where = f"{Path(frame.filename).name}:{frame.lineno}"
    return f"was lost by the grader ({type(exc).__name__}: {exc} at {where}); please report it"


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


class Zygote:
    """A warm process that forks workers on request (`worker.py zygote`), with some modules already imported."""

    def __init__(self, python: list[str], preload: tuple[str, ...], cwd: str, env: dict):
        mine, theirs = socket.socketpair()
        # the zygote's own errors only: a forked worker points its stderr at /dev/null before any learner code runs
        self.log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [*python, "zygote", str(theirs.fileno()), *preload],
            pass_fds=(theirs.fileno(),),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        theirs.close()
        self.ctrl = mine
        self.forking: list[Worker] = []  # asked for, in order; the zygote answers in the same order
        self.asked: list[float] = []  # when each of `forking` was asked for
        self.forked = 0
        self.broken = False

    @property
    def usable(self) -> bool:
        return not self.broken and self.process.poll() is None

    def fork(self, worker: Worker, options: dict) -> None:
        self.forking.append(worker)
        self.asked.append(time.monotonic())
        wire.send(self.ctrl, options)

    def abandon(self) -> None:
        """It died: the workers asked of it will never come, and learn why (called with the dispatcher's lock)."""
        self.broken = True
        never_started = self.forked == 0 and self.process.poll() is not None
        for worker in self.forking:
            reason = StartFailed(f"the grader's worker process could not start:\n{_tail(self.log)}")
            worker.kill(reason if never_started else WorkerGone("could not be started"))
        self.forking.clear()
        self.asked.clear()

    def take(self) -> tuple[Worker, socket.socket | None, Exception | None]:
        """When its socket is readable: the next forked worker, its socket, or why there is none."""
        worker = self.forking.pop(0)
        self.asked.pop(0)
        try:
            fds = socket.recv_fds(self.ctrl, 1024, 1)[1]
        except OSError:
            fds = []
        if fds:
            self.forked += 1
            return worker, socket.socket(fileno=fds[0]), None
        self.broken = True  # its answers may now be out of step with the requests: never reuse it
        try:
            self.process.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass
        if self.forked == 0 and self.process.poll() is not None:  # it never started: the grader's fault
            return worker, None, StartFailed(f"the grader's worker process could not start:\n{_tail(self.log)}")
        return worker, None, WorkerGone("could not be started")

    def close(self) -> None:
        self.ctrl.close()
        self.process.kill()  # it holds nothing to save, and torch's clean exit alone takes a tenth of a second
        self.process.wait()
        self.log.close()


def _python() -> list[str]:
    return [sys.executable, "-m", "autograder.grading.worker"]


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "AUTOGRADER"))}
    # the workers import the very `autograder` this process runs, whatever the install says (a moved checkout)
    package_root = str(Path(__file__).resolve().parents[2])
    path = os.pathsep.join([package_root, *filter(None, [env.get("PYTHONPATH")])])
    return {**env, "PYTHONPATH": path, "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1"}


class Zygotes:
    """The zygotes, one per set of preloaded modules: the tasks that need torch do not make the others wait for it.

    One grading run owns its own; a caller that grades again and again (watch mode) keeps one `Zygotes` and
    passes it to every run, and closes it when it is done.
    """

    def __init__(self):
        self._zygotes: dict[tuple[str, ...], Zygote] = {}
        self._cwd = tempfile.mkdtemp(prefix="autograder-zygote-")

    def get(self, preload: tuple[str, ...]) -> Zygote:
        """A running zygote with `preload` imported; a dead or broken one is replaced."""
        zygote = self._zygotes.get(preload)
        if zygote is None or not zygote.usable:
            if zygote is not None:
                zygote.abandon()
                zygote.close()
            zygote = self._zygotes[preload] = Zygote(_python(), preload, self._cwd, _env())
        return zygote

    def started(self) -> list[Zygote]:
        return list(self._zygotes.values())

    def close(self) -> None:
        for zygote in self._zygotes.values():
            zygote.close()
        self._zygotes.clear()
        try:
            os.rmdir(self._cwd)
        except OSError:
            pass


class Workers:
    """All the workers of one grading run, and the dispatcher thread that talks to them.

    The dispatcher sends every request the grader asks for at once, and keeps
    the deadlines. While the grader is busy elsewhere (collecting the tests,
    importing torch, judging), it also sends *planned* requests, the calls
    earlier runs made, to at most `slots` workers at a time (one per core), so
    that the learner's code is already answering when the grader gets to ask.
    """

    def __init__(
        self, level: str, memory_mb: int, hidden: list[str], start: str = "fork", zygotes: Zygotes | None = None
    ):
        self.options = {"level": level, "memory_mb": memory_mb, "hidden": hidden}
        self.start = start if start == "spawn" or not hasattr(os, "fork") else "fork"
        self.workers: dict[str, Worker] = {}
        self._own_zygotes = zygotes is None  # a shared pool outlives the run: its caller closes it
        self._zygotes = Zygotes() if zygotes is None else zygotes
        self._listener: socket.socket | None = None
        self._spawned: list[subprocess.Popen] = []
        self._connected = False  # once one spawned worker has come up, a later one that dies is the learner's doing
        self._cwd = tempfile.mkdtemp(prefix="autograder-worker-")
        self.slots = max(1, os.cpu_count() or 1)
        self.cond = threading.Condition()
        self._all: list[Worker] = []  # every worker of the run, replaced ones too, in the order they were asked for
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_w, False)
        self._closing = False
        self.lost: str | None = None  # why the dispatcher stopped, if a bug stopped it
        self._thread = threading.Thread(target=self._dispatch, name="autograder-dispatcher", daemon=True)
        self._thread.start()

    def prepare(
        self,
        task: str,
        setup: dict,
        setup_timeout: float,
        preload: tuple[str, ...] = (),
        planned: list[tuple[dict, float]] = (),
    ) -> None:
        """Start a worker for `task`: its setup is sent at once, then `planned` requests as slots free up."""
        worker = Worker(task, self.cond, self._wake)
        worker.requests.append(Request(wire.encode(setup), setup_timeout, planned=True, setup=True))
        worker.requests.extend(Request(wire.encode(body), limit, planned=True) for body, limit in planned)
        with self.cond:
            self.workers[task] = worker
            self._all.append(worker)
            if self.lost:
                worker.kill(WorkerGone(self.lost))
            elif self.start == "fork":
                self._zygotes.get(preload).fork(worker, self.options)
            else:
                self._spawn(worker, preload)
        self._wake()

    def get(self, task: str) -> Worker:
        return self.workers[task]

    def stop(self, task: str) -> None:
        """Kill the task's worker now: nothing it runs will be asked for (a later call gets a fresh worker)."""
        with self.cond:
            if task in self.workers:
                self.workers[task].kill()
                self.workers[task].requests.clear()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b".")
        except (BlockingIOError, OSError):
            pass  # a full pipe wakes it all the same

    # --- the dispatcher thread ---------------------------------------------------------------------------------------

    def _dispatch(self) -> None:
        stale = 0
        try:
            while True:
                with self.cond:
                    if self._closing:
                        return
                    self._fill()
                    readers, writers, timeout = self._watch()
                try:
                    readable, writable, _ = select.select(readers, writers, [], timeout)
                except (ValueError, OSError):  # the grader's thread stopped a worker meanwhile: look again
                    stale += 1
                    if stale > 100:  # not a race: something is wrong for good
                        raise
                    continue
                stale = 0
                with self.cond:
                    if self._closing:
                        return
                    self._io(readable, writable)
                    self._expire()
        except BaseException as exc:  # noqa: BLE001 - a grader bug must not leave the test thread waiting forever
            with self.cond:
                # every later check fails at once too: with nobody to send its requests, it would wait out the backstop
                self.lost = _lost(exc)
                for worker in self._all:
                    worker.kill(WorkerGone(self.lost))

    def _fill(self) -> None:
        """Send what was asked for; send planned requests while fewer than `slots` workers run planned ones."""
        busy = sum(1 for w in self._all if w.busy)
        for worker in self._all:
            if worker.dead or not worker.greeted:  # in the sandbox its greeting comes from another process: first
                continue
            while (request := worker.next_unsent()) is not None:
                if request.planned and not request.setup and (worker.busy or busy >= self.slots):
                    break
                was_busy = worker.busy
                worker.send(request)
                busy += worker.busy and not was_busy
            if worker.outbuf:  # most requests fit in the socket's buffer: no need to wait for select
                try:
                    del worker.outbuf[: worker.sock.send(worker.outbuf)]
                except BlockingIOError:
                    pass
                except OSError:
                    worker.kill()

    def _watch(self) -> tuple[list, list, float | None]:
        readers, writers = [self._wake_r], []
        for zygote in self._zygotes.started():
            if zygote.forking:
                readers.append(zygote.ctrl)
        for worker in self._all:
            if worker.sock is not None and not worker.dead:
                readers.append(worker.sock)
                if worker.outbuf:
                    writers.append(worker.sock)
        deadlines = [d for w in self._all if (d := w.deadline()) is not None]
        deadlines += [t + START_TIMEOUT for z in self._zygotes.started() for t in z.asked]
        timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
        return readers, writers, timeout

    def _io(self, readable: list, writable: list) -> None:
        if self._wake_r in readable:
            os.read(self._wake_r, 4096)
        for zygote in self._zygotes.started():
            if zygote.ctrl in readable and zygote.forking:
                worker, sock, failure = zygote.take()
                if sock is None:
                    worker.kill(failure)
                elif worker.dead:
                    sock.close()  # replaced before it came up
                else:
                    sock.setblocking(False)
                    worker.sock = sock
        for worker in self._all:
            if worker.dead or worker.sock is None:
                continue
            try:
                if worker.sock in writable and worker.outbuf:
                    del worker.outbuf[: worker.sock.send(worker.outbuf)]
                if worker.sock in readable:
                    self._read(worker)
            except (OSError, wire.WireError, KeyError, TypeError, ValueError) as exc:
                if isinstance(exc, OSError):
                    worker.kill()
                else:
                    worker.kill(WorkerGone(f"sent something that is not an answer: {exc}"))
            except Exception as exc:  # noqa: BLE001 - a grader bug here costs this worker's call, not the whole run
                worker.kill(WorkerGone(_lost(exc)))

    def _read(self, worker: Worker) -> None:
        chunk = worker.sock.recv(1 << 20)
        if worker.dump is not None:  # its stack, as text: the rest comes within a moment
            worker.dump += chunk[: 1 << 16]
            worker.dump_until = min(worker.dump_until, time.monotonic() + 0.05)
            return
        if not chunk:
            worker.kill()  # it ended: the request it was running gets "ended without an answer"
            return
        worker.inbuf += chunk
        while len(worker.inbuf) >= wire.HEADER.size:
            size = wire.HEADER.unpack_from(worker.inbuf)[0]
            if size > wire.MAX_FRAME:
                raise wire.WireError(f"an answer of {size} bytes (the limit is {wire.MAX_FRAME})")
            if len(worker.inbuf) < wire.HEADER.size + size:
                return
            body = bytes(worker.inbuf[wire.HEADER.size : wire.HEADER.size + size])
            del worker.inbuf[: wire.HEADER.size + size]
            worker.received(wire.decode(body))
            if worker.dead:
                return

    def _expire(self) -> None:
        now = time.monotonic()
        for worker in self._all:
            deadline = worker.deadline()
            if deadline is None or now <= deadline:
                continue
            if worker.dump is None and worker.pid and worker.ask_where():
                continue
            running = worker._running()
            limit = f"{running.limit:g} s" if running else "its time limit"
            stack = stack_of(bytes(worker.dump or b""))
            worker.kill(WorkerGone(f"did not finish within {limit} and was stopped", timed_out=True, stack=stack))
        for zygote in self._zygotes.started():
            while zygote.asked and now > zygote.asked[0] + START_TIMEOUT:
                zygote.broken = True
                zygote.asked.pop(0)
                zygote.forking.pop(0).kill(WorkerGone("could not be started in time"))

    # --- spawned workers (no fork) -----------------------------------------------------------------------------------

    def _spawn(self, worker: Worker, preload: tuple[str, ...]) -> None:
        if self._listener is None:
            self._listener = socket.create_server(("127.0.0.1", 0))
        token = secrets.token_hex(16)
        port = self._listener.getsockname()[1]
        kwargs = {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP} if sys.platform == "win32" else {}
        log = tempfile.TemporaryFile()  # its own errors until it connects; then stderr goes to /dev/null
        proc = subprocess.Popen(
            [*_python(), "connect", str(port), token, json.dumps({**self.options, "preload": list(preload)})],
            cwd=self._cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            **kwargs,
        )
        self._spawned.append(proc)
        self._listener.settimeout(0.1)  # short, so that a worker that dies on the way is seen at once
        end = time.monotonic() + START_TIMEOUT
        with log:
            while True:
                try:
                    conn, _ = self._listener.accept()
                except TimeoutError:
                    if proc.poll() is not None and not self._connected:
                        raise StartFailed(f"the grader's worker process could not start:\n{_tail(log)}") from None
                    if proc.poll() is None and time.monotonic() < end:
                        continue
                    proc.kill()
                    worker.kill(WorkerGone("could not be started"))
                    return
                conn.settimeout(START_TIMEOUT)
                line = b""
                try:
                    while not line.endswith(b"\n") and len(line) < 100:
                        line += conn.recv(1)
                except OSError:
                    pass
                if line.strip() == token.encode():
                    conn.setblocking(False)
                    worker.sock = conn
                    self._connected = True
                    return
                conn.close()  # not ours: someone else on the loopback

    # --- the end -----------------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill every worker of the run, and the zygotes unless they are shared; return when they are all gone."""
        with self.cond:
            self._closing = True
        self._wake()
        self._thread.join()
        end = time.monotonic() + 10  # a stuck zygote must not hold the run's end for long
        for zygote in self._zygotes.started():  # a worker forked but not yet handed over is still a process
            while zygote.forking:
                ready = select.select([zygote.ctrl], [], [], max(0.0, end - time.monotonic()))[0]
                if not ready:
                    zygote.broken = True  # out of step with its requests from now on: never reused
                worker, sock, _ = zygote.take() if ready else (zygote.forking.pop(0), None, None)
                if sock is not None and not worker.dead:
                    worker.sock = sock
        with self.cond:
            for worker in self._all:
                self._finish_greeting(worker, max(0.1, end - time.monotonic()))
                worker.kill()
        for proc in self._spawned:
            proc.kill()
            proc.wait()
        if self._own_zygotes:
            self._zygotes.close()
        if self._listener:
            self._listener.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
        try:
            os.rmdir(self._cwd)
        except OSError:
            pass

    def _finish_greeting(self, worker: Worker, timeout: float) -> None:
        """Read the greeting of a worker the dispatcher has not heard from yet: it says which pid to kill.

        Without it, the worker still ends: it has run no learner code yet, and it stops when its socket closes.
        """
        if worker.sock is None or worker.dead or worker.greeted:
            return
        try:
            worker.sock.settimeout(timeout)
            while not worker.greeted and not worker.dead:
                self._read(worker)
        except (OSError, wire.WireError, KeyError, TypeError, ValueError):
            pass


def level_for(requested: str) -> str:
    """The isolation level to use: the best this process can set up, unless a weaker one is asked for."""
    best = sandbox.best_level()
    if requested == "auto":
        return best
    if sandbox.LEVELS.index(requested) < sandbox.LEVELS.index(best):
        raise RuntimeError(
            f"--isolation {requested} needs root on Linux"
            + (", and namespaces that this system allows" if requested == sandbox.SANDBOX else "")
        )
    return requested
