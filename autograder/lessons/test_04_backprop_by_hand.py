"""Lesson 4 · Backpropagation by hand (tasks 4.1 to 4.3).

Each check is a scenario (`@scenario`: runs in the worker, builds the running
example L = (a·b + c)·f or a seeded expression with the reference `Value`, and
reports what the learner's function returned or did to the leaves) and a
judgement (the test: compares that report with the page's numbers or closed
forms computed here, on the trusted side).
"""

import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal, expect_raised
from autograder.worker.scenario import outcome, scenario, sweep, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def page_expression(impl):
    """The running example as an expression of keyword arguments, built with Values: L = (a·b + c)·f."""

    def L(a, b, c, f):
        Value = impl.Value
        return (Value(a, label="a") * Value(b, label="b") + Value(c, label="c")) * Value(f, label="f")

    return L


@scenario
def page_gradients(impl, inputs, leaves):
    """`numerical_gradient(L, inputs, leaf)` for each leaf, on a fresh copy of the inputs each time."""
    ng, L = impl.backprop_by_hand.numerical_gradient, page_expression(impl)
    return [ng(L, dict(inputs), leaf) for leaf in leaves]


@scenario
def square_gradient(impl, x, kwargs):
    """`numerical_gradient(lambda x: x * x, {'x': x}, 'x', **kwargs)`: an expression of plain floats."""
    return impl.backprop_by_hand.numerical_gradient(lambda x: x * x, {"x": x}, "x", **kwargs)


@scenario
def unknown_leaf_then_inputs(impl, inputs):
    """`numerical_gradient(L, inputs, 'z')` as an outcome, then the inputs dict after a call with leaf 'b'."""
    ng, L = impl.backprop_by_hand.numerical_gradient, page_expression(impl)
    unknown = outcome(lambda: ng(L, inputs, "z"))
    ng(L, inputs, "b")
    return {"unknown": unknown, "inputs_after": inputs}


@scenario
def seeded_gradients(impl, p, q, r, inputs, kwargs):
    """For each leaf of x, y, z: `numerical_gradient` of p·x²·y + q·y·z + r·z³ + x written with floats and Values."""

    def plain(x, y, z):
        return p * x * x * y + q * y * z + r * z * z * z + x

    def with_values(x, y, z):
        x, y, z = impl.Value(x), impl.Value(y), impl.Value(z)
        return x * x * y * p + y * z * q + z * z * z * r + x

    ng, kinds = impl.backprop_by_hand.numerical_gradient, (("floats", plain), ("Values", with_values))
    return {leaf: {kind: ng(expression, dict(inputs), leaf, **kwargs) for kind, expression in kinds} for leaf in "xyz"}


@scenario
def gradient_table(impl, a, b, c, f):
    """`hand_gradients(a, b, c, f)`: its type, its keys (repr of any that is not a str) and its str-keyed entries."""
    table = impl.backprop_by_hand.hand_gradients(a, b, c, f)
    if not isinstance(table, dict):
        return {"type": type_name(table), "keys": None, "table": None}
    keys = [k if isinstance(k, str) else repr(k) for k in table]
    return {"type": type_name(table), "keys": keys, "table": {k: v for k, v in table.items() if isinstance(k, str)}}


@scenario
def ascent_on_running_example(impl, leaves, grads, names, kwargs, as_generator=False):
    """Build the running example; give it grads (`grads`, or the grader's own sweep from L when None); call
    `ascent_step` on the nodes `names` (a list, or a generator); report every node's data afterwards."""
    Value = impl.Value
    a, b, c, f = (Value(leaves[k], label=k) for k in "abcf")
    e = a * b
    d = e + c
    L = d * f
    g = {"a": a, "b": b, "c": c, "e": e, "d": d, "f": f, "L": L}
    if grads is None:
        sweep(L)
    else:
        for name, grad in grads.items():
            g[name].grad = grad
    chosen = (g[name] for name in names) if as_generator else [g[name] for name in names]
    impl.backprop_by_hand.ascent_step(chosen, **kwargs)
    return {name: v.data for name, v in g.items()}


@scenario
def ascent_on_leaves(impl, datas, grads, step):
    """Leaves x0, x1, ... with the given data and grads; `ascent_step(leaves, step_size=step)`; their data after."""
    leaves = [impl.Value(x, label=f"x{i}") for i, x in enumerate(datas)]
    for leaf, grad in zip(leaves, grads, strict=True):
        leaf.grad = grad
    impl.backprop_by_hand.ascent_step(list(leaves), step_size=step)
    return [leaf.data for leaf in leaves]


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

PAGE = {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0}
PAGE_GRADS = {"L": 1.0, "f": 4.0, "d": -2.0, "c": -2.0, "e": -2.0, "a": 6.0, "b": -4.0}


# ----------------------------------------------------------------------------------------------------- task 4.1


