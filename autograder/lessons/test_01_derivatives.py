"""Lesson 1 · Derivatives from first principles (tasks 1.1 to 1.3).

Each check is a scenario (`@scenario`: runs in the worker, hands the learner's
estimators functions the grader builds there from a plain description, and
reports what came back) and a judgement (the test: compares that report with
the exact derivatives, which only the trusted side computes).
"""

import math
import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal, expect_raised
from autograder.worker.scenario import outcome, scenario

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def function_of(impl, spec):
    """The plain float function a spec names: ["parabola"] is the page's f(x) = 3x² - 4x + 5, ["abc"] its
    d(a, b, c) = a·b + c; the others are the seeded families of the hidden checks."""
    kind, params = spec[0], spec[1:]
    if kind == "parabola":
        return lambda x: 3 * x**2 - 4 * x + 5
    if kind == "abc":
        return lambda a, b, c: a * b + c
    if kind == "sin":
        a, b = params
        return lambda x: math.sin(a * x + b)
    if kind == "exp":
        c, a = params
        return lambda x: c * math.exp(a * x)
    if kind == "cubic":
        c3, c2, c1, c0 = params
        return lambda x: c3 * x**3 + c2 * x**2 + c1 * x + c0
    if kind == "mixed":
        p, q, r = params

        def fn(x, y, z, w=0.0):
            return p * x * y * y + q * math.sin(z) * x + r * math.exp(0.5 * w) * y + z * w

        return fn
    raise ValueError(f"no function {spec!r}")


@scenario
def estimates(impl, name, spec, points):
    """`derivatives.<name>(fn, x, **kwargs)` for each `[x, kwargs]` of `points`."""
    estimate, fn = getattr(impl.derivatives, name), function_of(impl, spec)
    return [estimate(fn, x, **kwargs) for x, kwargs in points]


@scenario
def bad_steps(impl, name, steps):
    """`derivatives.<name>(f, 3.0, h=h)` for each h, each as an outcome (returned or raised) with the h it was
    given: a graded run draws the steps afresh, and an answer must then be about those."""
    estimate, fn = getattr(impl.derivatives, name), function_of(impl, ["parabola"])
    return [{**outcome(lambda h=h: estimate(fn, 3.0, h=h)), "h": h} for h in steps]


@scenario
def partials(impl, spec, args, indices, kwargs, as_tuple=False, fresh=False):
    """`partial_derivative(fn, args, i, **kwargs)` for each i (on one list, or on a fresh copy each time), and the
    list as it is afterwards."""
    pd, fn = impl.derivatives.partial_derivative, function_of(impl, spec)
    given = tuple(args) if as_tuple else args
    slopes = [pd(fn, list(given) if fresh else given, i, **kwargs) for i in indices]
    return {"slopes": slopes, "args_after": list(given)}


@scenario
def partial_attempts(impl, cases):
    """`partial_derivative(d, [2.0, -3.0, 10.0], i, **kwargs)` for each `[i, kwargs]`, each as an outcome with the i
    and h it was given (a graded run draws them afresh)."""
    pd, fn = impl.derivatives.partial_derivative, function_of(impl, ["abc"])
    tries = [outcome(lambda i=i, kw=kw: pd(fn, [2.0, -3.0, 10.0], i, **kw)) for i, kw in cases]
    return [{**tried, "i": i, "h": kw.get("h")} for tried, (i, kw) in zip(tries, cases, strict=True)]


@scenario
def partial_calls(impl, spec, args, i, h):
    """The argument lists `partial_derivative(fn, args, i, h=h)` called fn with."""
    fn, calls = function_of(impl, spec), []
    impl.derivatives.partial_derivative(lambda *xs: calls.append(list(xs)) or fn(*xs), args, i, h=h)
    return calls


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

PARABOLA = ["parabola"]
PAGE_D = ["abc"]


