"""Lesson 13 · Bonus challenges (tasks 13.1 to 13.3): sigmoid and log, softmax with cross-entropy, momentum.

Bonus tasks: the scorecard and Gradescope count their points apart, never in
the full marks. The learner's further.py runs in the worker over the reference
engine; in a check of 13.2 its `log` is the reference's, in a check of 13.3
the other functions are. Gradients come from the grader's `sweep`, never the
learner's `backward()`. Expected values are hand values, finite differences on
plain floats and PyTorch in float64 (`torch.sigmoid`, `torch.log`,
`torch.softmax`, `F.cross_entropy`, the update of `torch.optim.SGD`).

Momentum's convention: the learner keeps v ← beta·v - lr·grad and moves
p ← p + v; `torch.optim.SGD(momentum=beta)` (dampening 0, no Nesterov) keeps
b ← beta·b + grad and moves p ← p - lr·b. With a constant lr, b = v / -lr at
every step, so the parameters follow the same path; the checks compare only
parameters, so either bookkeeping passes.
"""

import math
import random

import pytest

from autograder.kit import torch_values
from autograder.kit.checks import expect, expect_close, expect_equal, expect_raised, finite_difference
from autograder.worker.scenario import data_of, outcome, scenario, sweep, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def unary(impl, name, x, seed=None, grad_before=0.0):
    """`name(Value(x))` (sigmoid or log): what came back; with `seed`, v.grad after the grader's sweep from it."""
    v = impl.Value(x)
    out = getattr(impl.further, name)(v)
    prev = getattr(out, "_prev", None)
    report = {
        "type": type_name(out),
        "is_value": isinstance(out, impl.Value),
        "data": data_of(out),
        "op": getattr(out, "_op", None),
        "children": sorted(("v" if c is v else type_name(c)) for c in prev) if isinstance(prev, set) else None,
        "v_after_forward": [v.data, v.grad],
    }
    if seed is not None and report["is_value"]:
        v.grad = grad_before
        sweep(out, seed=seed)
        report["grad"] = v.grad
    return report


@scenario
def unaries(impl, cases):
    """Several `unary` reports in one call; each case is [name, x, seed, grad_before]."""
    return [unary(impl, *case) for case in cases]


@scenario
def log_refusal(impl, x):
    """`log(Value(x))` as an outcome, with x (a graded run draws it afresh)."""
    return {**outcome(lambda: data_of(impl.further.log(impl.Value(x)))), "x": x}


@scenario
def composite(impl, text, values):
    """`text` over Values named by `values`, with `sigmoid` and `log`: its data and, after the sweep, the grads."""
    leaves = {name: impl.Value(x) for name, x in values.items()}
    out = eval(text, {"__builtins__": {}}, {"sigmoid": impl.further.sigmoid, "log": impl.further.log, **leaves})
    if not isinstance(out, impl.Value):
        return {"type": type_name(out), "is_value": False, "data": data_of(out)}
    sweep(out)
    return {"type": "Value", "is_value": True, "data": out.data, "grads": {n: v.grad for n, v in leaves.items()}}


@scenario
def probabilities(impl, logits, weights):
    """softmax over Values: the probabilities, and the logits' grads after a sweep from Σ weights[k]·p[k]."""
    ss = [impl.Value(s) for s in logits]
    ps = impl.further.softmax(ss)
    listed = isinstance(ps, (list, tuple))
    report = {
        "type": type_name(ps),
        "length": len(ps) if listed else None,
        "all_values": listed and all(isinstance(p, impl.Value) for p in ps),
        "data": [data_of(p) for p in ps] if listed else data_of(ps),
    }
    if report["all_values"] and len(ps) == len(weights):
        sweep(sum((p * w for p, w in zip(ps, weights, strict=True)), impl.Value(0.0)))
        report["grads"] = [s.grad for s in ss]
    return report


