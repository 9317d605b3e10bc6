"""Lesson 4 · Backpropagation by hand (tasks 4.1 to 4.3)."""

import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal, expect_raises
from autograder.grading.loading import reference

PAGE = {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0}
PAGE_GRADS = {"L": 1.0, "f": 4.0, "d": -2.0, "c": -2.0, "e": -2.0, "a": 6.0, "b": -4.0}


def value_expression(Value):
    """The running example as an expression of keyword arguments, built with Values: L = (a·b + c)·f."""
    def L(a, b, c, f):
        return (Value(a, label="a") * Value(b, label="b") + Value(c, label="c")) * Value(f, label="f")
    return L


# ----------------------------------------------------------------------------------------------------- task 4.1

@pytest.mark.task("4.1", points=2,
                   hint="Rebuild the expression with inputs[leaf] + h and compare the two outputs' .data.")
def test_numerical_gradient_running_example(impl):
    """the running example built with Values: dL/da = 6, dL/db = -4, dL/dc = -2, dL/df = 4"""
    L = value_expression(impl.Value)
    for leaf in "abcf":
        got = impl.backprop_by_hand.numerical_gradient(L, dict(PAGE), leaf)
        expect_close(got, PAGE_GRADS[leaf], f"numerical_gradient(L, inputs, {leaf!r})",
                     "L(a, b, c, f) = (a*b + c)*f returning a Value; inputs = {'a': 2.0, 'b': -3.0, 'c': 10.0, "
                     "'f': -2.0}", rel=0, abs_tol=1e-6)


@pytest.mark.task("4.1", points=1,
                   hint="Step forward: (out(leaf + h) - out) / h; a float has no .data: `getattr(out, 'data', out)`.")
def test_numerical_gradient_plain_numbers(impl):
    """an expression returning a float: x² at x = 3 gives (9.006001 - 9) / 0.001 = 6.001"""
    ng = impl.backprop_by_hand.numerical_gradient
    expect_close(ng(lambda x: x * x, {"x": 3.0}, "x"), 6.001, "numerical_gradient(lambda x: x * x, {'x': 3.0}, 'x')",
                 "the default h = 0.001; a forward step: (out(x + h) - out(x)) / h", rel=1e-9)
    expect_close(ng(lambda x: x * x, {"x": 3.0}, "x", h=0.1), 6.1,
                 "numerical_gradient(lambda x: x * x, {'x': 3.0}, 'x', h=0.1)", rel=1e-9)


@pytest.mark.task("4.1", points=1,
                   hint="Check `leaf in inputs` first and raise KeyError otherwise; work on a copy of inputs.")
def test_numerical_gradient_unknown_leaf_and_inputs_kept(impl):
    """an unknown leaf raises KeyError, and the inputs dict is not changed"""
    ng = impl.backprop_by_hand.numerical_gradient
    L = value_expression(impl.Value)
    inputs = dict(PAGE)
    expect_raises(KeyError, lambda: ng(L, inputs, "z"), "numerical_gradient(L, inputs, 'z')",
                  "inputs has the keys a, b, c, f")
    ng(L, inputs, "b")
    expect_equal(inputs, PAGE, "inputs after numerical_gradient(L, inputs, 'b')")


