"""Graded runs: each visible check looked at again, on inputs drawn afresh for this submission.

A visible check runs on the page's inputs, so its answers are known: a student
edition even ships them (`reference_answers.json`), and a submission could
answer every visible check from that table without any code behind it. In a
graded run (`batch`, Gradescope: `--fresh-inputs SEED`), a visible check that
passed is run twice more, with every call it makes into the learner's code made
on numbers drawn afresh: each float scaled by a seeded factor, each integer of
2 or more (a size, a count, a seed, a network's widths: the structure of what
is built) moved to another one near it; booleans, 0, 1 and strings stay as they
are. First on the reference's answers there (`Draw`: the draws the reference
answers), then on the learner's, each time with the check's judgement only
recording what each of its helpers was given (`kit.checks.judged`). The two
records must agree helper by helper, each by that helper's own rule (`compare`):
a number within the tolerance the check gives it (or a rounding error, if that
is wider), a value equal to the reference's, a condition that holds where it
holds for the reference, an outcome that raised where the reference's did. So
whatever the learner's answer on the page (the reference's own or one the
check accepted of its own kind), the drawn one is judged by the page check's
own rule against the reference's. A recorded answer is then worth nothing;
honest code, which computes rather than recalls, gives both. A check none of
whose calls has anything to draw counts for nothing in a graded run
(`NothingDrawn`). The learner's own runs keep the page's inputs alone.

The seed is drawn per submission and recorded in the results, so a run can be
repeated exactly (`pytest autograder --fresh-inputs SEED`).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from autograder.kit.checks import CheckFailed, Judged

SCALE = (0.8, 1.25)  # how far a number moves: keeps its sign, its zero and its order of magnitude
REL, ABS = 1e-6, 1e-9  # two answers agree within these (the reference and the learner round differently)


def rng_for(seed: int, check: str) -> random.Random:
    """The draws of one check: the same for a given seed and check, whatever else the run grades."""
    return random.Random(f"{seed}:{check}")


def afresh(value: Any, rng: random.Random, integers: bool = True) -> Any:
    """`value` with its numbers drawn from `rng` (lists, tuples and dicts walked): every finite float scaled, every
    integer of 2 or more moved to another near it, of the same sign, unless not `integers` (booleans, 0, 1 and
    strings kept)."""
    if type(value) is float and math.isfinite(value):
        return value * rng.uniform(*SCALE)
    if integers and type(value) is int and abs(value) >= 2:
        moved = round(value * rng.uniform(*SCALE))
        return moved if moved != value else value + rng.choice((1, -1)) * (1 if value > 0 else -1)
    if isinstance(value, (list, tuple)):
        return type(value)(afresh(v, rng, integers) for v in value)
    if isinstance(value, dict):
        return {k: afresh(v, rng, integers) for k, v in value.items()}
    return value


DRAWS = 4  # draws of sizes and numbers tried before the numbers alone: a drawn index may name nothing


def alike(a: Any, b: Any) -> bool:
    """Whether two values a helper judged agree: numbers within a rounding error, lists in order (a helper that
    was given a list judged it in its order), dicts key by key, the rest exactly."""
    if _number(a) and _number(b):
        return _close(a, b)
    if type(a) in (list, tuple) and type(b) in (list, tuple):
        return _exactly(a) == _exactly(b) or (len(a) == len(b) and all(map(alike, a, b)))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(alike(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _exactly(value: Any) -> str:
    """An answer as exact text: equal texts are alike answers (a bool is not a number, 1 and 1.0 differ here)."""
    return json.dumps(value, default=repr)


class Diverged(Exception):  # noqa: N818 - reads as what it says
    """The learner's answers on drawn inputs led a check's judgement to another call than the reference's did."""

    def __init__(self):
        super().__init__("your answers led the check to another call than the reference's answers did")


class NothingDrawn(Exception):  # noqa: N818 - reads as what it says
    """No call of a visible check had inputs that could be drawn afresh (nor any the reference answers): its answers
    are known, so it counts for nothing in a graded run."""


@dataclass
class Draw:
    """One call of a check as the reference's pass made it: the scenario, the page's arguments and the ones it was
    asked on (drawn afresh, or the page's own where nothing could be drawn: `drew`)."""

    name: str
    args: list
    kwargs: dict
    drawn_args: list
    drawn_kwargs: dict
    drew: bool

    def shown(self) -> str:
        kwargs = f" with {self.drawn_kwargs!r}" if self.drawn_kwargs else ""
        return _capped(f"{self.name}{tuple(self.drawn_args)!r}{kwargs}")