def _smooth_functions(rng, count):
    """Seeded smooth functions, as specs for the worker, with their exact first, second and third derivatives.

    Each item is (description, spec, [f', f'', f''']).
    """
    out = []
    for k in range(count):
        kind = k % 3
        if kind == 0:
            a, b = rng.uniform(0.5, 2.0), rng.uniform(-1.0, 1.0)
            out.append(
                (
                    f"sin({a:.4g}*x + {b:.4g})",
                    ["sin", a, b],
                    [
                        lambda x, a=a, b=b: a * math.cos(a * x + b),
                        lambda x, a=a, b=b: -a * a * math.sin(a * x + b),
                        lambda x, a=a, b=b: -(a**3) * math.cos(a * x + b),
                    ],
                )
            )
        elif kind == 1:
            c, a = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0), rng.choice([-1, 1]) * rng.uniform(0.6, 1.2)
            out.append(
                (
                    f"{c:.4g}*exp({a:.4g}*x)",
                    ["exp", c, a],
                    [
                        lambda x, c=c, a=a: c * a * math.exp(a * x),
                        lambda x, c=c, a=a: c * a**2 * math.exp(a * x),
                        lambda x, c=c, a=a: c * a**3 * math.exp(a * x),
                    ],
                )
            )
        else:
            c3 = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0)
            c2, c1, c0 = (rng.uniform(-2.0, 2.0) for _ in range(3))
            out.append(
                (
                    f"{c3:.4g}*x**3 + {c2:.4g}*x**2 + {c1:.4g}*x + {c0:.4g}",
                    ["cubic", c3, c2, c1, c0],
                    [
                        lambda x, c3=c3, c2=c2, c1=c1: 3 * c3 * x**2 + 2 * c2 * x + c1,
                        lambda x, c3=c3, c2=c2: 6 * c3 * x + 2 * c2,
                        lambda x, c3=c3: 6 * c3,
                    ],
                )
            )
    return out


def _point_with_curvature(rng, derivative):
    """A seeded x in [-1.5, 1.5] where |derivative(x)| is not small, so the error term is visible."""
    while True:
        x = rng.uniform(-1.5, 1.5)
        if abs(derivative(x)) > 0.3:
            return x


def _check_error_order(learner, name, seed, steps, lo, hi, order):
    """On seeded smooth functions: each estimate within the error bound, and the error ratio of the two steps."""
    rng = random.Random(seed)
    for description, spec, derivatives in _smooth_functions(rng, 9):
        d1, bound = derivatives[0], derivatives[order]  # the error term of an order-p estimate is about f⁽ᵖ⁺¹⁾·hᵖ
        x = _point_with_curvature(rng, bound)
        inputs = f"fn(x) = {description}, x = {x!r}"
        got = learner.run(estimates, name, spec, [[x, {"h": h}] for h in steps])
        errors = []
        for h, estimate in zip(steps, got, strict=True):
            expect_close(estimate, d1(x), f"{name}(fn, x, h={h})", inputs, rel=0, abs_tol=abs(bound(x)) * h**order)
            errors.append(abs(estimate - d1(x)))
        ratio = errors[0] / errors[1] if errors[1] else math.inf
        shrink = 10**order
        expect(
            lo <= ratio <= hi,
            f"error(h={steps[0]}) / error(h={steps[1]})",
            f"about {shrink} (error proportional to h{'²' if order == 2 else ''})",
            ratio,
            inputs,
        )


# ----------------------------------------------------------------------------------------------------- task 1.1


@pytest.mark.task("1.1", points=1, hint="Use the h you were given, both for the step and for the run.")
def test_forward_difference_page_number(learner):
    """forward_difference(f, 3.0, h=1e-8) gives the page's 14.00000009…"""
    (got,) = learner.run(estimates, "forward_difference", PARABOLA, [[3.0, {"h": 1e-8}]])
    expect_close(
        got, 14.00000009255109, "forward_difference(f, 3.0, h=1e-8)", "f(x) = 3x² - 4x + 5", rel=0, abs_tol=1e-9
    )


@pytest.mark.task("1.1", points=1, hint="The default h (1e-6) must give a close estimate of the slope everywhere.")
def test_forward_difference_slopes(learner):
    """with the default h: slope 14 at x = 3, 0 at x = 2/3, -22 at x = -3"""
    slopes = ((3.0, 14.0), (2 / 3, 0.0), (-3.0, -22.0))
    got = learner.run(estimates, "forward_difference", PARABOLA, [[x, {}] for x, _ in slopes])
    for (x, slope), estimate in zip(slopes, got, strict=True):
        expect_close(
            estimate,
            slope,
            f"forward_difference(f, {x!r})",
            "f(x) = 3x² - 4x + 5, default h",
            rel=0,
            abs_tol=1e-4,
        )


