"""The worker process: runs the grader's scenarios over the learner's code, shut in, and answers in plain data.

This is the untrusted side of the boundary: `autograder.worker` imports
nothing of the grader but `wire`, the one module both sides share.

How a worker starts (the trusted side, `grading.pool`, picks the way):

- `python -m autograder.worker zygote FD [torch]` (Linux only): a warm
  process that has imported what scenarios need and forks one worker per
  request on its control socket FD; each request carries the worker's own
  socket (passed as a descriptor), so the grader holds its end from the start.
- `python -m autograder.worker spawn FD`: one fresh worker on an inherited
  socket (macOS, and POSIX with `--workers spawn`): no secret on the command line.
- `python -m autograder.worker connect PORT`: one fresh worker that reads its
  token from stdin and connects back over the loopback (Windows, which cannot
  hand a socket to a child on its command line).

A zygote forks only while it is single-threaded: a fork copies one thread, and a library whose threads had
started (PyTorch's autograd starts its device threads on a machine with a GPU, and then refuses autograd in
every forked child) would be broken in the child. So the zygote imports what scenarios need and touches
nothing that starts threads; before each fork it counts its threads, and where there is more than one it
refuses (`refused` on the worker's socket) and the grader spawns its workers instead, saying why.

Time limits count CPU time: the call's own timer (`ITIMER_PROF`) stops learner code that has used its
budget, so a machine busy with other work never makes a check time out; the grader's wall-clock deadline
is only a generous backstop (`grading.pool`).

A worker greets (its pid), shuts itself in (`sandbox.shut_in`), reads its
setup (its task's sources and the *plan*: the calls earlier runs made, in
order), and then answers requests one by one. Between requests it runs the
plan ahead on its own, so that answers are ready when the grader asks; an
answer computed ahead is sent only for a request identical to the planned
one, in the same order. Nothing here decides a grade: the trusted side reads
each answer with a deadline and a size cap and judges it.
"""

from __future__ import annotations

import faulthandler
import gc
import importlib
import io
import json
import math
import os
import random
import select
import signal
import socket
import sys

from autograder.worker import sandbox, wire
from autograder.worker import scenario as scenario_kit
from autograder.worker.loading import Implementation, LearnerCodeError, where_in

MAX_OUTPUT = 4000  # characters of the learner's printing kept per call
MAX_MESSAGE = 2000
SOFT_TIMEOUT = hasattr(signal, "setitimer") and hasattr(signal, "ITIMER_PROF")  # a CPU-time alarm (POSIX)


class CheckTimedOut(BaseException):
    """The call's own time is up (a BaseException, so that `except Exception` in learner code cannot swallow it)."""


# --- answers as plain data ------------------------------------------------------------------------------------------


def describe_error(exc: BaseException, files: set[str]) -> dict:
    """What went wrong, as data (`wire.error`): its kind, the exception's class, a capped message, where."""
    if isinstance(exc, LearnerCodeError):  # the grader words it: the problem's name, the file, the detail
        return wire.error(wire.ErrorKind.CANNOT_MAKE, exc.detail, problem=exc.problem, where=exc.file, load=True)
    where, function = where_in(exc, files)
    if isinstance(exc, CheckTimedOut):
        return wire.error(wire.ErrorKind.TIMED_OUT, "", where=where, function=function)
    message = _safe_str(exc)
    if isinstance(exc, SyntaxError) and exc.filename in files:
        where, function = f"{exc.filename}:{exc.lineno}", "<module>"
        message = exc.msg
    info = wire.error(
        wire.ErrorKind.RAISED, message[:MAX_MESSAGE], exception=type(exc).__name__, where=where, function=function
    )
    if isinstance(exc, NotImplementedError):
        info["stub_task"] = wire.stub_task(exc)
    return info


def _safe_str(exc: BaseException) -> str:
    try:
        return str(exc)
    except BaseException:  # noqa: BLE001
        return f"<{type(exc).__name__} whose message cannot be shown>"


