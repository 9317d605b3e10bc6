"""Lesson 9 · Checking against PyTorch (tasks 9.1 and 9.2).

Each check is a scenario (`@scenario`: runs in the worker, where torch is
preloaded, calls the learner's `torch_neuron` or `Tanh` Function, runs
`torch.autograd.gradcheck` on it there, and reports numbers, type names and
outcomes) and a judgement (the test: compares that report with the closed form,
PyTorch's own float64 `torch.tanh`, or the reference engine, all computed here
on the trusted side).
"""

import math
import random
import struct

import pytest

from autograder.kit import torch_values
from autograder.kit.checks import CheckFailed, close, expect, expect_close, expect_equal
from autograder.worker.scenario import outcome, scenario, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def neuron(impl, inputs):
    """`torch_neuron(**inputs)`: its shape (a 2-tuple of o and a dict?), o, the grads, and their type names."""
    result = impl.torch_bridge.torch_neuron(**inputs)
    pair = isinstance(result, tuple) and len(result) == 2
    o, grads = result if pair else (None, None)
    keys = sorted(str(k) for k in grads) if isinstance(grads, dict) else None
    return {
        "type": type_name(result),
        "pair": pair,
        "o": o,
        "o_type": type_name(o),
        "grads_type": type_name(grads),
        "keys": keys,
        "grads": {str(k): v for k, v in grads.items()} if isinstance(grads, dict) else None,
        "grad_types": {str(k): type_name(v) for k, v in grads.items()} if isinstance(grads, dict) else None,
    }


@scenario
def tensor_report(impl, t):
    """A result that should be a float64 tensor: its type name, and its shape, dtype and values when it is a tensor."""
    import torch

    if not isinstance(t, torch.Tensor):
        return {"type": type_name(t), "shape": None, "dtype": None, "values": None}
    values = t.detach().double().reshape(-1).tolist()
    return {"type": "Tensor", "shape": list(t.shape), "dtype": str(t.dtype), "values": values}


@scenario
def tanh_apply(impl, xs):
    """Whether `Tanh` is a torch.autograd.Function, and what `Tanh.apply(x)` returns for x = tensor(xs)."""
    import torch

    Tanh = impl.torch_bridge.Tanh
    is_function = isinstance(Tanh, type) and issubclass(Tanh, torch.autograd.Function)
    if not is_function:
        return {"is_function": False, "y": None}
    return {"is_function": True, "y": tensor_report(impl, Tanh.apply(torch.tensor(xs, dtype=torch.double)))}


@scenario
def tanh_direct(impl, xs, gs):
    """`Tanh.forward(ctx, x)` then `Tanh.backward(ctx, g)`, called by the grader with a stand-in for PyTorch's ctx."""
    import torch

    class FakeCtx:
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

    Tanh, ctx = impl.torch_bridge.Tanh, FakeCtx()
    x, g = torch.tensor(xs, dtype=torch.double), torch.tensor(gs, dtype=torch.double)
    with torch.no_grad():
        Tanh.forward(ctx, x)
        grad = Tanh.backward(ctx, g)
    if isinstance(grad, tuple) and len(grad) == 1:
        grad = grad[0]
    return tensor_report(impl, grad)


@scenario
def tanh_gradcheck(impl, xs):
    """`torch.autograd.gradcheck(Tanh.apply, (x,))` on x = tensor(xs), as an outcome (its boolean, or what it raised),
    with xs (a graded run draws them afresh)."""
    import torch

    Tanh = impl.torch_bridge.Tanh
    x = torch.tensor(xs, dtype=torch.double, requires_grad=True)
    return {**outcome(lambda: bool(torch.autograd.gradcheck(Tanh.apply, (x,), raise_exception=False))), "x": xs}


@scenario
def tanh_through_autograd(impl, xs, gs):
    """Tanh.apply(x), its grad_fn, and the gradient PyTorch's autograd gets for x when g flows back from the output."""
    import torch

    Tanh = impl.torch_bridge.Tanh
    x = torch.tensor(xs, dtype=torch.double, requires_grad=True)
    y = Tanh.apply(x)
    grad_fn = getattr(y, "grad_fn", None)
    own = (
        isinstance(grad_fn, torch.autograd.function.BackwardCFunction)
        and getattr(grad_fn, "_forward_cls", None) is Tanh
    )
    (grad,) = torch.autograd.grad(y, x, grad_outputs=torch.tensor(gs, dtype=torch.double))
    return {"own_grad_fn": own, "grad_fn_type": type_name(grad_fn), "grad": tensor_report(impl, grad)}


@scenario
def tanh_neuron(impl, inputs, g_out):
    """o = Tanh.apply(x1·w1 + x2·w2 + b) on float64 scalar tensors; backpropagate g_out; o and each leaf's grad."""
    import torch

    tensors = {k: torch.tensor(v, dtype=torch.double, requires_grad=True) for k, v in inputs.items()}
    n = tensors["x1"] * tensors["w1"] + tensors["x2"] * tensors["w2"] + tensors["b"]
    o = impl.torch_bridge.Tanh.apply(n)
    o.backward(torch.tensor(g_out, dtype=torch.double))
    return {"o": o.item(), "grads": {k: t.grad.item() if t.grad is not None else None for k, t in tensors.items()}}


