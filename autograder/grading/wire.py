"""What crosses between the trusted grader and a worker: size-capped frames of plain data.

Plain data is exactly `int`, `float`, `bool`, `None`, `str`, and lists and
dicts (with string keys) of them. Frames are JSON, preceded by their length;
the trusted side (the dispatcher of `workers.Workers`) reads them with a
deadline and a size cap and parses them strictly (`decode`), so a worker can
neither hang the grader by trickling bytes nor flood it, and nothing it sends
is ever unpickled or executed.
"""

from __future__ import annotations

import json
import os
import socket
import struct
from typing import Any

MAX_FRAME = 4 * 1024 * 1024  # bytes of one answer: enough for any scenario's data, far less than a flood
MAX_DEPTH = 32
MAX_STRING = 100_000  # characters of one string in an answer (messages are cut further where they are shown)
MAX_INT_BITS = 1330  # about 400 decimal digits
_NUMBERS = {int, float}
HEADER = struct.Struct("!I")


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
            if int in kinds and max(abs(v) for v in value if type(v) is int).bit_length() > MAX_INT_BITS:
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


def read_frame_blocking(fd: int) -> Any:
    """The worker side: one frame from a file descriptor, trusting its sender (the grader)."""
    header = _read_fd(fd, HEADER.size)
    return json.loads(_read_fd(fd, HEADER.unpack(header)[0]))


def _read_fd(fd: int, size: int) -> bytes:
    chunks, missing = [], size
    while missing:
        chunk = os.read(fd, missing)
        if not chunk:
            raise Closed("end of stream")
        chunks.append(chunk)
        missing -= len(chunk)
    return b"".join(chunks)