class CappedOutput(io.TextIOBase):
    """Stands in for sys.stdout and sys.stderr during a call: keeps the first MAX_OUTPUT characters."""

    def __init__(self):
        self.parts, self.size, self.dropped = [], 0, 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        text = str(text)
        room = MAX_OUTPUT - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        out = "".join(self.parts)
        return out + (f"\n… ({self.dropped} more characters)" if self.dropped else "")


# --- the worker's loop ----------------------------------------------------------------------------------------------


class Worker:
    """One task's worker: its Implementation, the scenario sources it was sent, and its plan.

    Protocol, after the greeting: the grader's first frame is the setup, which
    the worker acknowledges (`{"ready": true}` or an error); then each request
    `{"id": n, "op": ...}` gets exactly one answer `{"id": n, ...}`. An answer
    `{"id": n, "diverged": true}` means the worker ran planned calls that this
    request does not follow: the grader asks a fresh worker.
    """

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.impl: Implementation | None = None
        self.namespaces: dict[str, dict] = {}
        self.sources: dict[str, str] = {}  # test file -> its scenarios' source, sent once with the setup
        self.plan: list[dict] = []  # requests earlier runs made, in order (without their ids)
        self.ahead: list[dict] = []  # answers to plan[0], plan[1], ... computed before anyone asked
        self.asked = 0  # how many requests the grader has made

    def serve(self) -> None:
        self.setup(wire.read_frame(self.sock))
        while True:
            if self._should_run_ahead() and not self._request_waiting():
                self._run_ahead()
                continue
            try:
                request = wire.read_frame(self.sock)
            except wire.Closed:
                os._exit(0)
            self._send({**self.answer(request), "id": request.pop("id", None)})

    def setup(self, request: dict) -> None:
        try:
            self.impl = Implementation(request)
            scenario_kit.withhold(self.impl.task_id)  # the grader's helpers that would do this task's job
            gc.collect()
            self.sources = dict(request.get("scenarios") or {})
            self.plan = list(request.get("plan") or [])
            if request.get("nice") and hasattr(os, "nice"):  # it runs its plan behind the grader and earlier tasks
                os.nice(request["nice"])
            reply = {"ready": True}
        except Exception as exc:  # noqa: BLE001 - the grader says the worker could not be set up
            reply = {"error": wire.error(wire.ErrorKind.BAD_SETUP, f"{type(exc).__name__}: {exc}"[:MAX_MESSAGE])}
        self._send(reply)

    def answer(self, request: dict) -> dict:
        """The answer to the grader's request: the one computed ahead if it is the planned call, else a fresh one."""
        body = {k: v for k, v in request.items() if k != "id"}
        n, self.asked = self.asked, self.asked + 1
        if n < len(self.plan) and body == self.plan[n]:
            if n < len(self.ahead):
                return self.ahead[n]
            self.ahead.append(self.handle(body))
            return self.ahead[n]
        if len(self.ahead) > n:  # it ran a call nobody asked for: its state is not what this request expects
            return {"diverged": True}
        self.plan = self.plan[:n]  # the run goes elsewhere: compute only what is asked from now on
        return self.handle(body)

    def _should_run_ahead(self) -> bool:
        return len(self.ahead) < len(self.plan) and not any(_timed_out(a) for a in self.ahead)

    def _request_waiting(self) -> bool:
        return bool(select.select([self.sock], [], [], 0)[0])

    def _run_ahead(self) -> None:
        self.ahead.append(self.handle(self.plan[len(self.ahead)]))

    def _send(self, reply: dict) -> None:
        try:
            data = wire.encode(reply)
        except (wire.WireError, ValueError, TypeError) as exc:
            data = wire.encode({"id": reply.get("id"), "error": wire.error(wire.ErrorKind.TOO_LARGE, str(exc)[:200])})
        self.sock.sendall(data)

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        if op == "load":
            return self._call(lambda: self._load(), request["timeout"])
        if op == "run":
            namespace = self._namespace(request["file"], request.get("source") or self.sources[request["file"]])
            fn = namespace[request["name"]]
            args, kwargs = request.get("args", []), request.get("kwargs", {})
            return self._call(lambda: wire.to_plain(fn(self.impl, *args, **kwargs)), request["timeout"])
        return {"error": wire.error(wire.ErrorKind.BAD_REQUEST, str(op)[:100])}

    def _load(self) -> bool:
        self.impl.module(self.impl.module_name)
        return True

    def _namespace(self, file: str, source: str) -> dict:
        if file not in self.namespaces:
            namespace = {"__name__": f"scenarios:{file}", "math": math, "random": random}
            namespace.update({k: v for k, v in vars(scenario_kit).items() if not k.startswith("_")})
            exec(compile(source, f"<scenarios of {file}>", "exec"), namespace)
            self.namespaces[file] = namespace
        return self.namespaces[file]

    def _call(self, thunk, timeout: float) -> dict:
        output = CappedOutput()
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = output
        if SOFT_TIMEOUT:  # CPU time, not wall time: a busy machine slows the call but never uses its budget
            signal.signal(signal.SIGPROF, _alarm)  # the grader kills code that never returns to Python
            signal.setitimer(signal.ITIMER_PROF, timeout)
        try:
            result = {"ok": thunk()}
        except BaseException as exc:  # noqa: BLE001 - whatever the learner's code raises is an answer
            result = {"error": describe_error(exc, self.impl.learner_files if self.impl else set())}
            if result["error"].get("load") or result["error"]["function"] == "<module>":
                result["error"]["load"] = True
        finally:
            if SOFT_TIMEOUT:
                signal.setitimer(signal.ITIMER_PROF, 0)
            sys.stdout, sys.stderr = saved
        result["output"] = output.text()
        try:
            result = wire.check_plain(result)
        except wire.WireError as exc:
            result = {"error": wire.error(wire.ErrorKind.NOT_PLAIN, str(exc)), "output": ""}
        return result


