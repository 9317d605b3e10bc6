"""Lesson 5 · The chain rule and a neuron (tasks 5.1 to 5.3).

Every scenario calls a node's `_backward` closure directly, after setting the
node's `grad` itself, and reports the children's grads: `backward()` (task 6.1)
is never used here. The children's grads start at 0.0 and each child receives
one contribution, so these checks do not depend on accumulation (task 7.1).
Expected values are the syllabus's hand values or `math.tanh` on this side; when
the neuron's grads are wrong, the message names the first wrong node against the
reference's graph (`grads_explained`).
"""

import math
import random

import pytest

from autograder.kit.checks import close, expect, expect_close, expect_equal
from autograder.kit.graph_checks import grads_explained
from autograder.worker.scenario import data_of, grad_of, graph_report, scenario, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def tanh_cases(impl, cases):
    """For each `[x, g]`: t = Value(x).tanh(); then, unless g is None, t.grad = g and t._backward()."""
    reports = []
    for x, g in cases:
        a = impl.Value(x)
        t = a.tanh()
        report = {"is_value": isinstance(t, impl.Value), "type": type_name(t)}
        if report["is_value"]:
            report.update(data=t.data, op=t._op, prev=t._prev, prev_is_a=t._prev == {a}, input=[a.data, a.grad])
            if g is not None:
                t.grad = g
                t._backward()
                report.update(a_grad=a.grad, a_data=a.data)
        reports.append(report)
    return reports


@scenario
def binary_cases(impl, op, cases, wrap_right=True):
    """For each `[x, y, g]`: c = a + b or a * b (b the plain number y unless wrap_right), c.grad = g, c._backward()."""
    reports = []
    for x, y, g in cases:
        a = impl.Value(x)
        b = impl.Value(y) if wrap_right else y
        c = a + b if op == "+" else a * b
        report = {"is_value": isinstance(c, impl.Value), "type": type_name(c)}
        if report["is_value"]:
            c.grad = g
            c._backward()
            report.update(
                a_grad=a.grad,
                b_grad=b.grad if wrap_right else None,
                after=[a.data, b.data if wrap_right else y, c.grad],
            )
        reports.append(report)
    return reports


@scenario
def neuron_swept(impl, x1, x2, w1, w2, b):
    """The lesson's neuron, swept back by calling each closure in reverse topological order.

    Every node's data and grad by name, and the whole graph (`graph_report`).
    """
    V = impl.Value
    x1, x2, w1, w2, b = V(x1, label="x1"), V(x2, label="x2"), V(w1, label="w1"), V(w2, label="w2"), V(b, label="b")
    x1w1 = x1 * w1
    if not isinstance(x1w1, V):
        return {"not_a_value": "x1 * w1", "type": type_name(x1w1)}
    x2w2 = x2 * w2
    s = x1w1 + x2w2
    if not isinstance(s, V):
        return {"not_a_value": "x1*w1 + x2*w2", "type": type_name(s)}
    n = s + b
    o = n.tanh()
    if not isinstance(o, V):
        return {"not_a_value": "n.tanh()", "type": type_name(o)}
    o.grad = 1.0
    for node in (o, n, s, x2w2, x1w1):
        node._backward()
    nodes = dict(x1=x1, x2=x2, w1=w1, w2=w2, b=b, x1w1=x1w1, x2w2=x2w2, s=s, n=n, o=o)
    report = {name: {"data": data_of(v), "grad": grad_of(v)} for name, v in nodes.items()}
    shown = {"x1*w1": x1w1, "x2*w2": x2w2, "x1*w1 + x2*w2": s, "n": n, "o": o}
    return {**report, "graph": graph_report(o, shown)}


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

