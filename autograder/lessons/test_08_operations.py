"""Lesson 8 · A full set of operations (tasks 8.1 to 8.6)."""

import math
import random

import pytest
import torch

from autograder.kit.checks import expect, expect_close, expect_equal, expect_raises, finite_difference
from autograder.kit.testkit import data_of, sweep
from autograder.grading.loading import reference

# ---------------------------------------------------------------------------
# The grader's own helpers (never the learner's backward(), which is task 6.1)
# ---------------------------------------------------------------------------




def _grad(v):
    return getattr(v, "grad", v)


def _t(x):
    return torch.tensor(x, dtype=torch.double, requires_grad=True)


HEADLINE_TEXT = ("c = a + b; d = a*b + b**3; c += c + 1; c += 1 + c + (-a); d += d*2 + (b + a).relu(); "
                 "d += 3*d + (b - a).relu(); e = c - d; f = e**2; g = f / 2.0; g += 10.0 / f")


def _headline(a, b):
    """The lesson's headline expression, for Values or for tensors (torch.relu for tensors)."""
    relu = (lambda v: v.relu()) if not isinstance(a, torch.Tensor) else torch.relu
    c = a + b
    d = a * b + b**3
    c = c + (c + 1)
    c = c + (1 + c + (-a))
    d = d + (d * 2 + relu(b + a))
    d = d + (3 * d + relu(b - a))
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    return g


def _headline_value(Value, av, bv):
    a, b = Value(av), Value(bv)
    g = _headline(a, b)
    sweep(g)
    return data_of(g), a.grad, b.grad


def _headline_torch(av, bv):
    a, b = _t(av), _t(bv)
    g = _headline(a, b)
    g.backward()
    return g.item(), a.grad.item(), b.grad.item()


