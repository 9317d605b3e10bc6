"""Lesson 1 · Derivatives from first principles (tasks 1.1 to 1.3)."""

import math
import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal, expect_raises
from autograder.grading.loading import reference


def page_f(x):
    """The lesson's f(x) = 3x² - 4x + 5, taken from the reference (f(3) = 20)."""
    return reference("derivatives").f(x)


def _smooth_functions(rng, count):
    """Seeded smooth functions with their exact first, second and third derivatives.

    Each item is (description, fn, [f', f'', f''']).
    """
    out = []
    for k in range(count):
        kind = k % 3
        if kind == 0:
            a, b = rng.uniform(0.5, 2.0), rng.uniform(-1.0, 1.0)
            out.append((f"sin({a:.4g}*x + {b:.4g})", lambda x, a=a, b=b: math.sin(a * x + b), [
                lambda x, a=a, b=b: a * math.cos(a * x + b),
                lambda x, a=a, b=b: -a * a * math.sin(a * x + b),
                lambda x, a=a, b=b: -a ** 3 * math.cos(a * x + b),
            ]))
        elif kind == 1:
            c, a = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0), rng.choice([-1, 1]) * rng.uniform(0.6, 1.2)
            out.append((f"{c:.4g}*exp({a:.4g}*x)", lambda x, c=c, a=a: c * math.exp(a * x), [
                lambda x, c=c, a=a: c * a * math.exp(a * x),
                lambda x, c=c, a=a: c * a ** 2 * math.exp(a * x),
                lambda x, c=c, a=a: c * a ** 3 * math.exp(a * x),
            ]))
        else:
            c3 = rng.choice([-1, 1]) * rng.uniform(0.5, 2.0)
            c2, c1, c0 = (rng.uniform(-2.0, 2.0) for _ in range(3))
            out.append((f"{c3:.4g}*x**3 + {c2:.4g}*x**2 + {c1:.4g}*x + {c0:.4g}",
                        lambda x, c3=c3, c2=c2, c1=c1, c0=c0: c3 * x ** 3 + c2 * x ** 2 + c1 * x + c0, [
                lambda x, c3=c3, c2=c2, c1=c1: 3 * c3 * x ** 2 + 2 * c2 * x + c1,
                lambda x, c3=c3, c2=c2: 6 * c3 * x + 2 * c2,
                lambda x, c3=c3: 6 * c3,
            ]))
    return out


def _point_with_curvature(rng, derivative):
    """A seeded x in [-1.5, 1.5] where |derivative(x)| is not small, so the error term is visible."""
    while True:
        x = rng.uniform(-1.5, 1.5)
        if abs(derivative(x)) > 0.3:
            return x


# ----------------------------------------------------------------------------------------------------- task 1.1

@pytest.mark.task("1.1", points=1, hint="Return (fn(x + h) - fn(x)) / h, with the h you were given.")
def test_forward_difference_page_number(impl):
    """forward_difference(f, 3.0, h=1e-8) gives the page's 14.00000009…"""
    got = impl.derivatives.forward_difference(page_f, 3.0, h=1e-8)
    expect_close(got, 14.00000009255109, "forward_difference(f, 3.0, h=1e-8)", "f(x) = 3x² - 4x + 5",
                 rel=0, abs_tol=1e-9)


@pytest.mark.task("1.1", points=1, hint="The default h (1e-6) must give a close estimate of the slope everywhere.")
def test_forward_difference_slopes(impl):
    """with the default h: slope 14 at x = 3, 0 at x = 2/3, -22 at x = -3"""
    fd = impl.derivatives.forward_difference
    for x, slope in ((3.0, 14.0), (2 / 3, 0.0), (-3.0, -22.0)):
        expect_close(fd(page_f, x), slope, f"forward_difference(f, {x!r})", "f(x) = 3x² - 4x + 5, default h",
                     rel=0, abs_tol=1e-4)


@pytest.mark.task("1.1", points=1, hint="Step forward only: fn(x + h) against fn(x), not a step to both sides.")
def test_forward_difference_is_a_forward_step(impl):
    """forward_difference(f, 3.0, h=0.5) is (f(3.5) - f(3)) / 0.5 = 15.5"""
    got = impl.derivatives.forward_difference(page_f, 3.0, h=0.5)
    expect_close(got, 15.5, "forward_difference(f, 3.0, h=0.5)", "f(x) = 3x² - 4x + 5", rel=1e-12,
                 note="a big step shows which points were used: f(3.5) and f(3)")


