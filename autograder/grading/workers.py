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
import secrets
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
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

    def __init__(self, message: str, timed_out: bool = False):
        super().__init__(message)
        self.timed_out = timed_out


@dataclass
class Worker:
    """One task's worker, seen from the trusted side."""

    task: str
    sock: socket.socket | None = None
    pid: int = 0
    group: bool = False
    dead: bool = False
    setup: tuple | None = None  # (request, timeout) to send before the first call
    pending: list = field(default_factory=list)  # requests sent ahead (setup) whose replies are not read yet

    def call(self, request: dict, timeout: float) -> dict:
        """Send one request; return the worker's reply, or raise WorkerGone (and kill it) if none comes in time."""
        if self.dead:
            raise WorkerGone("the check's process had already ended")
        try:
            self.sock.settimeout(timeout)  # a worker that stops reading cannot block the grader's send either
            self._drain_pending()
            wire.send(self.sock, request)
            return wire.receive(self.sock, time.monotonic() + timeout)
        except (wire.Deadline, TimeoutError):
            self.kill()
            raise WorkerGone(f"did not finish within {timeout:g} s and was stopped", timed_out=True) from None
        except (wire.Closed, OSError):
            self.kill()
            raise WorkerGone("ended without an answer (sys.exit, os._exit, a crash, or the memory limit?)") from None
        except wire.WireError as exc:
            self.kill()
            raise WorkerGone(f"sent something that is not an answer: {exc}") from None

    def _drain_pending(self) -> None:
        while self.pending:
            timeout = self.pending.pop(0)
            reply = wire.receive(self.sock, time.monotonic() + timeout)
            if "error" in reply:
                raise wire.WireError(f"could not set up: {reply['error'].get('message', '')}")

    def kill(self) -> None:
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
        self.forked = 0
        self.broken = False

    @property
    def usable(self) -> bool:
        return not self.broken and self.process.poll() is None

    def fork(self, worker: Worker, options: dict) -> None:
        wire.send(self.ctrl, options)
        self.forking.append(worker)

    def receive(self, greet) -> None:
        """Take the next forked worker's socket from the zygote."""
        worker = self.forking.pop(0)
        ready = select.select([self.ctrl], [], [], START_TIMEOUT)[0]
        fds = socket.recv_fds(self.ctrl, 1024, 1)[1] if ready else []
        if not fds:
            worker.dead = True
            self.broken = True  # its answers may now be out of step with the requests: never reuse it
            if self.forked == 0 and self.process.poll() is not None:  # it never started: the grader's fault
                raise StartFailed(f"the grader's worker process could not start:\n{_tail(self.log)}")
            return
        self.forked += 1
        worker.sock = socket.socket(fileno=fds[0])
        greet(worker)

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
    """All the workers of one grading run."""

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

    def prepare(self, task: str, setup: dict, setup_timeout: float, preload: tuple[str, ...] = ()) -> None:
        """Ask for a worker for `task` now; its setup is sent, and its replies read, at its first call."""
        worker = Worker(task, setup=(setup, setup_timeout))
        self.workers[task] = worker
        if self.start == "fork":
            self._zygotes.get(preload).fork(worker, self.options)
        else:
            self._spawn(worker, preload)
            self._greet(worker)

    def get(self, task: str) -> Worker:
        worker = self.workers[task]
        for zygote in self._zygotes.started():
            while worker.sock is None and not worker.dead and worker in zygote.forking:
                zygote.receive(self._greet)
        if worker.setup is not None:
            setup, timeout = worker.setup
            worker.setup = None
            try:
                wire.send(worker.sock, setup)
                worker.pending.append(timeout)
            except OSError:
                worker.kill()
        return worker

    def _greet(self, worker: Worker) -> None:
        """The worker's first frame says which pid to kill (its namespace's PID 1, or its process group)."""
        try:
            hello = wire.receive(worker.sock, time.monotonic() + START_TIMEOUT)
            worker.pid, worker.group = int(hello["pid"]), bool(hello["group"])
        except (wire.Deadline, wire.Closed, wire.WireError, KeyError, TypeError, ValueError):
            worker.kill()

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
        while True:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                if proc.poll() is not None and not self._connected:
                    with log:
                        raise StartFailed(f"the grader's worker process could not start:\n{_tail(log)}") from None
                if proc.poll() is None and time.monotonic() < end:
                    continue
                proc.kill()
                worker.dead = True
                log.close()
                return
            conn.settimeout(START_TIMEOUT)
            line = b""
            try:
                while not line.endswith(b"\n") and len(line) < 100:
                    line += conn.recv(1)
            except OSError:
                pass
            conn.settimeout(None)
            if line.strip() == token.encode():
                worker.sock = conn
                self._connected = True
                log.close()
                return
            conn.close()  # not ours: someone else on the loopback

    def close(self) -> None:
        """Kill every worker of the run, and the zygotes unless they are shared; return when they are all gone."""
        for zygote in self._zygotes.started():
            while zygote.forking:
                try:
                    zygote.receive(self._greet)
                except StartFailed:
                    pass  # already told, or never needed: closing must go on
        for worker in self.workers.values():
            worker.kill()
        for proc in self._spawned:
            proc.kill()
            proc.wait()
        if self._own_zygotes:
            self._zygotes.close()
        if self._listener:
            self._listener.close()
        try:
            os.rmdir(self._cwd)
        except OSError:
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