@pytest.mark.task("1.1", points=1, hint="Step forward only: fn(x + h) against fn(x), not a step to both sides.")
def test_forward_difference_is_a_forward_step(learner):
    """forward_difference(f, 3.0, h=0.5) is (f(3.5) - f(3)) / 0.5 = 15.5"""
    (got,) = learner.run(estimates, "forward_difference", PARABOLA, [[3.0, {"h": 0.5}]])
    expect_close(
        got,
        15.5,
        "forward_difference(f, 3.0, h=0.5)",
        "f(x) = 3x² - 4x + 5",
        rel=1e-12,
        note="a big step shows which points were used: f(3.5) and f(3)",
    )


@pytest.mark.task("1.1", points=1, hint="Check h before anything else: a step that is not positive is a ValueError.")
def test_forward_difference_bad_step(learner):
    """a zero or negative h raises ValueError"""
    steps = [0.0, 0, -1e-6, -0.5]
    for h, out in zip(steps, learner.run(bad_steps, "forward_difference", steps), strict=True):
        expect_raised(out, "ValueError", f"forward_difference(f, 3.0, h={h!r})")


@pytest.mark.hidden
@pytest.mark.task(
    "1.1", points=2, hint="A forward difference's error shrinks like h: step forward from x only, and divide by h."
)
def test_forward_difference_error_order(learner):
    """on seeded smooth functions the error shrinks like h (h / 10 gives error / 10)"""
    _check_error_order(learner, "forward_difference", 1101, (1e-3, 1e-4), 7, 13, order=1)


# ----------------------------------------------------------------------------------------------------- task 1.2


@pytest.mark.task("1.2", points=1, hint="Step h to each side of x; the run between those two points is 2h.")
def test_central_difference_slopes(learner):
    """with the default h: slope 14 at x = 3, 0 at x = 2/3, -22 at x = -3"""
    slopes = ((3.0, 14.0), (2 / 3, 0.0), (-3.0, -22.0))
    got = learner.run(estimates, "central_difference", PARABOLA, [[x, {}] for x, _ in slopes])
    for (x, slope), estimate in zip(slopes, got, strict=True):
        expect_close(
            estimate,
            slope,
            f"central_difference(f, {x!r})",
            "f(x) = 3x² - 4x + 5, default h",
            rel=0,
            abs_tol=1e-6,
        )


@pytest.mark.task("1.2", points=1, hint="Step h to both sides of x, and divide by the whole run, 2h.")
def test_central_difference_exact_on_a_parabola(learner):
    """on the parabola f the central difference is exact even for h = 0.5"""
    slopes = ((3.0, 14.0), (-3.0, -22.0), (0.0, -4.0))
    got = learner.run(estimates, "central_difference", PARABOLA, [[x, {"h": 0.5}] for x, _ in slopes])
    for (x, slope), estimate in zip(slopes, got, strict=True):
        expect_close(
            estimate,
            slope,
            f"central_difference(f, {x!r}, h=0.5)",
            "f(x) = 3x² - 4x + 5",
            rel=1e-12,
            abs_tol=1e-12,
            note="(f(x + h) - f(x - h)) / 2h has no error at all on a parabola",
        )


@pytest.mark.task("1.2", points=1, hint="Check h before anything else: a step that is not positive is a ValueError.")
def test_central_difference_bad_step(learner):
    """a zero or negative h raises ValueError"""
    steps = [0.0, 0, -1e-5, -0.5]
    for h, out in zip(steps, learner.run(bad_steps, "central_difference", steps), strict=True):
        expect_raised(out, "ValueError", f"central_difference(f, 3.0, h={h!r})")


@pytest.mark.hidden
@pytest.mark.task(
    "1.2", points=2, hint="A central difference's error shrinks like h²: compare the points one step to each side of x."
)
def test_central_difference_error_order(learner):
    """on seeded smooth functions the error shrinks like h² (h / 10 gives error / 100)"""
    _check_error_order(learner, "central_difference", 1202, (1e-2, 1e-3), 80, 120, order=2)


# ----------------------------------------------------------------------------------------------------- task 1.3