@scenario
def loss(impl, logits, target):
    """cross_entropy over Values: the loss and the logits' grads after the grader's sweep from it."""
    ss = [impl.Value(s) for s in logits]
    out = impl.further.cross_entropy(ss, target)
    report = {"type": type_name(out), "is_value": isinstance(out, impl.Value), "data": data_of(out)}
    if report["is_value"]:
        sweep(out)
        report["grads"] = [s.grad for s in ss]
    return report


@scenario
def losses(impl, cases):
    return [loss(impl, logits, target) for logits, target in cases]


@scenario
def momentum_steps(impl, datas, grads_per_step, lr, beta):
    """Momentum over Values holding `datas`: the grads set before each step; the data after each step."""
    ps = [impl.Value(d) for d in datas]
    opt = impl.further.Momentum(ps, lr=lr, beta=beta)
    after = []
    for grads in grads_per_step:
        for p, g in zip(ps, grads, strict=True):
            p.grad = g
        opt.step()
        after.append([p.data for p in ps])
    return {"after": after, "grads": [p.grad for p in ps]}


@scenario
def momentum_zero_grad(impl, datas, grads, lr, beta):
    """One step with `grads`, zero_grad(), then one more step: the grads after zero_grad and the data after each."""
    ps = [impl.Value(d) for d in datas]
    for p, g in zip(ps, grads, strict=True):
        p.grad = g
    opt = impl.further.Momentum(ps, lr=lr, beta=beta)
    opt.step()
    first = [p.data for p in ps]
    opt.zero_grad()
    zeroed = [p.grad for p in ps]
    opt.step()
    return {"first": first, "zeroed": zeroed, "second": [p.data for p in ps]}


@scenario
def momentum_descent(impl, start, centre, lr, beta, steps):
    """Minimise Σ (p - c)² with Momentum: zero_grad, the grader's sweep, step; the loss of each step."""
    ps = [impl.Value(x) for x in start]
    opt = impl.further.Momentum(ps, lr=lr, beta=beta)
    history = []
    for _ in range(steps):
        total = sum(((p - c) ** 2 for p, c in zip(ps, centre, strict=True)), impl.Value(0.0))
        opt.zero_grad()
        sweep(total)
        opt.step()
        history.append(total.data)
    return {"losses": history, "data": [p.data for p in ps]}


@scenario
def momentum_training(impl, seed, steps, lr, beta):
    """Lesson 11's MLP(3, [4, 4, 1]) on its four examples, trained with Momentum: the losses and the parameters."""
    random.seed(seed)
    model = impl.nn.MLP(3, [4, 4, 1])
    opt = impl.further.Momentum(model.parameters(), lr=lr, beta=beta)
    history = []
    for _ in range(steps):
        total = impl.train.squared_error_loss([model(x) for x in impl.train.XS], impl.train.YS)
        opt.zero_grad()
        sweep(total)
        opt.step()
        history.append(total.data)
    return {"losses": history, "params": [p.data for p in model.parameters()]}


# --- the trusted side's oracles -------------------------------------------------------------------------------------


def _sigmoid(x):
    return 1 / (1 + math.exp(-x)) if x >= 0 else math.exp(x) / (1 + math.exp(x))


def _expect_value(report, what, inputs):
    expect(
        report["is_value"],
        f"type of {what}",
        "Value",
        report["type"],
        inputs,
        note="the gradient flows back only through Values",
    )


def _expect_close_lists(got, want, what, inputs, rel=1e-9, abs_tol=1e-12):
    expect(isinstance(got, list) and len(got) == len(want), f"{what} (a list of {len(want)})", want, got, inputs)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        expect_close(g, w, f"{what}[{k}]", inputs, rel=rel, abs_tol=abs_tol)


