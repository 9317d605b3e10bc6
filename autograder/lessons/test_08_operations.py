"""Lesson 8 · A full set of operations (tasks 8.1 to 8.6).

Each operation is graded on its own: a check of task 8.k runs the learner's
operation over the reference for every other one ("your __pow__, reference for
the rest"), and backpropagates with the grader's own `sweep`, never the
learner's `backward()` (task 6.1). Scenarios report what the learner's code did
as plain data; expected values come from hand values, finite differences on
plain floats, PyTorch in float64 and the reference tanh, all on this side. When
the grads of a whole expression (the headline, the sanity check, the neuron) are
wrong, the message names the first wrong node against the reference's graph of
the same scenario (`grads_explained`).

Longer than the grader's other files on purpose: a lesson's checks live in one file, each scenario next to the
judgements that read it, as every lesson's do.
"""

import math
import random

import pytest

from autograder.kit import torch_values
from autograder.kit.checks import close, expect, expect_close, expect_equal, expect_raised, finite_difference
from autograder.kit.graph_checks import grads_explained
from autograder.worker.scenario import (
    data_of,
    graph_report,
    headline_expression,
    outcome,
    sanity_expression,
    scenario,
    sweep,
    type_name,
)

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def expression(impl, text, values, numbers=None, seed=None, grads=None):
    """Evaluate `text` with a fresh Value for each name in `values` and plain numbers for `numbers`.

    Reports the result's type, data, op and children, and the leaves just after
    the forward pass. With `seed`, the leaves' grads are first set to `grads`
    (default 0.0), then the grader's sweep backpropagates `seed` from the result
    (for a one-operation expression: out.grad = seed; out._backward()).
    """
    leaves = {name: impl.Value(x) for name, x in values.items()}
    out = eval(text, {"__builtins__": {}, "Value": impl.Value}, {**(numbers or {}), **leaves})
    prev = getattr(out, "_prev", None)
    sized = isinstance(prev, (set, frozenset, tuple, list))
    report = {
        "type": type_name(out),
        "is_value": isinstance(out, impl.Value),
        "data": data_of(out),
        "op": getattr(out, "_op", None),
        "children": {
            "type": type_name(prev),
            "size": len(prev) if sized else None,
            "leaves": sorted(name for name, v in leaves.items() if sized and v in prev),
        },
        "leaves_after_forward": {name: [v.data, v.grad] for name, v in leaves.items()},
    }
    if seed is not None and report["is_value"]:  # no sweep from a float: the judgement says what came back
        for name, g in (grads or {}).items():
            leaves[name].grad = g
        sweep(out, seed=seed)
        report["grads"] = {name: v.grad for name, v in leaves.items()}
    return report


@scenario
def expressions(impl, cases):
    """Several `expression` reports in one call; each case is [text, values, numbers, seed]."""
    return [expression(impl, *case) for case in cases]


@scenario
def refused(impl, text, x):
    """What evaluating `text` (a ** something) did, with a = Value(x): returned, or raised which error; and x (a
    graded run draws it afresh)."""
    a = impl.Value(x)
    return {**outcome(lambda: eval(text, {"__builtins__": {}, "Value": impl.Value}, {"a": a})), "x": x}


@scenario
def a_value(impl, v, what):
    """`v`, once seen to be a Value: the sweep cannot start from anything else."""
    if not isinstance(v, impl.Value):
        raise TypeError(f"{what} is a {type_name(v)} ({v!r}), not a Value: some operation returned a plain number")
    return v


@scenario
def headline(impl, av, bv):
    """[g.data, a.grad, b.grad, the graph] for the headline expression, gradients by the grader's sweep."""
    a, b = impl.Value(av), impl.Value(bv)
    names = {"a": a, "b": b}
    g = a_value(impl, headline_expression(a, b, lambda v: v.relu(), names), "g")
    sweep(g)
    return [data_of(g), a.grad, b.grad, graph_report(g, {**names, "g": g})]


@scenario
def headlines(impl, pairs):
    return [headline(impl, av, bv) for av, bv in pairs]


@scenario
def sanity(impl, xv):
    """[y.data, x.grad, the graph] for the sanity expression, gradients by the grader's sweep."""
    x = impl.Value(xv)
    names = {"x": x}
    y = a_value(impl, sanity_expression(x, lambda v: v.relu(), names), "y")
    sweep(y)
    return [data_of(y), x.grad, graph_report(y, {**names, "y": y})]


@scenario
def sanities(impl, xs):
    return [sanity(impl, xv) for xv in xs]


