"""The worker process: runs the grader's scenarios over the learner's code, shut in, and answers in plain data.

`python -m autograder.grading.worker zygote FD [--preload torch]` starts the
*zygote*: a warm process that has imported only what scenarios need, and forks
one worker per task when the trusted grader asks (over the socket FD). Each
worker shuts itself in (`sandbox.shut_in`), receives its task's sources, then
answers `run` requests one by one: call this scenario with these arguments,
send back its result or what went wrong, and what the learner's code printed.
`python -m autograder.grading.worker connect PORT TOKEN` is the same worker,
spawned rather than forked (Windows and macOS have no safe `fork`).

Nothing here decides a grade: the trusted side reads the answers with a
deadline and a size cap and judges them. This module imports nothing of the
grader but the wire format, the isolation levels, the loader and the
scenario helpers.
"""

from __future__ import annotations

import faulthandler
import gc
import io
import math
import os
import random
import re
import signal
import socket
import sys
from typing import Any

from autograder.grading import sandbox, wire
from autograder.grading.loading import Implementation, LearnerCodeError, where_in
from autograder.kit import scenario as scenario_kit

MAX_OUTPUT = 4000  # characters of the learner's printing kept per call
MAX_MESSAGE = 2000
SOFT_TIMEOUT = hasattr(signal, "setitimer")
STUB = re.compile(r"^task (\d+\.\d+): ")  # the message of a stub's NotImplementedError: see stub_message


class CheckTimedOut(BaseException):
    """The call's own time is up (a BaseException, so that `except Exception` in learner code cannot swallow it)."""


def stub_message(task_id: str, title: str) -> str:
    """What a stub's NotImplementedError says (`export.stubs` writes it; `stub_task` reads the id back)."""
    return f"task {task_id}: {title}"


def stub_task(exc: BaseException) -> str | None:
    """The task id a stub's `NotImplementedError("task 2.3: ...")` names, if it is one."""
    match = STUB.match(str(exc.args[0])) if exc.args and isinstance(exc.args[0], str) else None
    return match[1] if match else None


# --- answers as plain data ------------------------------------------------------------------------------------------


def to_plain(value: Any, depth: int = 0) -> Any:
    """The scenario's result as plain data; anything else becomes a marker saying what it was."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if depth > wire.MAX_DEPTH:
        return {"$type": "nested too deep", "$repr": ""}
    if isinstance(value, float):  # numpy.float64 and other float subclasses: the number they hold
        return float(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, (list, tuple)):
        return [to_plain(v, depth + 1) for v in value]
    if isinstance(value, dict) and all(type(k) is str for k in value):
        return {k: to_plain(v, depth + 1) for k, v in value.items()}
    return {"$type": type(value).__name__, "$repr": _safe_repr(value)}


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException as exc:  # noqa: BLE001 - a learner's __repr__ may raise anything
        text = f"<repr raised {type(exc).__name__}>"
    return text if len(text) <= 300 else text[:300] + "…"


def describe_error(exc: BaseException, files: set[str]) -> dict:
    """What went wrong, as data: the exception's type, a capped message, where in the learner's files."""
    if isinstance(exc, CheckTimedOut):
        kind, message = "timed out", ""
    else:
        kind, message = type(exc).__name__, _safe_str(exc)
    where, function = where_in(exc, files)
    if isinstance(exc, SyntaxError) and exc.filename in files:
        where, function = f"{exc.filename}:{exc.lineno}", "<module>"
        message = exc.msg
    info = {"type": kind, "message": message[:MAX_MESSAGE], "where": where, "function": function}
    if isinstance(exc, NotImplementedError):
        info["stub_task"] = stub_task(exc)
    if isinstance(exc, LearnerCodeError):
        info["type"], info["load"] = "LearnerCodeError", True
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
    """One task's worker: its Implementation and the compiled scenario sources it was sent."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.impl: Implementation | None = None
        self.namespaces: dict[str, dict] = {}
        self.sources: dict[str, str] = {}  # test file -> its scenarios' source, sent once with the setup
        self.load_failure: dict | None = None

    def serve(self) -> None:
        fd = self.sock.fileno()
        while True:
            try:
                request = wire.read_frame_blocking(fd)
            except wire.Closed:
                os._exit(0)
            reply = self.handle(request)
            try:
                data = wire.encode(reply)
            except (wire.WireError, ValueError, TypeError) as exc:
                data = wire.encode({"error": {"type": "AnswerTooLarge", "message": str(exc)[:MAX_MESSAGE]}})
            self.sock.sendall(data)

    def handle(self, request: dict) -> dict:
        op = request["op"]
        if op == "setup":
            self.impl = Implementation(request)
            self.sources = dict(request.get("scenarios") or {})
            return {"ok": True}
        if op == "load":
            return self._call(lambda: self._load(), request["timeout"])
        if op == "run":
            namespace = self._namespace(request["file"], request.get("source") or self.sources[request["file"]])
            fn = namespace[request["name"]]
            args, kwargs = request.get("args", []), request.get("kwargs", {})
            return self._call(lambda: to_plain(fn(self.impl, *args, **kwargs)), request["timeout"])
        return {"error": {"type": "BadRequest", "message": op}}

    def _load(self) -> bool:
        if self.load_failure is None:
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
        if SOFT_TIMEOUT:  # says where the code was; the grader's own deadline kills code that never returns to Python
            signal.signal(signal.SIGALRM, _alarm)
            signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            result = {"ok": thunk()}
        except BaseException as exc:  # noqa: BLE001 - whatever the learner's code raises is an answer
            result = {"error": describe_error(exc, self.impl.learner_files if self.impl else set())}
            if result["error"].get("load") or result["error"]["function"] == "<module>":
                result["error"]["load"] = True
        finally:
            if SOFT_TIMEOUT:
                signal.setitimer(signal.ITIMER_REAL, 0)
            sys.stdout, sys.stderr = saved
        result["output"] = output.text()
        try:
            result = wire.check_plain(result)
        except wire.WireError as exc:
            result = {"error": {"type": "NotPlainData", "message": str(exc)}, "output": ""}
        return result