def _check_probabilities(learner, reference, logits, weights, inputs):
    got = learner.run(probabilities, logits, weights)
    expect(got["all_values"], "type of softmax(logits)", f"a list of {len(logits)} Values", got["type"], inputs)
    expect_equal(got["length"], len(logits), "len(softmax(logits))", inputs)
    want, grads = reference.compute(torch_values.softmax, logits, weights)
    _expect_close_lists(got["data"], want, "softmax(logits) vs torch.softmax (float64)", inputs)
    shown = f"{inputs}; sweep from Σ w[k]·p[k], w = {weights}"
    _expect_close_lists(got["grads"], grads, "logits' grads vs PyTorch float64", shown, rel=1e-7, abs_tol=1e-10)


def _check_loss(reference, report, logits, target, inputs, rel=1e-9):
    _expect_value(report, f"cross_entropy(logits, {target})", inputs)
    want, grads = reference.compute(torch_values.cross_entropy, logits, target)
    expect_close(report["data"], want, "cross_entropy vs F.cross_entropy (float64)", inputs, rel=rel, abs_tol=1e-10)
    _expect_close_lists(
        report["grads"], grads, "logits' grads vs PyTorch float64 (p - one_hot)", inputs, rel=1e-7, abs_tol=1e-10
    )


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

# 13.1 sigmoid and log


@pytest.mark.task("13.1", points=1, hint="Forward: a new Value(σ(v.data), (v,), 'sigmoid') with σ(x) = 1 / (1 + e^-x).")
def test_sigmoid_forward(learner):
    """sigmoid(v) gives a Value with σ(v), child v and op 'sigmoid'"""
    zero, two = learner.run(unaries, [["sigmoid", 0.0], ["sigmoid", 2.0]])
    _expect_value(zero, "sigmoid(v)", "v = Value(0.0)")
    expect_close(zero["data"], 0.5, "sigmoid(Value(0.0)).data")
    expect_close(two["data"], 1 / (1 + math.exp(-2.0)), "sigmoid(Value(2.0)).data", rel=1e-12)
    expect_equal(zero["op"], "sigmoid", "sigmoid(v)._op", "v = Value(0.0)")
    expect_equal(zero["children"], ["v"], "sigmoid(v)._prev", "v = Value(0.0)", note="a set holding v and nothing else")
    expect_equal(zero["v_after_forward"], [0.0, 0.0], "(v.data, v.grad) after sigmoid(v) (unchanged)")


@pytest.mark.task("13.1", points=2, hint="σ'(x) = σ(x)·(1 - σ(x)); add it times out.grad to v.grad (+=).")
def test_sigmoid_backward(learner):
    """out._backward() sends σ(v)(1 - σ(v)) times out.grad to v, and adds to what v.grad held"""
    rows = [(0.0, 2.0, 0.0), (2.0, 1.0, 0.0), (-1.0, 3.0, 1.0)]
    got = learner.run(unaries, [["sigmoid", x, g, before] for x, g, before in rows])
    for (x, g, before), report in zip(rows, got, strict=True):
        inputs = f"v = Value({x}), out = sigmoid(v), out.grad = {g}, v.grad was {before}"
        _expect_value(report, "sigmoid(v)", inputs)
        s = _sigmoid(x)
        expect_close(report["grad"], before + g * s * (1 - s), "v.grad after out._backward()", inputs, rel=1e-9)


@pytest.mark.task("13.1", points=1, hint="For a very negative x, e^-x overflows: use the equal form e^x / (1 + e^x).")
def test_sigmoid_large_inputs(learner):
    """sigmoid(±1000) gives 1 and 0 with a zero gradient, without overflowing"""
    big, small = learner.run(unaries, [["sigmoid", 1000.0, 1.0], ["sigmoid", -1000.0, 1.0]])
    for x, report, want in ((1000.0, big, 1.0), (-1000.0, small, 0.0)):
        inputs = f"v = Value({x}), out = sigmoid(v), out.grad = 1.0"
        _expect_value(report, "sigmoid(v)", inputs)
        expect_close(report["data"], want, "sigmoid(v).data", inputs, rel=0, abs_tol=1e-300)
        expect_close(report["grad"], 0.0, "v.grad after out._backward()", inputs, rel=0, abs_tol=1e-300)


