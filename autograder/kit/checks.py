"""What a grading test says when a check fails: the inputs, what was expected and what came back.

Tests call these helpers instead of bare `assert`, so the scorecard can explain a
failure without showing the test's code.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any


class CheckFailed(AssertionError):
    """A check of the learner's code that did not hold."""

    def __init__(self, what: str, expected: Any, actual: Any, inputs: str | None = None, note: str | None = None):
        self.what, self.expected, self.actual, self.inputs, self.note = what, expected, actual, inputs, note
        super().__init__(self.explain())

    def explain(self) -> str:
        lines = [f"check:    {self.what}"]
        if self.inputs:
            lines.append(f"inputs:   {self.inputs}")
        lines += [f"expected: {_show(self.expected)}", f"got:      {_show(self.actual)}"]
        if self.note:
            lines.append(f"note:     {self.note}")
        return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, dict) and "$type" in value:  # something the worker could not send as plain data
        return f"a {value['$type']}: {value.get('$repr', '')}"
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + f"… ({len(text)} characters)"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def close(actual: Any, expected: float, rel: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    return _is_number(actual) and math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol)


def expect_close(actual: Any, expected: float, what: str, inputs: str | None = None,
                 rel: float = 1e-6, abs_tol: float = 1e-9, note: str | None = None) -> None:
    """Fail unless `actual` is a number within `rel` (relative) or `abs_tol` of `expected`."""
    if not close(actual, expected, rel, abs_tol):
        if not _is_number(actual):
            kind = actual["$type"] if isinstance(actual, dict) and "$type" in actual else type(actual).__name__
            note = note or f"expected a number, got a {kind}"
        raise CheckFailed(what, expected, actual, inputs, note)


def expect_equal(actual: Any, expected: Any, what: str, inputs: str | None = None, note: str | None = None) -> None:
    if not (type(actual) is type(expected) or _is_number(actual) and _is_number(expected)) or actual != expected:
        raise CheckFailed(what, expected, actual, inputs, note)


def expect(condition: bool, what: str, expected: Any, actual: Any, inputs: str | None = None,
           note: str | None = None) -> None:
    if not condition:
        raise CheckFailed(what, expected, actual, inputs, note)


def expect_raises(error: type[BaseException], call: Callable[[], Any], what: str,
                  inputs: str | None = None) -> BaseException:
    """Fail unless `call()` raises `error`; return the exception for further checks."""
    try:
        result = call()
    except error as exc:
        return exc
    except NotImplementedError:
        raise
    except Exception as exc:  # the learner raised, but the wrong kind
        raise CheckFailed(what, f"{error.__name__} raised", f"{type(exc).__name__}: {exc}", inputs) from None
    raise CheckFailed(what, f"{error.__name__} raised", f"returned {result!r}", inputs)


def finite_difference(fn: Callable[[float], float], x: float, h: float = 1e-6) -> float:
    """The grader's own central difference, used as an oracle."""
    return (fn(x + h) - fn(x - h)) / (2 * h)


def expect_raised(outcome: dict, error: str, what: str, inputs: str | None = None) -> None:
    """Fail unless a scenario's `outcome(...)` says the call raised `error` (a type name)."""
    if outcome.get("raised") == error:
        return
    actual = f"{outcome['raised']}: {outcome.get('message', '')}" if "raised" in outcome else \
        f"returned {_show(outcome.get('returned'))}"
    raise CheckFailed(what, f"{error} raised", actual, inputs)