@scenario
def engine_neuron(impl, inputs, g_out):
    """The same neuron with `Value.tanh`; gradients pushed by the grader's own calls of each `_backward`."""
    leaves = {k: impl.Value(v) for k, v in inputs.items()}
    p1, p2 = leaves["x1"] * leaves["w1"], leaves["x2"] * leaves["w2"]
    s = p1 + p2
    n = s + leaves["b"]
    o = n.tanh()
    o.grad = g_out
    for node in (o, n, s, p2, p1):
        node._backward()
    return {"o": o.data, "grads": {k: v.grad for k, v in leaves.items()}}


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

NAMES = ("x1", "x2", "w1", "w2", "b")
LESSON_NEURON = dict(x1=2.0, x2=0.0, w1=-3.0, w2=1.0, b=6.8813735870195432)


def _neuron_oracle(x1, x2, w1, w2, b):
    """The grader's closed form: o = tanh(n), do/dn = 1 - o**2, then the chain rule through n."""
    o = math.tanh(x1 * w1 + x2 * w2 + b)
    dn = 1 - o**2
    return o, dict(x1=dn * w1, x2=dn * w2, w1=dn * x1, w2=dn * x2, b=dn)


def _check_neuron(learner, inputs_dict, rel):
    inputs = ", ".join(f"{k} = {v!r}" for k, v in inputs_dict.items())
    got = learner.run(neuron, inputs_dict)
    expect(got["pair"], "torch_neuron(...) returns (o, grads)", "a tuple of 2", got["type"], inputs)
    keys = got["keys"]
    expect(
        keys == sorted(NAMES),
        "the keys of grads",
        sorted(NAMES),
        keys if keys is not None else got["grads_type"],
        inputs,
    )
    want_o, want = _neuron_oracle(**inputs_dict)
    single = {}
    if not close(got["o"], want_o, rel, 1e-12) and close(got["o"], want_o, 1e-5) and _float32(got["o"]):
        single = {"note": "o is a float32 number: make the tensors float64", "cause": "float32-tensors"}
    expect_close(got["o"], want_o, "o", inputs, rel=rel, abs_tol=1e-12, **single)
    for name in NAMES:
        expect_close(got["grads"][name], want[name], f"grads['{name}'] (do/d{name})", inputs, rel=rel, abs_tol=1e-12)


def _float32(x) -> bool:
    """Whether a number is one a float32 tensor's `.item()` gives: a float that single precision holds exactly."""
    return isinstance(x, float) and math.isfinite(x) and struct.unpack("f", struct.pack("f", x))[0] == x


def _expect_tensor_close(report: dict, want: list[float], what: str, inputs: str) -> None:
    """Fail unless the scenario's tensor report is a 1-d tensor of `want`'s values (as torch.allclose, 1e-12)."""
    expect(report["type"] == "Tensor", f"type of {what}", "Tensor", report["type"], inputs)
    ok = report["shape"] == [len(want)] and all(
        abs(got - value) <= 1e-12 + 1e-12 * abs(value) for got, value in zip(report["values"], want, strict=True)
    )
    if not ok:
        shown = report["values"] if report["shape"] == [len(want)] else f"shape {report['shape']}"
        if report["dtype"] == "torch.float64":
            raise CheckFailed(what, want, shown, inputs)
        note = f"the result is {report['dtype']}, not torch.float64"
        raise CheckFailed(what, want, shown, inputs, note, cause="float32-tensors")


# ---------------------------------------------------------------------------
# 9.1 torch_neuron
# ---------------------------------------------------------------------------


@pytest.mark.task(
    "9.1",
    points=2,
    hint="Build n from the tensors as with Value, take its tanh, backpropagate from it, read each leaf's .grad.",
)
def test_torch_neuron_lesson_numbers(learner):
    """the lesson-5 neuron in PyTorch: o = 0.7071, grads x1 = -1.5, w1 = 1.0, x2 = 0.5, w2 = 0.0, b = 0.5"""
    _check_neuron(learner, LESSON_NEURON, rel=1e-9)


@pytest.mark.task(
    "9.1", points=1, hint="Return plain Python floats (.item()), not tensors: the output, and each leaf's grad."
)
def test_torch_neuron_returns_plain_floats(learner):
    """o and every gradient come back as plain Python floats"""
    got = learner.run(neuron, LESSON_NEURON)
    expect(got["pair"], "torch_neuron(...) returns (o, grads)", "a tuple of 2", got["type"])
    expect_equal(got["o_type"], "float", "type of o", note="use .item() to turn a one-number tensor into a float")
    types = got["grad_types"] or {}
    for name in NAMES:
        expect_equal(
            types.get(name, "NoneType"),
            "float",
            f"type of grads['{name}']",
            note="use .grad.item() to turn a leaf's gradient into a float",
        )