@scenario
def neuron(impl, inputs, squash):
    """The lesson-5 neuron squashed by `tanh()` or by (e - 1)/(e + 1) with e = (2n).exp().

    Reports o.data, the leaves' grads and the graph.
    """
    leaves = {name: impl.Value(v) for name, v in inputs.items()}
    n = leaves["x1"] * leaves["w1"] + leaves["x2"] * leaves["w2"] + leaves["b"]
    names = {**leaves, "n": n}
    if squash == "tanh":
        o = n.tanh()
    else:
        e = (2 * n).exp()
        o = (e - 1) / (e + 1)
        names["e"] = e
    sweep(a_value(impl, o, "o"))
    graph = graph_report(o, {**names, "o": o})
    return {"o": data_of(o), "grads": {name: v.grad for name, v in leaves.items()}, "graph": graph}


# --- the trusted side's oracles -------------------------------------------------------------------------------------


HEADLINE_TEXT = (
    "c = a + b; d = a*b + b**3; c += c + 1; c += 1 + c + (-a); d += d*2 + (b + a).relu(); "
    "d += 3*d + (b - a).relu(); e = c - d; f = e**2; g = f / 2.0; g += 10.0 / f"
)
SANITY_TEXT = "z = 2*x + 2 + x; q = z.relu() + z*x; h = (z*z).relu(); y = h + q + q*x"
NEURON = dict(x1=2.0, x2=0.0, w1=-3.0, w2=1.0, b=6.8813735870195432)
DECOMPOSED_TEXT = (
    "x1 = 2, x2 = 0, w1 = -3, w2 = 1, b = 6.8813735870195432; n = x1*w1 + x2*w2 + b; "
    "e = (2*n).exp(); o = (e - 1)/(e + 1)"
)


def _plain(text, a, b, k):
    """The same expression text on plain floats: the oracle for finite differences."""
    return eval(text, {"__builtins__": {}}, {"a": a, "b": b, "k": k})


def _plain_gradients(text, x, y, k):
    """d/da and d/db of the expression at (x, y), by the grader's finite differences."""
    return (
        finite_difference(lambda s: _plain(text, s, y, k), x),
        finite_difference(lambda t: _plain(text, x, t, k), y),
    )


def _grads(report, text, inputs):
    """The leaves' grads after the sweep, once the expression has been seen to give a Value."""
    expect(
        report["is_value"],
        f"type of {text}",
        "Value",
        report["type"],
        inputs,
        note="the gradient flows back only through Values",
    )
    return report["grads"]


def _children(report):
    kids = report["children"]
    if kids["size"] is None:
        return f"_prev is a {kids['type']}"
    held = ", ".join(kids["leaves"]) or "none of the inputs"
    return f"a {kids['type']} of {kids['size']} element(s), holding {held}"


def _expect_one_child(report, text, inputs):
    """`text` gave a Value whose _prev is {a}: a set holding the input and nothing else."""
    expect(report["is_value"], f"type of {text}", "Value", report["type"], inputs)
    kids = report["children"]
    ok = kids["type"] == "set" and kids["size"] == 1 and kids["leaves"] == ["a"]
    expect(ok, f"({text})._prev", "{a}", _children(report), inputs)


