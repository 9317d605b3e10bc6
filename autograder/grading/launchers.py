"""How a worker process starts, by platform (`start_method`), and the launchers that start one per task.

- `fork` (Linux): a warm *zygote* per set of preloaded modules forks one
  worker per task (`ForkLauncher`, `Zygotes`); the grader makes the worker's
  socket pair itself and passes one end through the zygote, so it holds its
  end from the start.
- `spawn` (macOS and Windows by default, anywhere on request): a fresh
  interpreter per task (`SpawnLauncher`). On POSIX it inherits its socket; on
  Windows, which cannot pass a socket on a command line, it connects back over
  the loopback with a token it reads from stdin (`LoopbackLauncher`, `Listener`).

Each launcher returns a `handle.Worker` not yet come up: the pool's first call waits for it.
"""

from __future__ import annotations

import os
import secrets
import select
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from autograder.grading.handle import StartFailed, Worker, tail
from autograder.grading.limits import ONE_THREAD
from autograder.worker import wire


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
                said = tail(log)
                worker.kill()
                raise StartFailed(f"its worker for task {task} never connected: {said}") from None

        worker.connect = connect
        return worker

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
