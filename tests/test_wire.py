"""What crosses the trust boundary: plain data within the caps, and nothing else (`autograder/worker/wire.py`)."""

from __future__ import annotations

import json

import pytest

from autograder.worker import wire


class Sneaky(float):
    """A float subclass: it could carry behaviour into the grader, so it is not plain data."""


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        1.5,
        float("nan"),
        -(10**300),
        "text",
        [1, 2.5, 3],
        [True, None, "x", [1.0]],
        {"a": [1, {"b": [2.0, 3]}]},
        [1] * 1000 + [2.0] * 1000,
    ],
)
def test_plain_data_passes_unchanged(value):
    assert wire.check_plain(value) is value
    assert json.dumps(wire.decode(wire.encode(value)[wire.HEADER.size :])) == json.dumps(value)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        (Sneaky(1.0), "not plain data"),
        ([1.0, Sneaky(2.0)], "not plain data"),
        ({1: 2}, "not a string"),
        ((1, 2), "not plain data"),
        (10**500, "integer too large"),
        ([1.0, 2, -(10**500)], "integer too large"),
        ([[1, 10**500]], "integer too large"),
        ("x" * (wire.MAX_STRING + 1), "string too long"),
        (["x" * (wire.MAX_STRING + 1)], "string too long"),
        (json.loads("[" * (wire.MAX_DEPTH + 2) + "]" * (wire.MAX_DEPTH + 2)), "nested too deep"),
    ],
)
def test_anything_else_is_refused_with_its_reason(value, reason):
    with pytest.raises(wire.WireError, match=reason):
        wire.check_plain(value)


@pytest.mark.parametrize(
    "body",
    [b"{not json", b"\xff\xfe", b"[" * 100_000 + b"]" * 100_000, b"1" * 5000, b"[" + b"9" * 1000 + b"]"],
)
def test_a_frame_that_is_not_plain_json_is_a_wire_error(body):
    with pytest.raises(wire.WireError):
        wire.decode(body)
