"""From scalars to tensors: the engine's rules applied to whole arrays at once
(bonus lesson 14).

A `Tensor` holds a NumPy array of float64 numbers instead of one float. It
keeps `data`, `grad` (an array of the same shape, zeros at first), `_prev`,
`_op` and a `_backward` closure exactly as `Value` does, and `backward()` is
the same sweep. Lesson 11's network, rewritten with one weight matrix and one
bias row per layer, computes the same loss and the same gradients as the
scalar engine, in a handful of nodes instead of hundreds.

None of these tasks is needed for full marks: the grader scores them apart,
as bonus points.

Tasks in this file (the list is written by `python -m autograder build`):

- 14.1 unbroadcast
- 14.2 Tensor.__add__ and __mul__
- 14.3 Tensor.__matmul__
- 14.4 Tensor.tanh and Tensor.sum
- 14.5 Tensor.backward
- 14.6 TensorMLP, its loss and its training
"""

from __future__ import annotations

import numpy as np


def unbroadcast(grad: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """Return `grad` summed down to `shape`, the shape of an input that broadcasting
    stretched (task 14.1).

    NumPy lines two shapes up from the right, puts axes of length 1 in front
    of the shorter one, then repeats every axis of length 1 to the other's
    length: a bias row of shape (1, 4) is added to each row of a (3, 4) batch.
    A number that was repeated was used several times, so its gradient is the
    sum of the gradients of all its copies (lesson 7). The result has exactly
    `shape`: (3, 4) down to (1, 4) or to (4,) sums the three rows; (3, 4) down
    to (3, 1) sums each row; down to () sums everything.
    """
    ### BEGIN SOLUTION (task 14.1)
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)  # an axis broadcasting put in front
    for axis, size in enumerate(shape):
        if size == 1:
            grad = grad.sum(axis=axis, keepdims=True)  # an axis of length 1 that was repeated
    return grad
    ### END SOLUTION


class Tensor:
    """An array of numbers in a computation graph, with the gradient of the output
    w.r.t. each number.
    """

    def __init__(self, data, _children: tuple = (), _op: str = ""):
        """Wrap `data` (a number, a nested list or an array) as a float64 array;
        `grad` starts as zeros.
        """
        self.data = np.array(data, dtype=np.float64)  # a copy: a Tensor never shares its numbers
        self.grad = np.zeros_like(self.data)
        self._backward = lambda: None
        self._prev = set(_children)
        self._op = _op

    @property
    def shape(self) -> tuple[int, ...]:
        return self.data.shape

    def __repr__(self) -> str:
        return f"Tensor(shape={self.shape}, data={self.data.tolist()})"

    def __add__(self, other: Tensor | float) -> Tensor:
        """Return `self + other`, element by element with NumPy's broadcasting, op
        `'+'` (task 14.2).

        `other` may be a number or an array, wrapped as a Tensor first. Each
        input receives `out.grad`, summed down to its own shape (`unbroadcast`).
        """
        ### BEGIN SOLUTION (task 14.2)
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data + other.data, (self, other), "+")

        def _backward():
            self.grad += unbroadcast(out.grad, self.shape)
            other.grad += unbroadcast(out.grad, other.shape)

        out._backward = _backward
        return out
        ### END SOLUTION

    def __mul__(self, other: Tensor | float) -> Tensor:
        """Return `self * other`, element by element with broadcasting, op `'*'`
        (task 14.2).

        Each input receives the other input's data times `out.grad`, summed down
        to its own shape.
        """
        ### BEGIN SOLUTION (task 14.2)
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data * other.data, (self, other), "*")

        def _backward():
            self.grad += unbroadcast(other.data * out.grad, self.shape)
            other.grad += unbroadcast(self.data * out.grad, other.shape)

        out._backward = _backward
        return out
        ### END SOLUTION

    def __neg__(self) -> Tensor:
        return self * -1.0

    def __sub__(self, other: Tensor | float) -> Tensor:
        return self + (-other if isinstance(other, Tensor) else -np.asarray(other, dtype=np.float64))

    def __matmul__(self, other: Tensor) -> Tensor:
        """Return the matrix product `self @ other` of an (n, k) and a (k, m) matrix,
        op `'@'` (task 14.3).

        With G = `out.grad`, of shape (n, m): self receives G @ otherᵀ, of shape
        (n, k), and other receives selfᵀ @ G, of shape (k, m).
        """
        ### BEGIN SOLUTION (task 14.3)
        other = other if isinstance(other, Tensor) else Tensor(other)
        out = Tensor(self.data @ other.data, (self, other), "@")

        def _backward():
            self.grad += out.grad @ other.data.T
            other.grad += self.data.T @ out.grad

        out._backward = _backward
        return out
        ### END SOLUTION

    def tanh(self) -> Tensor:
        """Return tanh of every element, op `'tanh'`; the local derivative is 1 -
        tanh², elementwise (task 14.4).
        """
        ### BEGIN SOLUTION (task 14.4)
        t = np.tanh(self.data)
        out = Tensor(t, (self,), "tanh")

        def _backward():
            self.grad += (1 - t**2) * out.grad

        out._backward = _backward
        return out
        ### END SOLUTION

    def sum(self) -> Tensor:
        """Return the sum of all elements as a Tensor of shape (), op `'sum'`
        (task 14.4).

        Every element is one term of the sum: each receives `out.grad` (a single
        number).
        """
        ### BEGIN SOLUTION (task 14.4)
        out = Tensor(self.data.sum(), (self,), "sum")

        def _backward():
            self.grad += np.ones_like(self.data) * out.grad

        out._backward = _backward
        return out
        ### END SOLUTION

    def backward(self) -> None:
        """Fill `grad` of every Tensor this one depends on (task 14.5).

        The sweep of `Value.backward` (tasks 6.1 and 6.2), without recursion:
        a topological order, then `self.grad` seeded with ones of `self`'s shape
        (dL/dL = 1 for each element), then every node's `_backward` once, from
        `self` back to the leaves.
        """
        ### BEGIN SOLUTION (task 14.5)
        topo, visited = [], set()
        stack = [(self, False)]
        while stack:
            v, children_done = stack.pop()
            if children_done:
                topo.append(v)
            elif v not in visited:
                visited.add(v)
                stack.append((v, True))
                stack.extend((child, False) for child in v._prev)
        self.grad = np.ones_like(self.data)
        for v in reversed(topo):
            v._backward()
        ### END SOLUTION


