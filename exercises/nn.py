"""A small neural-net library on top of `Value`: Module, Neuron, Layer, MLP
(lesson 10).

Tasks in this file (the list is written by `python -m autograder build`):

- 10.1 Module
- 10.2 Neuron
- 10.3 Layer
- 10.4 MLP
"""

from __future__ import annotations

import random

from .engine import Value


class Module:
    """Anything with parameters: it can list them and reset their gradients."""

    def zero_grad(self) -> None:
        """Set the `grad` of every parameter to 0 (task 10.1)."""
        # TODO(task 10.1): Module: see the docstring.
        raise NotImplementedError("task 10.1: Module")

    def parameters(self) -> list[Value]:
        """Return the list of parameters; a bare Module has none (task 10.1)."""
        # TODO(task 10.1): Module: see the docstring.
        raise NotImplementedError("task 10.1: Module")


class Neuron(Module):
    """act(w·x + b) for `nin` inputs."""

    def __init__(self, nin: int, act: str = "tanh", nonlin: bool = True):
        """Draw `nin` weights `self.w` and a bias `self.b`, each
        `Value(random.uniform(-1, 1))` (task 10.2).

        Draw the weights first, in order, then the bias. `act` names the Value
        method applied to the sum (`'tanh'` or `'relu'`); with `nonlin=False`
        the neuron is linear and returns the sum itself. Keep both as
        `self.act` and `self.nonlin`: `__call__` needs them, and `__repr__`
        reads them.
        """
        # TODO(task 10.2): Neuron: see the docstring.
        raise NotImplementedError("task 10.2: Neuron")

    def __call__(self, x: list[Value | float]) -> Value:
        """Return act(w·x + b) for the inputs `x` (task 10.2)."""
        # TODO(task 10.2): Neuron: see the docstring.
        raise NotImplementedError("task 10.2: Neuron")

    def parameters(self) -> list[Value]:
        """Return the weights, then the bias (task 10.2)."""
        # TODO(task 10.2): Neuron: see the docstring.
        raise NotImplementedError("task 10.2: Neuron")

    def __repr__(self) -> str:
        return f"{self.act if self.nonlin else 'Linear'}Neuron({len(self.w)})"


class Layer(Module):
    """`nout` neurons, each seeing the same `nin` inputs."""

    def __init__(self, nin: int, nout: int, **kwargs):
        """Make `nout` neurons `Neuron(nin, **kwargs)`, kept in `self.neurons`
        (task 10.3).
        """
        # TODO(task 10.3): Layer: see the docstring.
        raise NotImplementedError("task 10.3: Layer")

    def __call__(self, x: list[Value | float]) -> Value | list[Value]:
        """Return each neuron's output, or the single Value itself when the layer has
        one neuron (task 10.3).
        """
        # TODO(task 10.3): Layer: see the docstring.
        raise NotImplementedError("task 10.3: Layer")

    def parameters(self) -> list[Value]:
        """Return every neuron's parameters, neuron by neuron (task 10.3)."""
        # TODO(task 10.3): Layer: see the docstring.
        raise NotImplementedError("task 10.3: Layer")

    def __repr__(self) -> str:
        return f"Layer[{', '.join(str(n) for n in self.neurons)}]"


class MLP(Module):
    """A multi-layer perceptron: layers of sizes `nouts` applied one after the
    other.
    """

    def __init__(
        self,
        nin: int,
        nouts: list[int],
        act: str = "tanh",
        linear_output: bool = False,
    ):
        """Make `Layer(sizes[i], sizes[i+1], ...)` for sizes = [nin] + nouts, kept in
        `self.layers` (task 10.4).

        Every neuron uses `act`; with `linear_output=True` the last layer's
        neurons are linear (`nonlin=False`), as a classifier's scores should be.
        """
        # TODO(task 10.4): MLP: see the docstring.
        raise NotImplementedError("task 10.4: MLP")

    def __call__(self, x: list[Value | float]) -> Value | list[Value]:
        """Feed `x` through every layer in turn (task 10.4)."""
        # TODO(task 10.4): MLP: see the docstring.
        raise NotImplementedError("task 10.4: MLP")

    def parameters(self) -> list[Value]:
        """Return every layer's parameters, layer by layer (task 10.4)."""
        # TODO(task 10.4): MLP: see the docstring.
        raise NotImplementedError("task 10.4: MLP")

    def __repr__(self) -> str:
        return f"MLP of [{', '.join(str(layer) for layer in self.layers)}]"