@pytest.mark.task("13.1", points=1, hint="Forward: a new Value(math.log(v.data), (v,), 'log').")
def test_log_forward(learner):
    """log(v) gives a Value with the natural log, child v and op 'log'"""
    e, one, small = learner.run(unaries, [["log", math.e], ["log", 1.0], ["log", 0.25]])
    _expect_value(e, "log(v)", "v = Value(math.e)")
    expect_close(e["data"], 1.0, "log(Value(math.e)).data", rel=1e-12)
    expect_close(one["data"], 0.0, "log(Value(1.0)).data")
    expect_close(small["data"], math.log(0.25), "log(Value(0.25)).data", rel=1e-12)
    expect_equal(e["op"], "log", "log(v)._op", "v = Value(math.e)")
    expect_equal(e["children"], ["v"], "log(v)._prev", "v = Value(math.e)", note="a set holding v and nothing else")


@pytest.mark.task("13.1", points=2, hint="The derivative of log x is 1/x: add out.grad / v.data to v.grad (+=).")
def test_log_backward(learner):
    """out._backward() sends out.grad / v to v, and adds to what v.grad held"""
    rows = [(2.0, 1.0, 0.0), (0.5, 3.0, 0.0), (4.0, 2.0, 1.0)]
    got = learner.run(unaries, [["log", x, g, before] for x, g, before in rows])
    for (x, g, before), report in zip(rows, got, strict=True):
        inputs = f"v = Value({x}), out = log(v), out.grad = {g}, v.grad was {before}"
        _expect_value(report, "log(v)", inputs)
        expect_close(report["grad"], before + g / x, "v.grad after out._backward()", inputs, rel=1e-9)


@pytest.mark.task("13.1", points=1, hint="Check v.data <= 0 first and raise ValueError with a message that says why.")
def test_log_refuses_non_positive(learner):
    """log of 0 or of a negative number raises ValueError"""
    for x in (0.0, -1.5):
        expect_raised(learner.run(log_refusal, x), "ValueError", "log(v)", f"v = Value({x})")


@pytest.mark.hidden
@pytest.mark.task("13.1", points=2, hint="sigmoid and log and their gradients must hold for any input in range.")
def test_sigmoid_and_log_seeded(learner, reference):
    """sigmoid and log on seeded inputs, against PyTorch float64 and finite differences"""
    rng = random.Random(1301)
    cases = [["sigmoid", rng.uniform(-30, 30), rng.uniform(-2, 2)] for _ in range(15)]
    cases += [["log", rng.uniform(1e-3, 50), rng.uniform(-2, 2)] for _ in range(15)]
    for (name, x, g), report in zip(cases, learner.run(unaries, cases), strict=True):
        inputs = f"v = Value({x!r}), out = {name}(v), out.grad = {g!r}"
        _expect_value(report, f"{name}(v)", inputs)
        value, slope = reference.compute(torch_values.unary, name, x)
        expect_close(
            report["data"], value, f"{name}(v).data vs torch.{name} (float64)", inputs, rel=1e-12, abs_tol=1e-15
        )
        expect_close(report["grad"], g * slope, "v.grad vs PyTorch float64", inputs, rel=1e-9, abs_tol=1e-15)
        fn = _sigmoid if name == "sigmoid" else math.log
        expect_close(
            report["grad"], g * finite_difference(fn, x), "v.grad vs finite differences", inputs, rel=1e-5, abs_tol=1e-9
        )