def _alarm(signum, frame):
    raise CheckTimedOut()


def run_worker(sock: socket.socket, options: dict, pid_frame: bool = True) -> None:
    """In a freshly forked (or spawned) process: shut in, then serve until the grader hangs up. Never returns."""
    code = 0
    try:
        level = options["level"]
        if hasattr(signal, "SIGCHLD"):
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        uid = sandbox.FIRST_SANDBOX_UID + os.getpid()
        if level == sandbox.SANDBOX:
            sandbox.enter_namespaces()
            child = os.fork()
            if child:  # the go-between: report the real worker's pid, then wait for it to end
                wire.send(sock, {"pid": child, "group": False})
                sock.close()
                os.waitpid(child, 0)
                os._exit(0)
        else:  # `user` cannot start processes: its pid is its whole tree; `processes` has a group of its own
            wire.send(sock, {"pid": os.getpid(), "group": level == sandbox.PROCESSES})
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)  # C-level printing goes nowhere; Python-level printing is captured per call
        sandbox.shut_in(level, options["hidden"], options["memory_mb"], uid)
        if hasattr(signal, "SIGUSR1"):  # a call past its deadline is asked where it is, even stuck in C code
            faulthandler.register(signal.SIGUSR1, file=sock.fileno(), all_threads=False)
        gc.collect()
        Worker(sock).serve()
    except BaseException:  # noqa: BLE001 - a worker that cannot start says nothing; the grader sees it close
        code = 70
    finally:
        os._exit(code)


def zygote(ctrl_fd: int, preload: list[str]) -> None:
    """Fork a worker for each request on the control socket; hand the grader its end of the worker's socket."""
    import ctypes

    ctypes.CDLL(None).prctl(sandbox.PR_SET_PDEATHSIG, signal.SIGKILL)
    _preload(preload)
    ctrl = socket.socket(fileno=ctrl_fd)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the kernel reaps the workers
    gc.freeze()
    while True:
        try:
            options = wire.read_frame_blocking(ctrl.fileno())
        except wire.Closed:
            return
        mine, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ctrl.close()
            mine.close()
            run_worker(theirs, options)
        theirs.close()
        socket.send_fds(ctrl, [wire.encode({"forked": pid})], [mine.fileno()])
        mine.close()


def _preload(names: list[str]) -> None:
    if "torch" in names:
        os.environ.setdefault("OMP_NUM_THREADS", "1")  # a worker may not start threads (RLIMIT_NPROC)
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        x = torch.ones(2, dtype=torch.double, requires_grad=True)
        torch.autograd.gradcheck(torch.tanh, (x,))  # pay first-use costs once, not in every worker


def connect(port: int, token: str, options_json: str) -> None:
    """The spawned worker: connect back to the grader on the loopback, prove who it is, then serve."""
    import json

    _preload(json.loads(options_json).get("preload", []))  # a spawned worker has no zygote to inherit them from
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(token.encode() + b"\n")
    run_worker(sock, json.loads(options_json))


if __name__ == "__main__":
    if sys.argv[1] == "zygote":
        zygote(int(sys.argv[2]), sys.argv[3:])
    elif sys.argv[1] == "connect":
        connect(int(sys.argv[2]), sys.argv[3], sys.argv[4])
