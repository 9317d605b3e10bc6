"""Lesson 9 · Checking against PyTorch (tasks 9.1 and 9.2)."""

import math
import random

import pytest
import torch

from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.grading.loading import reference

NAMES = ("x1", "x2", "w1", "w2", "b")
LESSON_NEURON = dict(x1=2.0, x2=0.0, w1=-3.0, w2=1.0, b=6.8813735870195432)


def _neuron_oracle(x1, x2, w1, w2, b):
    """The grader's closed form: o = tanh(n), do/dn = 1 - o**2, then the chain rule through n."""
    o = math.tanh(x1 * w1 + x2 * w2 + b)
    dn = 1 - o**2
    return o, dict(x1=dn * w1, x2=dn * w2, w1=dn * x1, w2=dn * x2, b=dn)


def _check_neuron(impl, inputs_dict, rel):
    inputs = ", ".join(f"{k} = {v!r}" for k, v in inputs_dict.items())
    result = impl.torch_bridge.torch_neuron(**inputs_dict)
    expect(isinstance(result, tuple) and len(result) == 2, "torch_neuron(...) returns (o, grads)",
           "a tuple of 2", type(result).__name__, inputs)
    o, grads = result
    expect(isinstance(grads, dict) and set(grads) == set(NAMES), "the keys of grads", sorted(NAMES),
           sorted(grads) if isinstance(grads, dict) else type(grads).__name__, inputs)
    want_o, want = _neuron_oracle(**inputs_dict)
    expect_close(o, want_o, "o", inputs, rel=rel, abs_tol=1e-12)
    for name in NAMES:
        expect_close(grads[name], want[name], f"grads['{name}'] (do/d{name})", inputs, rel=rel, abs_tol=1e-12)


# ---------------------------------------------------------------------------
# 9.1 torch_neuron
# ---------------------------------------------------------------------------


@pytest.mark.task("9.1", points=2, hint="n = x1*w1 + x2*w2 + b; o = torch.tanh(n); o.backward(); read each leaf's .grad.")
def test_torch_neuron_lesson_numbers(impl):
    """the lesson-5 neuron in PyTorch: o = 0.7071, grads x1 = -1.5, w1 = 1.0, x2 = 0.5, w2 = 0.0, b = 0.5"""
    _check_neuron(impl, LESSON_NEURON, rel=1e-9)


@pytest.mark.task("9.1", points=1, hint="Return o.item() and t.grad.item() for each leaf: plain Python floats, not tensors.")
def test_torch_neuron_returns_plain_floats(impl):
    """o and every gradient come back as plain Python floats"""
    o, grads = impl.torch_bridge.torch_neuron(**LESSON_NEURON)
    expect_equal(type(o).__name__, "float", "type of o", note="use .item() to turn a one-number tensor into a float")
    for name in NAMES:
        value = grads.get(name) if isinstance(grads, dict) else None
        expect_equal(type(value).__name__, "float", f"type of grads['{name}']",
                     note="use .grad.item() to turn a leaf's gradient into a float")


@pytest.mark.hidden
@pytest.mark.task("9.1", points=2, hint="Use float64 tensors (dtype=torch.double) so the results agree to the last digits.")
def test_torch_neuron_seeded(impl):
    """the neuron in PyTorch on seeded inputs, against the closed form"""
    rng = random.Random(9101)
    for _ in range(10):
        inputs_dict = {name: rng.uniform(-2, 2) for name in NAMES}
        _check_neuron(impl, inputs_dict, rel=1e-10)


# ---------------------------------------------------------------------------
# 9.2 Tanh autograd Function
# ---------------------------------------------------------------------------


def _random_tensor(seed, n=8, requires_grad=True):
    gen = torch.Generator().manual_seed(seed)
    x = torch.rand(n, dtype=torch.double, generator=gen) * 6 - 3
    return x.requires_grad_(requires_grad)


class _FakeCtx:
    """Stands in for PyTorch's ctx when the grader calls forward and backward itself."""

    def __init__(self):
        self.saved_tensors = ()
        self.needs_input_grad = (True,)

    def save_for_backward(self, *tensors):
        self.saved_tensors = tensors

    def mark_dirty(self, *args):
        pass

    def mark_non_differentiable(self, *args):
        pass

    def set_materialize_grads(self, value):
        pass


@pytest.mark.task("9.2", points=1, hint="forward computes t = torch.tanh(x), saves it with ctx.save_for_backward(t), returns t.")
def test_tanh_apply_forward(impl):
    """Tanh.apply(x) equals torch.tanh(x)"""
    Tanh = impl.torch_bridge.Tanh
    expect(isinstance(Tanh, type) and issubclass(Tanh, torch.autograd.Function),
           "Tanh is a subclass of torch.autograd.Function", True, False)
    x = torch.tensor([-2.0, -0.5, 0.0, 0.8813735870195432, 3.0], dtype=torch.double)
    y = Tanh.apply(x)
    expect(isinstance(y, torch.Tensor), "type of Tanh.apply(x)", "Tensor", type(y).__name__)
    expect(y.shape == x.shape and torch.allclose(y, torch.tanh(x), rtol=1e-12, atol=1e-12), "Tanh.apply(x)",
           torch.tanh(x).tolist(), y.tolist(), f"x = {x.tolist()}")