def _timed_out(answer: dict) -> bool:
    error = answer.get("error")
    return isinstance(error, dict) and error.get("kind") == wire.ErrorKind.TIMED_OUT


def _alarm(signum, frame):
    raise CheckTimedOut()


def run_worker(sock: socket.socket, options: dict) -> None:
    """In a freshly forked (or spawned) process: greet, shut in, then serve until the grader hangs up. Never returns."""
    code, worker = 0, None
    try:
        level = wire.Level(options["level"])
        uid = sandbox.FIRST_SANDBOX_UID + os.getpid()  # unique: taken before the worker is PID 1 of a namespace
        if hasattr(signal, "SIGCHLD"):
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        if level.namespaces:
            sandbox.enter_namespaces()
            greeted_r, greeted_w = os.pipe()
            child = os.fork()
            if child:  # the go-between: report the real worker's pid, then wait for it to end
                wire.send(sock, {"pid": child, "group": False})
                os.write(greeted_w, b".")
                sock.close()
                os.waitpid(child, 0)
                os._exit(0)
            os.close(greeted_w)  # so that a go-between killed before it greets ends this read (EOF), not hangs it
            if not os.read(greeted_r, 1):  # the greeting goes first on the socket
                os._exit(0)  # the go-between is gone: nobody will ever ask this worker anything
            os.close(greeted_r)
        else:  # `user` cannot start processes: its pid is its whole tree; `processes` has a group of its own
            wire.send(sock, {"pid": os.getpid(), "group": level.process_group and sandbox.HAS_GROUPS})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # C-level printing goes nowhere; Python-level printing is captured per call
        sandbox.shut_in(level, options["memory_mb"], uid, cgroup=options.get("cgroup"))
        if hasattr(signal, "SIGUSR1"):  # a call past its deadline is asked where it is, even stuck in C code
            faulthandler.register(signal.SIGUSR1, file=sock.fileno(), all_threads=False)
        gc.collect()
        worker = Worker(sock)
        worker.serve()
    except BaseException as exc:  # noqa: BLE001 - the grader sees it close
        code = 70
        if worker is None or worker.impl is None:  # no learner code has run: say what broke, for the grader's log
            _say_why_not_started(sock, exc)
    finally:
        os._exit(code)