def draw(name: str, args: list, kwargs: dict, rng: random.Random, answer: Callable[[list, dict], Any]) -> tuple:
    """A call's arguments drawn afresh from `rng`, and `answer(args, kwargs)` there: the first draw it answers (not
    None), sizes and numbers first, then numbers alone. Returns the `Draw` and its answer; the draw is the page's
    own, not drawn (`drew` False), where nothing can be drawn or no draw is answered."""
    for integers in [True] * DRAWS + [False]:
        drawn_args, drawn_kwargs = afresh(list(args), rng, integers), afresh(dict(kwargs), rng, integers)
        if drawn_args == list(args) and drawn_kwargs == kwargs:
            continue
        got = answer(drawn_args, drawn_kwargs)
        if got is not None:
            return Draw(name, list(args), dict(kwargs), drawn_args, drawn_kwargs, True), got
    return Draw(name, list(args), dict(kwargs), list(args), dict(kwargs), False), None


class Ending(NamedTuple):
    """How a pass of a check ended: None if its judgement ran to its end, else the exception it raised."""

    raised: BaseException | None


def compare(want: list[Judged], want_end: Ending, got: list[Judged], got_end: Ending, draws: list[Draw]) -> None:
    """Fail unless the learner's pass judged like the reference's: the same calls, each helper given an answer that
    agrees with the reference's by that helper's own rule, as often, and the same ending.

    `want` and `got` are the records of the two passes (`kit.checks.judged`), `draws` the calls as they were asked.
    Records are paired helper by helper, each helper's (`what` it checks) in its order: where a judgement walks an
    answer (a valid order of a graph's nodes, one of several), it may look at its parts in another order.
    """
    mine, theirs = _grouped(got, draws), _grouped(want, draws)
    for key in [*theirs, *(k for k in mine if k not in theirs)]:
        ws, gs = theirs.get(key, []), mine.get(key, [])
        if len(ws) != len(gs):
            _differ(
                f"how often the check looked at this: {key[1]}",
                f"{len(ws)} times",
                f"{len(gs)} times",
                (ws or gs)[0][1],
                "your answers led the check elsewhere than the reference's did",
            )
        for (w, call), (g, _) in zip(ws, gs, strict=True):
            if not _agrees(w, g) and w.kind == "graph":
                _differ(w.what, "the reference's data and grads, node by node", "other ones, or another graph", call)
            if not _agrees(w, g):
                _differ(w.what, _value(w), _value(g), call)
    last = next((draws[j.actual] for j in reversed(want) if j.kind == "call" and j.actual < len(draws)), None)
    _same_ending(want_end.raised, got_end.raised, last)


def _grouped(records: list[Judged], draws: list[Draw]) -> dict[tuple[str, str], list[tuple[Judged, Draw | None]]]:
    """The records by helper (its kind and what it checks), in their order, each with the call it came after."""
    groups, call = {}, None
    for j in records:
        if j.kind == "call" and j.actual < len(draws):
            call = draws[j.actual]
        groups.setdefault((j.kind, j.what), []).append((j, call))
    return groups


def compare_answers(want: list, got: list, draws: list[Draw], records: list[Judged]) -> None:
    """Fail unless each call's answer on drawn inputs has the reference's numbers there (`numbers_alike`), within
    the widest tolerance the check's judgement gives a number (or a rounding error)."""
    rel = max([REL] + [j.rel for j in records if j.kind in ("close", "graph")])
    abs_tol = max([ABS] + [j.abs_tol for j in records if j.kind in ("close", "graph")])
    for w, g, call in zip(want, got, draws, strict=False):
        if not numbers_alike(g, w, rel, abs_tol):
            _differ("your answer's numbers (and how they are laid out), as the reference's", w, g, call)


