"""Lesson 5 · The chain rule and a neuron (tasks 5.1 to 5.3).

Every check calls a node's `_backward` closure directly, after setting the
node's `grad` itself, and reads the children's grads: `backward()` (task 6.1)
is never used here. The children's grads start at 0.0 and each child receives
one contribution, so these checks do not depend on accumulation (task 7.1).
"""

import math
import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.kit.testkit import expect_value

NEURON = "x1 = 2, x2 = 0, w1 = -3, w2 = 1, b = 6.8813735870195432; n = x1*w1 + x2*w2 + b; o = n.tanh()"
NEURON_SWEEP = "o.grad = 1.0, then _backward() of o, n, x1*w1 + x2*w2, x2*w2, x1*w1 in that order"



def _neuron(impl):
    """The lesson's neuron, swept backwards by calling each closure in reverse topological order."""
    V = impl.Value
    x1, x2 = V(2.0, label="x1"), V(0.0, label="x2")
    w1, w2 = V(-3.0, label="w1"), V(1.0, label="w2")
    b = V(6.8813735870195432, label="b")
    x1w1 = x1 * w1
    expect_value(x1w1, V, "x1 * w1", NEURON)
    x2w2 = x2 * w2
    s = x1w1 + x2w2
    expect_value(s, V, "x1*w1 + x2*w2", NEURON)
    n = s + b
    o = n.tanh()
    expect_value(o, V, "n.tanh()", NEURON)
    o.grad = 1.0
    for node in (o, n, s, x2w2, x1w1):
        node._backward()
    return dict(x1=x1, x2=x2, w1=w1, w2=w2, b=b, x1w1=x1w1, x2w2=x2w2, s=s, n=n, o=o)


def _check_neuron(nodes) -> None:
    expect_close(nodes["o"].data, 1 / math.sqrt(2), "o.data (= tanh(n) = 1/sqrt(2))", NEURON)
    expected = [
        ("n", 0.5, "n.grad (do/dn = 1 - o**2)"),
        ("s", 0.5, "(x1*w1 + x2*w2).grad"),
        ("b", 0.5, "b.grad"),
        ("x1w1", 0.5, "(x1*w1).grad"),
        ("x2w2", 0.5, "(x2*w2).grad"),
        ("x1", -1.5, "x1.grad (= w1 * 0.5)"),
        ("w1", 1.0, "w1.grad (= x1 * 0.5)"),
        ("x2", 0.5, "x2.grad (= w2 * 0.5)"),
        ("w2", 0.0, "w2.grad (= x2 * 0.5: zero because x2 is zero)"),
    ]
    for name, value, what in expected:
        expect_close(nodes[name].grad, value, what, f"{NEURON}; {NEURON_SWEEP}")


# --- 5.1 tanh -------------------------------------------------------------------------------------------------------

@pytest.mark.task("5.1", points=1, hint="Forward: Value(math.tanh(self.data), (self,), 'tanh').")
def test_tanh_forward(impl):
    """a.tanh() is a new Value with data tanh(a), the one child a and op 'tanh'"""
    for x in (0.5, -1.2, 0.0, 3.0):
        inputs = f"a = Value({x})"
        a = impl.Value(x)
        t = a.tanh()
        expect_value(t, impl.Value, "a.tanh()", inputs)
        expect_close(t.data, math.tanh(x), "a.tanh().data", inputs, rel=1e-12)
        expect(t._prev == {a}, "a.tanh()._prev", "{a}", t._prev, inputs)
        expect_equal(t._op, "tanh", "a.tanh()._op", inputs)
        expect_equal((a.data, a.grad), (x, 0.0), "(a.data, a.grad) after a.tanh() (unchanged)", inputs)


@pytest.mark.task("5.1", points=2, hint="In _backward: self.grad += (1 - t**2) * out.grad, with t the forward result.")
def test_tanh_backward(impl):
    """t = a.tanh(); t._backward() gives a.grad = (1 - t**2) * t.grad"""
    for x, g in ((0.5, 1.0), (-1.2, 2.5), (0.0, -0.75), (2.0, 1.0)):
        inputs = f"a = Value({x}), t = a.tanh(), t.grad = {g}, then t._backward()"
        a = impl.Value(x)
        t = a.tanh()
        expect_value(t, impl.Value, "a.tanh()", inputs)
        t.grad = g
        t._backward()
        expect_close(a.grad, (1 - math.tanh(x) ** 2) * g, "a.grad", inputs)
        expect_equal(a.data, x, "a.data after t._backward() (unchanged)", inputs)


@pytest.mark.task("5.1", points=1,
                  hint="do/dn = 1 - o**2 = 0.5 for the neuron: the tanh closure times the incoming 1.0.")
def test_neuron_through_tanh(impl):
    """the lesson's neuron: o = 0.7071, do/dn = 0.5 and the leaves' grads (your tanh)"""
    _check_neuron(_neuron(impl))