@pytest.mark.task("9.2", points=2, hint="backward returns (1 - t**2) * grad_output, with t from ctx.saved_tensors.")
def test_tanh_backward_direct(impl):
    """Tanh.backward(ctx, g), called with a ctx filled by Tanh.forward, returns (1 - tanh(x)²)·g"""
    Tanh = impl.torch_bridge.Tanh
    x = torch.tensor([-2.0, -0.5, 0.0, 0.8813735870195432, 3.0], dtype=torch.double)
    g = torch.tensor([1.0, 2.0, -1.0, 0.5, 3.0], dtype=torch.double)
    ctx = _FakeCtx()
    with torch.no_grad():
        Tanh.forward(ctx, x)
        grad = Tanh.backward(ctx, g)
    if isinstance(grad, tuple) and len(grad) == 1:
        grad = grad[0]
    want = (1 - torch.tanh(x) ** 2) * g
    ok = isinstance(grad, torch.Tensor) and grad.shape == want.shape and torch.allclose(grad, want, rtol=1e-12, atol=1e-12)
    expect(ok, "Tanh.backward(ctx, g) after Tanh.forward(ctx, x)", want.tolist(),
           grad.tolist() if isinstance(grad, torch.Tensor) else grad, f"x = {x.tolist()}, g = {g.tolist()}")


@pytest.mark.task("9.2", points=2, hint="The gradient of tanh is 1 - tanh²; multiply it by grad_output.")
def test_tanh_gradcheck(impl):
    """torch.autograd.gradcheck passes on Tanh.apply with seeded float64 tensors"""
    Tanh = impl.torch_bridge.Tanh
    for seed in (9201, 9202, 9203):
        x = _random_tensor(seed)
        ok = torch.autograd.gradcheck(Tanh.apply, (x,), raise_exception=False)
        expect(ok, "torch.autograd.gradcheck(Tanh.apply, (x,))", True, ok, f"x = {x.detach().tolist()}",
               note="the gradient from your backward differs from the numerical one")


@pytest.mark.task("9.2", points=1, hint="Tanh.apply(x) must go through your Function, so PyTorch calls your backward.")
def test_tanh_uses_own_backward(impl):
    """the output of Tanh.apply has a grad_fn made by Tanh, and backpropagating g gives (1 - tanh²)·g"""
    Tanh = impl.torch_bridge.Tanh
    x = torch.tensor([-1.0, 0.25, 2.0], dtype=torch.double, requires_grad=True)
    y = Tanh.apply(x)
    grad_fn = getattr(y, "grad_fn", None)
    expect(isinstance(grad_fn, torch.autograd.function.BackwardCFunction)
           and getattr(grad_fn, "_forward_cls", None) is Tanh,
           "type of Tanh.apply(x).grad_fn", "TanhBackward (a BackwardCFunction of Tanh)", type(grad_fn).__name__,
           f"x = {x.detach().tolist()}")
    g = torch.tensor([2.0, -1.0, 0.5], dtype=torch.double)
    (grad,) = torch.autograd.grad(y, x, grad_outputs=g)
    want = (1 - torch.tanh(x.detach()) ** 2) * g
    expect(torch.allclose(grad, want, rtol=1e-12, atol=1e-12), "x.grad after Tanh.apply(x).backward(g)",
           want.tolist(), grad.tolist(), f"x = {x.detach().tolist()}, g = {g.tolist()}")


@pytest.mark.hidden
@pytest.mark.task("9.2", points=2, hint="Tanh.apply must agree with Value.tanh of our engine, value and gradient.")
def test_tanh_matches_engine_seeded(impl):
    """neurons with Tanh.apply on seeded inputs match the reference engine's Value.tanh"""
    Tanh = impl.torch_bridge.Tanh
    Value = reference("engine").Value
    rng = random.Random(9204)
    for _ in range(10):
        vals = {name: rng.uniform(-2, 2) for name in NAMES}
        g_out = rng.uniform(-3, 3)
        inputs = (", ".join(f"{k} = {v!r}" for k, v in vals.items())
                  + f"; o = tanh(x1*w1 + x2*w2 + b), backpropagating {g_out!r} from o")
        # the reference engine, gradients pushed by the grader's own calls of each _backward
        leaves = {k: Value(v) for k, v in vals.items()}
        p1, p2 = leaves["x1"] * leaves["w1"], leaves["x2"] * leaves["w2"]
        s = p1 + p2
        n = s + leaves["b"]
        o = n.tanh()
        o.grad = g_out
        for node in (o, n, s, p2, p1):
            node._backward()
        # the learner's Function
        tensors = {k: torch.tensor(v, dtype=torch.double, requires_grad=True) for k, v in vals.items()}
        tn = tensors["x1"] * tensors["w1"] + tensors["x2"] * tensors["w2"] + tensors["b"]
        to = Tanh.apply(tn)
        to.backward(torch.tensor(g_out, dtype=torch.double))
        expect_close(to.item(), o.data, "Tanh.apply(n) vs Value.tanh", inputs, rel=1e-12, abs_tol=1e-15)
        for k in NAMES:
            got = tensors[k].grad.item() if tensors[k].grad is not None else None
            expect_close(got, leaves[k].grad, f"{k}.grad vs the engine", inputs, rel=1e-10, abs_tol=1e-15)
