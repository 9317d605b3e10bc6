"""Loss and gradient descent: fit an MLP to four examples (lesson 11).

Tasks in this file (the list is written by `python -m autograder build`):

- 11.1 squared_error_loss
- 11.2 sgd_step
- 11.3 train
"""

from __future__ import annotations

from .engine import Value
from .nn import MLP, Module

# The lesson's four examples and their targets.
XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
YS = [1.0, -1.0, -1.0, 1.0]


def squared_error_loss(predictions: list[Value], targets: list[float]) -> Value:
    """Return Σ (ŷ - y)² over the examples, as one Value (task 11.1)."""
    # TODO(task 11.1): squared_error_loss: see the docstring.
    raise NotImplementedError("task 11.1: squared_error_loss")


def sgd_step(parameters: list[Value], learning_rate: float) -> None:
    """Move every parameter against its gradient: `p.data += -learning_rate * p.grad`
    (task 11.2).

    Leaves unchanged:
        each parameter's `grad`: the training loop zeroes it, not the step.
    """
    # TODO(task 11.2): sgd_step: see the docstring.
    raise NotImplementedError("task 11.2: sgd_step")


def train(
    model: Module,
    xs: list[list[float]],
    ys: list[float],
    steps: int = 20,
    learning_rate: float = 0.05,
) -> list[float]:
    """Run `steps` rounds of gradient descent and return the loss of each round as
    floats (task 11.3).

    Each round: forward pass on every example, `squared_error_loss`, zero the
    gradients, `backward()`, `sgd_step`. The loss recorded for a round is the
    one computed before that round's update.
    """
    # TODO(task 11.3): train: see the docstring.
    raise NotImplementedError("task 11.3: train")


def lesson_model(seed: int = 1337) -> MLP:
    """The lesson's network, MLP(3, [4, 4, 1]) with tanh neurons, from a fixed
    seed.
    """
    import random

    random.seed(seed)
    return MLP(3, [4, 4, 1])