NEURON = "x1 = 2, x2 = 0, w1 = -3, w2 = 1, b = 6.8813735870195432; n = x1*w1 + x2*w2 + b; o = n.tanh()"
NEURON_SWEEP = "o.grad = 1.0, then _backward() of o, n, x1*w1 + x2*w2, x2*w2, x1*w1 in that order"
NEURON_INPUTS = {"x1": 2.0, "x2": 0.0, "w1": -3.0, "w2": 1.0, "b": 6.8813735870195432}
NEURON_GRADS = [  # the syllabus's hand values
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
SHOWN = {"x1w1": "x1*w1", "x2w2": "x2*w2", "s": "x1*w1 + x2*w2"}


def expect_a_value(report: dict, what: str, inputs: str) -> None:
    """Fail (rather than read fields that are not there) when an operation did not return a Value."""
    expect(report["is_value"], f"type of {what}", "a Value", report["type"], inputs)


def check_neuron(learner, reference) -> None:
    got = learner.run(neuron_swept, **NEURON_INPUTS)
    if "not_a_value" in got:
        expect(False, f"type of {got['not_a_value']}", "a Value", got["type"], NEURON)
    graph = got.pop("graph")
    want = reference.run(neuron_swept, **NEURON_INPUTS)["graph"]
    with grads_explained(graph, want, "the neuron's grads", f"{NEURON}; {NEURON_SWEEP}"):
        expect_close(got["o"]["data"], 1 / math.sqrt(2), "o.data (= tanh(n) = 1/sqrt(2))", NEURON)
        # every node's grad in the failure note, so a wrong one can be told from the one it came from
        grads = ", ".join(f"{SHOWN.get(name, name)} {got[name]['grad']!r}" for name in got)
        for name, value, what in NEURON_GRADS:
            expect_close(
                got[name]["grad"], value, what, f"{NEURON}; {NEURON_SWEEP}", note=f"grads after the sweep: {grads}"
            )


# --- 5.1 tanh -------------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "5.1", points=1, hint="Forward: a new Value with tanh of the data, self as its one child, and op 'tanh'."
)
def test_tanh_forward(learner):
    """a.tanh() is a new Value with data tanh(a), the one child a and op 'tanh'"""
    xs = (0.5, -1.2, 0.0, 3.0)
    for x, got in zip(xs, learner.run(tanh_cases, [[x, None] for x in xs]), strict=True):
        inputs = f"a = Value({x})"
        expect_a_value(got, "a.tanh()", inputs)
        expect_close(got["data"], math.tanh(x), "a.tanh().data", inputs, rel=1e-12)
        expect(got["prev_is_a"], "a.tanh()._prev", "{a}", got["prev"], inputs)
        expect_equal(got["op"], "tanh", "a.tanh()._op", inputs)
        expect_equal(got["input"], [x, 0.0], "[a.data, a.grad] after a.tanh() (unchanged)", inputs)


@pytest.mark.task(
    "5.1",
    points=2,
    hint="In _backward, self's grad is tanh's local derivative (from the forward result t) times out.grad.",
)
def test_tanh_backward(learner):
    """t = a.tanh(); t._backward() gives a.grad = (1 - t**2) * t.grad"""
    cases = [[0.5, 1.0], [-1.2, 2.5], [0.0, -0.75], [2.0, 1.0]]
    for (x, g), got in zip(cases, learner.run(tanh_cases, cases), strict=True):
        inputs = f"a = Value({x}), t = a.tanh(), t.grad = {g}, then t._backward()"
        expect_a_value(got, "a.tanh()", inputs)
        expect_close(got["a_grad"], (1 - math.tanh(x) ** 2) * g, "a.grad", inputs, **_tanh_rule_from(got, x, g))
        expect_equal(got["a_data"], x, "a.data after t._backward() (unchanged)", inputs)


def _tanh_rule_from(got: dict, x: float, g: float) -> dict:
    """What a wrong tanh grad was computed from, where its number tells (the input x in place of the output t, or
    1 - t in place of 1 - t²): the failure's `note` and `cause`."""
    t = math.tanh(x)
    if x != 0 and close(got.get("a_grad"), (1 - x**2) * g):
        return {
            "note": "that is (1 - x²) · out.grad, from the input x: tanh's derivative is 1 - t², from its output t",
            "cause": "tanh-derivative-from-input",
        }
    if t not in (0, 1) and close(got.get("a_grad"), (1 - t) * g):
        return {
            "note": "that is (1 - t) · out.grad: tanh's derivative is 1 - t², the output t squared",
            "cause": "tanh-derivative-one-minus-t",
        }
    return {}


@pytest.mark.task(
    "5.1", points=1, hint="do/dn = 1 - o**2 = 0.5 for the neuron: the tanh closure times the incoming 1.0."
)
def test_neuron_through_tanh(learner, reference):
    """the lesson's neuron: o = 0.7071, do/dn = 0.5 and the leaves' grads (your tanh)"""
    check_neuron(learner, reference)


@pytest.mark.hidden
@pytest.mark.task("5.1", points=1, hint="The local derivative is 1 - tanh(x)², times whatever out.grad is.")
def test_tanh_seeded(learner):
    """tanh forward and local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5101)
    cases = [[rng.uniform(-3, 3), rng.uniform(-2, 2)] for _ in range(40)]
    for (x, g), got in zip(cases, learner.run(tanh_cases, cases), strict=True):
        inputs = f"a = Value({x!r}), t = a.tanh(), t.grad = {g!r}, then t._backward()"
        expect_a_value(got, "a.tanh()", inputs)
        expect_close(got["data"], math.tanh(x), "a.tanh().data", inputs, rel=1e-12)
        expect_close(
            got["a_grad"], (1 - math.tanh(x) ** 2) * g, "a.grad", inputs, rel=1e-9, **_tanh_rule_from(got, x, g)
        )


# --- 5.2 + backward -------------------------------------------------------------------------------------------------


@pytest.mark.task("5.2", points=2, hint="+ passes the incoming gradient on unchanged: each child gets 1 * out.grad.")
def test_add_backward(learner):
    """c = a + b; c._backward() gives both a and b the grad c.grad"""
    cases = [[2.0, -3.0, 1.0], [2.0, -3.0, -1.5], [0.5, 4.0, 3.25]]
    for (x, y, g), got in zip(cases, learner.run(binary_cases, "+", cases), strict=True):
        inputs = f"a = Value({x}), b = Value({y}), c = a + b, c.grad = {g}, then c._backward()"
        expect_a_value(got, "a + b", inputs)
        expect_close(got["a_grad"], g, "a.grad", inputs)
        expect_close(got["b_grad"], g, "b.grad", inputs)
        expect_equal(got["after"], [x, y, g], "[a.data, b.data, c.grad] after c._backward() (unchanged)", inputs)


@pytest.mark.task("5.2", points=1, hint="The _backward closure uses the wrapped `other`, so a + 4.0 works like a + b.")
def test_add_backward_plain_number(learner):
    """c = a + 4.0; c._backward() gives a the grad c.grad"""
    inputs = "a = Value(1.5), c = a + 4.0, c.grad = -2.0, then c._backward()"
    (got,) = learner.run(binary_cases, "+", [[1.5, 4.0, -2.0]], wrap_right=False)
    expect_a_value(got, "a + 4.0", inputs)
    expect_close(got["a_grad"], -2.0, "a.grad", inputs)


@pytest.mark.task("5.2", points=1, hint="Both '+' nodes of the neuron hand their 0.5 on to both of their inputs.")
def test_neuron_through_add(learner, reference):
    """the lesson's neuron: the '+' nodes pass 0.5 to x1*w1, x2*w2 and b (your +)"""
    check_neuron(learner, reference)