@pytest.mark.hidden
@pytest.mark.task("13.1", points=1, hint="Your sigmoid and log must work inside a larger graph.")
def test_sigmoid_and_log_in_a_graph(learner, reference):
    """expressions mixing sigmoid, log and the engine's operations, against PyTorch float64"""
    rng = random.Random(1302)
    texts = ["log(sigmoid(a * b) + b * b)", "sigmoid(log(b * b + 1) - a) * a", "log(sigmoid(a) + sigmoid(b))"]
    for _ in range(4):
        values = {"a": rng.uniform(-4, 4), "b": rng.uniform(-4, 4)}
        inputs = f"a = Value({values['a']!r}), b = Value({values['b']!r})"
        for text in texts:
            got = learner.run(composite, text, values)
            _expect_value(got, text, inputs)
            want, grads = reference.compute(torch_values.composite, text, values)
            expect_close(got["data"], want, f"({text}).data vs PyTorch float64", inputs, rel=1e-9)
            for name in values:
                expect_close(
                    got["grads"][name],
                    grads[name],
                    f"{name}.grad for {text} vs PyTorch float64",
                    inputs,
                    rel=1e-7,
                    abs_tol=1e-10,
                )


# 13.2 softmax and cross_entropy


@pytest.mark.task(
    "13.2", points=2, hint="One Value per logit: e^sₖ divided by the sum of all e^sⱼ, built from Value ops."
)
def test_softmax_values(learner):
    """softmax([1, 2, 3]) gives three Values, e^k / (e + e² + e³), summing to 1"""
    got = learner.run(probabilities, [1.0, 2.0, 3.0], [])
    inputs = "logits = [Value(1.0), Value(2.0), Value(3.0)]"
    expect(got["all_values"], "type of softmax(logits)", "a list of 3 Values", got["type"], inputs)
    expect_equal(got["length"], 3, "len(softmax(logits))", inputs)
    total = sum(math.exp(k) for k in (1, 2, 3))
    _expect_close_lists(got["data"], [math.exp(k) / total for k in (1, 2, 3)], "softmax(logits)", inputs)
    expect_close(sum(got["data"]), 1.0, "sum of softmax(logits)", inputs, rel=1e-12)


@pytest.mark.task(
    "13.2", points=2, hint="Build softmax from -, exp, + and / of Values so the gradient reaches every logit."
)
def test_softmax_gradient(learner, reference):
    """gradients flow from the probabilities back to every logit, as PyTorch's"""
    _check_probabilities(
        learner, reference, [1.0, 2.0, 3.0], [1.0, -2.0, 0.5], "logits = [Value(1.0), Value(2.0), Value(3.0)]"
    )
    _check_probabilities(learner, reference, [0.5, -1.0], [3.0, 1.0], "logits = [Value(0.5), Value(-1.0)]")


@pytest.mark.task(
    "13.2", points=2, hint="The loss is -log of the right class's probability; its gradient is p - one_hot."
)
def test_cross_entropy(learner, reference):
    """cross_entropy gives -log p[target] and the gradient p - one_hot, as F.cross_entropy"""
    cases = [[[2.0, 1.0, 0.1], 0], [[2.0, 1.0, 0.1], 2], [[0.0, 0.0], 1]]
    for (logits, target), report in zip(cases, learner.run(losses, cases), strict=True):
        inputs = f"logits = {logits} (as Values), target = {target}"
        _check_loss(reference, report, logits, target, inputs)
        if logits == [0.0, 0.0]:
            expect_close(
                report["data"], math.log(2), "cross_entropy (two equal logits: p = 1/2, loss log 2)", inputs, rel=1e-12
            )


@pytest.mark.task(
    "13.2", points=2, hint="Subtract the largest logit's data first; never take the log of a probability."
)
def test_large_logits_are_stable(learner, reference):
    """logits like 1000 neither overflow exp nor take the log of 0"""
    logits = [1000.0, 999.0, 0.0]
    _check_probabilities(learner, reference, logits, [1.0, 2.0, 3.0], f"logits = {logits} (as Values)")
    cases = [[[1000.0, 0.0, -1000.0], 2], [[1000.0, 999.0, 0.0], 1]]
    for (logits, target), report in zip(cases, learner.run(losses, cases), strict=True):
        inputs = f"logits = {logits} (as Values), target = {target}"
        _check_loss(reference, report, logits, target, inputs)


