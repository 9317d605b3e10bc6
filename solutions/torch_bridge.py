"""The same ideas in PyTorch: the lesson-5 neuron, and tanh as a custom autograd
Function (lesson 9).

Tasks in this file (the list is written by `python -m autograder build`):

- 9.1 torch_neuron
- 9.2 Tanh autograd Function
"""

from __future__ import annotations

import torch


def torch_neuron(
    x1: float,
    x2: float,
    w1: float,
    w2: float,
    b: float,
) -> tuple[float, dict[str, float]]:
    """Compute o = tanh(x1·w1 + x2·w2 + b) with PyTorch and backpropagate from o
    (task 9.1).

    Use float64 scalar tensors with `requires_grad=True`, `torch.tanh` and
    `o.backward()`.

    Returns:
        `(o, grads)`, with `grads` mapping `'x1', 'x2', 'w1', 'w2', 'b'` to plain
        floats.
    """
    ### BEGIN SOLUTION (task 9.1)
    leaves = {
        name: torch.tensor(v, dtype=torch.double, requires_grad=True)
        for name, v in {"x1": x1, "x2": x2, "w1": w1, "w2": w2, "b": b}.items()
    }
    n = leaves["x1"] * leaves["w1"] + leaves["x2"] * leaves["w2"] + leaves["b"]
    o = torch.tanh(n)
    o.backward()
    return o.item(), {name: t.grad.item() for name, t in leaves.items()}
    ### END SOLUTION


class Tanh(torch.autograd.Function):
    """tanh written the PyTorch way: a forward that saves what backward needs, and a
    backward (task 9.2).
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        """Return tanh(x) and save it on `ctx` for the backward pass (task 9.2)."""
        ### BEGIN SOLUTION (task 9.2)
        t = torch.tanh(x)
        ctx.save_for_backward(t)
        return t
        ### END SOLUTION

    @staticmethod
    def backward(ctx, grad_output: torch.Tensor) -> torch.Tensor:
        """Return the gradient w.r.t. x: (1 - tanh²) × grad_output (task 9.2)."""
        ### BEGIN SOLUTION (task 9.2)
        (t,) = ctx.saved_tensors
        return (1 - t**2) * grad_output
        ### END SOLUTION