class TensorMLP:
    """Lesson 11's MLP with one weight matrix and one bias row per layer: each layer
    is tanh(x @ W + b).
    """

    def __init__(self, weights: list, biases: list):
        """Keep `weights` (matrices of shape (nin, nout)) and `biases` (rows of shape
        (1, nout)) as Tensors.
        """
        self.weights = [Tensor(w) for w in weights]
        self.biases = [Tensor(np.reshape(b, (1, -1))) for b in biases]

    @classmethod
    def from_mlp(cls, mlp) -> TensorMLP:
        """The same network as a scalar `MLP` of lesson 10: column j of a layer's W
        holds neuron j's weights.
        """
        weights = [
            [[n.w[i].data for n in layer.neurons] for i in range(len(layer.neurons[0].w))] for layer in mlp.layers
        ]
        biases = [[n.b.data for n in layer.neurons] for layer in mlp.layers]
        return cls(weights, biases)

    def __call__(self, x: Tensor) -> Tensor:
        """Return the outputs for a batch `x` of shape (n, nin): one row per example
        (task 14.6).

        Every layer, the last one too, maps its input to tanh(x @ W + b).
        """
        ### BEGIN SOLUTION (task 14.6)
        for w, b in zip(self.weights, self.biases, strict=True):
            x = (x @ w + b).tanh()
        return x
        ### END SOLUTION

    def parameters(self) -> list[Tensor]:
        """W and b of the first layer, then of the second, and so on."""
        return [p for w, b in zip(self.weights, self.biases, strict=True) for p in (w, b)]

    def zero_grad(self) -> None:
        for p in self.parameters():
            p.grad = np.zeros_like(p.data)


def squared_error(predictions: Tensor, targets: list[float]) -> Tensor:
    """Lesson 11's loss, the squared error, of a batch of predictions of shape (n, 1)
    (task 14.6).

    Returns:
        Σᵢ (ŷᵢ - yᵢ)² as a Tensor of shape (), each target subtracted from its own
        prediction: the targets go in as a column (n, 1), since as a row (n,) they would
        broadcast into an (n, n) table.
    """
    ### BEGIN SOLUTION (task 14.6)
    diff = predictions - np.reshape(targets, (-1, 1))
    return (diff * diff).sum()
    ### END SOLUTION


def train_tensor_mlp(
    model: TensorMLP,
    xs: list[list[float]],
    ys: list[float],
    steps: int = 20,
    learning_rate: float = 0.05,
) -> list[float]:
    """Lesson 11's training loop on the whole batch at once; return the loss of each
    step as floats (task 14.6).

    Each step: the outputs for `Tensor(xs)`, `squared_error`, zero the
    gradients, `backward()`, then `p.data += -learning_rate * p.grad` for every
    parameter. The loss recorded for a step is the one computed before its update.
    """
    ### BEGIN SOLUTION (task 14.6)
    x = Tensor(xs)
    history = []
    for _ in range(steps):
        loss = squared_error(model(x), ys)
        model.zero_grad()
        loss.backward()
        for p in model.parameters():
            p.data += -learning_rate * p.grad
        history.append(float(loss.data))
    return history
    ### END SOLUTION


def lesson_model(seed: int = 1337) -> TensorMLP:
    """Lesson 11's network, MLP(3, [4, 4, 1]) from the same seed, as matrices: the
    same numbers.
    """
    from .train import lesson_model as scalar_model

    return TensorMLP.from_mlp(scalar_model(seed))
