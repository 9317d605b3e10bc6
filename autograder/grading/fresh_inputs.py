"""Graded runs: each visible check asked again, on inputs drawn afresh for this submission.

A visible check runs on the page's inputs, so its answers are known: a student
edition even ships them (`reference_answers.json`), and a submission could
answer every visible check from that table without any code behind it. In a
graded run (`batch`, Gradescope: `--fresh-inputs SEED`), every call a visible
check makes into the learner's code is made a second time with its numbers
drawn afresh: each float scaled by a seeded factor, each integer of 2 or more
(a size, a count, a seed, a network's widths: the structure of what is built)
moved to another one near it; booleans, 0, 1 and strings stay as they are. The
answer must have exactly the shape of the reference's (a bool is not an int, a
dict has no key more), and on the drawn inputs it must equal the reference's
there (or, where the check accepted an answer of its own kind on the page,
have the reference's shape there). A recorded answer is then worth nothing; honest code, which computes rather than
recalls, gives both. The learner's own runs keep the page's inputs alone.

The seed is drawn per submission and recorded in the results, so a run can be
repeated exactly (`pytest autograder --fresh-inputs SEED`).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from typing import Any

from autograder.kit.checks import CheckFailed

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


def same(a: Any, b: Any) -> bool:
    """Whether two answers (plain data) agree: numbers within a rounding error, lists in any order, the rest
    exactly."""
    if type(a) is list and type(b) is list and _exactly(a) == _exactly(b):  # a long list the same (a 100,000-node
        return True  # order): at C speed, and only where each element would be `same` too
    if type(a) is list and type(b) is list and len(a) == len(b) and _plain_ints(a) and _plain_ints(b):
        if sorted(a) == sorted(b):  # the same integers in another order (a graph walked another way): at C speed
            return True
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


def _exactly(value: Any) -> str:
    """An answer as exact text: equal texts are `same` answers (a bool is not a number, 1 and 1.0 differ here)."""
    return json.dumps(value, default=repr)


def shape(value: Any) -> Any:
    """What an answer is made of, without its values: the kind of each leaf (an int and a float are both a number,
    a bool is not), each dict's and list's size and its values' shapes (in any order; a dict's keys may name
    objects of the worker's, which differ from run to run)."""
    if type(value) is bool or value is None or type(value) is str:
        return type(value).__name__
    if type(value) in (int, float):
        return "number"
    if isinstance(value, (list, tuple)):
        return ("list", _multiset(value))
    if isinstance(value, dict):
        return ("dict", _multiset(value.values()))
    return type(value).__name__


def _multiset(values) -> frozenset:
    """The shapes of `values` with how often each comes, in no order: a set of (shape, count) pairs, which costs
    one pass over a 100,000-element answer, not a sort."""
    return frozenset(Counter(map(shape, values)).items())


def _plain_ints(values: list) -> bool:
    return all(type(v) is int for v in values)


def ask_again(ask, expect, fn, args: tuple, kwargs: dict, answer: Any, rng: random.Random) -> None:
    """The check's call once more, on inputs drawn from `rng`: fail unless it agrees with the reference there.

    `ask(fn, args, kwargs)` runs the scenario over the learner's code, `expect(fn, args, kwargs, page)` over
    the reference's (None: the reference itself fails on these inputs, so they prove nothing; `page`: these
    are the page's inputs, whose answer is worth keeping). The answer on the page's inputs must have the
    reference's shape there; on the drawn inputs it must be the reference's answer there, or, where the page's
    answer was not the reference's (the check accepted one of its own kind), of the reference's shape.
    """
    on_page = expect(fn, list(args), kwargs, True)
    if on_page is None:
        return
    if shape(answer) != shape(on_page):
        raise CheckFailed(
            "the answer's shape (its kinds of values, keys and lengths), as the reference's",
            on_page,
            answer,
            inputs=_capped(f"{fn.__name__}{tuple(args)!r}" + (f" with {kwargs!r}" if kwargs else "")),
            note="a graded run takes exactly the shape the check expects (a bool is not a number, no extra keys)",
        )
    for integers in [True] * DRAWS + [False]:  # inputs the reference answers: the page's, with sizes or without
        drawn_args, drawn_kwargs = afresh(list(args), rng, integers), afresh(dict(kwargs), rng, integers)
        if drawn_args == list(args) and drawn_kwargs == kwargs:
            continue
        want = expect(fn, drawn_args, drawn_kwargs, False)
        if want is not None:
            break
    else:
        return  # nothing to draw, or no draw the reference itself can answer: these inputs prove nothing
    got = ask(fn, drawn_args, drawn_kwargs)
    # an answer the check accepted of its own kind on the page (a rounder estimate, random weights) is held to the
    # reference's shape there; one that was the reference's, to the reference's values too
    if not (same(got, want) if same(answer, on_page) else shape(got) == shape(want)):
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
