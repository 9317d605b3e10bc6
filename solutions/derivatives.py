"""Derivatives from first principles, by nudging inputs (lesson 1).

Tasks in this file (the list is written by `python -m autograder build`):

- 1.1 forward_difference
- 1.2 central_difference
- 1.3 partial_derivative
"""

from __future__ import annotations

from collections.abc import Callable, Sequence


def f(x: float) -> float:
    """The lesson's example function, 3x² - 4x + 5."""
    return 3 * x**2 - 4 * x + 5


def _check_step(h: float) -> None:
    # A zero step divides by zero and a negative one silently flips the slope's meaning.
    if not h > 0:
        raise ValueError(f"the step h must be a positive number, got {h!r}")


def forward_difference(
    fn: Callable[[float], float],
    x: float,
    h: float = 1e-6,
) -> float:
    """Estimate fn'(x) as the rise over the run of a small step forward,
    (fn(x + h) - fn(x)) / h (task 1.1).

    Raises:
        ValueError: when `h` is not a positive number.
    """
    ### BEGIN SOLUTION (task 1.1)
    _check_step(h)
    return (fn(x + h) - fn(x)) / h
    ### END SOLUTION


def central_difference(
    fn: Callable[[float], float],
    x: float,
    h: float = 1e-5,
) -> float:
    """Estimate fn'(x) from a step either side, (fn(x + h) - fn(x - h)) / (2h)
    (task 1.2).

    Its error shrinks like h², against h for the forward difference.

    Raises:
        ValueError: when `h` is not a positive number.
    """
    ### BEGIN SOLUTION (task 1.2)
    _check_step(h)
    return (fn(x + h) - fn(x - h)) / (2 * h)
    ### END SOLUTION


def partial_derivative(
    fn: Callable[..., float],
    args: Sequence[float],
    i: int,
    h: float = 1e-4,
) -> float:
    """Estimate ∂fn/∂args[i] by nudging only argument `i` forward by `h` (task 1.3).

    `fn` takes the arguments positionally: `fn(*args)`. The other arguments
    stay as they are.

    Raises:
        ValueError: when `h` is not a positive number.
        IndexError: when `i` does not name an argument.

    Leaves unchanged:
        the caller's `args`: nudge a copy.
    """
    ### BEGIN SOLUTION (task 1.3)
    _check_step(h)
    if not -len(args) <= i < len(args):
        raise IndexError(f"argument index {i} is out of range for {len(args)} arguments")
    nudged = list(args)
    nudged[i] += h
    return (fn(*nudged) - fn(*args)) / h
    ### END SOLUTION
