"""Lesson 2 · A number that remembers: the Value object (tasks 2.1 to 2.4).

Each check is a scenario (`@scenario`: runs in the worker over the learner's
code and reports plain data) and a judgement (the test: compares that report
with what the trusted side expects).
"""

import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal, expect_list
from autograder.worker.scenario import data_of, scenario, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def value_fields(impl, data, n_children=0, op="", label=""):
    """Build Value(data, children, op, label=label) and report what it stored."""
    kids = [impl.Value(float(i) + 0.5) for i in range(n_children)]
    v = impl.Value(data, tuple(kids + kids[:1]), op, label=label) if n_children or op or label else impl.Value(data)
    prev = getattr(v, "_prev", None)
    return {
        "data": data_of(v),
        "grad": getattr(v, "grad", None),
        "op": getattr(v, "_op", None),
        "label": getattr(v, "label", None),
        "prev_is_set": isinstance(prev, set),
        "prev_type": type_name(prev),
        "prev_size": len(prev) if isinstance(prev, (set, tuple, list)) else None,
        "prev_is_children": isinstance(prev, set) and prev == set(kids),
    }


@scenario
def leaf_backward(impl, data, grad):
    v = impl.Value(data)
    v.grad = grad
    fn = getattr(v, "_backward", None)
    if not callable(fn):
        return {"callable": False, "grad": v.grad}
    fn()
    return {"callable": True, "grad": v.grad}


@scenario
def value_repr(impl, data):
    return repr(impl.Value(data))


@scenario
def binary_op(impl, op, x, y, wrap_right=True):
    """a + b or a * b (b a plain number when wrap_right is False): the result and what it recorded."""
    a = impl.Value(x)
    b = impl.Value(y) if wrap_right else y
    out = a + b if op == "+" else a * b
    prev = getattr(out, "_prev", set())
    return {
        "is_value": isinstance(out, impl.Value),
        "data": data_of(out),
        "op": getattr(out, "_op", None),
        "prev_size": len(prev) if isinstance(prev, (set, tuple, list)) else None,
        "links_inputs": a in prev and (not wrap_right or b in prev),
        "inputs_after": [a.data, a.grad] + ([b.data, b.grad] if wrap_right else []),
    }


@scenario
def running_example(impl, x, y, z):
    a, b, c = impl.Value(x), impl.Value(y), impl.Value(z)
    return data_of(a * b + c)


@scenario
def many_binary(impl, op, pairs):
    return [data_of(impl.Value(x) + impl.Value(y) if op == "+" else impl.Value(x) * impl.Value(y)) for x, y in pairs]


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------


@pytest.mark.task("2.1", points=1, hint="Store data as given and start grad at 0.0.")
def test_init_stores_data_and_zero_grad(learner):
    """Value(3.5) has data 3.5 and grad 0.0"""
    got = learner.run(value_fields, 3.5)
    expect_equal(got["data"], 3.5, "Value(3.5).data")
    expect_equal(got["grad"], 0.0, "Value(3.5).grad")


@pytest.mark.task("2.1", points=1, hint="_prev is set(_children); _op and label are stored as given.")
def test_init_records_children_op_and_label(learner):
    """Value(data, (a, b, a), '*', label='e') records its children as a set, its op and its label"""
    got = learner.run(value_fields, 2.0, 2, "*", "e")
    expect(
        got["prev_is_set"],
        "type of e._prev",
        "set",
        f"a {got['prev_type']}",
        "e = Value(2.0, (a, b, a), '*', label='e')",
        note="a set keeps each child once, however often it is passed in",
    )
    expect(got["prev_is_children"], "e._prev", "{a, b}", f"{got['prev_size']} element(s)")
    expect_equal(got["op"], "*", "e._op")
    expect_equal(got["label"], "e", "e.label")
    leaf = learner.run(value_fields, 1.0)
    expect_equal(leaf["prev_size"], 0, "len(Value(1.0)._prev) (a leaf has no children)")
    expect_equal(leaf["op"], "", "Value(1.0)._op")


@pytest.mark.task("2.1", points=1, hint="_backward starts as a function that takes no arguments and does nothing.")
def test_init_backward_does_nothing(learner):
    """a leaf's _backward can be called and changes nothing"""
    got = learner.run(leaf_backward, 2.0, 1.5)
    expect(got["callable"], "callable(Value(2.0)._backward)", True, False)
    expect_equal(got["grad"], 1.5, "grad after calling a leaf's _backward", "v = Value(2.0); v.grad = 1.5")


@pytest.mark.task("2.2", points=1, hint="The text is the class name and the data: Value(4.0) shows as Value(data=4.0).")
def test_repr(learner):
    """repr(Value(4.0)) is 'Value(data=4.0)'"""
    expect_equal(learner.run(value_repr, 4.0), "Value(data=4.0)", "repr(Value(4.0))")
    expect_equal(learner.run(value_repr, -0.125), "Value(data=-0.125)", "repr(Value(-0.125))")


