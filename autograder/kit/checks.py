"""What a grading test says when a check fails: the inputs, what was expected and what came back.

Tests call these helpers instead of bare `assert`, so the scorecard can explain a
failure without showing the test's code. A whole graph's grads, node by node, are
`graph_checks.py`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NamedTuple

from autograder.course.causes import cause as known_cause


class CheckFailed(AssertionError):
    """A check of the learner's code that did not hold."""

    def __init__(
        self,
        what: str,
        expected: Any,
        actual: Any,
        inputs: str | None = None,
        note: str | None = None,
        hint: str | None = None,
        cause: str = "",
    ):
        self.what, self.expected, self.actual, self.inputs, self.note = what, expected, actual, inputs, note
        self.hint = hint  # the hint for how this check failed, where the check can tell: shown before the marker's
        # the mistake the check recognised in the answer, an id of `course/causes.py` ("" when it cannot tell)
        self.cause = known_cause(cause).id if cause else ""
        super().__init__(self.explain())

    def explain(self) -> str:
        lines = [f"check:    {self.what}"]
        if self.inputs:
            lines.append(f"inputs:   {self.inputs}")
        lines += [f"expected: {_show(self.expected)}", f"got:      {_show(self.actual)}{_direction(self)}"]
        if self.note:
            lines.append(f"note:     {self.note}")
        if self.hint:
            lines.append(f"{HINT}{self.hint}")
        return "\n".join(lines)


HINT = "hint:     "  # a failure's own hint line, which the scorecard shows instead of the check's marker hint


def _direction(failure: CheckFailed) -> str:
    """Which way a number is off, read from the values: " (1.5 more than expected)"."""
    got, want = failure.actual, failure.expected
    if not (_is_number(got) and _is_number(want)) or not (math.isfinite(got) and math.isfinite(want)) or got == want:
        return ""
    return f" ({format(abs(got - want), '.6g')} {'more' if got > want else 'less'} than expected)"


class WaitsFor(Exception):  # noqa: N818 - reads as what it says: the check waits for another task
    """The check cannot judge its own task, because another task's code it runs through is wrong.

    The grader reports it as "not started: waits for task L.N", so that the bug
    costs points once, in its own task.
    """

    def __init__(self, task_id: str, reason: str):
        super().__init__(reason)
        self.task, self.reason = task_id, reason


class Judged(NamedTuple):
    """What one helper of a judgement was given, while a graded run looks again at a check (`judged`).

    `kind` names the helper's rule: "close" (a number within `rel` or `abs_tol`), "equal", "expect" (a condition),
    "raised" (an outcome raised the error asked for), "list" (a list of the length asked for), "graph" (the
    data and grads of a graph, node by node), or "call" (no helper: the check asked its next scenario call).
    `actual` is what the helper judged: the number, the value, the condition's truth, the list's length, the report.
    """

    kind: str
    what: str
    actual: Any
    rel: float = 0.0
    abs_tol: float = 0.0


_judged: list[Judged] | None = None  # while a graded run looks again at a check: what its helpers were given


@contextmanager
def judged() -> Iterator[list[Judged]]:
    """Within: each helper records what it was given, in order, and raises nothing (a failed expectation is only a
    record). A graded run runs a visible check's judgement so on the reference's answers and on the learner's,
    on inputs drawn afresh, and compares the records helper by helper (`grading.fresh_inputs.compare`): the
    learner's answers are judged against the reference's by each helper's own rule."""
    global _judged
    saved, _judged = _judged, []
    try:
        yield _judged
    finally:
        _judged = saved


def judging_again() -> bool:
    """Whether a graded run is looking again at a check (`judged`): its helpers then only record."""
    return _judged is not None


def _record(kind: str, what: str, actual: Any, rel: float = 0.0, abs_tol: float = 0.0) -> bool:
    """Record a helper's call where a graded run looks again (`judged`): True if it was recorded (and so decides
    nothing now)."""
    if _judged is None:
        return False
    _judged.append(Judged(kind, what, actual, rel, abs_tol))
    return True