@pytest.mark.hidden
@pytest.mark.task("13.2", points=2, hint="softmax and cross_entropy must hold for any number of logits and any target.")
def test_softmax_and_cross_entropy_seeded(learner, reference):
    """seeded logits of 2 to 6 classes, against PyTorch float64"""
    rng = random.Random(1303)
    cases = []
    for _ in range(10):
        logits = [rng.uniform(-20, 20) for _ in range(rng.randint(2, 6))]
        cases.append([logits, rng.randrange(len(logits))])
    for (logits, target), report in zip(cases, learner.run(losses, cases), strict=True):
        _check_loss(reference, report, logits, target, f"logits = {logits} (as Values), target = {target}")
    for logits, _ in cases[:4]:
        weights = [rng.uniform(-2, 2) for _ in logits]
        _check_probabilities(learner, reference, logits, weights, f"logits = {logits} (as Values)")


@pytest.mark.hidden
@pytest.mark.task("13.2", points=1, hint="Large logits of any sign must be stable: subtract the largest one first.")
def test_large_logits_seeded(learner, reference):
    """seeded logits in the thousands, against PyTorch float64"""
    rng = random.Random(1304)
    cases = []
    for _ in range(8):
        logits = [rng.uniform(-3000, 3000) for _ in range(rng.randint(2, 5))]
        cases.append([logits, rng.randrange(len(logits))])
    for (logits, target), report in zip(cases, learner.run(losses, cases), strict=True):
        _check_loss(reference, report, logits, target, f"logits = {logits} (as Values), target = {target}", rel=1e-12)


# 13.3 Momentum


@pytest.mark.task("13.3", points=1, hint="Velocities start at 0.0, so the first step is plain gradient descent.")
def test_first_step_is_gradient_descent(learner):
    """the first step moves each parameter by -lr·grad"""
    got = learner.run(momentum_steps, [1.0, -2.0], [[2.0, -0.5]], 0.1, 0.9)
    inputs = "p = [Value(1.0), Value(-2.0)], grads [2.0, -0.5]; Momentum(p, lr=0.1, beta=0.9).step()"
    _expect_close_lists(got["after"][0], [0.8, -1.95], "p.data after one step", inputs)
    expect_equal(
        got["grads"],
        [2.0, -0.5],
        "p.grad after the step (unchanged)",
        inputs,
        note="step() moves the data only; zero_grad() clears the grads",
    )


@pytest.mark.task(
    "13.3", points=2, hint="v = beta·v - lr·grad, then p.data += v: one velocity per parameter, kept between steps."
)
def test_steps_follow_pytorch_sgd_with_momentum(learner, reference):
    """four steps with given grads move three parameters as torch.optim.SGD(momentum=0.9)"""
    datas, grads = [1.0, -2.0, 0.5], [[2.0, -0.5, 1.0], [1.0, 0.0, -1.0], [-3.0, 0.5, 0.0], [0.0, 0.0, 0.0]]
    got = learner.run(momentum_steps, datas, grads, 0.1, 0.9)
    want = reference.compute(torch_values.sgd_steps, datas, grads, 0.1, 0.9)
    for k, (g, w) in enumerate(zip(got["after"], want, strict=True)):
        inputs = f"p = {datas} (as Values), lr = 0.1, beta = 0.9, grads per step: {grads[: k + 1]}"
        _expect_close_lists(g, w, f"p.data after step {k + 1} vs torch.optim.SGD(momentum=0.9)", inputs)