@pytest.mark.task("1.1", points=1, hint="Check h first: `if not h > 0: raise ValueError(...)`.")
def test_forward_difference_bad_step(impl):
    """a zero or negative h raises ValueError"""
    fd = impl.derivatives.forward_difference
    for h in (0.0, 0, -1e-6, -0.5):
        expect_raises(ValueError, lambda h=h: fd(page_f, 3.0, h=h), f"forward_difference(f, 3.0, h={h!r})")


@pytest.mark.hidden
@pytest.mark.task("1.1", points=2, hint="A forward difference's error shrinks like h: (fn(x + h) - fn(x)) / h.")
def test_forward_difference_error_order(impl):
    """on seeded smooth functions the error shrinks like h (h / 10 gives error / 10)"""
    fd = impl.derivatives.forward_difference
    rng = random.Random(1101)
    for name, fn, (d1, d2, _) in _smooth_functions(rng, 9):
        x = _point_with_curvature(rng, d2)
        inputs = f"fn(x) = {name}, x = {x!r}"
        errors = []
        for h in (1e-3, 1e-4):
            got = fd(fn, x, h=h)
            expect_close(got, d1(x), f"forward_difference(fn, x, h={h})", inputs, rel=0,
                         abs_tol=abs(d2(x)) * h)
            errors.append(abs(got - d1(x)))
        ratio = errors[0] / errors[1] if errors[1] else math.inf
        expect(7 <= ratio <= 13, "error(h=1e-3) / error(h=1e-4)", "about 10 (error proportional to h)",
               ratio, inputs)


# ----------------------------------------------------------------------------------------------------- task 1.2

@pytest.mark.task("1.2", points=1, hint="Return (fn(x + h) - fn(x - h)) / (2 * h).")
def test_central_difference_slopes(impl):
    """with the default h: slope 14 at x = 3, 0 at x = 2/3, -22 at x = -3"""
    cd = impl.derivatives.central_difference
    for x, slope in ((3.0, 14.0), (2 / 3, 0.0), (-3.0, -22.0)):
        expect_close(cd(page_f, x), slope, f"central_difference(f, {x!r})", "f(x) = 3x² - 4x + 5, default h",
                     rel=0, abs_tol=1e-6)


@pytest.mark.task("1.2", points=1, hint="Step h to both sides of x, and divide by the whole run, 2h.")
def test_central_difference_exact_on_a_parabola(impl):
    """on the parabola f the central difference is exact even for h = 0.5"""
    cd = impl.derivatives.central_difference
    for x, slope in ((3.0, 14.0), (-3.0, -22.0), (0.0, -4.0)):
        expect_close(cd(page_f, x, h=0.5), slope, f"central_difference(f, {x!r}, h=0.5)",
                     "f(x) = 3x² - 4x + 5", rel=1e-12, abs_tol=1e-12,
                     note="(f(x + h) - f(x - h)) / 2h has no error at all on a parabola")


@pytest.mark.task("1.2", points=1, hint="Check h first: `if not h > 0: raise ValueError(...)`.")
def test_central_difference_bad_step(impl):
    """a zero or negative h raises ValueError"""
    cd = impl.derivatives.central_difference
    for h in (0.0, 0, -1e-5, -0.5):
        expect_raises(ValueError, lambda h=h: cd(page_f, 3.0, h=h), f"central_difference(f, 3.0, h={h!r})")


@pytest.mark.hidden
@pytest.mark.task("1.2", points=2, hint="A central difference's error shrinks like h²: use fn(x + h) and fn(x - h).")
def test_central_difference_error_order(impl):
    """on seeded smooth functions the error shrinks like h² (h / 10 gives error / 100)"""
    cd = impl.derivatives.central_difference
    rng = random.Random(1202)
    for name, fn, (d1, _, d3) in _smooth_functions(rng, 9):
        x = _point_with_curvature(rng, d3)
        inputs = f"fn(x) = {name}, x = {x!r}"
        errors = []
        for h in (1e-2, 1e-3):
            got = cd(fn, x, h=h)
            expect_close(got, d1(x), f"central_difference(fn, x, h={h})", inputs, rel=0,
                         abs_tol=abs(d3(x)) * h * h)
            errors.append(abs(got - d1(x)))
        ratio = errors[0] / errors[1] if errors[1] else math.inf
        expect(80 <= ratio <= 120, "error(h=1e-2) / error(h=1e-3)", "about 100 (error proportional to h²)",
               ratio, inputs)


# ----------------------------------------------------------------------------------------------------- task 1.3

def _page_d(a, b, c):
    return a * b + c