def judged_call(name: str) -> None:
    """Where a graded run looks again: the check asks its next scenario call, `name` (the records after it judge its
    answer, and the answers of the calls before)."""
    _record("call", name, sum(j.kind == "call" for j in _judged or ()))


def _show(value: Any) -> str:
    if isinstance(value, dict) and "$type" in value:  # something the worker could not send as plain data
        return f"a {value['$type']}: {value.get('$repr', '')}"
    text = repr(value)
    return text if len(text) <= 300 else text[:300] + f"… ({len(text)} characters)"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def close(actual: Any, expected: float, rel: float = 1e-6, abs_tol: float = 1e-9) -> bool:
    return _is_number(actual) and math.isclose(actual, expected, rel_tol=rel, abs_tol=abs_tol)


def expect_close(
    actual: Any,
    expected: float,
    what: str,
    inputs: str | None = None,
    rel: float = 1e-6,
    abs_tol: float = 1e-9,
    note: str | None = None,
    cause: str = "",
) -> None:
    """Fail unless `actual` is a number within `rel` (relative) or `abs_tol` of `expected`."""
    if _record("close", what, actual, rel, abs_tol):
        return
    if not close(actual, expected, rel, abs_tol):
        if not _is_number(actual):
            kind = actual["$type"] if isinstance(actual, dict) and "$type" in actual else type(actual).__name__
            note = note or f"expected a number, got a {kind}"
        raise CheckFailed(what, expected, actual, inputs, note, cause=cause)


def expect_equal(
    actual: Any,
    expected: Any,
    what: str,
    inputs: str | None = None,
    note: str | None = None,
    hint: str | None = None,
    cause: str = "",
) -> None:
    if _record("equal", what, actual):
        return
    if not (type(actual) is type(expected) or _is_number(actual) and _is_number(expected)) or actual != expected:
        raise CheckFailed(what, expected, actual, inputs, note, hint, cause)


def expect(
    condition: bool,
    what: str,
    expected: Any,
    actual: Any,
    inputs: str | None = None,
    note: str | None = None,
    hint: str | None = None,
    cause: str = "",
) -> None:
    if _record("expect", what, bool(condition)):
        return
    if not condition:
        raise CheckFailed(what, expected, actual, inputs, note, hint, cause)


def expect_list(actual: Any, length: int, what: str, inputs: str | None = None) -> list:
    """`actual` if it is a list of exactly `length` answers: a judgement never pairs answers up with `zip` unchecked."""
    if _record("list", what, len(actual) if type(actual) is list else None):
        return actual
    if type(actual) is not list or len(actual) != length:
        shape = f"a list of {len(actual)}" if type(actual) is list else actual
        raise CheckFailed(what, f"a list of {length}", shape, inputs)
    return actual


def finite_difference(fn: Callable[[float], float], x: float, h: float = 1e-6) -> float:
    """The grader's own estimate of fn'(x), used as an oracle: the five-point stencil, whose error shrinks like h⁴
    (not task 1.2's central difference, which a student edition would otherwise ship)."""
    return (8 * (fn(x + h) - fn(x - h)) - (fn(x + 2 * h) - fn(x - 2 * h))) / (12 * h)


def expect_raised(outcome: dict, error: str, what: str, inputs: str | None = None) -> None:
    """Fail unless a scenario's `outcome(...)` says the call raised `error` (a type name) or a subclass of it."""
    raised = outcome.get("raised") == error or error in outcome.get("kinds", ())
    if _record("raised", what, raised) or raised:
        return
    actual = (
        f"{outcome['raised']}: {outcome.get('message', '')}"
        if "raised" in outcome
        else f"returned {_show(outcome.get('returned'))}"
    )
    raise CheckFailed(what, f"{error} raised", actual, inputs)