@pytest.mark.task(
    "4.1", points=2, hint="Rebuild the expression with inputs[leaf] + h and compare the two outputs' .data."
)
def test_numerical_gradient_running_example(learner):
    """the running example built with Values: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4"""
    got = learner.run(page_gradients, PAGE, list("abcf"))
    for leaf, estimate in zip("abcf", got, strict=True):
        expect_close(
            estimate,
            PAGE_GRADS[leaf],
            f"numerical_gradient(L, inputs, {leaf!r})",
            "L(a, b, c, f) = (a*b + c)*f returning a Value; inputs = {'a': 2.0, 'b': -3.0, 'c': 10.0, 'f': -2.0}",
            rel=0,
            abs_tol=1e-6,
        )


@pytest.mark.task(
    "4.1",
    points=1,
    hint="Step forward from the inputs as given; an expression may return a plain float, which has no .data.",
)
def test_numerical_gradient_plain_numbers(learner):
    """an expression returning a float: x² at x = 3 gives (9.006001 - 9) / 0.001 = 6.001"""
    expect_close(
        learner.run(square_gradient, 3.0, {}),
        6.001,
        "numerical_gradient(lambda x: x * x, {'x': 3.0}, 'x')",
        "the default h = 0.001; a forward step: (out(x + h) - out(x)) / h",
        rel=1e-9,
    )
    expect_close(
        learner.run(square_gradient, 3.0, {"h": 0.1}),
        6.1,
        "numerical_gradient(lambda x: x * x, {'x': 3.0}, 'x', h=0.1)",
        rel=1e-9,
    )


@pytest.mark.task(
    "4.1", points=1, hint="Check `leaf in inputs` first and raise KeyError otherwise; work on a copy of inputs."
)
def test_numerical_gradient_unknown_leaf_and_inputs_kept(learner):
    """an unknown leaf raises KeyError, and the inputs dict is not changed"""
    got = learner.run(unknown_leaf_then_inputs, PAGE)
    expect_raised(got["unknown"], "KeyError", "numerical_gradient(L, inputs, 'z')", "inputs has the keys a, b, c, f")
    expect_equal(got["inputs_after"], PAGE, "inputs after numerical_gradient(L, inputs, 'b')")


@pytest.mark.hidden
@pytest.mark.task(
    "4.1",
    points=2,
    hint="Nudge only the named leaf by h and divide the output's change by h, for any leaf of any expression.",
)
def test_numerical_gradient_seeded_expressions(learner):
    """seeded expressions of three leaves, built with Values or plain floats"""
    rng = random.Random(4101)
    for _ in range(12):
        p, q, r = (round(rng.uniform(-3, 3), 3) for _ in range(3))

        def plain(x, y, z, p=p, q=q, r=r):
            return p * x * x * y + q * y * z + r * z * z * z + x

        def exact(x, y, z, p=p, q=q, r=r):
            return {"x": 2 * p * x * y + 1, "y": p * x * x + q * z, "z": q * y + 3 * r * z * z}

        inputs = {k: round(rng.uniform(-2, 2), 3) for k in "xyz"}
        h = rng.choice([0.001, 0.01, 0.0005])
        kw = {} if h == 0.001 else {"h": h}
        got = learner.run(seeded_gradients, p, q, r, inputs, kw)
        for leaf in "xyz":
            nudged = {**inputs, leaf: inputs[leaf] + h}
            forward = (plain(**nudged) - plain(**inputs)) / h
            for kind in ("floats", "Values"):
                what = f"numerical_gradient(out, inputs, {leaf!r}" + (f", h={h})" if kw else ")")
                where = f"out(x, y, z) = {p}*x²*y + {q}*y*z + {r}*z³ + x computed with {kind}; inputs = {inputs}"
                expect_close(
                    got[leaf][kind],
                    forward,
                    what,
                    where,
                    rel=1e-6,
                    abs_tol=1e-6,
                    note=f"the exact derivative is {exact(**inputs)[leaf]!r}; the forward step "
                    f"(out(leaf + h) - out) / h gives {forward!r}",
                )


# ----------------------------------------------------------------------------------------------------- task 4.2


def check_table(learner, a, b, c, f, want):
    inputs = f"a = {a!r}, b = {b!r}, c = {c!r}, f = {f!r}"
    got = learner.run(gradient_table, a, b, c, f)
    expect(got["table"] is not None, "type of hand_gradients(a, b, c, f)", "dict", got["type"], inputs)
    table = got["table"]
    expect_equal(sorted(got["keys"]), sorted(want), "the keys of hand_gradients(a, b, c, f)", inputs)
    for name, grad in want.items():
        expect_close(
            table[name], grad, f"hand_gradients(a, b, c, f)[{name!r}] (dL/d{name})", inputs, rel=1e-9, abs_tol=1e-12
        )


@pytest.mark.task(
    "4.2", points=3, hint="From dL/dL = 1 backwards: dL/dd = f, dL/df = d, the '+' copies, the '*' swaps."
)
def test_hand_gradients_page_table(learner):
    """the page's table: L 1, f 4, d -2, c -2, e -2, a 6, b -4"""
    check_table(learner, 2.0, -3.0, 10.0, -2.0, PAGE_GRADS)


