"""Shared tools of the grading tests: the grader's own backward sweep, and reading possibly wrong results.

The sweep here is the grader's, not the learner's `backward()` (task 6.1), so
that an operation's checks do not depend on the learner's backward.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .checks import _is_number, expect


def data_of(v: Any) -> Any:
    """`v.data`, or `v` itself when an operation returned something that is not a Value."""
    return getattr(v, "data", v)


def is_number(x: Any) -> bool:
    return _is_number(x)


def expect_value(out: Any, value_class: type, what: str, inputs: str) -> None:
    """Fail (rather than crash further on) when an operation did not return a Value."""
    expect(isinstance(out, value_class), f"type of {what}", "a Value", type(out).__name__, inputs)


def sweep(root, seed: float = 1.0) -> None:
    """Set `root.grad = seed` and call every `_backward` once, from the root back to the leaves (no recursion)."""
    topo, seen, stack = [], set(), [(root, False)]
    while stack:
        v, children_done = stack.pop()
        if children_done:
            topo.append(v)
        elif v not in seen:
            seen.add(v)
            stack.append((v, True))
            stack.extend((child, False) for child in v._prev)
    root.grad = seed
    for v in reversed(topo):
        v._backward()


@contextmanager
def collector_sees_only_new_objects() -> Iterator[None]:
    """Let Python's automatic collections walk only the objects made inside the block.

    Every training step leaves a graph full of reference cycles; without this, the
    collections triggered during a run walk every object of the grader's process
    (PyTorch included). It changes no result.
    """
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic collections inside the block: building a huge graph wakes the collector again and again."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