@pytest.mark.task(
    "13.3", points=1, hint="zero_grad sets every parameter's grad to 0.0 and leaves the velocities alone."
)
def test_zero_grad_keeps_the_velocities(learner):
    """zero_grad() clears the grads; a step with zero grads still moves by beta·v"""
    got = learner.run(momentum_zero_grad, [1.0, 2.0], [1.0, -2.0], 0.5, 0.8)
    inputs = "p = [Value(1.0), Value(2.0)], grads [1.0, -2.0], lr = 0.5, beta = 0.8: step(), zero_grad(), step()"
    expect_equal(got["zeroed"], [0.0, 0.0], "p.grad after zero_grad()", inputs)
    _expect_close_lists(got["first"], [0.5, 3.0], "p.data after the first step", inputs)
    _expect_close_lists(
        got["second"], [0.1, 3.8], "p.data after the second step (v = 0.8·v)", inputs, rel=1e-9, abs_tol=1e-12
    )


@pytest.mark.task(
    "13.3", points=2, hint="The loop is zero_grad, backward, step: each step must start from zeroed grads."
)
def test_descent_on_a_bowl(learner, reference):
    """minimising (p - 3)² + (q + 1)² for 25 steps follows torch.optim.SGD(momentum=0.9)"""
    start, centre = [0.0, 0.0], [3.0, -1.0]
    got = learner.run(momentum_descent, start, centre, 0.05, 0.9, 25)
    history, final = reference.compute(torch_values.sgd_descent, start, centre, 0.05, 0.9, 25)
    inputs = "p, q = Value(0.0), Value(0.0); loss = (p - 3)**2 + (q + 1)**2; lr = 0.05, beta = 0.9; 25 steps"
    _expect_close_lists(got["losses"], history, "loss at each step vs PyTorch", inputs, rel=1e-9, abs_tol=1e-12)
    _expect_close_lists(got["data"], final, "(p.data, q.data) after 25 steps vs PyTorch", inputs)


@pytest.mark.hidden
@pytest.mark.task("13.3", points=2, hint="Momentum must follow SGD with momentum for any lr, beta and grads.")
def test_momentum_seeded(learner, reference):
    """seeded parameters, grads, lr and beta, against torch.optim.SGD(momentum=beta)"""
    rng = random.Random(1305)
    for _ in range(4):
        n, steps = rng.randint(1, 5), rng.randint(2, 8)
        lr, beta = rng.uniform(0.001, 0.5), rng.uniform(0.0, 0.99)
        datas = [rng.uniform(-5, 5) for _ in range(n)]
        grads = [[rng.uniform(-3, 3) for _ in range(n)] for _ in range(steps)]
        got = learner.run(momentum_steps, datas, grads, lr, beta)
        want = reference.compute(torch_values.sgd_steps, datas, grads, lr, beta)
        inputs = f"p = {datas} (as Values), lr = {lr!r}, beta = {beta!r}, grads per step: {grads}"
        for k, (g, w) in enumerate(zip(got["after"], want, strict=True)):
            _expect_close_lists(g, w, f"p.data after step {k + 1} vs PyTorch", inputs, rel=1e-9, abs_tol=1e-12)


@pytest.mark.hidden
@pytest.mark.task("13.3", points=1, hint="Momentum must train a whole network: zero_grad, backward, step, every step.")
def test_momentum_trains_lesson_11_network(learner, reference):
    """lesson 11's network trained 15 steps with your Momentum, against the reference's"""
    got = learner.run(momentum_training, 1337, 15, 0.05, 0.9)
    want = reference.run(momentum_training, 1337, 15, 0.05, 0.9)
    inputs = "MLP(3, [4, 4, 1]) from seed 1337, lesson 11's examples, Momentum(lr=0.05, beta=0.9), 15 steps"
    _expect_close_lists(got["losses"], want["losses"], "loss at each step", inputs, rel=1e-9, abs_tol=1e-12)
    _expect_close_lists(got["params"], want["params"], "parameters after training", inputs, rel=1e-9, abs_tol=1e-12)