@pytest.mark.hidden
@pytest.mark.task(
    "5.2", points=1, hint="Use out.grad as it is (not 1.0): the local derivative 1 times the incoming grad."
)
def test_add_backward_seeded(learner):
    """+ local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5202)
    cases = [[rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-5, 5)] for _ in range(40)]
    for (x, y, g), got in zip(cases, learner.run(binary_cases, "+", cases), strict=True):
        inputs = f"a = Value({x!r}), b = Value({y!r}), c = a + b, c.grad = {g!r}, then c._backward()"
        expect_a_value(got, "a + b", inputs)
        expect_close(got["a_grad"], g, "a.grad", inputs, rel=1e-12)
        expect_close(got["b_grad"], g, "b.grad", inputs, rel=1e-12)


# --- 5.3 * backward -------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "5.3",
    points=2,
    hint="Each input's grad gets the OTHER input's data times out.grad.",
)
def test_mul_backward(learner):
    """c = a * b; c._backward() gives a.grad = b * c.grad and b.grad = a * c.grad"""
    cases = [[2.0, -3.0, 1.0], [2.0, -3.0, -2.0], [0.5, 4.0, 1.5]]
    for (x, y, g), got in zip(cases, learner.run(binary_cases, "*", cases), strict=True):
        inputs = f"a = Value({x}), b = Value({y}), c = a * b, c.grad = {g}, then c._backward()"
        expect_a_value(got, "a * b", inputs)
        expect_close(got["a_grad"], y * g, "a.grad (= b.data * c.grad)", inputs)
        expect_close(got["b_grad"], x * g, "b.grad (= a.data * c.grad)", inputs)
        expect_equal(got["after"], [x, y, g], "[a.data, b.data, c.grad] after c._backward() (unchanged)", inputs)


@pytest.mark.task("5.3", points=1, hint="The _backward closure uses the wrapped `other`, so a * 3.0 works like a * b.")
def test_mul_backward_plain_number(learner):
    """c = a * 3.0; c._backward() gives a.grad = 3 * c.grad"""
    inputs = "a = Value(1.5), c = a * 3.0, c.grad = -2.0, then c._backward()"
    (got,) = learner.run(binary_cases, "*", [[1.5, 3.0, -2.0]], wrap_right=False)
    expect_a_value(got, "a * 3.0", inputs)
    expect_close(got["a_grad"], -6.0, "a.grad", inputs)


@pytest.mark.task(
    "5.3", points=1, hint="x1.grad = w1 * 0.5 = -1.5 and w1.grad = x1 * 0.5 = 1.0: the other input's value."
)
def test_neuron_through_mul(learner, reference):
    """the lesson's neuron: x1 -1.5, w1 1.0, x2 0.5, w2 0.0 (your *)"""
    check_neuron(learner, reference)


@pytest.mark.hidden
@pytest.mark.task("5.3", points=1, hint="Multiply the other input's data by out.grad as it is (not by 1.0).")
def test_mul_backward_seeded(learner):
    """* local backward on seeded random inputs and incoming grads"""
    rng = random.Random(5303)
    cases = [[rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-5, 5)] for _ in range(40)]
    for (x, y, g), got in zip(cases, learner.run(binary_cases, "*", cases), strict=True):
        inputs = f"a = Value({x!r}), b = Value({y!r}), c = a * b, c.grad = {g!r}, then c._backward()"
        expect_a_value(got, "a * b", inputs)
        expect_close(got["a_grad"], y * g, "a.grad (= b.data * c.grad)", inputs, rel=1e-12)
        expect_close(got["b_grad"], x * g, "b.grad (= a.data * c.grad)", inputs, rel=1e-12)
