"""What crosses between the trusted grader and a worker: size-capped frames of plain data, and the protocol.

The one module both sides import: the frames, the isolation levels (`Level`), the requests (`setup`,
`load`, `run`), what an error answer says (`ErrorKind`, `Problem`) and a stub's message (`stub_message`).
Plain data is exactly `int`, `float`, `bool`, `None`, `str`, and lists and dicts (with string keys) of them. Frames
are JSON, preceded by their length; the trusted side (`grading.pool`) reads
them with a deadline and a size cap and parses them strictly (`decode`), so a
worker can neither hang the grader by trickling bytes nor flood it, and
nothing it sends is ever unpickled or executed. Sockets are read with `recv`
only (Windows cannot `os.read` a socket).
"""

from __future__ import annotations

import enum
import json
import re
import socket
import struct

TYPE_CHECKING = False  # typing's import is most of a worker's start-up cost of this module
if TYPE_CHECKING:
    from typing import Any

MAX_FRAME = 4 * 1024 * 1024  # bytes of one answer: enough for any scenario's data, far less than a flood
MAX_DEPTH = 32
MAX_STRING = 100_000  # characters of one string in an answer (messages are cut further where they are shown)
MAX_INT_BITS = 1330  # about 400 decimal digits
_NUMBERS = {int, float}
HEADER = struct.Struct("!I")


class Level(enum.StrEnum):
    """An isolation level, and what it gives the worker; strongest first.

    The trusted side picks one (`grading.isolation`: which this machine allows, and why not the others); the
    worker applies it (`sandbox.shut_in`). A level is the string it is named by, on the command line and on
    the wire. What each member carries:

    - `namespaces`: the worker starts inside bubblewrap and makes its own PID, mount, network and IPC
      namespaces (the `sandbox` level); the grader's files are not there at all;
    - `own_user`: the worker becomes a user of its own, with no capabilities and no new processes or threads:
      it cannot write the grader's files, so the grader may keep what it computed on disk (`trusted_cache`),
      and it needs root;
    - `process_group`: the worker leads a process group of its own, killed with the check (where the worker
      runs as the learner's user, and processes are the only walls);
    - `feedback_only`: the learner's code could still change the grader's files or others': the grade that
      counts comes from a stronger level.
    """

    def __new__(cls, name: str, namespaces: bool, own_user: bool, process_group: bool, feedback_only: bool):
        member = str.__new__(cls, name)
        member._value_ = name
        member.namespaces, member.own_user = namespaces, own_user
        member.process_group, member.feedback_only = process_group, feedback_only
        return member

    # name, then: namespaces, own_user, process_group, feedback_only
    SANDBOX = "sandbox", True, True, False, False
    USER = "user", False, True, False, True
    PROCESSES = "processes", False, False, True, True

    @property
    def needs_root(self) -> bool:
        return self.own_user

    @property
    def trusted_cache(self) -> bool:
        """Files the grader writes can be trusted after the run: no learner code could write them."""
        return self.own_user


SANDBOX, USER, PROCESSES = Level.SANDBOX, Level.USER, Level.PROCESSES
LEVELS = tuple(Level)
REFUSED = "refused"  # a zygote's first frame instead of a worker's greeting: why it will not fork (the grader spawns)


class WireError(Exception):
    """The other side sent something that is not a well-formed frame of plain data."""


class Closed(Exception):
    """The other side went away (closed its end, or its process died)."""


def check_plain(value: Any, depth: int = 0) -> Any:
    """Return `value` if it is plain data within the caps; raise WireError otherwise."""
    if depth > MAX_DEPTH:
        raise WireError("data nested too deep")
    kind = type(value)  # exact types only: a subclass could carry behaviour
    if value is None or kind is bool or kind is float:
        return value
    if kind is int:
        if value.bit_length() > MAX_INT_BITS:
            raise WireError("an integer too large")
        return value
    if kind is str:
        if len(value) > MAX_STRING:
            raise WireError("a string too long")
        return value
    if kind is list:
        kinds = set(map(type, value))
        if kinds <= _NUMBERS:  # the bulk of big answers: a list of numbers, checked at C speed
            # ints alone (a 100,000-node order): their extremes at C speed too, no generator over them
            ints = value if kinds == {int} else [v for v in value if type(v) is int] if int in kinds else ()
            if ints and max(max(ints), -min(ints)).bit_length() > MAX_INT_BITS:
                raise WireError("an integer too large")
            return value
        for item in value:
            check_plain(item, depth + 1)
        return value
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str:
                raise WireError("a dict key that is not a string")
            check_plain(item, depth + 1)
        return value
    raise WireError(f"a {kind.__name__}, which is not plain data")