def _say_why_not_started(sock: socket.socket, exc: BaseException) -> None:
    import traceback  # here: every spawned worker would pay for importing it, and only a broken one uses it

    frame = traceback.extract_tb(exc.__traceback__)[-1] if exc.__traceback__ else None
    where = f" at {os.path.basename(frame.filename)}:{frame.lineno}" if frame else ""
    try:
        wire.send(sock, {"error": wire.error(wire.ErrorKind.NOT_STARTED, f"{type(exc).__name__}: {exc}{where}"[:500])})
    except (OSError, ValueError):
        pass


def zygote(ctrl_fd: int, preload: list[str]) -> None:
    """Linux only: fork a worker for each request on the control socket, on the socket that came with it.

    It forks only while it has a single thread; otherwise it answers the request with why it refuses.
    """
    sandbox.die_with_parent()
    if os.getppid() == 1:  # its grader ended before it could ask to die with it: nothing will ever close it
        return
    _preload(preload)
    ctrl = socket.socket(fileno=ctrl_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers
    gc.freeze()
    while True:
        try:
            header, fds, _, _ = socket.recv_fds(ctrl, wire.HEADER.size, 1)
            if len(header) < wire.HEADER.size or not fds:
                return  # the grader hung up
            options = json.loads(wire.read_exactly(ctrl, wire.HEADER.unpack(header)[0]))
        except (OSError, wire.Closed):
            return
        threads = thread_count()
        if threads != 1:
            _refuse(fds[0], threads, preload)
        elif os.fork() == 0:
            ctrl.close()
            run_worker(socket.socket(fileno=fds[0]), options)
        os.close(fds[0])


def thread_count() -> int:
    """This process's threads as the kernel counts them (native ones included: a library's pool, autograd's)."""
    return len(os.listdir("/proc/self/task"))


def _refuse(fd: int, threads: int, preload: list[str]) -> None:
    """Tell the grader, on the worker's socket, that this zygote cannot fork safely (it then spawns workers)."""
    loaded = f" after importing {', '.join(preload)}" if preload else ""
    reason = f"the process that forks workers had {threads} threads{loaded}, and a fork copies only one"
    try:
        with socket.socket(fileno=os.dup(fd)) as sock:
            wire.send(sock, {wire.REFUSED: reason})
    except OSError:
        pass


def _preload(names: list[str], warm: bool = True) -> None:
    """Import what the worker's scenarios need; `warm`: also what their first calls import (worth it in a zygote).

    Nothing here may start a thread or run autograd: with a GPU, a backward pass starts autograd's device
    threads, and after that no forked child can use autograd ("Unable to handle autograd's threading in
    combination with fork-based multiprocessing"). The first backward's cost is an import (SymPy, through
    `symbolic_shapes`), so importing it pays that cost without running the engine.
    """
    if "torch" in names:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # a worker may not start threads (RLIMIT_NPROC)
        try:
            import torch
        except ImportError:  # a broken install: the calls that need torch say so, as the reference's would
            return

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        if warm:
            import torch.fx.experimental.symbolic_shapes  # noqa: F401 - what the first backward pass imports
    for name in names:  # the others (numpy, for lesson 14): imported once by a zygote, not by each of its workers
        if name != "torch":
            try:
                importlib.import_module(name)
            except ImportError:  # as with torch: the learner's import says so, as the reference's would
                pass


def spawned(sock: socket.socket) -> None:
    """A spawned worker: its options are the first frame on its socket, then it runs as a forked one does."""
    options = wire.read_frame(sock)
    _preload(options.get("preload", []), warm=False)  # each spawned worker would pay it again: let its calls pay
    run_worker(sock, options)


def main(argv: list[str]) -> None:
    how = argv[0]
    if how == "zygote":
        zygote(int(argv[1]), argv[2:])
    elif how == "spawn":
        spawned(socket.socket(fileno=int(argv[1])))
    elif how == "connect":  # the token comes on stdin, never on the command line
        token = sys.stdin.readline().strip()
        sock = socket.create_connection(("127.0.0.1", int(argv[1])))
        sock.sendall(token.encode() + b"\n")
        spawned(sock)
    else:
        usage = "python -m autograder.worker zygote FD [MODULE...] | spawn FD | connect PORT"
        raise SystemExit(f"usage: {usage} ({how}?)")