@pytest.mark.task(
    "1.3", points=2, hint="Nudge argument i by h in a copy of args; the slope compares fn on the copy with fn on args."
)
def test_partial_derivative_page_numbers(learner):
    """d = a·b + c at (2, -3, 10), h = 0.0001: ∂d/∂a ≈ -3, ∂d/∂b ≈ 2, ∂d/∂c ≈ 1"""
    got = learner.run(partials, PAGE_D, [2.0, -3.0, 10.0], [0, 1, 2], {"h": 0.0001}, fresh=True)
    for i, name, slope in ((0, "a", -3.0), (1, "b", 2.0), (2, "c", 1.0)):
        expect_close(
            got["slopes"][i],
            slope,
            f"partial_derivative(d, [2.0, -3.0, 10.0], {i}, h=0.0001) (∂d/∂{name})",
            "d(a, b, c) = a*b + c",
            rel=0,
            abs_tol=1e-6,
        )


@pytest.mark.task("1.3", points=1, hint="Work on a copy (`list(args)`): the caller's list must not change.")
def test_partial_derivative_keeps_args(learner):
    """args is left unchanged, and a tuple works as well as a list"""
    got = learner.run(partials, PAGE_D, [2.0, -3.0, 10.0], [1], {"h": 0.0001})
    expect_equal(
        got["args_after"], [2.0, -3.0, 10.0], "args after partial_derivative(d, args, 1)", "args = [2.0, -3.0, 10.0]"
    )
    got = learner.run(partials, PAGE_D, [2.0, -3.0, 10.0], [0], {"h": 0.0001}, as_tuple=True)
    expect_close(
        got["slopes"][0],
        -3.0,
        "partial_derivative(d, (2.0, -3.0, 10.0), 0, h=0.0001) with a tuple",
        "d(a, b, c) = a*b + c",
        rel=0,
        abs_tol=1e-6,
    )


@pytest.mark.task("1.3", points=1, hint="Refuse h <= 0 with ValueError and an i outside the arguments with IndexError.")
def test_partial_derivative_bad_step_or_index(learner):
    """a zero or negative h raises ValueError; an index that names no argument raises IndexError"""
    cases = [[0, {"h": 0.0}], [0, {"h": -1e-4}], [3, {}], [10, {}], [-4, {}]]
    for (i, kwargs), out in zip(cases, learner.run(partial_attempts, cases), strict=True):
        if kwargs:
            expect_raised(out, "ValueError", f"partial_derivative(d, [2.0, -3.0, 10.0], 0, h={kwargs['h']!r})")
        else:
            expect_raised(out, "IndexError", f"partial_derivative(d, [2.0, -3.0, 10.0], {i})", "d takes 3 arguments")


def _mixed_exact(args, p, q, r):
    """The exact partials of the hidden checks' fn(x, y, z, w=0) (see `function_of`)."""
    x, y, z, w = (list(args) + [0.0])[:4]
    return [
        p * y * y + q * math.sin(z),
        2 * p * x * y + r * math.exp(0.5 * w),
        q * math.cos(z) * x + w,
        0.5 * r * math.exp(0.5 * w) * y + z,
    ][: len(args)]


@pytest.mark.hidden
@pytest.mark.task("1.3", points=2, hint="Nudge argument i only, forward by h; every other argument keeps its value.")
def test_partial_derivative_seeded(learner):
    """seeded functions of 3 or 4 arguments: every partial, and only argument i is nudged"""
    rng = random.Random(1303)
    for _ in range(8):
        p, q, r = (rng.uniform(-2.0, 2.0) for _ in range(3))
        spec = ["mixed", p, q, r]
        args = [rng.uniform(-2.0, 2.0) for _ in range(rng.choice([3, 4]))]
        inputs = f"fn(x, y, z, w=0) = {p:.4g}*x*y² + {q:.4g}*sin(z)*x + {r:.4g}*exp(w/2)*y + z*w, args = {args!r}"
        got = learner.run(partials, spec, args, list(range(len(args))), {"h": 1e-6})
        for i, (estimate, slope) in enumerate(zip(got["slopes"], _mixed_exact(args, p, q, r), strict=True)):
            expect_close(estimate, slope, f"partial_derivative(fn, args, {i}, h=1e-6)", inputs, rel=1e-4, abs_tol=1e-4)

        h = 0.01
        for i in range(len(args)):
            calls = learner.run(partial_calls, spec, args, i, h)
            nudged = list(args)
            nudged[i] += h
            what = f"the arguments fn was called with by partial_derivative(fn, args, {i}, h={h})"
            expect(
                all(call in (args, nudged) for call in calls) and args in calls and nudged in calls,
                what,
                f"only {args!r} and {nudged!r}",
                calls,
                inputs,
            )