@pytest.mark.hidden
@pytest.mark.task("4.1", points=2, hint="Return (output(leaf + h) - output) / h, for any leaf of any expression.")
def test_numerical_gradient_seeded_expressions(impl):
    """seeded expressions of three leaves, built with Values or plain floats"""
    ng = impl.backprop_by_hand.numerical_gradient
    Value = impl.Value
    rng = random.Random(4101)
    for n in range(12):
        p, q, r = (round(rng.uniform(-3, 3), 3) for _ in range(3))

        def plain(x, y, z, p=p, q=q, r=r):
            return p * x * x * y + q * y * z + r * z * z * z + x

        def exact(x, y, z, p=p, q=q, r=r):
            return {"x": 2 * p * x * y + 1, "y": p * x * x + q * z, "z": q * y + 3 * r * z * z}

        def with_values(x, y, z, p=p, q=q, r=r):
            x, y, z = Value(x), Value(y), Value(z)
            return x * x * y * p + y * z * q + z * z * z * r + x

        inputs = {k: round(rng.uniform(-2, 2), 3) for k in "xyz"}
        h = rng.choice([0.001, 0.01, 0.0005])
        for leaf in "xyz":
            for expression, kind in ((plain, "floats"), (with_values, "Values")):
                kw = {} if h == 0.001 else {"h": h}
                got = ng(expression, dict(inputs), leaf, **kw)
                nudged = {**inputs, leaf: inputs[leaf] + h}
                forward = (plain(**nudged) - plain(**inputs)) / h
                what = f"numerical_gradient(out, inputs, {leaf!r}" + (f", h={h})" if kw else ")")
                where = (f"out(x, y, z) = {p}*x²*y + {q}*y*z + {r}*z³ + x computed with {kind}; "
                         f"inputs = {inputs}")
                expect_close(got, forward, what, where, rel=1e-6, abs_tol=1e-6,
                             note=f"the exact derivative is {exact(**inputs)[leaf]!r}; the forward step "
                                  f"(out(leaf + h) - out) / h gives {forward!r}")


# ----------------------------------------------------------------------------------------------------- task 4.2

def check_table(impl, a, b, c, f, want):
    inputs = f"a = {a!r}, b = {b!r}, c = {c!r}, f = {f!r}"
    table = impl.backprop_by_hand.hand_gradients(a, b, c, f)
    expect(isinstance(table, dict), "type of hand_gradients(a, b, c, f)", "dict", type(table).__name__, inputs)
    expect_equal(sorted(table), sorted(want), "the keys of hand_gradients(a, b, c, f)", inputs)
    for name, grad in want.items():
        expect_close(table[name], grad, f"hand_gradients(a, b, c, f)[{name!r}] (dL/d{name})", inputs,
                     rel=1e-9, abs_tol=1e-12)


@pytest.mark.task("4.2", points=3,
                   hint="From dL/dL = 1 backwards: dL/dd = f, dL/df = d, the '+' copies, the '*' swaps.")
def test_hand_gradients_page_table(impl):
    """the page's table: L 1, f 4, d -2, c -2, e -2, a 6, b -4"""
    check_table(impl, 2.0, -3.0, 10.0, -2.0, PAGE_GRADS)


@pytest.mark.hidden
@pytest.mark.task("4.2", points=2, hint="Compute d = a*b + c from the arguments: dL/df = d; dL/da = b*f; dL/db = a*f.")
def test_hand_gradients_seeded(impl):
    """seeded leaf values against the closed-form gradients"""
    rng = random.Random(4202)
    for _ in range(20):
        a, b, c, f = (round(rng.uniform(-10, 10), 4) for _ in range(4))
        d = a * b + c
        check_table(impl, a, b, c, f, {"L": 1.0, "f": d, "d": f, "c": f, "e": f, "a": b * f, "b": a * f})


# ----------------------------------------------------------------------------------------------------- task 4.3

def forward_L(g):
    """L recomputed from the leaves' current data (the grader's own forward pass)."""
    return (g["a"].data * g["b"].data + g["c"].data) * g["f"].data


@pytest.mark.task("4.3", points=2, hint="`leaf.data += step_size * leaf.grad` for each leaf; the default step is 0.01.")
def test_ascent_step_running_example(impl):
    """after backward, one step of 0.01 moves a, b, c, f and the forward pass gives L = -7.286496"""
    g = reference("backprop_by_hand").running_example()
    g["L"].backward()
    impl.backprop_by_hand.ascent_step([g["a"], g["b"], g["c"], g["f"]])
    inputs = "running example after L.backward(); ascent_step([a, b, c, f])"
    for name, moved in (("a", 2.06), ("b", -3.04), ("c", 9.98), ("f", -1.96)):
        expect_close(g[name].data, moved, f"{name}.data after the step", inputs, rel=1e-12)
    expect_close(forward_L(g), -7.286496, "L = (a*b + c)*f from the new leaves", inputs, rel=1e-9)