@pytest.mark.hidden
@pytest.mark.task(
    "9.1", points=2, hint="Use float64 tensors (dtype=torch.double) so the results agree to the last digits."
)
def test_torch_neuron_seeded(learner):
    """the neuron in PyTorch on seeded inputs, against the closed form"""
    rng = random.Random(9101)
    for _ in range(10):
        inputs_dict = {name: rng.uniform(-2, 2) for name in NAMES}
        _check_neuron(learner, inputs_dict, rel=1e-10)


# ---------------------------------------------------------------------------
# 9.2 Tanh autograd Function
# ---------------------------------------------------------------------------

X_PAGE = [-2.0, -0.5, 0.0, 0.8813735870195432, 3.0]


@pytest.mark.task(
    "9.2", points=1, hint="forward computes tanh of x, keeps it for backward (ctx.save_for_backward) and returns it."
)
def test_tanh_apply_forward(learner, reference):
    """Tanh.apply(x) equals torch.tanh(x)"""
    got = learner.run(tanh_apply, X_PAGE)
    expect(got["is_function"], "Tanh is a subclass of torch.autograd.Function", True, False)
    _expect_tensor_close(got["y"], reference.compute(torch_values.tanh, X_PAGE), "Tanh.apply(x)", f"x = {X_PAGE}")


@pytest.mark.task(
    "9.2",
    points=2,
    hint="backward gets t back from ctx.saved_tensors and returns tanh's local derivative times grad_output.",
)
def test_tanh_backward_direct(learner, reference):
    """Tanh.backward(ctx, g), called with a ctx filled by Tanh.forward, returns (1 - tanh(x)²)·g"""
    gs = [1.0, 2.0, -1.0, 0.5, 3.0]
    got = learner.run(tanh_direct, X_PAGE, gs)
    want = reference.compute(torch_values.tanh_backward, X_PAGE, gs)
    _expect_tensor_close(got, want, "Tanh.backward(ctx, g) after Tanh.forward(ctx, x)", f"x = {X_PAGE}, g = {gs}")


@pytest.mark.task("9.2", points=2, hint="The gradient of tanh is 1 - tanh²; multiply it by grad_output.")
def test_tanh_gradcheck(learner, reference):
    """torch.autograd.gradcheck passes on Tanh.apply with seeded float64 tensors"""
    for seed in (9201, 9202, 9203):
        xs = reference.compute(torch_values.uniform, seed, 8, -3.0, 3.0)
        got = learner.run(tanh_gradcheck, xs)
        what = "torch.autograd.gradcheck(Tanh.apply, (x,))"
        if "raised" in got:
            raise CheckFailed(what, True, f"raised {got['raised']}: {got['message']}", f"x = {xs}")
        expect(
            got["returned"] is True,
            what,
            True,
            got["returned"],
            f"x = {xs}",
            note="the gradient from your backward differs from the numerical one",
        )


@pytest.mark.task("9.2", points=1, hint="Tanh.apply(x) must go through your Function, so PyTorch calls your backward.")
def test_tanh_uses_own_backward(learner, reference):
    """the output of Tanh.apply has a grad_fn made by Tanh, and backpropagating g gives (1 - tanh²)·g"""
    xs, gs = [-1.0, 0.25, 2.0], [2.0, -1.0, 0.5]
    got = learner.run(tanh_through_autograd, xs, gs)
    expect(
        got["own_grad_fn"],
        "type of Tanh.apply(x).grad_fn",
        "TanhBackward (a BackwardCFunction of Tanh)",
        got["grad_fn_type"],
        f"x = {xs}",
    )
    want = reference.compute(torch_values.tanh_backward, xs, gs)
    _expect_tensor_close(got["grad"], want, "x.grad after Tanh.apply(x).backward(g)", f"x = {xs}, g = {gs}")


@pytest.mark.hidden
@pytest.mark.task("9.2", points=2, hint="Tanh.apply must agree with Value.tanh of our engine, value and gradient.")
def test_tanh_matches_engine_seeded(learner, reference):
    """neurons with Tanh.apply on seeded inputs match the reference engine's Value.tanh"""
    rng = random.Random(9204)
    for _ in range(10):
        vals = {name: rng.uniform(-2, 2) for name in NAMES}
        g_out = rng.uniform(-3, 3)
        inputs = (
            ", ".join(f"{k} = {v!r}" for k, v in vals.items())
            + f"; o = tanh(x1*w1 + x2*w2 + b), backpropagating {g_out!r} from o"
        )
        want = reference.run(engine_neuron, vals, g_out)
        got = learner.run(tanh_neuron, vals, g_out)
        expect_close(got["o"], want["o"], "Tanh.apply(n) vs Value.tanh", inputs, rel=1e-12, abs_tol=1e-15)
        for k in NAMES:
            expect_close(got["grads"][k], want["grads"][k], f"{k}.grad vs the engine", inputs, rel=1e-10, abs_tol=1e-15)
