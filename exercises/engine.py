"""A scalar autograd engine: the `Value` class, built over lessons 2 and 5 to 8.

A `Value` wraps one number, remembers the Values it was computed from, and can
push gradients back to them with the chain rule.

Tasks in this file (the list is written by `python -m autograder build`):

- 2.1 Value.__init__
- 2.2 Value.__repr__
- 2.3 Value.__add__ forward
- 2.4 Value.__mul__ forward
- 5.1 Value.tanh
- 5.2 Value.__add__ backward
- 5.3 Value.__mul__ backward
- 6.1 Value.backward
- 6.2 Value.backward without recursion
- 7.1 a Value used twice
- 8.1 Value.__radd__ and __rmul__
- 8.2 Value.__pow__
- 8.3 Value.__neg__, __sub__ and __rsub__
- 8.4 Value.__truediv__ and __rtruediv__
- 8.5 Value.exp
- 8.6 Value.relu
"""

from __future__ import annotations

import math


class Value:
    """One scalar in a computation graph, with the gradient of the output w.r.t.
    it.
    """

    def __init__(
        self,
        data: float,
        _children: tuple = (),
        _op: str = "",
        label: str = "",
    ):
        """Wrap the number `data` (task 2.1).

        Sets `data`, `grad = 0.0`, `_prev` (the set of the Values in `_children`),
        `_op` (the symbol of the operation that made this Value, `''` for a leaf),
        `label` (a name for drawing), and `_backward`, a function that does nothing
        for now (operations replace it).
        """
        # TODO(task 2.1): Value.__init__: see the docstring.
        raise NotImplementedError("task 2.1: Value.__init__")

    def __repr__(self) -> str:
        """Return `Value(data=4.0)`: the class name and the data (task 2.2)."""
        # TODO(task 2.2): Value.__repr__: see the docstring.
        raise NotImplementedError("task 2.2: Value.__repr__")

    def __add__(self, other: Value | float) -> Value:
        """Return `self + other` as a new Value with children `(self, other)` and op
        `'+'`.

        Forward pass: task 2.3; `other` may be a plain number, which is wrapped as
        `Value(other)` first. Backward (the `_backward` closure): task 5.2.
        """
        # TODO(task 2.3): Value.__add__ forward: see the docstring.
        raise NotImplementedError("task 2.3: Value.__add__ forward")

        def _backward():
            # d(out)/d(self) = d(out)/d(other) = 1
            # TODO(task 5.2): Value.__add__ backward: see the docstring.
            # Also task 7.1: a later task revisits this code.
            raise NotImplementedError("task 5.2: Value.__add__ backward")

        out._backward = _backward
        return out

    def __mul__(self, other: Value | float) -> Value:
        """Return `self * other` as a new Value with children `(self, other)` and op
        `'*'`.

        Forward pass: task 2.4; a plain number is wrapped as `Value(other)` first.
        Backward: task 5.3.
        """
        # TODO(task 2.4): Value.__mul__ forward: see the docstring.
        raise NotImplementedError("task 2.4: Value.__mul__ forward")

        def _backward():
            # d(out)/d(self) = other, d(out)/d(other) = self
            # TODO(task 5.3): Value.__mul__ backward: see the docstring.
            # Also task 7.1: a later task revisits this code.
            raise NotImplementedError("task 5.3: Value.__mul__ backward")

        out._backward = _backward
        return out

    def tanh(self) -> Value:
        """Return tanh(self) with op `'tanh'`; its local derivative is 1 - tanh²
        (task 5.1).
        """
        # TODO(task 5.1): Value.tanh: see the docstring.
        raise NotImplementedError("task 5.1: Value.tanh")

        def _backward():
            # TODO(task 5.1): Value.tanh: see the docstring.
            # Also task 7.1: a later task revisits this code.
            raise NotImplementedError("task 5.1: Value.tanh")

        out._backward = _backward
        return out

    def backward(self) -> None:
        """Fill `grad` of every Value this one depends on (tasks 6.1 and 6.2).

        Lists the graph in topological order (every node after all of its
        children), sets `self.grad = 1.0`, then calls each node's `_backward`
        once, from `self` back to the leaves. Task 6.2: no recursion, so that a
        graph 100,000 operations deep (or a million) works under Python's default
        recursion limit, which must not be raised.
        """
        # TODO(task 6.1): Value.backward: see the docstring.
        # Also task 6.2: a later task revisits this code.
        raise NotImplementedError("task 6.1: Value.backward")

    def __radd__(self, other: float) -> Value:
        """Return `other + self` for a plain number `other`, as in `1 + a`
        (task 8.1).
        """
        # TODO(task 8.1): Value.__radd__ and __rmul__: see the docstring.
        raise NotImplementedError("task 8.1: Value.__radd__ and __rmul__")

    def __rmul__(self, other: float) -> Value:
        """Return `other * self` for a plain number `other`, as in `2 * a`
        (task 8.1).
        """
        # TODO(task 8.1): Value.__radd__ and __rmul__: see the docstring.
        raise NotImplementedError("task 8.1: Value.__radd__ and __rmul__")

    def __pow__(self, other: int | float) -> Value:
        """Return `self ** other` for an int or float exponent `other` (task 8.2).

        The op names the exponent: `f"**{other}"`, so `'**2'` for `a**2`. Local
        derivative: other · self^(other - 1).

        Raises:
            TypeError: when `other` is not an int or a float (a Value too); its message
                names the type it got.
        """
        # TODO(task 8.2): Value.__pow__: see the docstring.
        raise NotImplementedError("task 8.2: Value.__pow__")

    def __neg__(self) -> Value:
        """Return `-self`, built as `self * -1` (task 8.3)."""
        # TODO(task 8.3): Value.__neg__, __sub__ and __rsub__: see the docstring.
        raise NotImplementedError("task 8.3: Value.__neg__, __sub__ and __rsub__")

    def __sub__(self, other: Value | float) -> Value:
        """Return `self - other`, built as `self + (-other)` (task 8.3)."""
        # TODO(task 8.3): Value.__neg__, __sub__ and __rsub__: see the docstring.
        raise NotImplementedError("task 8.3: Value.__neg__, __sub__ and __rsub__")

    def __rsub__(self, other: float) -> Value:
        """Return `other - self` for a plain number `other`, as in `1 - a`
        (task 8.3).
        """
        # TODO(task 8.3): Value.__neg__, __sub__ and __rsub__: see the docstring.
        raise NotImplementedError("task 8.3: Value.__neg__, __sub__ and __rsub__")

    def __truediv__(self, other: Value | float) -> Value:
        """Return `self / other`, built as `self * other**-1` (task 8.4)."""
        # TODO(task 8.4): Value.__truediv__ and __rtruediv__: see the docstring.
        raise NotImplementedError("task 8.4: Value.__truediv__ and __rtruediv__")

    def __rtruediv__(self, other: float) -> Value:
        """Return `other / self` for a plain number `other`, as in `10.0 / a`
        (task 8.4).
        """
        # TODO(task 8.4): Value.__truediv__ and __rtruediv__: see the docstring.
        raise NotImplementedError("task 8.4: Value.__truediv__ and __rtruediv__")

    def exp(self) -> Value:
        """Return e^self with op `'exp'`; the derivative of e^x is e^x itself
        (task 8.5).
        """
        # TODO(task 8.5): Value.exp: see the docstring.
        raise NotImplementedError("task 8.5: Value.exp")

    def relu(self) -> Value:
        """Return max(0, self) with op `'ReLU'` (task 8.6).

        The gradient passes where the output is positive and is blocked
        elsewhere, including at exactly 0.
        """
        # TODO(task 8.6): Value.relu: see the docstring.
        raise NotImplementedError("task 8.6: Value.relu")
