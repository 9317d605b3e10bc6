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
    ### BEGIN SOLUTION (task 13.1)
    x = v.data
    s = 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))
    out = Value(s, (v,), "sigmoid")

    def _backward():
        v.grad += s * (1 - s) * out.grad

    out._backward = _backward
    return out
    ### END SOLUTION


def log(v: Value) -> Value:
    """Return the natural log of `v` as a new Value with child `v` and op `'log'`
    (task 13.1).

    Its local derivative is 1 / v.

    Raises:
        ValueError: when `v.data` is zero or negative, which has no log; its message
            says so.
    """
    ### BEGIN SOLUTION (task 13.1)
    if v.data <= 0:
        raise ValueError(f"log is only defined for positive numbers, not {v.data}")
    out = Value(math.log(v.data), (v,), "log")

    def _backward():
        v.grad += out.grad / v.data

    out._backward = _backward
    return out
    ### END SOLUTION


def softmax(logits: list[Value]) -> list[Value]:
    """Return the probabilities e^sₖ / Σⱼ e^sⱼ, one Value per logit sₖ (task 13.2).

    Build them from Value operations (`-`, `exp`, `+`, `/`), so that their
    backward comes for free. Subtract the largest logit's data from every logit
    first: the probabilities are the same, and no `exp` overflows (logits like
    1000 work).
    """
    ### BEGIN SOLUTION (task 13.2)
    top = max(s.data for s in logits)
    exps = [(s - top).exp() for s in logits]
    total = sum(exps)
    return [e / total for e in exps]
    ### END SOLUTION


def cross_entropy(logits: list[Value], target: int) -> Value:
    """Return -log pₜ, the loss when class `target` is the right one, as one Value
    (task 13.2).

    pₜ is `softmax(logits)[target]`, but do not take its log: for logits like
    [1000, 0, -1000] and target 2 it rounds to 0. With m the largest logit's
    data, -log pₜ = log Σⱼ e^(sⱼ - m) + m - sₜ, where the sum is at least 1.
    The gradient w.r.t. sₖ is then pₖ - 1 for k = target and pₖ otherwise.
    """
    ### BEGIN SOLUTION (task 13.2)
    top = max(s.data for s in logits)
    total = sum((s - top).exp() for s in logits)
    return log(total) + top - logits[target]
    ### END SOLUTION


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
        ### BEGIN SOLUTION (task 13.3)
        self.parameters = list(parameters)
        self.lr = lr
        self.beta = beta
        self.velocities = [0.0] * len(self.parameters)
        ### END SOLUTION

    def step(self) -> None:
        """Update each parameter's velocity with its grad, then move the parameter by
        it (task 13.3).
        """
        ### BEGIN SOLUTION (task 13.3)
        for i, p in enumerate(self.parameters):
            self.velocities[i] = self.beta * self.velocities[i] - self.lr * p.grad
            p.data += self.velocities[i]
        ### END SOLUTION

    def zero_grad(self) -> None:
        """Set every parameter's grad to 0.0; the velocities stay, they are the
        optimizer's memory (task 13.3).
        """
        ### BEGIN SOLUTION (task 13.3)
        for p in self.parameters:
            p.grad = 0.0
        ### END SOLUTION