@pytest.mark.hidden
@pytest.mark.task("5.1", points=1, hint="The local derivative is 1 - tanh(x)**2, times whatever out.grad is.")
def test_tanh_seeded(impl):
    """tanh forward and local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5101)
    for _ in range(40):
        x, g = rng.uniform(-3, 3), rng.uniform(-2, 2)
        inputs = f"a = Value({x!r}), t = a.tanh(), t.grad = {g!r}, then t._backward()"
        a = impl.Value(x)
        t = a.tanh()
        expect_value(t, impl.Value, "a.tanh()", inputs)
        expect_close(t.data, math.tanh(x), "a.tanh().data", inputs, rel=1e-12)
        t.grad = g
        t._backward()
        expect_close(a.grad, (1 - math.tanh(x) ** 2) * g, "a.grad", inputs, rel=1e-9)


# --- 5.2 + backward -------------------------------------------------------------------------------------------------

@pytest.mark.task("5.2", points=2, hint="+ passes the incoming gradient on unchanged: each child gets 1 * out.grad.")
def test_add_backward(impl):
    """c = a + b; c._backward() gives both a and b the grad c.grad"""
    for x, y, g in ((2.0, -3.0, 1.0), (2.0, -3.0, -1.5), (0.5, 4.0, 3.25)):
        inputs = f"a = Value({x}), b = Value({y}), c = a + b, c.grad = {g}, then c._backward()"
        a, b = impl.Value(x), impl.Value(y)
        c = a + b
        expect_value(c, impl.Value, "a + b", inputs)
        c.grad = g
        c._backward()
        expect_close(a.grad, g, "a.grad", inputs)
        expect_close(b.grad, g, "b.grad", inputs)
        expect_equal((a.data, b.data, c.grad), (x, y, g), "(a.data, b.data, c.grad) after c._backward() (unchanged)",
                     inputs)


@pytest.mark.task("5.2", points=1, hint="The _backward closure uses the wrapped `other`, so a + 4.0 works like a + b.")
def test_add_backward_plain_number(impl):
    """c = a + 4.0; c._backward() gives a the grad c.grad"""
    inputs = "a = Value(1.5), c = a + 4.0, c.grad = -2.0, then c._backward()"
    a = impl.Value(1.5)
    c = a + 4.0
    expect_value(c, impl.Value, "a + 4.0", inputs)
    c.grad = -2.0
    c._backward()
    expect_close(a.grad, -2.0, "a.grad", inputs)


@pytest.mark.task("5.2", points=1, hint="Both '+' nodes of the neuron hand their 0.5 on to both of their inputs.")
def test_neuron_through_add(impl):
    """the lesson's neuron: the '+' nodes pass 0.5 to x1*w1, x2*w2 and b (your +)"""
    _check_neuron(_neuron(impl))


@pytest.mark.hidden
@pytest.mark.task("5.2", points=1,
                  hint="Use out.grad as it is (not 1.0): the local derivative 1 times the incoming grad.")
def test_add_backward_seeded(impl):
    """+ local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5202)
    for _ in range(40):
        x, y, g = rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-5, 5)
        inputs = f"a = Value({x!r}), b = Value({y!r}), c = a + b, c.grad = {g!r}, then c._backward()"
        a, b = impl.Value(x), impl.Value(y)
        c = a + b
        expect_value(c, impl.Value, "a + b", inputs)
        c.grad = g
        c._backward()
        expect_close(a.grad, g, "a.grad", inputs, rel=1e-12)
        expect_close(b.grad, g, "b.grad", inputs, rel=1e-12)


# --- 5.3 * backward -------------------------------------------------------------------------------------------------

@pytest.mark.task("5.3", points=2,
                  hint="a gets b.data * out.grad and b gets a.data * out.grad: each input gets the OTHER one's value.")
def test_mul_backward(impl):
    """c = a * b; c._backward() gives a.grad = b * c.grad and b.grad = a * c.grad"""
    for x, y, g in ((2.0, -3.0, 1.0), (2.0, -3.0, -2.0), (0.5, 4.0, 1.5)):
        inputs = f"a = Value({x}), b = Value({y}), c = a * b, c.grad = {g}, then c._backward()"
        a, b = impl.Value(x), impl.Value(y)
        c = a * b
        expect_value(c, impl.Value, "a * b", inputs)
        c.grad = g
        c._backward()
        expect_close(a.grad, y * g, "a.grad (= b.data * c.grad)", inputs)
        expect_close(b.grad, x * g, "b.grad (= a.data * c.grad)", inputs)
        expect_equal((a.data, b.data, c.grad), (x, y, g), "(a.data, b.data, c.grad) after c._backward() (unchanged)",
                     inputs)


@pytest.mark.task("5.3", points=1, hint="The _backward closure uses the wrapped `other`, so a * 3.0 works like a * b.")
def test_mul_backward_plain_number(impl):
    """c = a * 3.0; c._backward() gives a.grad = 3 * c.grad"""
    inputs = "a = Value(1.5), c = a * 3.0, c.grad = -2.0, then c._backward()"
    a = impl.Value(1.5)
    c = a * 3.0
    expect_value(c, impl.Value, "a * 3.0", inputs)
    c.grad = -2.0
    c._backward()
    expect_close(a.grad, -6.0, "a.grad", inputs)


@pytest.mark.task("5.3", points=1,
                  hint="x1.grad = w1 * 0.5 = -1.5 and w1.grad = x1 * 0.5 = 1.0: the other input's value.")
def test_neuron_through_mul(impl):
    """the lesson's neuron: x1 -1.5, w1 1.0, x2 0.5, w2 0.0 (your *)"""
    _check_neuron(_neuron(impl))


@pytest.mark.hidden
@pytest.mark.task("5.3", points=1, hint="Multiply the other input's data by out.grad as it is (not by 1.0).")
def test_mul_backward_seeded(impl):
    """* local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5303)
    for _ in range(40):
        x, y, g = rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-5, 5)
        inputs = f"a = Value({x!r}), b = Value({y!r}), c = a * b, c.grad = {g!r}, then c._backward()"
        a, b = impl.Value(x), impl.Value(y)
        c = a * b
        expect_value(c, impl.Value, "a * b", inputs)
        c.grad = g
        c._backward()
        expect_close(a.grad, y * g, "a.grad (= b.data * c.grad)", inputs, rel=1e-12)
        expect_close(b.grad, x * g, "b.grad (= a.data * c.grad)", inputs, rel=1e-12)