@pytest.mark.task("4.3", points=1, hint="Move only the Values you are given, by step_size times their own grad.")
def test_ascent_step_explicit_step_size(impl):
    """step_size=0.1 with grads set by hand moves a and b only; the other nodes stay as they were"""
    g = reference("backprop_by_hand").running_example()
    for name, grad in PAGE_GRADS.items():
        g[name].grad = grad
    impl.backprop_by_hand.ascent_step([g["a"], g["b"]], step_size=0.1)
    inputs = "running example with the page's grads; ascent_step([a, b], step_size=0.1)"
    want = {"a": 2.6, "b": -3.4, "c": 10.0, "f": -2.0, "e": -6.0, "d": 4.0, "L": -8.0}
    for name, data in want.items():
        expect_close(g[name].data, data, f"{name}.data after the step", inputs, rel=1e-12)


@pytest.mark.task("4.3", points=1,
                   hint="`leaves` may be any iterable, a generator too: loop with `for leaf in leaves`.")
def test_ascent_step_any_iterable(impl):
    """leaves given as a generator are moved too"""
    g = reference("backprop_by_hand").running_example()
    for name, grad in PAGE_GRADS.items():
        g[name].grad = grad
    impl.backprop_by_hand.ascent_step((g[name] for name in "abcf"), step_size=0.01)
    inputs = "running example with the page's grads; ascent_step((g[name] for name in 'abcf'), step_size=0.01)"
    for name, moved in (("a", 2.06), ("b", -3.04), ("c", 9.98), ("f", -1.96)):
        expect_close(g[name].data, moved, f"{name}.data after the step", inputs, rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("4.3", points=2, hint="Each leaf moves by step_size * its own grad, for any grads and any step size.")
def test_ascent_step_seeded(impl):
    """seeded leaves, grads and step sizes (a negative step too)"""
    Value = impl.Value
    rng = random.Random(4303)
    for _ in range(15):
        step = rng.choice([0.01, 0.05, 0.3, -0.02, 1.0])
        leaves = [Value(rng.uniform(-5, 5), label=f"x{i}") for i in range(rng.randint(1, 6))]
        for leaf in leaves:
            leaf.grad = rng.uniform(-5, 5)
        before = [(leaf.data, leaf.grad) for leaf in leaves]
        impl.backprop_by_hand.ascent_step(list(leaves), step_size=step)
        for leaf, (data, grad) in zip(leaves, before):
            expect_close(leaf.data, data + step * grad,
                         f"{leaf.label}.data after ascent_step(leaves, step_size={step})",
                         f"{len(leaves)} leaves; {leaf.label}.data was {data!r}, {leaf.label}.grad = {grad!r}",
                         rel=1e-12, abs_tol=1e-12)

    # The running example with seeded leaves and the reference backward: the forward pass after the step.
    ref = reference("backprop_by_hand")
    for _ in range(5):
        leaves = {k: round(rng.uniform(-5, 5), 3) for k in "abcf"}
        g = ref.running_example(**leaves)
        g["L"].backward()
        expected = {k: g[k].data + 0.001 * g[k].grad for k in "abcf"}
        impl.backprop_by_hand.ascent_step([g[k] for k in "abcf"], step_size=0.001)
        inputs = f"running example with {leaves}, after L.backward(); ascent_step([a, b, c, f], step_size=0.001)"
        want_L = (expected["a"] * expected["b"] + expected["c"]) * expected["f"]
        expect_close(forward_L(g), want_L, "L = (a*b + c)*f from the new leaves", inputs, rel=1e-9)
