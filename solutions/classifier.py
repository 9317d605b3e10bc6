"""A real classifier: separate two interleaving half-moons with an MLP (lesson 12).

Tasks in this file (the list is written by `python -m autograder build`):

- 12.1 hinge_loss
- 12.2 l2_penalty
- 12.3 accuracy
- 12.4 train_step and train_classifier
"""

from __future__ import annotations

import gc
import random
from contextlib import contextmanager

from .engine import Value
from .nn import MLP, Module


def moons(
    n_samples: int = 100,
    noise: float = 0.1,
    seed: int = 1,
) -> tuple[list[list[float]], list[int]]:
    """Two interleaving half-moons, labelled -1 and +1: scikit-learn's `make_moons`,
    point for point.

    Made here with NumPy as scikit-learn makes them (the same points for the same
    seed), so that the course does not install scikit-learn and SciPy (about 190 MB)
    for one data set.
    """
    import numpy as np

    rng = np.random.RandomState(seed)
    n_out, n_in = n_samples // 2, n_samples - n_samples // 2
    t_out, t_in = np.linspace(0, np.pi, n_out), np.linspace(0, np.pi, n_in)
    X = np.vstack([np.append(np.cos(t_out), 1 - np.cos(t_in)), np.append(np.sin(t_out), 1 - np.sin(t_in) - 0.5)]).T
    y = np.append(np.zeros(n_out, dtype=int), np.ones(n_in, dtype=int))
    order = np.arange(n_samples)
    rng.shuffle(order)  # shuffled first, then the noise: make_moons' order of draws
    X = X[order] + rng.normal(scale=noise, size=(n_samples, 2))
    return X.tolist(), [int(label) * 2 - 1 for label in y[order]]


def held_out_moons(
    n_samples: int = 200,
    noise: float = 0.1,
    seed: int = 2,
) -> tuple[list[list[float]], list[int]]:
    """Points held back from training: a second draw of the same two moons, with its
    own seed.

    The training points are `moons()` (100 points, seed 1); these share no draw with
    them, so the accuracy on them says how the trained model does on points it has
    never seen.
    """
    return moons(n_samples, noise, seed)


def classifier_model(seed: int = 1337) -> MLP:
    """The lesson's network: MLP(2, [16, 16, 1]), ReLU hidden layers, a linear output
    score.
    """
    random.seed(seed)
    return MLP(2, [16, 16, 1], act="relu", linear_output=True)


def hinge_loss(scores: list[Value], labels: list[int]) -> Value:
    """Return the max-margin loss: the mean of relu(1 - yᵢ·scoreᵢ) over the examples
    (task 12.1).
    """
    ### BEGIN SOLUTION (task 12.1)
    losses = [(1 - y * s).relu() for s, y in zip(scores, labels, strict=True)]
    return sum(losses, Value(0.0)) * (1.0 / len(losses))
    ### END SOLUTION


def l2_penalty(parameters: list[Value], alpha: float = 1e-4) -> Value:
    """Return α·Σ p², the regularisation term that keeps the weights small
    (task 12.2).
    """
    ### BEGIN SOLUTION (task 12.2)
    return alpha * sum((p * p for p in parameters), Value(0.0))
    ### END SOLUTION


def accuracy(scores: list[Value], labels: list[int]) -> float:
    """Return the share of examples with sign(score) = label, between 0 and 1
    (task 12.3).

    A score of exactly 0 counts as wrong for either label.
    """
    ### BEGIN SOLUTION (task 12.3)
    return sum((s.data > 0) == (y > 0) and s.data != 0 for s, y in zip(scores, labels, strict=True)) / len(labels)
    ### END SOLUTION


def train_step(
    model: Module,
    X: list[list[float]],
    y: list[int],
    learning_rate: float,
) -> tuple[float, float]:
    """One step of training on the examples `X`, `y`; return the step's
    `(loss, accuracy)` (task 12.4).

    Compute the scores, the total loss `hinge_loss + l2_penalty(model.parameters())`,
    zero the gradients, backpropagate, and move each parameter by
    `-learning_rate · grad`. The accuracy is that of the scores computed before the
    update, the ones the loss was computed from.
    """
    ### BEGIN SOLUTION (task 12.4)
    scores = [model(x) for x in X]
    loss = hinge_loss(scores, y) + l2_penalty(model.parameters())
    model.zero_grad()
    loss.backward()
    for p in model.parameters():
        p.data -= learning_rate * p.grad
    return loss.data, accuracy(scores, y)
    ### END SOLUTION


def train_classifier(
    model: Module,
    X: list[list[float]],
    y: list[int],
    steps: int = 100,
    batch_size: int | None = None,
    seed: int = 0,
) -> list[tuple[float, float]]:
    """Run `steps` calls of `train_step` and return their `(loss, accuracy)`
    (task 12.4).

    Step k uses the learning rate 1.0 - 0.9·k/steps (1.0 down to 0.1). With
    `batch_size`, each step uses the examples `rng.sample(range(len(X)), batch_size)`
    from one `rng = random.Random(seed)` made before the loop; otherwise all of them.
    """
    ### BEGIN SOLUTION (task 12.4)
    rng = random.Random(seed)
    history = []
    with collect_garbage_once_per_step() as collect:
        for k in range(steps):
            batch = range(len(X)) if batch_size is None else rng.sample(range(len(X)), batch_size)
            history.append(train_step(model, [X[i] for i in batch], [y[i] for i in batch], 1.0 - 0.9 * k / steps))
            collect()  # the step's graph is garbage now: free it in one sweep
    return history
    ### END SOLUTION


@contextmanager
def collect_garbage_once_per_step():
    """Pause Python's cyclic garbage collector; yield `gc.collect` to call once per
    step.

    Every `_backward` closure refers to its own output, so each step leaves a
    graph full of reference cycles; with automatic collection Python walks the
    ever larger live graph again and again (lesson 13 measures it).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield gc.collect
    finally:
        if was_enabled:
            gc.enable()