def encode(value: Any) -> bytes:
    body = json.dumps(value, allow_nan=True, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise WireError(f"an answer of {len(body)} bytes (the limit is {MAX_FRAME})")
    return HEADER.pack(len(body)) + body


def decode(body: bytes) -> Any:
    """Parse one frame's body strictly: JSON of plain data, nothing else."""
    try:
        value = json.loads(body)  # Python's own cap on integer digits applies while parsing
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise WireError(f"not JSON: {str(exc)[:200]}") from None
    return check_plain(value)


def send(sock: socket.socket, value: Any) -> None:
    sock.sendall(encode(value))


# --- the protocol -----------------------------------------------------------------------------------------------


class ErrorKind(enum.StrEnum):
    """What an error answer reports. The learner's exception class, when there is one, is in `exception`."""

    RAISED = "raised"  # the call raised (the learner's code, or the grader's scenario over it): `exception`
    TIMED_OUT = "timed out"  # the call used its CPU time (the worker's alarm)
    CANNOT_MAKE = "cannot make the task"  # the learner's files lack what the task needs: `problem`
    BAD_SETUP = "bad setup"  # the worker could not be set up (the grader's request, or the machine)
    BAD_REQUEST = "bad request"
    TOO_LARGE = "answer too large"
    NOT_PLAIN = "not plain data"  # a scenario's answer that cannot cross
    NOT_STARTED = "worker did not start"  # before any learner code ran


class Problem(enum.StrEnum):
    """Why the learner's files cannot make what a task needs (`ErrorKind.CANNOT_MAKE`); the grader words it."""

    FILE_MISSING = "file missing"
    NO_VALUE = "no class Value"
    METHODS_MISSING = "methods missing"


def error(kind: ErrorKind, message: str = "", **fields: Any) -> dict:
    """An error answer's body: its kind, a message, and the fields its kind has (`exception`, `where`, ...)."""
    plain = {k: str(v) if isinstance(v, enum.Enum) else v for k, v in fields.items()}  # a str, not a str subclass
    return {"kind": str(kind), "message": message, **plain}


def setup(
    task: str,
    module: str,
    owners: list,
    prerequisite_owners: list,
    learner: dict,
    reference,
    scenarios: dict,
    sibling_owners: list = (),
):
    """The first request to a task's worker: the sources it holds (the learner's, the reference's) and scenarios.

    `owners`: the functions and methods of the task's file that hold its code, the learner's; `prerequisite_owners`:
    those that hold a prerequisite's, the reference's; `sibling_owners`: those that hold another task's, stubs.
    """
    return {
        "op": "setup",
        "task": task,
        "module": module,
        "owners": owners,
        "prerequisite_owners": prerequisite_owners,
        "sibling_owners": list(sibling_owners),
        "learner": learner,
        "reference": reference,
        "scenarios": scenarios,
    }


def load(timeout: float) -> dict:
    """Import the learner's file of the task (its first call, which may fail for every check alike)."""
    return {"op": "load", "timeout": timeout}


def run(file: str, name: str, args: list, kwargs: dict, timeout: float, source: str | None = None) -> dict:
    """Run scenario `name` of test file `file` (its `source` along, unless the setup had it)."""
    request = {"op": "run", "file": file, "name": name, "args": list(args), "kwargs": kwargs}
    if source is not None:
        request["source"] = source
    return {**request, "timeout": timeout}


STUB_MESSAGE = "task {task}: {title}"
_STUB = re.compile(r"^task (\d+\.\d+): ")


def stub_message(task_id: str, title: str) -> str:
    """What a stub's NotImplementedError says (`export.stubs` writes it; `stub_task` reads the id back)."""
    return STUB_MESSAGE.format(task=task_id, title=title)


def stub_task(exc: BaseException) -> str | None:
    """The task id a stub's `NotImplementedError("task 2.3: ...")` names, if it is one."""
    match = _STUB.match(str(exc.args[0])) if exc.args and isinstance(exc.args[0], str) else None
    return match[1] if match else None


ERROR_TEXT = ("exception", "message", "where", "function", "problem")  # what an error says, as text


def check_answer(frame: Any) -> dict:
    """The trusted side's schema of an answer: a dict with `ok` (any plain data) or `error` (a dict of known fields).

    Whatever the worker put in an error's fields comes out as the types the grader reads: an `ErrorKind` (one
    it does not know is `raised`), text for the exception's class, message, place, function and problem, a
    task id or None for `stub_task`, a bool for `load`, text output.
    """
    if type(frame) is not dict or not ("ok" in frame or type(frame.get("error")) is dict):
        raise WireError("an answer is a dict with `ok` or `error`")
    output = frame.get("output", "")
    answer = {"output": output if type(output) is str else ""}
    if "error" in frame:
        error = frame["error"]
        answer["error"] = {k: (v if type(v) is str else str(v)) for k in ERROR_TEXT if (v := error.get(k)) is not None}
        kind = error.get("kind")
        answer["error"]["kind"] = ErrorKind(kind) if kind in ErrorKind.__members__.values() else ErrorKind.RAISED
        if type(error.get("stub_task")) is str:
            answer["error"]["stub_task"] = error["stub_task"]
        if error.get("load") is True:
            answer["error"]["load"] = True
    else:
        answer["ok"] = frame["ok"]
    return answer


def read_frame(sock: socket.socket) -> Any:
    """The worker side: one frame, waiting as long as it takes, trusting its sender (the grader)."""
    size = HEADER.unpack(read_exactly(sock, HEADER.size))[0]
    return json.loads(read_exactly(sock, size))


def read_exactly(sock: socket.socket, size: int) -> bytes:
    chunks, missing = [], size
    while missing:
        chunk = sock.recv(min(missing, 1 << 20))
        if not chunk:
            raise Closed("end of stream")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)


def to_plain(value: Any, depth: int = 0) -> Any:
    """A scenario's result as plain data; anything else becomes a marker saying what it was."""
    if value is None or type(value) in (bool, int, float, str):
        return value
    if depth > MAX_DEPTH:
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
