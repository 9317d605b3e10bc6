"""Lesson 2 · A number that remembers: the Value object (tasks 2.1 to 2.4)."""

import random

import pytest

from autograder.checks import expect, expect_close, expect_equal


@pytest.mark.task("2.1", points=1, hint="Store data as given and start grad at 0.0.")
def test_init_stores_data_and_zero_grad(impl):
    """Value(3.5) has data 3.5 and grad 0.0"""
    v = impl.Value(3.5)
    expect_equal(v.data, 3.5, "Value(3.5).data")
    expect_equal(v.grad, 0.0, "Value(3.5).grad")


@pytest.mark.task("2.1", points=1, hint="_prev is set(_children); _op and label are stored as given.")
def test_init_records_children_op_and_label(impl):
    """Value(data, (a, b), '*', label='e') records its children, op and label"""
    a, b = impl.Value(1.0), impl.Value(2.0)
    e = impl.Value(2.0, (a, b), "*", label="e")
    expect(e._prev == {a, b}, "e._prev", "{a, b}", e._prev, "a = Value(1.0), b = Value(2.0)")
    expect_equal(e._op, "*", "e._op")
    expect_equal(e.label, "e", "e.label")
    leaf = impl.Value(1.0)
    expect_equal(leaf._prev, set(), "Value(1.0)._prev (a leaf has no children)")
    expect_equal(leaf._op, "", "Value(1.0)._op")


@pytest.mark.task("2.1", points=1, hint="_backward starts as a function that does nothing: lambda: None.")
def test_init_backward_does_nothing(impl):
    """a leaf's _backward can be called and changes nothing"""
    v = impl.Value(2.0)
    v.grad = 1.5
    expect(callable(v._backward), "callable(Value(2.0)._backward)", True, False)
    v._backward()
    expect_equal(v.grad, 1.5, "grad after calling a leaf's _backward")


@pytest.mark.task("2.2", points=1, hint="Return f'Value(data={self.data})'.")
def test_repr(impl):
    """repr(Value(4.0)) is 'Value(data=4.0)'"""
    expect_equal(repr(impl.Value(4.0)), "Value(data=4.0)", "repr(Value(4.0))")
    expect_equal(repr(impl.Value(-0.125)), "Value(data=-0.125)", "repr(Value(-0.125))")


@pytest.mark.task("2.3", points=2, hint="The result's data is self.data + other.data; children (self, other); op '+'.")
def test_add_forward(impl):
    """a + b makes a new Value with the sum, both children and op '+'"""
    a, b = impl.Value(2.0), impl.Value(-3.0)
    c = a + b
    expect_close(getattr(c, "data", c), -1.0, "(a + b).data", "a = Value(2.0), b = Value(-3.0)")
    expect(c._prev == {a, b}, "(a + b)._prev", "{a, b}", c._prev)
    expect_equal(c._op, "+", "(a + b)._op")
    expect_equal((a.data, b.data, a.grad, b.grad), (2.0, -3.0, 0.0, 0.0), "a and b after a + b (unchanged)")


@pytest.mark.task("2.3", points=1, hint="Wrap a plain number: other = other if isinstance(other, Value) else Value(other).")
def test_add_plain_number(impl):
    """a + 1 wraps the number as a Value"""
    a = impl.Value(2.5)
    c = a + 1
    expect_close(c.data, 3.5, "(a + 1).data", "a = Value(2.5)")
    expect_equal(len(c._prev), 2, "len((a + 1)._prev)")


@pytest.mark.task("2.4", points=2, hint="The result's data is self.data * other.data; children (self, other); op '*'.")
def test_mul_forward(impl):
    """a * b makes a new Value with the product, both children and op '*'"""
    a, b = impl.Value(2.0), impl.Value(-3.0)
    c = a * b
    expect_close(c.data, -6.0, "(a * b).data", "a = Value(2.0), b = Value(-3.0)")
    expect(c._prev == {a, b}, "(a * b)._prev", "{a, b}", c._prev)
    expect_equal(c._op, "*", "(a * b)._op")
    expect_close((a * 2).data, 4.0, "(a * 2).data", "a = Value(2.0)")


@pytest.mark.task("2.4", points=1, hint="a*b + c is (a.__mul__(b)).__add__(c): both operations must return Values.")
def test_running_example_forward(impl):
    """a*b + c with 2, -3, 10 gives 4.0"""
    a, b, c = impl.Value(2.0), impl.Value(-3.0), impl.Value(10.0)
    d = a * b + c
    expect_close(d.data, 4.0, "(a*b + c).data", "a = 2, b = -3, c = 10")


@pytest.mark.hidden
@pytest.mark.task("2.3", points=1, hint="Sums of many shapes must be exact: no rounding, no special cases.")
def test_add_seeded_expressions(impl):
    """sums of seeded random numbers"""
    rng = random.Random(20231)
    for _ in range(50):
        x, y = rng.uniform(-100, 100), rng.uniform(-100, 100)
        expect_close((impl.Value(x) + impl.Value(y)).data, x + y, "(a + b).data", f"a = {x!r}, b = {y!r}", rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("2.4", points=1, hint="Products of many shapes must be exact: no rounding, no special cases.")
def test_mul_seeded_expressions(impl):
    """products of seeded random numbers"""
    rng = random.Random(20232)
    for _ in range(50):
        x, y = rng.uniform(-100, 100), rng.uniform(-100, 100)
        expect_close((impl.Value(x) * impl.Value(y)).data, x * y, "(a * b).data", f"a = {x!r}, b = {y!r}", rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("2.1", points=1, hint="Store exactly what you are given: no rounding, and _prev holds each child once.")
def test_init_seeded_values(impl):
    """Values built from seeded random data, children and labels"""
    rng = random.Random(20211)
    for _ in range(30):
        data = rng.uniform(-1e3, 1e3)
        kids = [impl.Value(rng.uniform(-5, 5)) for _ in range(rng.randint(0, 3))]
        op, label = rng.choice(["+", "*", "tanh", ""]), f"n{rng.randint(0, 99)}"
        v = impl.Value(data, tuple(kids + kids[:1]), op, label=label)
        shown = f"Value({data!r}, {len(kids)} children (the first twice), {op!r}, label={label!r})"
        expect_equal((v.data, v.grad, v._op, v.label), (data, 0.0, op, label), "(data, grad, _op, label)", shown)
        expect(v._prev == set(kids), "_prev", f"a set of the {len(kids)} distinct children", v._prev, shown)


@pytest.mark.hidden
@pytest.mark.task("2.2", points=1, hint="Use the data as it is: f'Value(data={self.data})', no rounding.")
def test_repr_seeded_values(impl):
    """repr of seeded random Values"""
    rng = random.Random(20221)
    for _ in range(20):
        x = rng.choice([rng.uniform(-1e4, 1e4), float(rng.randint(-50, 50)), rng.randint(-9, 9)])
        expect_equal(repr(impl.Value(x)), f"Value(data={x!r})", "repr(Value(x))", f"x = {x!r}")
