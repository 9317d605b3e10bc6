"""Bonus challenges of lesson 13: sigmoid and log, softmax with cross-entropy, SGD
with momentum.

None of these tasks is needed for full marks: the grader scores them apart,
as bonus points. Each operation is a function that builds a new `Value` with
its own `_backward`, as the methods of `engine.py` do.

Tasks in this file (the list is written by `python -m autograder build`):

- 13.1 sigmoid and log
- 13.2 softmax and cross_entropy
- 13.3 Momentum
"""

from __future__ import annotations

import math

from .engine import Value


def sigmoid(v: Value) -> Value:
    """Return σ(v) = 1 / (1 + e^-v) as a new Value with child `v` and op `'sigmoid'`
    (task 13.1).

    Its local derivative is σ(v)·(1 - σ(v)). It works for any float, also
    -1000, where e^1000 overflows: for a negative input use the equal form
    e^v / (1 + e^v).
    """
    # TODO(task 13.1): sigmoid and log: see the docstring.
    raise NotImplementedError("task 13.1: sigmoid and log")


def log(v: Value) -> Value:
    """Return the natural log of `v` as a new Value with child `v` and op `'log'`
    (task 13.1).

    Its local derivative is 1 / v.

    Raises:
        ValueError: when `v.data` is zero or negative, which has no log; its message
            says so.
    """
    # TODO(task 13.1): sigmoid and log: see the docstring.
    raise NotImplementedError("task 13.1: sigmoid and log")


def softmax(logits: list[Value]) -> list[Value]:
    """Return the probabilities e^sₖ / Σⱼ e^sⱼ, one Value per logit sₖ (task 13.2).

    Build them from Value operations (`-`, `exp`, `+`, `/`), so that their
    backward comes for free. Subtract the largest logit's data from every logit
    first: the probabilities are the same, and no `exp` overflows (logits like
    1000 work).
    """
    # TODO(task 13.2): softmax and cross_entropy: see the docstring.
    raise NotImplementedError("task 13.2: softmax and cross_entropy")


def cross_entropy(logits: list[Value], target: int) -> Value:
    """Return -log pₜ, the loss when class `target` is the right one, as one Value
    (task 13.2).

    pₜ is `softmax(logits)[target]`, but do not take its log: for logits like
    [1000, 0, -1000] and target 2 it rounds to 0. With m the largest logit's
    data, -log pₜ = log Σⱼ e^(sⱼ - m) + m - sₜ, where the sum is at least 1.
    The gradient w.r.t. sₖ is then pₖ - 1 for k = target and pₖ otherwise.
    """
    # TODO(task 13.2): softmax and cross_entropy: see the docstring.
    raise NotImplementedError("task 13.2: softmax and cross_entropy")


class Momentum:
    """Gradient descent with momentum: each parameter keeps a velocity that remembers
    its past steps.

    Each `step()` does, for every parameter p with its own velocity v (0.0 at
    first): v ← beta·v - lr·p.grad, then p.data ← p.data + v. With a constant
    `lr` this moves the parameters exactly as `torch.optim.SGD(params, lr,
    momentum=beta)` does: PyTorch keeps b ← beta·b + grad and steps p ← p - lr·b,
    so its b is our v divided by -lr.
    """

    def __init__(self, parameters: list[Value], lr: float = 0.1, beta: float = 0.9):
        """Keep the parameters (as a list), `lr`, `beta`, and one velocity per
        parameter, all 0.0 (task 13.3).
        """
        # TODO(task 13.3): Momentum: see the docstring.
        raise NotImplementedError("task 13.3: Momentum")

    def step(self) -> None:
        """Update each parameter's velocity with its grad, then move the parameter by
        it (task 13.3).
        """
        # TODO(task 13.3): Momentum: see the docstring.
        raise NotImplementedError("task 13.3: Momentum")

    def zero_grad(self) -> None:
        """Set every parameter's grad to 0.0; the velocities stay, they are the
        optimizer's memory (task 13.3).
        """
        # TODO(task 13.3): Momentum: see the docstring.
        raise NotImplementedError("task 13.3: Momentum")