@pytest.mark.task("1.3", points=2, hint="Nudge args[i] by h and return (fn(*nudged) - fn(*args)) / h.")
def test_partial_derivative_page_numbers(impl):
    """d = a·b + c at (2, -3, 10), h = 0.0001: ∂d/∂a ≈ -3, ∂d/∂b ≈ 2, ∂d/∂c ≈ 1"""
    pd = impl.derivatives.partial_derivative
    for i, name, slope in ((0, "a", -3.0), (1, "b", 2.0), (2, "c", 1.0)):
        expect_close(pd(_page_d, [2.0, -3.0, 10.0], i, h=0.0001), slope,
                     f"partial_derivative(d, [2.0, -3.0, 10.0], {i}, h=0.0001) (∂d/∂{name})",
                     "d(a, b, c) = a*b + c", rel=0, abs_tol=1e-6)


@pytest.mark.task("1.3", points=1, hint="Work on a copy (`list(args)`): the caller's list must not change.")
def test_partial_derivative_keeps_args(impl):
    """args is left unchanged, and a tuple works as well as a list"""
    pd = impl.derivatives.partial_derivative
    args = [2.0, -3.0, 10.0]
    pd(_page_d, args, 1, h=0.0001)
    expect_equal(args, [2.0, -3.0, 10.0], "args after partial_derivative(d, args, 1)", "args = [2.0, -3.0, 10.0]")
    expect_close(pd(_page_d, (2.0, -3.0, 10.0), 0, h=0.0001), -3.0,
                 "partial_derivative(d, (2.0, -3.0, 10.0), 0, h=0.0001) with a tuple", "d(a, b, c) = a*b + c",
                 rel=0, abs_tol=1e-6)


@pytest.mark.task("1.3", points=1, hint="Refuse h <= 0 with ValueError and an i outside the arguments with IndexError.")
def test_partial_derivative_bad_step_or_index(impl):
    """a zero or negative h raises ValueError; an index that names no argument raises IndexError"""
    pd = impl.derivatives.partial_derivative
    for h in (0.0, -1e-4):
        expect_raises(ValueError, lambda h=h: pd(_page_d, [2.0, -3.0, 10.0], 0, h=h),
                      f"partial_derivative(d, [2.0, -3.0, 10.0], 0, h={h!r})")
    for i in (3, 10, -4):
        expect_raises(IndexError, lambda i=i: pd(_page_d, [2.0, -3.0, 10.0], i),
                      f"partial_derivative(d, [2.0, -3.0, 10.0], {i})", "d takes 3 arguments")


@pytest.mark.hidden
@pytest.mark.task("1.3", points=2, hint="Nudge argument i only, forward by h; every other argument keeps its value.")
def test_partial_derivative_seeded(impl):
    """seeded functions of 3 or 4 arguments: every partial, and only argument i is nudged"""
    pd = impl.derivatives.partial_derivative
    rng = random.Random(1303)
    for _ in range(8):
        p, q, r = (rng.uniform(-2.0, 2.0) for _ in range(3))

        def fn(x, y, z, w=0.0, p=p, q=q, r=r):
            return p * x * y * y + q * math.sin(z) * x + r * math.exp(0.5 * w) * y + z * w

        def exact(args, p=p, q=q, r=r):
            x, y, z, w = (list(args) + [0.0])[:4]
            return [p * y * y + q * math.sin(z), 2 * p * x * y + r * math.exp(0.5 * w),
                    q * math.cos(z) * x + w, 0.5 * r * math.exp(0.5 * w) * y + z][:len(args)]

        args = [rng.uniform(-2.0, 2.0) for _ in range(rng.choice([3, 4]))]
        inputs = f"fn(x, y, z, w=0) = {p:.4g}*x*y² + {q:.4g}*sin(z)*x + {r:.4g}*exp(w/2)*y + z*w, args = {args!r}"
        for i, slope in enumerate(exact(args)):
            expect_close(pd(fn, args, i, h=1e-6), slope, f"partial_derivative(fn, args, {i}, h=1e-6)", inputs,
                         rel=1e-4, abs_tol=1e-4)

        h = 0.01
        for i in range(len(args)):
            calls = []
            pd(lambda *xs: calls.append(list(xs)) or fn(*xs), args, i, h=h)
            nudged = list(args)
            nudged[i] += h
            expect(all(call in (args, nudged) for call in calls) and args in calls and nudged in calls,
                   f"the arguments fn was called with by partial_derivative(fn, args, {i}, h={h})",
                   f"only {args!r} and {nudged!r}", calls, inputs)