@pytest.mark.hidden
@pytest.mark.task(
    "4.2",
    points=2,
    hint="Use the arguments, not the page's numbers: each grad is the product of the local derivatives from L down.",
)
def test_hand_gradients_seeded(learner):
    """seeded leaf values against the closed-form gradients"""
    rng = random.Random(4202)
    for _ in range(20):
        a, b, c, f = (round(rng.uniform(-10, 10), 4) for _ in range(4))
        d = a * b + c
        check_table(learner, a, b, c, f, {"L": 1.0, "f": d, "d": f, "c": f, "e": f, "a": b * f, "b": a * f})


# ----------------------------------------------------------------------------------------------------- task 4.3


def forward_L(data, inputs):
    """L recomputed from the leaves' current data (the grader's own forward pass)."""
    for name in "abcf":
        value = data[name]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        expect(number, f"{name}.data after the step", "a number", value, inputs)
    return (data["a"] * data["b"] + data["c"]) * data["f"]


@pytest.mark.task(
    "4.3", points=2, hint="Move each leaf's data by step_size times its own grad, uphill; the default step is 0.01."
)
def test_ascent_step_running_example(learner):
    """after backward, one step of 0.01 moves a, b, c, f and the forward pass gives L = -7.286496"""
    data = learner.run(ascent_on_running_example, PAGE, None, list("abcf"), {})
    inputs = "running example after L.backward(); ascent_step([a, b, c, f])"
    for name, moved in (("a", 2.06), ("b", -3.04), ("c", 9.98), ("f", -1.96)):
        expect_close(data[name], moved, f"{name}.data after the step", inputs, rel=1e-12)
    expect_close(forward_L(data, inputs), -7.286496, "L = (a*b + c)*f from the new leaves", inputs, rel=1e-9)


@pytest.mark.task("4.3", points=1, hint="Move only the Values you are given, by step_size times their own grad.")
def test_ascent_step_explicit_step_size(learner):
    """step_size=0.1 with grads set by hand moves a and b only; the other nodes stay as they were"""
    data = learner.run(ascent_on_running_example, PAGE, PAGE_GRADS, ["a", "b"], {"step_size": 0.1})
    inputs = "running example with the page's grads; ascent_step([a, b], step_size=0.1)"
    want = {"a": 2.6, "b": -3.4, "c": 10.0, "f": -2.0, "e": -6.0, "d": 4.0, "L": -8.0}
    for name, value in want.items():
        expect_close(data[name], value, f"{name}.data after the step", inputs, rel=1e-12)


@pytest.mark.task(
    "4.3", points=1, hint="`leaves` may be any iterable, a generator too: loop with `for leaf in leaves`."
)
def test_ascent_step_any_iterable(learner):
    """leaves given as a generator are moved too"""
    data = learner.run(
        ascent_on_running_example, PAGE, PAGE_GRADS, list("abcf"), {"step_size": 0.01}, as_generator=True
    )
    inputs = "running example with the page's grads; ascent_step((g[name] for name in 'abcf'), step_size=0.01)"
    for name, moved in (("a", 2.06), ("b", -3.04), ("c", 9.98), ("f", -1.96)):
        expect_close(data[name], moved, f"{name}.data after the step", inputs, rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("4.3", points=2, hint="Each leaf moves by step_size * its own grad, for any grads and any step size.")
def test_ascent_step_seeded(learner):
    """seeded leaves, grads and step sizes (a negative step too)"""
    rng = random.Random(4303)
    for _ in range(15):
        step = rng.choice([0.01, 0.05, 0.3, -0.02, 1.0])
        datas = [rng.uniform(-5, 5) for _ in range(rng.randint(1, 6))]
        grads = [rng.uniform(-5, 5) for _ in datas]
        got = learner.run(ascent_on_leaves, datas, grads, step)
        for i, (after, data, grad) in enumerate(zip(got, datas, grads, strict=True)):
            expect_close(
                after,
                data + step * grad,
                f"x{i}.data after ascent_step(leaves, step_size={step})",
                f"{len(datas)} leaves; x{i}.data was {data!r}, x{i}.grad = {grad!r}",
                rel=1e-12,
                abs_tol=1e-12,
            )

    # The running example with seeded leaves, after the grader's own backward: the forward pass after the step.
    for _ in range(5):
        leaves = {k: round(rng.uniform(-5, 5), 3) for k in "abcf"}
        a, b, c, f = (leaves[k] for k in "abcf")
        grads = {"a": b * f, "b": a * f, "c": f, "f": a * b + c}  # dL/dx of L = (a·b + c)·f
        expected = {k: leaves[k] + 0.001 * grads[k] for k in "abcf"}
        data = learner.run(ascent_on_running_example, leaves, None, list("abcf"), {"step_size": 0.001})
        inputs = f"running example with {leaves}, after L.backward(); ascent_step([a, b, c, f], step_size=0.001)"
        want_L = (expected["a"] * expected["b"] + expected["c"]) * expected["f"]
        expect_close(forward_L(data, inputs), want_L, "L = (a*b + c)*f from the new leaves", inputs, rel=1e-9)