@pytest.mark.task(
    "2.3", points=2, hint="A new Value: the sum of both inputs' data, both inputs as its children, op '+'."
)
def test_add_forward(learner):
    """a + b makes a new Value with the sum, both children and op '+'"""
    inputs = "a = Value(2.0), b = Value(-3.0)"
    got = learner.run(binary_op, "+", 2.0, -3.0)
    expect(got["is_value"], "type of a + b", "Value", got["data"], inputs)
    expect_close(got["data"], -1.0, "(a + b).data", inputs)
    expect(got["links_inputs"] and got["prev_size"] == 2, "(a + b)._prev", "{a, b}", f"{got['prev_size']} element(s)")
    expect_equal(got["op"], "+", "(a + b)._op")
    expect_equal(got["inputs_after"], [2.0, 0.0, -3.0, 0.0], "[a.data, a.grad, b.data, b.grad] after a + b (unchanged)")


@pytest.mark.task(
    "2.3", points=1, hint="A plain number on the right (a + 1) must become a Value before you read its data."
)
def test_add_plain_number(learner):
    """a + 1 wraps the number as a Value"""
    got = learner.run(binary_op, "+", 2.5, 1, wrap_right=False)
    expect_close(got["data"], 3.5, "(a + 1).data", "a = Value(2.5)")
    expect_equal(got["prev_size"], 2, "len((a + 1)._prev)")


@pytest.mark.task(
    "2.4", points=2, hint="A new Value: the product of both inputs' data, both inputs as its children, op '*'."
)
def test_mul_forward(learner):
    """a * b makes a new Value with the product, both children and op '*'"""
    inputs = "a = Value(2.0), b = Value(-3.0)"
    got = learner.run(binary_op, "*", 2.0, -3.0)
    expect_close(got["data"], -6.0, "(a * b).data", inputs)
    expect(got["links_inputs"] and got["prev_size"] == 2, "(a * b)._prev", "{a, b}", f"{got['prev_size']} element(s)")
    expect_equal(got["op"], "*", "(a * b)._op")
    expect_close(learner.run(binary_op, "*", 2.0, 2, wrap_right=False)["data"], 4.0, "(a * 2).data", "a = Value(2.0)")


@pytest.mark.task("2.4", points=1, hint="a*b + c is (a.__mul__(b)).__add__(c): both operations must return Values.")
def test_running_example_forward(learner):
    """a*b + c with 2, -3, 10 gives 4.0"""
    expect_close(learner.run(running_example, 2.0, -3.0, 10.0), 4.0, "(a*b + c).data", "a = 2, b = -3, c = 10")


def _seeded_pairs(seed: int, n: int = 50) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.uniform(-100, 100), rng.uniform(-100, 100)] for _ in range(n)]


@pytest.mark.hidden
@pytest.mark.task("2.3", points=1, hint="Sums of many shapes must be exact: no rounding, no special cases.")
def test_add_seeded_expressions(learner):
    """sums of seeded random numbers"""
    pairs = _seeded_pairs(20231)
    answers = expect_list(learner.run(many_binary, "+", pairs), len(pairs), "answers, one per pair")
    for (x, y), got in zip(pairs, answers, strict=True):
        expect_close(got, x + y, "(a + b).data", f"a = {x!r}, b = {y!r}", rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("2.4", points=1, hint="Products of many shapes must be exact: no rounding, no special cases.")
def test_mul_seeded_expressions(learner):
    """products of seeded random numbers"""
    pairs = _seeded_pairs(20232)
    answers = expect_list(learner.run(many_binary, "*", pairs), len(pairs), "answers, one per pair")
    for (x, y), got in zip(pairs, answers, strict=True):
        expect_close(got, x * y, "(a * b).data", f"a = {x!r}, b = {y!r}", rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task(
    "2.1", points=1, hint="Store exactly what you are given: no rounding, and _prev holds each child once."
)
def test_init_seeded_values(learner):
    """Values built from seeded random data, children and labels"""
    rng = random.Random(20211)
    for _ in range(30):
        data = rng.uniform(-1e3, 1e3)
        n, op, label = rng.randint(0, 3), rng.choice(["+", "*", "tanh", ""]), f"n{rng.randint(0, 99)}"
        got = learner.run(value_fields, data, n, op, label)
        shown = f"Value({data!r}, {n} children (the first twice), {op!r}, label={label!r})"
        expect_equal(
            [got["data"], got["grad"], got["op"], got["label"]],
            [data, 0.0, op, label],
            "[data, grad, _op, label]",
            shown,
        )
        expect(
            got["prev_size"] == n and (n == 0 or got["prev_is_children"]),
            "_prev",
            f"a set of the {n} distinct children",
            f"{got['prev_size']} element(s)",
            shown,
        )


@pytest.mark.hidden
@pytest.mark.task("2.2", points=1, hint="Show the data as Python prints it: no rounding or formatting of your own.")
def test_repr_seeded_values(learner):
    """repr of seeded random Values"""
    rng = random.Random(20221)
    for _ in range(20):
        x = rng.choice([rng.uniform(-1e4, 1e4), float(rng.randint(-50, 50)), rng.randint(-9, 9)])
        expect_equal(learner.run(value_repr, x), f"Value(data={x!r})", "repr(Value(x))", f"x = {x!r}")
