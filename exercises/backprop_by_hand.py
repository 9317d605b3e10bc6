"""Backpropagation by hand on the running example L = (a·b + c)·f (lesson 4).

Tasks in this file (the list is written by `python -m autograder build`):

- 4.1 numerical_gradient
- 4.2 hand_gradients
- 4.3 ascent_step
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .engine import Value


def running_example(
    a: float = 2.0,
    b: float = -3.0,
    c: float = 10.0,
    f: float = -2.0,
) -> dict[str, Value]:
    """Build e = a·b, d = e + c, L = d·f from labelled leaves; return every node by
    label.
    """
    a, b, c, f = Value(a, label="a"), Value(b, label="b"), Value(c, label="c"), Value(f, label="f")
    e = a * b
    e.label = "e"
    d = e + c
    d.label = "d"
    L = d * f
    L.label = "L"
    return {"a": a, "b": b, "c": c, "e": e, "d": d, "f": f, "L": L}


def numerical_gradient(
    expression: Callable[..., Value | float],
    inputs: dict[str, float],
    leaf: str,
    h: float = 0.001,
) -> float:
    """Estimate d(output)/d(leaf) by rebuilding the expression with `leaf` nudged by
    `h` (task 4.1).

    `expression` takes the inputs as keyword arguments and returns a Value (or
    a plain number): compare the `.data` of a Value.

    Returns:
        (output(leaf + h) - output) / h.

    Raises:
        KeyError: when `leaf` is not one of `inputs`; its message lists the known names.

    Leaves unchanged:
        the caller's `inputs` dictionary: nudge a copy.
    """
    # TODO(task 4.1): numerical_gradient: see the docstring.
    raise NotImplementedError("task 4.1: numerical_gradient")


def hand_gradients(a: float, b: float, c: float, f: float) -> dict[str, float]:
    """Return dL/dx for every node x of the running example, derived by hand
    (task 4.2).

    Keys: `'L', 'f', 'd', 'c', 'e', 'a', 'b'`. Work backwards from dL/dL = 1
    with the chain rule, using only the leaf values passed in (no `Value`,
    no `backward()`).
    """
    # TODO(task 4.2): hand_gradients: see the docstring.
    raise NotImplementedError("task 4.2: hand_gradients")


def ascent_step(leaves: Iterable[Value], step_size: float = 0.01) -> None:
    """Move every leaf's `data` by `step_size × grad`, the direction that makes the
    output grow (task 4.3).
    """
    # TODO(task 4.3): ascent_step: see the docstring.
    raise NotImplementedError("task 4.3: ascent_step")