def _check_headline(learner, reference, ops):
    """The page's numbers (4 decimals) and PyTorch float64 at full precision."""
    g, ga, gb, graph = learner.run(headline, -4.0, 2.0)
    inputs = f"a = -4, b = 2; {HEADLINE_TEXT}; gradients by the grader's own sweep (your {ops})"
    with grads_explained(graph, reference.run(headline, -4.0, 2.0)[3], "the headline's graph", inputs):
        expect_close(g, 24.7041, "g.data (4 decimals)", inputs, rel=0, abs_tol=5e-5)
        expect_close(ga, 138.8338, "a.grad (4 decimals)", inputs, rel=0, abs_tol=5e-5)
        expect_close(gb, 645.5773, "b.grad (4 decimals)", inputs, rel=0, abs_tol=5e-5)
        tg, tga, tgb = reference.compute(torch_values.headline, -4.0, 2.0)
        expect_close(g, tg, "g.data vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)
        expect_close(ga, tga, "a.grad vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)
        expect_close(gb, tgb, "b.grad vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)


def _check_headline_seeded(learner, reference, ops, seed):
    rng = random.Random(seed)
    pairs, expected = [], []
    while len(pairs) < 8:
        av, bv = rng.uniform(-5, 5), rng.uniform(-5, 5)
        if abs(av + bv) < 0.1 or abs(bv - av) < 0.1:  # keep away from the relu kinks
            continue
        want = reference.compute(torch_values.headline, av, bv)
        if abs(want[0]) > 1e12:  # f near 0: 10.0 / f blows up and the comparison means nothing
            continue
        pairs.append([av, bv])
        expected.append(want)
    graphs = [answer[3] for answer in reference.run(headlines, pairs)]
    answers = learner.run(headlines, pairs)
    for (av, bv), (tg, tga, tgb), (g, ga, gb, graph), want in zip(pairs, expected, answers, graphs, strict=True):
        inputs = f"a = {av!r}, b = {bv!r}; {HEADLINE_TEXT} (your {ops})"
        with grads_explained(graph, want, "the headline's graph", inputs):
            expect_close(g, tg, "g.data vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)
            expect_close(ga, tga, "a.grad vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)
            expect_close(gb, tgb, "b.grad vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)


def _check_sanity(learner, reference, ops):
    y, dx, graph = learner.run(sanity, -4.0)
    ty, tdx = reference.compute(torch_values.sanity, -4.0)
    inputs = f"x = -4; {SANITY_TEXT} (your {ops})"
    with grads_explained(graph, reference.run(sanity, -4.0)[2], "the sanity expression's graph", inputs):
        expect_equal(y, -20.0, "y.data", inputs)
        expect_equal(dx, 46.0, "x.grad (dy/dx)", inputs)
        expect_equal(y, ty, "y.data vs PyTorch float64", inputs)
        expect_equal(dx, tdx, "x.grad vs PyTorch float64", inputs)


def _check_sanity_seeded(learner, reference, ops, seed):
    rng = random.Random(seed)
    xs = []
    while len(xs) < 10:
        xv = rng.uniform(-5, 5)
        if abs(3 * xv + 2) < 0.1:  # z near 0: the relu kink
            continue
        xs.append(xv)
    graphs = [answer[2] for answer in reference.run(sanities, xs)]
    for xv, (y, dx, graph), want in zip(xs, learner.run(sanities, xs), graphs, strict=True):
        ty, tdx = reference.compute(torch_values.sanity, xv)
        inputs = f"x = {xv!r}; {SANITY_TEXT} (your {ops})"
        with grads_explained(graph, want, "the sanity expression's graph", inputs):
            expect_close(y, ty, "y.data vs PyTorch float64", inputs, rel=1e-9)
            expect_close(dx, tdx, "x.grad vs PyTorch float64", inputs, rel=1e-9)


def _check_two_input_cases(learner, texts, rows, data_rel, grad_rel):
    """Each text on each (x, y, k) row: its data, and the grads of a and b against finite differences."""
    cases = [[text, {"a": x, "b": y}, {"k": k}, 1.0] for x, y, k in rows for text in texts]
    reports = iter(learner.run(expressions, cases))
    for x, y, k in rows:
        inputs = f"a = Value({x!r}), b = Value({y!r}), k = {k!r}"
        for text in texts:
            got = next(reports)
            expect_close(got["data"], _plain(text, x, y, k), f"({text}).data", inputs, rel=data_rel)
            da, db = _plain_gradients(text, x, y, k)
            grads = _grads(got, text, inputs)
            expect_close(grads["a"], da, f"a.grad for {text}", inputs, rel=grad_rel, abs_tol=1e-6)
            expect_close(grads["b"], db, f"b.grad for {text}", inputs, rel=grad_rel, abs_tol=1e-6)


def _check_decomposed_tanh(learner, reference, ops):
    got = learner.run(neuron, NEURON, "decomposed")
    ref = reference.run(neuron, NEURON, "tanh")
    inputs = f"{DECOMPOSED_TEXT} (your {ops})"
    want = reference.run(neuron, NEURON, "decomposed")["graph"]  # the same graph, all reference
    with grads_explained(got["graph"], want, "the decomposed neuron's graph", inputs):
        expect_close(got["o"], 1 / math.sqrt(2), "o.data", inputs, rel=1e-9)
        expect_close(got["o"], ref["o"], "o.data vs a correct tanh", inputs, rel=1e-9)
        hand = dict(x1=-1.5, x2=0.5, w1=1.0, w2=0.0, b=0.5)
        for name in NEURON:
            expect_close(got["grads"][name], hand[name], f"{name}.grad", inputs, rel=1e-6, abs_tol=1e-9)
            expect_close(
                got["grads"][name],
                ref["grads"][name],
                f"{name}.grad vs a correct tanh",
                inputs,
                rel=1e-9,
                abs_tol=1e-12,
            )


def _check_closures(learner, text, rows, what, inputs):
    """`out = text` with a = Value(x); out.grad = g; out._backward(): a.grad against `expected`, row by row."""
    cases = [[text.format(k=k), {"a": x}, None, g] for x, k, g, _ in rows]
    for (x, k, g, expected), got in zip(rows, learner.run(expressions, cases), strict=True):
        shown = inputs.format(x=x, k=k)
        expect_close(_grads(got, "out", shown)["a"], expected, what.format(g=g), shown)


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

# 8.1 __radd__ and __rmul__


@pytest.mark.task(
    "8.1", points=1, hint="__radd__(self, other) means other + self; + commutes, so the __add__ you have does the work."
)
def test_radd_forward(learner):
    """1 + a and 2.5 + a give Values with the sum, linked to a"""
    inputs = "a = Value(3.0)"
    got = learner.run(expression, "1 + a", {"a": 3.0})
    expect(got["is_value"], "type of 1 + a", "Value", got["type"], inputs)
    expect_close(got["data"], 4.0, "(1 + a).data", inputs)
    expect(
        "a" in got["children"]["leaves"],
        "a in (1 + a)._prev",
        True,
        False,
        inputs,
        note="1 + a must be built with an operation on a, so the gradient can reach a",
    )
    expect_close(learner.run(expression, "2.5 + a", {"a": 3.0})["data"], 5.5, "(2.5 + a).data", inputs)
    expect_equal(got["leaves_after_forward"]["a"], [3.0, 0.0], "(a.data, a.grad) after 1 + a (unchanged)")


@pytest.mark.task(
    "8.1", points=1, hint="__rmul__(self, other) means other * self; * commutes, so the __mul__ you have does the work."
)
def test_rmul_forward(learner):
    """2 * a and -0.5 * a give Values with the product, linked to a"""
    inputs = "a = Value(3.0)"
    got = learner.run(expression, "2 * a", {"a": 3.0})
    expect(got["is_value"], "type of 2 * a", "Value", got["type"], inputs)
    expect_close(got["data"], 6.0, "(2 * a).data", inputs)
    expect(
        "a" in got["children"]["leaves"],
        "a in (2 * a)._prev",
        True,
        False,
        inputs,
        note="2 * a must be built with an operation on a, so the gradient can reach a",
    )
    expect_close(learner.run(expression, "-0.5 * a", {"a": 3.0})["data"], -1.5, "(-0.5 * a).data", inputs)


@pytest.mark.task("8.1", points=2, hint="Reuse __add__ and __mul__ so their _backward closures carry the gradient.")
def test_radd_rmul_backward(learner):
    """gradients flow through 1 + a and 2 * a"""
    inputs = "a = Value(3.0)"
    got = _grads(learner.run(expression, "1 + a", {"a": 3.0}, seed=1.5), "c = 1 + a", inputs)
    expect_close(got["a"], 1.5, "a.grad after backpropagating 1.5 from c = 1 + a", inputs)
    got = _grads(learner.run(expression, "2 * a", {"a": 3.0}, seed=1.5), "c = 2 * a", inputs)
    expect_close(got["a"], 3.0, "a.grad after backpropagating 1.5 from c = 2 * a", inputs)


@pytest.mark.task(
    "8.1", points=2, hint="The headline uses 1 + c, 3*d and 10.0 / f (= 10.0 * f**-1): all need __radd__/__rmul__."
)
def test_headline_with_radd_rmul(learner, reference):
    """the headline expression with your __radd__/__rmul__"""
    _check_headline(learner, reference, "__radd__/__rmul__")


@pytest.mark.task("8.1", points=1, hint="2*x needs __rmul__: it must return a Value linked to x.")
def test_sanity_expression_with_rmul(learner, reference):
    """the PyTorch sanity expression at x = -4 with your __rmul__: y = -20, dy/dx = 46"""
    _check_sanity(learner, reference, "__radd__/__rmul__")


@pytest.mark.hidden
@pytest.mark.task("8.1", points=1, hint="k + a and k * a must hold for any number k and any a, with gradients 1 and k.")
def test_radd_rmul_seeded(learner):
    """k + a and k * a on seeded numbers, with gradients"""
    rng = random.Random(8101)
    rows = [(rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-3, 3)) for _ in range(20)]
    cases = [[text, {"a": x}, {"k": k}, g] for k, x, g in rows for text in ("k + a", "k * a")]
    reports = iter(learner.run(expressions, cases))
    for k, x, g in rows:
        inputs = f"k = {k!r}, a = Value({x!r}), backpropagating {g!r}"
        got = next(reports)
        expect_close(got["data"], k + x, "(k + a).data", inputs, rel=1e-12)
        expect_close(_grads(got, "k + a", inputs)["a"], g, "a.grad for c = k + a", inputs, rel=1e-12)
        got = next(reports)
        expect_close(got["data"], k * x, "(k * a).data", inputs, rel=1e-12)
        expect_close(_grads(got, "k * a", inputs)["a"], k * g, "a.grad for c = k * a", inputs, rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("8.1", points=1, hint="Numbers on the left must work for any inputs, not only the page's.")
def test_headline_and_sanity_seeded_with_radd_rmul(learner, reference):
    """the headline and sanity expressions on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(learner, reference, "__radd__/__rmul__", 8102)
    _check_sanity_seeded(learner, reference, "__radd__/__rmul__", 8103)


# 8.2 __pow__


@pytest.mark.task(
    "8.2",
    points=1,
    hint="Forward: the data raised to other, self as the one child, and an op that names the exponent ('**2').",
)
def test_pow_forward(learner):
    """a ** 2 gives 9.0 with one child and op '**2'"""
    inputs = "a = Value(3.0)"
    got = learner.run(expression, "a ** 2", {"a": 3.0})
    expect_close(got["data"], 9.0, "(a ** 2).data", inputs)
    _expect_one_child(got, "a ** 2", inputs)
    expect_equal(got["op"], "**2", "(a ** 2)._op", inputs)
    expect_close(learner.run(expression, "a ** -1", {"a": 3.0})["data"], 1 / 3, "(a ** -1).data", inputs)
    expect_close(learner.run(expression, "a ** 0.5", {"a": 4.0})["data"], 2.0, "(a ** 0.5).data", "a = Value(4.0)")


@pytest.mark.task(
    "8.2", points=2, hint="Power rule: d(xⁿ)/dx = n·xⁿ⁻¹ at self's data; times out.grad, added to self's grad."
)
def test_pow_backward(learner):
    """out._backward() applies the power rule for exponents 2, -1 and 0.5"""
    rows = [(3.0, 2, 2.0, 12.0), (2.0, -1, 2.0, -0.5), (4.0, 0.5, 2.0, 0.5), (-2.0, 3, 0.5, 6.0)]
    _check_closures(
        learner, "a ** {k}", rows, "a.grad after out._backward() with out.grad = {g}", "a = Value({x}), out = a ** {k}"
    )


def _accumulation_note(got, before: float, share: float) -> str:
    """Why an accumulation check failed: the grad was overwritten, or the share added is itself wrong."""
    if isinstance(got, float) and math.isclose(got, share, rel_tol=1e-9):
        return "a Value can feed several operations: each _backward must add its share (+=), not overwrite"
    if isinstance(got, float):
        return (
            f"the closure added {got - before!r}, but its share is {share!r}: the local rule itself is off "
            "(see this task's other checks)"
        )
    return "a Value can feed several operations: each _backward must add its share"


@pytest.mark.task("8.2", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_pow_backward_accumulates(learner):
    """the ** closure adds to a grad that already holds something"""
    got = learner.run(expression, "a ** 2", {"a": 3.0}, seed=1.0, grads={"a": 1.0})
    expect_close(
        _grads(got, "out = a ** 2", "a = Value(3.0)")["a"],
        7.0,
        "a.grad after out._backward(), a.grad was 1.0 before",
        "a = Value(3.0), out = a ** 2",
        note=_accumulation_note(_grads(got, "out = a ** 2", "a = Value(3.0)")["a"], before=1.0, share=6.0),
    )


@pytest.mark.task(
    "8.2",
    points=1,
    hint="Refuse any exponent but an int or a float (a Value too) with TypeError, before anything else.",
)
def test_pow_refuses_non_number_exponent(learner):
    """a ** Value(2) and a ** '2' raise TypeError"""
    expect_raised(learner.run(refused, "a ** Value(2.0)", 3.0), "TypeError", "a ** Value(2.0)", "a = Value(3.0)")
    expect_raised(learner.run(refused, "a ** '2'", 3.0), "TypeError", "a ** '2'", "a = Value(3.0)")


@pytest.mark.task("8.2", points=2, hint="The headline uses b**3, e**2 and, through division, f**-1.")
def test_headline_with_pow(learner, reference):
    """the headline expression with your __pow__"""
    _check_headline(learner, reference, "__pow__")


@pytest.mark.hidden
@pytest.mark.task(
    "8.2", points=2, hint="The power rule holds for any int or float exponent, negative and fractional ones too."
)
def test_pow_seeded_finite_differences(learner):
    """a ** k on seeded inputs, integer, negative and fractional k, against finite differences"""
    rng = random.Random(8201)
    rows = []
    for k in [2, 3, 4, -1, -2, -3, 0.5, 1.5, -0.5, 2.7, -1.3, 0.25]:
        for _ in range(3):
            x = rng.uniform(0.5, 3.0)
            if isinstance(k, int) and rng.random() < 0.5:
                x = -x
            rows.append((x, k, rng.uniform(0.5, 2.0)))
    cases = [[f"a ** {k!r}", {"a": x}, None, g] for x, k, g in rows]
    for (x, k, g), got in zip(rows, learner.run(expressions, cases), strict=True):
        inputs = f"a = Value({x!r}), out = a ** {k!r}, out.grad = {g!r}"
        expect_close(got["data"], x**k, "(a ** k).data", inputs, rel=1e-12)
        expected = g * finite_difference(lambda t, k=k: t**k, x)
        expect_close(
            _grads(got, "out", inputs)["a"],
            expected,
            "a.grad after out._backward() vs finite differences",
            inputs,
            rel=1e-5,
            abs_tol=1e-6,
        )


@pytest.mark.hidden
@pytest.mark.task("8.2", points=1, hint="Your __pow__ must work in a whole graph, for any inputs.")
def test_headline_seeded_with_pow(learner, reference):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(learner, reference, "__pow__", 8202)


# 8.3 __neg__, __sub__, __rsub__


@pytest.mark.task(
    "8.3",
    points=1,
    hint="Negation is a product with -1; subtraction adds the negation, whichever side the number is on.",
)
def test_neg_sub_rsub_forward(learner):
    """-a, a - b, a - 2 and 1 - a have the right data"""
    inputs = "a = Value(3.0), b = Value(5.0)"
    texts, expected = ["-a", "a - b", "a - 2", "1 - a"], [-3.0, -2.0, 1.0, -2.0]
    got = learner.run(expressions, [[text, {"a": 3.0, "b": 5.0}] for text in texts])
    for text, want, report in zip(texts, expected, got, strict=True):
        reversed_rsub = text == "1 - a" and close(report["data"], -want)  # a - 1 where 1 - a was asked
        expect_close(
            report["data"],
            want,
            f"({text}).data",
            inputs,
            note="that is a - 1: __rsub__(self, other) computes other - self" if reversed_rsub else None,
            cause="rsub-reversed" if reversed_rsub else "",
        )
        after = report["leaves_after_forward"]
        expect_equal([after["a"][0], after["b"][0]], [3.0, 5.0], f"(a.data, b.data) after {text} (unchanged)")


@pytest.mark.task("8.3", points=2, hint="Build -, a - b and 1 - a from * and +, so the gradient reaches every input.")
def test_neg_sub_rsub_backward(learner):
    """gradients flow through -a, a - b and 1 - a"""
    inputs = "a = Value(3.0), b = Value(5.0), backpropagating 2.0"
    neg, sub, rsub = learner.run(
        expressions, [[text, {"a": 3.0, "b": 5.0}, None, 2.0] for text in ("-a", "a - b", "1 - a")]
    )
    expect_close(_grads(neg, "-a", inputs)["a"], -2.0, "a.grad for out = -a", inputs)
    expect_close(_grads(sub, "a - b", inputs)["a"], 2.0, "a.grad for out = a - b", inputs)
    expect_close(sub["grads"]["b"], -2.0, "b.grad for out = a - b", inputs)
    expect_close(_grads(rsub, "1 - a", inputs)["a"], -2.0, "a.grad for out = 1 - a", inputs)


@pytest.mark.task("8.3", points=2, hint="The headline uses -a, b - a and c - d.")
def test_headline_with_sub(learner, reference):
    """the headline expression with your __neg__/__sub__/__rsub__"""
    _check_headline(learner, reference, "__neg__/__sub__/__rsub__")


@pytest.mark.hidden
@pytest.mark.task("8.3", points=1, hint="Negation and subtraction must hold for any inputs, with gradients -1 and +1.")
def test_sub_seeded_finite_differences(learner):
    """a - b, k - a, a - k and -a on seeded inputs, against finite differences"""
    rng = random.Random(8301)
    rows = [(rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-10, 10)) for _ in range(15)]
    _check_two_input_cases(learner, ["a - b", "k - a", "a - k", "-a * b"], rows, data_rel=1e-12, grad_rel=1e-6)


@pytest.mark.hidden
@pytest.mark.task("8.3", points=1, hint="Your - must work in a whole graph, for any inputs.")
def test_headline_seeded_with_sub(learner, reference):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(learner, reference, "__neg__/__sub__/__rsub__", 8302)


# 8.4 __truediv__, __rtruediv__


@pytest.mark.task(
    "8.4", points=1, hint="Division multiplies by the divisor to the power -1; in 10.0 / a, a is the divisor."
)
def test_div_forward(learner):
    """a / b, a / 4.0 and 10.0 / a have the right data"""
    inputs = "a = Value(7.0), b = Value(2.0)"
    texts, expected = ["a / b", "a / 4.0", "10.0 / b"], [3.5, 1.75, 5.0]
    got = learner.run(expressions, [[text, {"a": 7.0, "b": 2.0}] for text in texts])
    for text, want, report in zip(texts, expected, got, strict=True):
        expect_close(report["data"], want, f"({text}).data", inputs)
        after = report["leaves_after_forward"]
        expect_equal([after["a"][0], after["b"][0]], [7.0, 2.0], f"(a.data, b.data) after {text} (unchanged)")


@pytest.mark.task("8.4", points=2, hint="Build division from * and **, so the gradient reaches both inputs.")
def test_div_backward(learner):
    """gradients flow through a / b and 10.0 / b"""
    inputs = "a = Value(3.0), b = Value(2.0), backpropagating 2.0"
    div, rdiv = learner.run(expressions, [[text, {"a": 3.0, "b": 2.0}, None, 2.0] for text in ("a / b", "10.0 / b")])
    expect_close(_grads(div, "a / b", inputs)["a"], 1.0, "a.grad for out = a / b (2.0 / b)", inputs)
    expect_close(div["grads"]["b"], -1.5, "b.grad for out = a / b (-2.0 * a / b**2)", inputs)
    expect_close(_grads(rdiv, "10.0 / b", inputs)["b"], -5.0, "b.grad for out = 10.0 / b (-2.0 * 10 / b**2)", inputs)


@pytest.mark.task("8.4", points=2, hint="The headline uses f / 2.0 and 10.0 / f.")
def test_headline_with_div(learner, reference):
    """the headline expression with your __truediv__/__rtruediv__"""
    _check_headline(learner, reference, "__truediv__/__rtruediv__")


@pytest.mark.task("8.4", points=2, hint="(e - 1)/(e + 1) needs __truediv__ with a Value on both sides.")
def test_decomposed_tanh_with_div(learner, reference):
    """tanh as (e - 1)/(e + 1) with your division matches a correct tanh on the lesson-5 neuron"""
    _check_decomposed_tanh(learner, reference, "__truediv__")


@pytest.mark.hidden
@pytest.mark.task("8.4", points=1, hint="Division must hold for any inputs (also negative ones), with both gradients.")
def test_div_seeded_finite_differences(learner):
    """a / b, k / a and a / k on seeded inputs, against finite differences"""
    rng = random.Random(8401)
    rows = []
    for _ in range(15):
        x, y, k = rng.uniform(-10, 10), rng.uniform(0.5, 5) * rng.choice([-1, 1]), rng.uniform(0.5, 5)
        if abs(x) >= 0.5:  # k / a and (a / b) / a need a away from 0
            rows.append((x, y, k))
    _check_two_input_cases(learner, ["a / b", "k / a", "a / k", "(a / b) / a"], rows, data_rel=1e-9, grad_rel=1e-5)


@pytest.mark.hidden
@pytest.mark.task("8.4", points=1, hint="Your division must work in a whole graph, for any inputs.")
def test_headline_seeded_with_div(learner, reference):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(learner, reference, "__truediv__/__rtruediv__", 8402)


# 8.5 exp


@pytest.mark.task("8.5", points=1, hint="Forward: a new Value with e to the data, self as its one child, and op 'exp'.")
def test_exp_forward(learner):
    """a.exp() gives e^a with one child and op 'exp'"""
    one, zero, minus_two = learner.run(expressions, [["a.exp()", {"a": x}] for x in (1.0, 0.0, -2.0)])
    expect_close(one["data"], math.e, "Value(1.0).exp().data", rel=1e-12)
    _expect_one_child(one, "a.exp()", "a = Value(1.0)")
    expect_equal(one["op"], "exp", "a.exp()._op", "a = Value(1.0)")
    expect_close(zero["data"], 1.0, "Value(0.0).exp().data")
    expect_close(minus_two["data"], math.exp(-2.0), "Value(-2.0).exp().data", rel=1e-12)


@pytest.mark.task(
    "8.5", points=2, hint="The derivative of eˣ is eˣ, the output's own data: times out.grad, added to self's grad."
)
def test_exp_backward(learner):
    """out._backward() sends e^a times out.grad to a"""
    rows = [(0.0, 2.0), (1.0, 1.0), (-2.0, 3.0)]
    got = learner.run(expressions, [["a.exp()", {"a": x}, None, g] for x, g in rows])
    for (x, g), report in zip(rows, got, strict=True):
        expect_close(
            _grads(report, "out = a.exp()", f"a = Value({x})")["a"],
            g * math.exp(x),
            f"a.grad after out._backward() with out.grad = {g}",
            f"a = Value({x}), out = a.exp()",
            rel=1e-9,
        )


@pytest.mark.task("8.5", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_exp_backward_accumulates(learner):
    """the exp closure adds to a grad that already holds something"""
    got = learner.run(expression, "a.exp()", {"a": 0.0}, seed=1.0, grads={"a": 1.0})
    expect_close(
        _grads(got, "out = a.exp()", "a = Value(0.0)")["a"],
        2.0,
        "a.grad after out._backward(), a.grad was 1.0 before",
        "a = Value(0.0), out = a.exp()",
        note=_accumulation_note(_grads(got, "out = a.exp()", "a = Value(0.0)")["a"], before=1.0, share=1.0),
    )


@pytest.mark.task("8.5", points=2, hint="(2*n).exp() must be linked to n so the gradient reaches the neuron's leaves.")
def test_decomposed_tanh_with_exp(learner, reference):
    """tanh as (e - 1)/(e + 1) with your exp matches a correct tanh on the lesson-5 neuron"""
    _check_decomposed_tanh(learner, reference, "exp")


@pytest.mark.hidden
@pytest.mark.task("8.5", points=2, hint="exp and its gradient must hold for any input, negative ones too.")
def test_exp_seeded_finite_differences(learner):
    """a.exp() on seeded inputs, against math.exp and finite differences"""
    rng = random.Random(8501)
    rows = [(rng.uniform(-5, 5), rng.uniform(-2, 2)) for _ in range(20)]
    got = learner.run(expressions, [["a.exp()", {"a": x}, None, g] for x, g in rows])
    for (x, g), report in zip(rows, got, strict=True):
        inputs = f"a = Value({x!r}), out = a.exp(), out.grad = {g!r}"
        expect_close(report["data"], math.exp(x), "a.exp().data", inputs, rel=1e-12)
        expect_close(
            _grads(report, "out", inputs)["a"],
            g * finite_difference(math.exp, x),
            "a.grad after out._backward() vs finite differences",
            inputs,
            rel=1e-6,
            abs_tol=1e-8,
        )


# 8.6 relu


@pytest.mark.task(
    "8.6",
    points=1,
    hint="Forward: 0 for a negative input, the data itself otherwise; self as the one child, op 'ReLU'.",
)
def test_relu_forward(learner):
    """relu gives 0 for negative inputs and 0, the input otherwise, op 'ReLU'"""
    pos, neg, zero = learner.run(expressions, [["a.relu()", {"a": x}] for x in (3.0, -2.0, 0.0)])
    expect_close(pos["data"], 3.0, "Value(3.0).relu().data")
    _expect_one_child(pos, "a.relu()", "a = Value(3.0)")
    expect_equal(pos["op"], "ReLU", "a.relu()._op", "a = Value(3.0)")
    expect_close(neg["data"], 0.0, "Value(-2.0).relu().data")
    expect_close(zero["data"], 0.0, "Value(0.0).relu().data")


@pytest.mark.task("8.6", points=2, hint="Pass out.grad only where out.data > 0: at exactly 0 the gradient is 0.")
def test_relu_backward(learner):
    """out._backward() passes out.grad for a positive input and 0 for a negative input or exactly 0"""
    rows = [(3.0, None, 2.0, 2.0), (-2.0, None, 2.0, 0.0), (0.0, None, 2.0, 0.0)]
    _check_closures(
        learner, "a.relu()", rows, "a.grad after out._backward() with out.grad = {g}", "a = Value({x}), out = a.relu()"
    )


@pytest.mark.task("8.6", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_relu_backward_accumulates(learner):
    """the relu closure adds to a grad that already holds something"""
    got = learner.run(expression, "a.relu()", {"a": 3.0}, seed=2.0, grads={"a": 1.0})
    expect_close(
        _grads(got, "out = a.relu()", "a = Value(3.0)")["a"],
        3.0,
        "a.grad after out._backward(), a.grad was 1.0 before",
        "a = Value(3.0), out = a.relu()",
        note=_accumulation_note(_grads(got, "out = a.relu()", "a = Value(3.0)")["a"], before=1.0, share=2.0),
    )
    got = learner.run(expression, "b.relu()", {"b": -3.0}, seed=2.0, grads={"b": 1.0})
    expect_close(
        _grads(got, "out = b.relu()", "b = Value(-3.0)")["b"],
        1.0,
        "b.grad after out._backward(), b.grad was 1.0 before",
        "b = Value(-3.0), out = b.relu()",
        note="a blocked gradient adds 0: it must not reset the grad to 0",
    )


@pytest.mark.task("8.6", points=2, hint="The headline uses (b + a).relu() and (b - a).relu().")
def test_headline_with_relu(learner, reference):
    """the headline expression with your relu"""
    _check_headline(learner, reference, "relu")


@pytest.mark.task("8.6", points=1, hint="q = z.relu() + z*x and h = (z*z).relu(): one relu blocks, the other passes.")
def test_sanity_expression_with_relu(learner, reference):
    """the PyTorch sanity expression at x = -4 with your relu: y = -20, dy/dx = 46"""
    _check_sanity(learner, reference, "relu")


@pytest.mark.hidden
@pytest.mark.task("8.6", points=1, hint="relu and its gradient must hold for any input.")
def test_relu_seeded_finite_differences(learner):
    """a.relu() on seeded inputs, against max(0, a) and finite differences"""
    rng = random.Random(8601)
    rows = []
    for _ in range(30):
        x, g = rng.uniform(-5, 5), rng.uniform(-2, 2)
        if abs(x) >= 1e-3:  # away from the kink, where finite differences mean nothing
            rows.append((x, g))
    got = learner.run(expressions, [["a.relu()", {"a": x}, None, g] for x, g in rows])
    for (x, g), report in zip(rows, got, strict=True):
        inputs = f"a = Value({x!r}), out = a.relu(), out.grad = {g!r}"
        expect_close(report["data"], max(0.0, x), "a.relu().data", inputs, rel=1e-12)
        expect_close(
            _grads(report, "out", inputs)["a"],
            g * finite_difference(lambda t: max(0.0, t), x),
            "a.grad after out._backward() vs finite differences",
            inputs,
            rel=1e-6,
            abs_tol=1e-8,
        )


@pytest.mark.hidden
@pytest.mark.task("8.6", points=1, hint="Your relu must work in a whole graph, for any inputs.")
def test_headline_and_sanity_seeded_with_relu(learner, reference):
    """the headline and sanity expressions on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(learner, reference, "relu", 8602)
    _check_sanity_seeded(learner, reference, "relu", 8603)