def _check_headline(impl, ops):
    """The page's numbers (4 decimals) and PyTorch float64 at full precision."""
    g, ga, gb = _headline_value(impl.Value, -4.0, 2.0)
    inputs = f"a = -4, b = 2; {HEADLINE_TEXT}; gradients by the grader's own sweep (your {ops}, reference for the rest)"
    expect_close(g, 24.7041, "g.data (4 decimals)", inputs, rel=0, abs_tol=5e-5)
    expect_close(ga, 138.8338, "a.grad (4 decimals)", inputs, rel=0, abs_tol=5e-5)
    expect_close(gb, 645.5773, "b.grad (4 decimals)", inputs, rel=0, abs_tol=5e-5)
    tg, tga, tgb = _headline_torch(-4.0, 2.0)
    expect_close(g, tg, "g.data vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)
    expect_close(ga, tga, "a.grad vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)
    expect_close(gb, tgb, "b.grad vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-6)


def _check_headline_seeded(impl, ops, seed):
    rng = random.Random(seed)
    done = 0
    while done < 8:
        av, bv = rng.uniform(-5, 5), rng.uniform(-5, 5)
        if abs(av + bv) < 0.1 or abs(bv - av) < 0.1:  # keep away from the relu kinks
            continue
        tg, tga, tgb = _headline_torch(av, bv)
        if abs(tg) > 1e12:
            continue
        g, ga, gb = _headline_value(impl.Value, av, bv)
        inputs = f"a = {av!r}, b = {bv!r}; {HEADLINE_TEXT} (your {ops}, reference for the rest)"
        expect_close(g, tg, "g.data vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)
        expect_close(ga, tga, "a.grad vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)
        expect_close(gb, tgb, "b.grad vs PyTorch float64", inputs, rel=1e-6, abs_tol=1e-6)
        done += 1


SANITY_TEXT = "z = 2*x + 2 + x; q = z.relu() + z*x; h = (z*z).relu(); y = h + q + q*x"


def _sanity(x):
    relu = (lambda v: v.relu()) if not isinstance(x, torch.Tensor) else torch.relu
    z = 2 * x + 2 + x
    q = relu(z) + z * x
    h = relu(z * z)
    return h + q + q * x


def _sanity_value(Value, xv):
    x = Value(xv)
    y = _sanity(x)
    sweep(y)
    return data_of(y), x.grad


def _sanity_torch(xv):
    x = _t(xv)
    y = _sanity(x)
    y.backward()
    return y.item(), x.grad.item()


def _check_sanity(impl, ops):
    y, dx = _sanity_value(impl.Value, -4.0)
    ty, tdx = _sanity_torch(-4.0)
    inputs = f"x = -4; {SANITY_TEXT} (your {ops}, reference for the rest)"
    expect_equal(y, -20.0, "y.data", inputs)
    expect_equal(dx, 46.0, "x.grad (dy/dx)", inputs)
    expect_equal(y, ty, "y.data vs PyTorch float64", inputs)
    expect_equal(dx, tdx, "x.grad vs PyTorch float64", inputs)


def _check_sanity_seeded(impl, ops, seed):
    rng = random.Random(seed)
    done = 0
    while done < 10:
        xv = rng.uniform(-5, 5)
        if abs(3 * xv + 2) < 0.1:  # z near 0: the relu kink
            continue
        y, dx = _sanity_value(impl.Value, xv)
        ty, tdx = _sanity_torch(xv)
        inputs = f"x = {xv!r}; {SANITY_TEXT} (your {ops}, reference for the rest)"
        expect_close(y, ty, "y.data vs PyTorch float64", inputs, rel=1e-9)
        expect_close(dx, tdx, "x.grad vs PyTorch float64", inputs, rel=1e-9)
        done += 1


NEURON = dict(x1=2.0, x2=0.0, w1=-3.0, w2=1.0, b=6.8813735870195432)
DECOMPOSED_TEXT = ("x1 = 2, x2 = 0, w1 = -3, w2 = 1, b = 6.8813735870195432; n = x1*w1 + x2*w2 + b; "
                   "e = (2*n).exp(); o = (e - 1)/(e + 1)")


def _neuron(Value, squash):
    leaves = {name: Value(v) for name, v in NEURON.items()}
    n = leaves["x1"] * leaves["w1"] + leaves["x2"] * leaves["w2"] + leaves["b"]
    o = squash(n)
    sweep(o)
    return data_of(o), {name: v.grad for name, v in leaves.items()}


def _decomposed(n):
    e = (2 * n).exp()
    return (e - 1) / (e + 1)


def _check_two_input_cases(impl, cases, x, y, inputs, data_rel, grad_rel):
    """Each (text, build from Values, the same on floats): its data, and both grads against finite differences."""
    for text, build, plain in cases:
        a, b = impl.Value(x), impl.Value(y)
        out = build(a, b)
        expect_close(data_of(out), plain(x, y), f"({text}).data", inputs, rel=data_rel)
        sweep(out)
        expect_close(a.grad, finite_difference(lambda s: plain(s, y), x), f"a.grad for {text}", inputs,
                     rel=grad_rel, abs_tol=1e-6)
        expect_close(b.grad, finite_difference(lambda t: plain(x, t), y), f"b.grad for {text}", inputs,
                     rel=grad_rel, abs_tol=1e-6)


def _check_decomposed_tanh(impl, ops):
    o, grads = _neuron(impl.Value, _decomposed)
    ref_o, ref_grads = _neuron(reference("engine").Value, lambda n: n.tanh())
    inputs = f"{DECOMPOSED_TEXT} (your {ops}, reference for the rest)"
    expect_close(o, 1 / math.sqrt(2), "o.data", inputs, rel=1e-9)
    expect_close(o, ref_o, "o.data vs the reference tanh", inputs, rel=1e-9)
    hand = dict(x1=-1.5, x2=0.5, w1=1.0, w2=0.0, b=0.5)
    for name in NEURON:
        expect_close(grads[name], hand[name], f"{name}.grad", inputs, rel=1e-6, abs_tol=1e-9)
        expect_close(grads[name], ref_grads[name], f"{name}.grad vs the reference tanh", inputs,
                     rel=1e-9, abs_tol=1e-12)


# ---------------------------------------------------------------------------
# 8.1 __radd__ and __rmul__
# ---------------------------------------------------------------------------


@pytest.mark.task("8.1", points=1, hint="__radd__(self, other) is other + self; since + commutes, return self + other.")
def test_radd_forward(impl):
    """1 + a and 2.5 + a give Values with the sum, linked to a"""
    a = impl.Value(3.0)
    c = 1 + a
    expect(isinstance(c, impl.Value), "type of 1 + a", "Value", type(c).__name__, "a = Value(3.0)")
    expect_close(data_of(c), 4.0, "(1 + a).data", "a = Value(3.0)")
    expect(a in c._prev, "a in (1 + a)._prev", True, False, "a = Value(3.0)",
           note="1 + a must be built with an operation on a, so the gradient can reach a")
    expect_close(data_of(2.5 + a), 5.5, "(2.5 + a).data", "a = Value(3.0)")
    expect_equal((a.data, a.grad), (3.0, 0.0), "(a.data, a.grad) after 1 + a (unchanged)")


@pytest.mark.task("8.1", points=1, hint="__rmul__(self, other) is other * self; since * commutes, return self * other.")
def test_rmul_forward(impl):
    """2 * a and -0.5 * a give Values with the product, linked to a"""
    a = impl.Value(3.0)
    c = 2 * a
    expect(isinstance(c, impl.Value), "type of 2 * a", "Value", type(c).__name__, "a = Value(3.0)")
    expect_close(data_of(c), 6.0, "(2 * a).data", "a = Value(3.0)")
    expect(a in c._prev, "a in (2 * a)._prev", True, False, "a = Value(3.0)",
           note="2 * a must be built with an operation on a, so the gradient can reach a")
    expect_close(data_of(-0.5 * a), -1.5, "(-0.5 * a).data", "a = Value(3.0)")


@pytest.mark.task("8.1", points=2, hint="Reuse __add__ and __mul__ so their _backward closures carry the gradient.")
def test_radd_rmul_backward(impl):
    """gradients flow through 1 + a and 2 * a"""
    a = impl.Value(3.0)
    c = 1 + a
    sweep(c, seed=1.5)
    expect_close(a.grad, 1.5, "a.grad after backpropagating 1.5 from c = 1 + a", "a = Value(3.0)")
    a = impl.Value(3.0)
    c = 2 * a
    sweep(c, seed=1.5)
    expect_close(a.grad, 3.0, "a.grad after backpropagating 1.5 from c = 2 * a", "a = Value(3.0)")


@pytest.mark.task("8.1", points=2, hint="The headline uses 1 + c, 3*d and 10.0 / f (= 10.0 * f**-1): all need __radd__/__rmul__.")
def test_headline_with_radd_rmul(impl):
    """the headline expression with your __radd__/__rmul__ (and the reference for the rest)"""
    _check_headline(impl, "__radd__/__rmul__")


@pytest.mark.task("8.1", points=1, hint="2*x needs __rmul__: it must return a Value linked to x.")
def test_sanity_expression_with_rmul(impl):
    """the PyTorch sanity expression at x = -4 with your __rmul__: y = -20, dy/dx = 46"""
    _check_sanity(impl, "__radd__/__rmul__")


@pytest.mark.hidden
@pytest.mark.task("8.1", points=1, hint="k + a and k * a must hold for any number k and any a, with gradients 1 and k.")
def test_radd_rmul_seeded(impl):
    """k + a and k * a on seeded numbers, with gradients"""
    rng = random.Random(8101)
    for _ in range(20):
        k, x, g = rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-3, 3)
        inputs = f"k = {k!r}, a = Value({x!r}), backpropagating {g!r}"
        a = impl.Value(x)
        c = k + a
        expect_close(data_of(c), k + x, "(k + a).data", inputs, rel=1e-12)
        sweep(c, seed=g)
        expect_close(a.grad, g, "a.grad for c = k + a", inputs, rel=1e-12)
        a = impl.Value(x)
        c = k * a
        expect_close(data_of(c), k * x, "(k * a).data", inputs, rel=1e-12)
        sweep(c, seed=g)
        expect_close(a.grad, k * g, "a.grad for c = k * a", inputs, rel=1e-12)


@pytest.mark.hidden
@pytest.mark.task("8.1", points=1, hint="Numbers on the left must work for any inputs, not only the page's.")
def test_headline_and_sanity_seeded_with_radd_rmul(impl):
    """the headline and sanity expressions on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(impl, "__radd__/__rmul__", 8102)
    _check_sanity_seeded(impl, "__radd__/__rmul__", 8103)


# ---------------------------------------------------------------------------
# 8.2 __pow__
# ---------------------------------------------------------------------------


@pytest.mark.task("8.2", points=1, hint="Forward: Value(self.data ** other, (self,), f'**{other}').")
def test_pow_forward(impl):
    """a ** 2 gives 9.0 with one child and op '**2'"""
    a = impl.Value(3.0)
    c = a**2
    expect_close(data_of(c), 9.0, "(a ** 2).data", "a = Value(3.0)")
    expect(getattr(c, "_prev", None) == {a}, "(a ** 2)._prev", "{a}", getattr(c, "_prev", None), "a = Value(3.0)")
    expect_equal(c._op, "**2", "(a ** 2)._op", "a = Value(3.0)")
    expect_close(data_of(a**-1), 1 / 3, "(a ** -1).data", "a = Value(3.0)")
    expect_close(data_of(impl.Value(4.0) ** 0.5), 2.0, "(a ** 0.5).data", "a = Value(4.0)")


@pytest.mark.task("8.2", points=2, hint="Power rule: self.grad += other * self.data ** (other - 1) * out.grad.")
def test_pow_backward(impl):
    """out._backward() applies the power rule for exponents 2, -1 and 0.5"""
    for x, k, g, expected in [(3.0, 2, 2.0, 12.0), (2.0, -1, 2.0, -0.5), (4.0, 0.5, 2.0, 0.5), (-2.0, 3, 0.5, 6.0)]:
        a = impl.Value(x)
        out = a**k
        out.grad = g
        out._backward()
        expect_close(a.grad, expected, f"a.grad after out._backward() with out.grad = {g}",
                     f"a = Value({x}), out = a ** {k}")


@pytest.mark.task("8.2", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_pow_backward_accumulates(impl):
    """the ** closure adds to a grad that already holds something"""
    a = impl.Value(3.0)
    out = a**2
    a.grad = 1.0
    out.grad = 1.0
    out._backward()
    expect_close(a.grad, 7.0, "a.grad after out._backward(), a.grad was 1.0 before", "a = Value(3.0), out = a ** 2",
                 note="a Value can feed several operations: each _backward must add its share (+=)")


@pytest.mark.task("8.2", points=1, hint="Check isinstance(other, (int, float)) first and raise TypeError otherwise.")
def test_pow_refuses_non_number_exponent(impl):
    """a ** Value(2) and a ** '2' raise TypeError"""
    a = impl.Value(3.0)
    expect_raises(TypeError, lambda: a ** impl.Value(2.0), "a ** Value(2.0)", "a = Value(3.0)")
    expect_raises(TypeError, lambda: a ** "2", "a ** '2'", "a = Value(3.0)")


@pytest.mark.task("8.2", points=2, hint="The headline uses b**3, e**2 and, through division, f**-1.")
def test_headline_with_pow(impl):
    """the headline expression with your __pow__ (and the reference for the rest)"""
    _check_headline(impl, "__pow__")


@pytest.mark.hidden
@pytest.mark.task("8.2", points=2, hint="The power rule holds for any int or float exponent, negative and fractional ones too.")
def test_pow_seeded_finite_differences(impl):
    """a ** k on seeded inputs, integer, negative and fractional k, against finite differences"""
    rng = random.Random(8201)
    exponents = [2, 3, 4, -1, -2, -3, 0.5, 1.5, -0.5, 2.7, -1.3, 0.25]
    for k in exponents:
        for _ in range(3):
            x = rng.uniform(0.5, 3.0)
            if isinstance(k, int) and rng.random() < 0.5:
                x = -x
            g = rng.uniform(0.5, 2.0)
            inputs = f"a = Value({x!r}), out = a ** {k!r}, out.grad = {g!r}"
            a = impl.Value(x)
            out = a**k
            expect_close(data_of(out), x**k, "(a ** k).data", inputs, rel=1e-12)
            out.grad = g
            out._backward()
            expected = g * finite_difference(lambda t: t**k, x)
            expect_close(a.grad, expected, "a.grad after out._backward() vs finite differences", inputs,
                         rel=1e-5, abs_tol=1e-6)


@pytest.mark.hidden
@pytest.mark.task("8.2", points=1, hint="Your __pow__ must work in a whole graph, for any inputs.")
def test_headline_seeded_with_pow(impl):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(impl, "__pow__", 8202)


# ---------------------------------------------------------------------------
# 8.3 __neg__, __sub__, __rsub__
# ---------------------------------------------------------------------------


@pytest.mark.task("8.3", points=1, hint="-a is a * -1; a - b is a + (-b); 1 - a is 1 + (-a).")
def test_neg_sub_rsub_forward(impl):
    """-a, a - b, a - 2 and 1 - a have the right data"""
    a, b = impl.Value(3.0), impl.Value(5.0)
    inputs = "a = Value(3.0), b = Value(5.0)"
    expect_close(data_of(-a), -3.0, "(-a).data", inputs)
    expect_close(data_of(a - b), -2.0, "(a - b).data", inputs)
    expect_close(data_of(a - 2), 1.0, "(a - 2).data", inputs)
    expect_close(data_of(1 - a), -2.0, "(1 - a).data", inputs)
    expect_equal((a.data, b.data), (3.0, 5.0), "(a.data, b.data) afterwards (unchanged)")


@pytest.mark.task("8.3", points=2, hint="Build -, a - b and 1 - a from * and +, so the gradient reaches every input.")
def test_neg_sub_rsub_backward(impl):
    """gradients flow through -a, a - b and 1 - a"""
    inputs = "a = Value(3.0), b = Value(5.0), backpropagating 2.0"
    a = impl.Value(3.0)
    sweep(-a, seed=2.0)
    expect_close(a.grad, -2.0, "a.grad for out = -a", inputs)
    a, b = impl.Value(3.0), impl.Value(5.0)
    sweep(a - b, seed=2.0)
    expect_close(a.grad, 2.0, "a.grad for out = a - b", inputs)
    expect_close(b.grad, -2.0, "b.grad for out = a - b", inputs)
    a = impl.Value(3.0)
    sweep(1 - a, seed=2.0)
    expect_close(a.grad, -2.0, "a.grad for out = 1 - a", inputs)


@pytest.mark.task("8.3", points=2, hint="The headline uses -a, b - a and c - d.")
def test_headline_with_sub(impl):
    """the headline expression with your __neg__/__sub__/__rsub__ (and the reference for the rest)"""
    _check_headline(impl, "__neg__/__sub__/__rsub__")


@pytest.mark.hidden
@pytest.mark.task("8.3", points=1, hint="Negation and subtraction must hold for any inputs, with gradients -1 and +1.")
def test_sub_seeded_finite_differences(impl):
    """a - b, k - a, a - k and -a on seeded inputs, against finite differences"""
    rng = random.Random(8301)
    for _ in range(15):
        x, y, k = rng.uniform(-10, 10), rng.uniform(-10, 10), rng.uniform(-10, 10)
        inputs = f"a = Value({x!r}), b = Value({y!r}), k = {k!r}"
        cases = [
            ("a - b", lambda a, b: a - b, lambda s, t: s - t),
            ("k - a", lambda a, b: k - a, lambda s, t: k - s),
            ("a - k", lambda a, b: a - k, lambda s, t: s - k),
            ("-a * b", lambda a, b: -a * b, lambda s, t: -s * t),
        ]
        _check_two_input_cases(impl, cases, x, y, inputs, data_rel=1e-12, grad_rel=1e-6)


@pytest.mark.hidden
@pytest.mark.task("8.3", points=1, hint="Your - must work in a whole graph, for any inputs.")
def test_headline_seeded_with_sub(impl):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(impl, "__neg__/__sub__/__rsub__", 8302)


# ---------------------------------------------------------------------------
# 8.4 __truediv__, __rtruediv__
# ---------------------------------------------------------------------------


@pytest.mark.task("8.4", points=1, hint="a / b is a * b**-1; 10.0 / a is 10.0 * a**-1.")
def test_div_forward(impl):
    """a / b, a / 4.0 and 10.0 / a have the right data"""
    a, b = impl.Value(7.0), impl.Value(2.0)
    inputs = "a = Value(7.0), b = Value(2.0)"
    expect_close(data_of(a / b), 3.5, "(a / b).data", inputs)
    expect_close(data_of(a / 4.0), 1.75, "(a / 4.0).data", inputs)
    expect_close(data_of(10.0 / b), 5.0, "(10.0 / b).data", inputs)
    expect_equal((a.data, b.data), (7.0, 2.0), "(a.data, b.data) afterwards (unchanged)")


@pytest.mark.task("8.4", points=2, hint="Build division from * and **, so the gradient reaches both inputs.")
def test_div_backward(impl):
    """gradients flow through a / b and 10.0 / b"""
    inputs = "a = Value(3.0), b = Value(2.0), backpropagating 2.0"
    a, b = impl.Value(3.0), impl.Value(2.0)
    sweep(a / b, seed=2.0)
    expect_close(a.grad, 1.0, "a.grad for out = a / b (2.0 / b)", inputs)
    expect_close(b.grad, -1.5, "b.grad for out = a / b (-2.0 * a / b**2)", inputs)
    b = impl.Value(2.0)
    sweep(10.0 / b, seed=2.0)
    expect_close(b.grad, -5.0, "b.grad for out = 10.0 / b (-2.0 * 10 / b**2)", inputs)


@pytest.mark.task("8.4", points=2, hint="The headline uses f / 2.0 and 10.0 / f.")
def test_headline_with_div(impl):
    """the headline expression with your __truediv__/__rtruediv__ (and the reference for the rest)"""
    _check_headline(impl, "__truediv__/__rtruediv__")


@pytest.mark.task("8.4", points=2, hint="(e - 1)/(e + 1) needs __truediv__ with a Value on both sides.")
def test_decomposed_tanh_with_div(impl):
    """tanh as (e - 1)/(e + 1) with your division matches the reference tanh on the lesson-5 neuron"""
    _check_decomposed_tanh(impl, "__truediv__")


@pytest.mark.hidden
@pytest.mark.task("8.4", points=1, hint="Division must hold for any inputs (also negative ones), with both gradients.")
def test_div_seeded_finite_differences(impl):
    """a / b, k / a and a / k on seeded inputs, against finite differences"""
    rng = random.Random(8401)
    for _ in range(15):
        x, y, k = rng.uniform(-10, 10), rng.uniform(0.5, 5) * rng.choice([-1, 1]), rng.uniform(0.5, 5)
        if abs(x) < 0.5:
            continue
        inputs = f"a = Value({x!r}), b = Value({y!r}), k = {k!r}"
        cases = [
            ("a / b", lambda a, b: a / b, lambda s, t: s / t),
            ("k / a", lambda a, b: k / a, lambda s, t: k / s),
            ("a / k", lambda a, b: a / k, lambda s, t: s / k),
            ("(a / b) / a", lambda a, b: (a / b) / a, lambda s, t: (s / t) / s),
        ]
        _check_two_input_cases(impl, cases, x, y, inputs, data_rel=1e-9, grad_rel=1e-5)


@pytest.mark.hidden
@pytest.mark.task("8.4", points=1, hint="Your division must work in a whole graph, for any inputs.")
def test_headline_seeded_with_div(impl):
    """the headline expression on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(impl, "__truediv__/__rtruediv__", 8402)


# ---------------------------------------------------------------------------
# 8.5 exp
# ---------------------------------------------------------------------------


@pytest.mark.task("8.5", points=1, hint="Forward: Value(math.exp(self.data), (self,), 'exp').")
def test_exp_forward(impl):
    """a.exp() gives e^a with one child and op 'exp'"""
    a = impl.Value(1.0)
    c = a.exp()
    expect_close(data_of(c), math.e, "Value(1.0).exp().data", rel=1e-12)
    expect(getattr(c, "_prev", None) == {a}, "a.exp()._prev", "{a}", getattr(c, "_prev", None), "a = Value(1.0)")
    expect_equal(c._op, "exp", "a.exp()._op", "a = Value(1.0)")
    expect_close(data_of(impl.Value(0.0).exp()), 1.0, "Value(0.0).exp().data")
    expect_close(data_of(impl.Value(-2.0).exp()), math.exp(-2.0), "Value(-2.0).exp().data", rel=1e-12)


@pytest.mark.task("8.5", points=2, hint="The derivative of e^x is e^x: self.grad += out.data * out.grad.")
def test_exp_backward(impl):
    """out._backward() sends e^a times out.grad to a"""
    for x, g in [(0.0, 2.0), (1.0, 1.0), (-2.0, 3.0)]:
        a = impl.Value(x)
        out = a.exp()
        out.grad = g
        out._backward()
        expect_close(a.grad, g * math.exp(x), f"a.grad after out._backward() with out.grad = {g}",
                     f"a = Value({x}), out = a.exp()", rel=1e-9)


@pytest.mark.task("8.5", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_exp_backward_accumulates(impl):
    """the exp closure adds to a grad that already holds something"""
    a = impl.Value(0.0)
    out = a.exp()
    a.grad = 1.0
    out.grad = 1.0
    out._backward()
    expect_close(a.grad, 2.0, "a.grad after out._backward(), a.grad was 1.0 before", "a = Value(0.0), out = a.exp()",
                 note="a Value can feed several operations: each _backward must add its share (+=)")


@pytest.mark.task("8.5", points=2, hint="(2*n).exp() must be linked to n so the gradient reaches the neuron's leaves.")
def test_decomposed_tanh_with_exp(impl):
    """tanh as (e - 1)/(e + 1) with your exp matches the reference tanh on the lesson-5 neuron"""
    _check_decomposed_tanh(impl, "exp")


@pytest.mark.hidden
@pytest.mark.task("8.5", points=2, hint="exp and its gradient must hold for any input, negative ones too.")
def test_exp_seeded_finite_differences(impl):
    """a.exp() on seeded inputs, against math.exp and finite differences"""
    rng = random.Random(8501)
    for _ in range(20):
        x, g = rng.uniform(-5, 5), rng.uniform(-2, 2)
        inputs = f"a = Value({x!r}), out = a.exp(), out.grad = {g!r}"
        a = impl.Value(x)
        out = a.exp()
        expect_close(data_of(out), math.exp(x), "a.exp().data", inputs, rel=1e-12)
        out.grad = g
        out._backward()
        expect_close(a.grad, g * finite_difference(math.exp, x), "a.grad after out._backward() vs finite differences",
                     inputs, rel=1e-6, abs_tol=1e-8)


# ---------------------------------------------------------------------------
# 8.6 relu
# ---------------------------------------------------------------------------


@pytest.mark.task("8.6", points=1, hint="Forward: Value(max(0.0, self.data), (self,), 'ReLU').")
def test_relu_forward(impl):
    """relu gives 0 for negative inputs and 0, the input otherwise, op 'ReLU'"""
    a = impl.Value(3.0)
    c = a.relu()
    expect_close(data_of(c), 3.0, "Value(3.0).relu().data")
    expect(getattr(c, "_prev", None) == {a}, "a.relu()._prev", "{a}", getattr(c, "_prev", None), "a = Value(3.0)")
    expect_equal(c._op, "ReLU", "a.relu()._op", "a = Value(3.0)")
    expect_close(data_of(impl.Value(-2.0).relu()), 0.0, "Value(-2.0).relu().data")
    expect_close(data_of(impl.Value(0.0).relu()), 0.0, "Value(0.0).relu().data")


@pytest.mark.task("8.6", points=2, hint="Pass out.grad only where out.data > 0: at exactly 0 the gradient is 0.")
def test_relu_backward(impl):
    """out._backward() passes out.grad for a positive input and 0 for a negative input or exactly 0"""
    for x, expected in [(3.0, 2.0), (-2.0, 0.0), (0.0, 0.0)]:
        a = impl.Value(x)
        out = a.relu()
        out.grad = 2.0
        out._backward()
        expect_close(a.grad, expected, "a.grad after out._backward() with out.grad = 2.0", f"a = Value({x}), out = a.relu()")


@pytest.mark.task("8.6", points=1, hint="Inside _backward, add to self.grad (+=), never overwrite it.")
def test_relu_backward_accumulates(impl):
    """the relu closure adds to a grad that already holds something"""
    a = impl.Value(3.0)
    out = a.relu()
    a.grad = 1.0
    out.grad = 2.0
    out._backward()
    expect_close(a.grad, 3.0, "a.grad after out._backward(), a.grad was 1.0 before", "a = Value(3.0), out = a.relu()",
                 note="a Value can feed several operations: each _backward must add its share (+=)")
    b = impl.Value(-3.0)
    out = b.relu()
    b.grad = 1.0
    out.grad = 2.0
    out._backward()
    expect_close(b.grad, 1.0, "b.grad after out._backward(), b.grad was 1.0 before", "b = Value(-3.0), out = b.relu()",
                 note="a blocked gradient adds 0: it must not reset the grad to 0")


@pytest.mark.task("8.6", points=2, hint="The headline uses (b + a).relu() and (b - a).relu().")
def test_headline_with_relu(impl):
    """the headline expression with your relu (and the reference for the rest)"""
    _check_headline(impl, "relu")


@pytest.mark.task("8.6", points=1, hint="q = z.relu() + z*x and h = (z*z).relu(): one relu blocks, the other passes.")
def test_sanity_expression_with_relu(impl):
    """the PyTorch sanity expression at x = -4 with your relu: y = -20, dy/dx = 46"""
    _check_sanity(impl, "relu")


@pytest.mark.hidden
@pytest.mark.task("8.6", points=1, hint="relu and its gradient must hold for any input.")
def test_relu_seeded_finite_differences(impl):
    """a.relu() on seeded inputs, against max(0, a) and finite differences"""
    rng = random.Random(8601)
    for _ in range(30):
        x, g = rng.uniform(-5, 5), rng.uniform(-2, 2)
        if abs(x) < 1e-3:
            continue
        inputs = f"a = Value({x!r}), out = a.relu(), out.grad = {g!r}"
        a = impl.Value(x)
        out = a.relu()
        expect_close(data_of(out), max(0.0, x), "a.relu().data", inputs, rel=1e-12)
        out.grad = g
        out._backward()
        expect_close(a.grad, g * finite_difference(lambda t: max(0.0, t), x),
                     "a.grad after out._backward() vs finite differences", inputs, rel=1e-6, abs_tol=1e-8)


@pytest.mark.hidden
@pytest.mark.task("8.6", points=1, hint="Your relu must work in a whole graph, for any inputs.")
def test_headline_and_sanity_seeded_with_relu(impl):
    """the headline and sanity expressions on seeded inputs, against PyTorch float64"""
    _check_headline_seeded(impl, "relu", 8602)
    _check_sanity_seeded(impl, "relu", 8603)
