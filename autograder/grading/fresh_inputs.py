"""Graded runs: each visible check asked again, on numeric inputs drawn afresh for this submission.

A visible check runs on the page's inputs, so its answers are known: a student
edition even ships them (`reference_answers.json`), and a submission could
answer every visible check from that table without any code behind it. In a
graded run (`batch`, Gradescope: `--fresh-inputs SEED`), every call a visible
check makes into the learner's code is made a second time with its numbers
drawn afresh (each float scaled by a seeded factor; integers, strings and
booleans, which name sizes, indices, seeds and choices, stay as they are), and
the answer must then equal the reference's on those same inputs, wherever the
answer on the page's inputs equalled the reference's there. A recorded answer
is then worth nothing; honest code, which computes rather than recalls, gives
both. The learner's own runs keep the page's inputs alone.

The seed is drawn per submission and recorded in the results, so a run can be
repeated exactly (`pytest autograder --fresh-inputs SEED`).
"""

from __future__ import annotations

import json
import math
import random
from typing import Any

from autograder.kit.checks import CheckFailed

SCALE = (0.8, 1.25)  # how far a number moves: keeps its sign, its zero and its order of magnitude
REL, ABS = 1e-6, 1e-9  # two answers agree within these (the reference and the learner round differently)


def rng_for(seed: int, check: str) -> random.Random:
    """The draws of one check: the same for a given seed and check, whatever else the run grades."""
    return random.Random(f"{seed}:{check}")


def afresh(value: Any, rng: random.Random) -> Any:
    """`value` with every float in it scaled by a factor drawn from `rng` (lists, tuples and dicts walked)."""
    if isinstance(value, float) and math.isfinite(value):
        return value * rng.uniform(*SCALE)
    if isinstance(value, (list, tuple)):
        return type(value)(afresh(v, rng) for v in value)
    if isinstance(value, dict):
        return {k: afresh(v, rng) for k, v in value.items()}
    return value


def same(a: Any, b: Any) -> bool:
    """Whether two answers (plain data) agree: numbers within a rounding error, lists in any order, the rest
    exactly."""
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return math.isclose(a, b, rel_tol=REL, abs_tol=ABS)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        if len(a) != len(b):
            return False
        if all(same(x, y) for x, y in zip(a, b, strict=True)):
            return True
        # in another order: the order a set is walked in differs between processes (the page's check judges order)
        return all(same(x, y) for x, y in zip(sorted(a, key=_order), sorted(b, key=_order), strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def ask_again(ask, expect, fn, args: tuple, kwargs: dict, answer: Any, rng: random.Random) -> None:
    """The check's call once more, on inputs drawn from `rng`: fail unless it agrees with the reference there.

    `ask(fn, args, kwargs)` runs the scenario over the learner's code, `expect(fn, args, kwargs, page)` over
    the reference's (None: the reference itself fails on these inputs, so they prove nothing; `page`: these
    are the page's inputs, whose answer is worth keeping). Nothing is asked when the call has no float to
    draw, or when the learner's answer on the page's inputs is not the reference's (the check accepted an
    answer of its own kind: there is nothing to compare it with).
    """
    drawn_args, drawn_kwargs = afresh(list(args), rng), afresh(dict(kwargs), rng)
    if drawn_args == list(args) and drawn_kwargs == kwargs:
        return
    if not same(answer, expect(fn, list(args), kwargs, True)):
        return
    want = expect(fn, drawn_args, drawn_kwargs, False)
    if want is None:
        return
    got = ask(fn, drawn_args, drawn_kwargs)
    if not same(got, want):
        raise CheckFailed(
            "the same check, on inputs drawn afresh for this graded run",
            want,
            got,
            inputs=_capped(f"{fn.__name__}{tuple(drawn_args)!r}" + (f" with {drawn_kwargs!r}" if drawn_kwargs else "")),
            note="your code gave the expected answer on the page's inputs, not on these",
        )


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