def numbers_alike(got: Any, want: Any, rel: float = REL, abs_tol: float = ABS) -> bool:
    """Whether an answer has the numbers of another, laid out alike: numbers within `rel` or `abs_tol`, booleans and
    None equal, lists of the same length (in order, or in another: a set walked in another process's order),
    dicts of as many values (by key, or in order where their keys differ: names of a process's own objects);
    strings may differ (a message, a drawing: the judgement reads those)."""
    if _number(got) and _number(want):
        return _close(got, want, rel, abs_tol)
    if isinstance(got, str) and isinstance(want, str):
        return True
    if isinstance(got, (list, tuple)) and isinstance(want, (list, tuple)):
        if len(got) != len(want):
            return False
        if _exactly(got) == _exactly(want) or all(map(lambda a, b: numbers_alike(a, b, rel, abs_tol), got, want)):
            return True
        pairs = zip(sorted(got, key=_order), sorted(want, key=_order), strict=True)
        return all(numbers_alike(a, b, rel, abs_tol) for a, b in pairs)
    if isinstance(got, dict) and isinstance(want, dict):
        if got.keys() == want.keys():
            return all(numbers_alike(got[k], want[k], rel, abs_tol) for k in want)
        return numbers_alike(list(got.values()), list(want.values()), rel, abs_tol)
    return type(got) is type(want) and got == want


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(a: float, b: float, rel: float = REL, abs_tol: float = ABS) -> bool:
    """Two numbers within `rel` (relative) or `abs_tol` of each other; two NaNs agree, an int too large for a float
    only with itself."""
    try:
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=rel, abs_tol=abs_tol)
    except OverflowError:
        return a == b


def _agrees(w: Judged, g: Judged) -> bool:
    """Whether the learner's record `g` agrees with the reference's `w`, by the rule of the helper that made both."""
    if w.kind == "close":
        if not (_number(w.actual) and _number(g.actual)):
            return alike(g.actual, w.actual)
        return _close(g.actual, w.actual, max(w.rel, REL), max(w.abs_tol, ABS))
    if w.kind == "graph":
        return _same_graph(g.actual, w.actual, max(w.rel, REL), max(w.abs_tol, ABS))
    if w.kind == "equal":
        return alike(g.actual, w.actual)
    return g.actual == w.actual  # a condition, an outcome's error, a list's length, a call's number


def _same_graph(got: Any, want: Any, rel: float, abs_tol: float) -> bool:
    """Two `graph_report`s with the same nodes, linked alike, of the same data and grads (ops aside, as the check)."""
    if not isinstance(want, dict) or not isinstance(want.get("nodes"), list):
        return alike(got, want)
    if not isinstance(got, dict) or not isinstance(got.get("nodes"), list) or len(got["nodes"]) != len(want["nodes"]):
        return False
    for mine, theirs in zip(got["nodes"], want["nodes"], strict=True):
        if not isinstance(mine, dict) or mine.get("children") != theirs["children"]:
            return False
        for field in ("data", "grad"):
            a, b = mine.get(field), theirs[field]
            if not (_close(a, b, rel, abs_tol) if _number(a) and _number(b) else alike(a, b)):
                return False
    return True


def _same_ending(want: BaseException | None, got: BaseException | None, call: Draw | None) -> None:
    if want is None and got is None:
        return
    if want is not None and got is not None and type(want) is type(got):
        if not isinstance(want, CheckFailed):
            return
        if want.what == got.what and alike(_plain(got.actual), _plain(want.actual)):
            return
    _differ(
        "how the check ended, given your answers",
        _ending_of(want),
        _ending_of(got),
        call,
        "your answers led the check elsewhere than the reference's did",
    )


def _differ(what: str, expected: Any, actual: Any, call: Draw | None, note: str = "") -> None:
    raise CheckFailed(
        f"{what}, on inputs drawn afresh for this graded run",
        expected,
        actual,
        inputs=call.shown() if call else None,
        note=note or "your code gave the expected answer on the page's inputs, not on these",
    )


def _value(j: Judged) -> Any:
    if j.kind == "expect":
        return "holds" if j.actual else "does not hold"
    if j.kind == "raised":
        return "raised as asked" if j.actual else "did not raise as asked"
    if j.kind == "list":
        return f"a list of {j.actual}" if j.actual is not None else "not a list"
    return j.actual


def _ending_of(raised: BaseException | None) -> str:
    if raised is None:
        return "it ran to its end"
    if isinstance(raised, CheckFailed):
        return f"it stopped at: {raised.what}"
    return f"it stopped: {type(raised).__name__}"


def _plain(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=repr))
    except (TypeError, ValueError):
        return repr(value)


def _capped(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} characters)"


def _order(value: Any) -> str:
    """A sort key for any plain answer: its JSON, numbers rounded so that rounding errors do not reorder."""

    def rounded(v: Any) -> Any:
        if isinstance(v, float):
            return float(f"{v:.6g}") if math.isfinite(v) else str(v)
        if isinstance(v, (list, tuple)):
            return [rounded(x) for x in v]
        if isinstance(v, dict):
            return {str(k): rounded(x) for k, x in v.items()}
        return v

    return json.dumps(rounded(value), sort_keys=True, default=str)
