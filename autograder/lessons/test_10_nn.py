"""Lesson 10 · A neural network library (tasks 10.1 to 10.4).

The learner's nn.py runs in the worker over the reference engine (its `from .engine import Value` gives the
reference `Value`), and the classes of the other tasks are the reference's: `Layer` is graded over the reference
`Neuron`, `MLP` over the reference `Layer`. No check of 10.2 to 10.4 calls `zero_grad`, which the learner's
classes inherit from the learner's `Module` (task 10.1). Scenarios seed `random` themselves with a seed the
judgement passes; the expected weights are that seed's draws, made here, and the expected outputs and gradients
are hand computations or the same scenario run over the reference (`reference.run`).

Longer than the grader's other files on purpose: a lesson's checks live in one file, each scenario next to the
judgements that read it, as every lesson's do.
"""

import math
import random

import pytest

from autograder.kit.checks import CheckFailed, expect, expect_close, expect_equal, expect_list
from autograder.worker.scenario import data_of, grad_of, scenario, sweep, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------
# (`data_of`, `grad_of`, `sweep`, `type_name`, `math` and `random` are imported above so that `reference.run` can call
# these functions here too; in the worker they come from the scenario namespace.)


@scenario
def identities(impl, actual, own):
    """Where each entry of `actual` sits in `own`, by identity (None: an object `own` does not hold)."""
    if not isinstance(actual, (list, tuple)):
        return {"type": type_name(actual), "index": None, "own": len(own)}
    index = [next((j for j, q in enumerate(own) if q is p), None) for p in actual]
    return {"type": type_name(actual), "index": index, "own": len(own)}


@scenario
def set_neuron(impl, neuron, ws, b):
    for wi, value in zip(neuron.w, ws, strict=False):
        wi.data = value
    neuron.b.data = b


@scenario
def output_report(impl, out):
    """What a forward pass returned: one Value, or a list of them."""
    items = out if isinstance(out, list) else [out]
    return {
        "type": type_name(out),
        "is_value": isinstance(out, impl.Value),
        "is_list": isinstance(out, list),
        "all_values": all(isinstance(o, impl.Value) for o in items),
        "data": [data_of(o) for o in items],
    }


@scenario
def module_parameters(impl, times):
    """`Module().parameters()`, asked `times` times of one bare Module."""
    module = impl.nn.Module()
    asked = [module.parameters() for _ in range(times)]
    return {
        "type": type_name(asked[0]),
        "value": asked[0],
        "each": [type_name(a) for a in asked],
        "lengths": [len(a) if isinstance(a, list) else None for a in asked],
    }


@scenario
def zero_grad_boxes(impl, cases, outsider_grad=None, bare_too=False):
    """For each case, a Module subclass listing Values (data, grad) in parameters(); report them after zero_grad()."""

    class Box(impl.nn.Module):
        def __init__(self, values):
            self.values = values

        def parameters(self):
            return list(self.values)

    answers = []
    for case in cases:
        values = [impl.Value(x) for x in case["data"]]
        for v, g in zip(values, case["grads"], strict=True):
            v.grad = g
        outsider = impl.Value(1.0)
        outsider.grad = outsider_grad
        Box(values).zero_grad()
        answers.append({"grads": [v.grad for v in values], "data": [v.data for v in values], "outsider": outsider.grad})
    if bare_too:
        impl.nn.Module().zero_grad()  # a bare Module: nothing to reset, and no error
    return answers


@scenario
def neuron_made(impl, seed, nin):
    random.seed(seed)
    n = impl.nn.Neuron(nin)
    return {
        "w": [data_of(wi) for wi in n.w],
        "b": data_of(n.b),
        "types": [type_name(wi) for wi in n.w] + [type_name(n.b)],
        "all_values": all(isinstance(wi, impl.Value) for wi in n.w) and isinstance(n.b, impl.Value),
    }


@scenario
def neuron_parameters(impl, seed, nin):
    random.seed(seed)
    n = impl.nn.Neuron(nin)
    params = n.parameters()
    return {"len": len(params), "identity": identities(impl, params, n.w + [n.b])}


@scenario
def neuron_outputs(impl, nin, kwargs, ws, b, xs, as_values=False):
    """A Neuron(nin, **kwargs) with weights ws and bias b, called on each x of xs."""
    n = impl.nn.Neuron(nin, **kwargs)
    set_neuron(impl, n, ws, b)
    return [output_report(impl, n([impl.Value(v) for v in x] if as_values else x)) for x in xs]


@scenario
def neuron_grads(impl, ws, b, x):
    """A tanh Neuron with weights ws and bias b, called on x: the grads of parameters() after a sweep from n(x)."""
    n = impl.nn.Neuron(len(ws))
    set_neuron(impl, n, ws, b)
    out = n(x)
    swept = isinstance(out, impl.Value)
    if swept:
        sweep(out)
    return {"type": type_name(out), "swept": swept, "grads": [grad_of(p) for p in n.parameters()]}


@scenario
def neuron_trials(impl, trials):
    """Per trial: random.seed(seed), Neuron(nin, **kwargs), its parameters' data, n(x), and the grads of a sweep."""
    answers = []
    for t in trials:
        random.seed(t["seed"])
        n = impl.nn.Neuron(t["nin"], **t["kwargs"])
        params = n.parameters()
        datas = [data_of(p) for p in params]
        out = n(t["x"])
        swept = isinstance(out, impl.Value)
        if swept:
            sweep(out)
        answers.append(
            {
                "params": datas,
                "out": data_of(out),
                "type": type_name(out),
                "swept": swept,
                "grads": [grad_of(p) for p in n.parameters()],
            }
        )
    return answers


@scenario
def layer_structure(impl, nin, nout):
    layer = impl.nn.Layer(nin, nout)
    own = [p for n in layer.neurons for p in n.parameters()]
    params = layer.parameters()
    return {
        "neurons": len(layer.neurons),
        "inputs": [len(n.w) for n in layer.neurons],
        "len": len(params),
        "identity": identities(impl, params, own),
    }


@scenario
def layer_outputs(impl, nin, nout, kwargs, weights, x):
    """A Layer(nin, nout, **kwargs) whose neurons get the (ws, b) of `weights` in turn, called on x."""
    layer = impl.nn.Layer(nin, nout, **kwargs)
    for n, (ws, b) in zip(layer.neurons, weights, strict=False):
        set_neuron(impl, n, ws, b)
    return output_report(impl, layer(x))


@scenario
def module_trials(impl, kind, trials):
    """Per trial: random.seed(seed), nn.<kind>(*args, **kwargs), called on x, a sweep from the sum of its outputs."""
    answers = []
    for t in trials:
        random.seed(t["seed"])
        m = getattr(impl.nn, kind)(*t["args"], **t["kwargs"])
        params = m.parameters()
        datas = [data_of(p) for p in params]
        out = m(t["x"])
        outs = out if isinstance(out, list) else [out]
        sweep(sum(outs, impl.Value(0.0)))
        answers.append(
            {
                "params": datas,
                "is_list": isinstance(out, list),
                "outs": [data_of(o) for o in outs],
                "grads": [grad_of(p) for p in params],
            }
        )
    return answers


@scenario
def mlp_counts(impl, shapes):
    return [len(impl.nn.MLP(nin, nouts).parameters()) for nin, nouts in shapes]


@scenario
def mlp_structure(impl, nin, nouts):
    mlp = impl.nn.MLP(nin, nouts)
    return {
        "layers": len(mlp.layers),
        "neurons": [len(layer.neurons) for layer in mlp.layers],
        "inputs": [len(layer.neurons[0].w) for layer in mlp.layers],
    }


@scenario
def mlp_outputs(impl, nin, nouts, kwargs, weights, xs):
    """An MLP(nin, nouts, **kwargs) whose weights are set layer by layer, neuron by neuron, called on each x."""
    mlp = impl.nn.MLP(nin, nouts, **kwargs)
    for layer, neurons in zip(mlp.layers, weights, strict=False):
        for n, (ws, b) in zip(layer.neurons, neurons, strict=False):
            set_neuron(impl, n, ws, b)
    return [output_report(impl, mlp(x)) for x in xs]


@scenario
def mlp_wiring(impl, seed, nin, nouts, x):
    """random.seed(seed), MLP(nin, nouts): how parameters() matches the layers' own, and the grads of a sweep."""
    random.seed(seed)
    mlp = impl.nn.MLP(nin, nouts)
    params = mlp.parameters()
    own = [p for layer in mlp.layers for n in layer.neurons for p in n.parameters()]
    identity = identities(impl, params, own)
    sweep(mlp(x))
    return {"identity": identity, "grads": [grad_of(p) for p in params]}


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------


def _draws(seed, n):
    """The first n numbers random.uniform(-1, 1) gives after random.seed(seed)."""
    rng = random.Random(seed)
    return [rng.uniform(-1, 1) for _ in range(n)]


def _act(z, act="tanh", nonlin=True):
    if not nonlin:
        return z
    return math.tanh(z) if act == "tanh" else max(0.0, z)


def _dact(z, act="tanh", nonlin=True):
    if not nonlin:
        return 1.0
    return 1.0 - math.tanh(z) ** 2 if act == "tanh" else float(z > 0)


def _count(nin, nouts):
    sizes = [nin] + list(nouts)
    return sum((sizes[i] + 1) * sizes[i + 1] for i in range(len(nouts)))


def _not_the_same(report):
    """None when an `identities` report lists exactly the objects of `own`, in order; otherwise what differs."""
    index, n = report["index"], report["own"]
    if index is None:
        return f"a {report['type']}, not a list"
    if len(index) != n:
        return f"{len(index)} Values instead of {n}"
    wrong = [i for i, j in enumerate(index) if j != i]
    if not wrong:
        return None
    kind = "copies or other Values" if all(j is None for j in index) else "other objects or out of order"
    return f"{len(wrong)} of {n} entries are {kind} (first at index {wrong[0]})"


def _expect_grads(grads, expected, what, inputs=None):
    """The grad of every parameter against the expected list; `what` names parameters()[{i}] with a {i}."""
    grads = expect_list(grads, len(expected), what.format(i="...") + " for every parameter", inputs)
    for i, (g, e) in enumerate(zip(grads, expected, strict=True)):
        expect_close(g, e, what.format(i=i), inputs, rel=1e-9, abs_tol=1e-12)


def _compare_with_twin(got, ref, what, inputs):
    """Outputs and parameter grads of the learner's module equal those of the same scenario over the reference."""
    expect_equal(got["is_list"], ref["is_list"], f"isinstance({what}(x), list)", inputs)
    expect_equal(len(got["outs"]), len(ref["outs"]), f"number of outputs of {what}(x)", inputs)
    for i, (o, r) in enumerate(zip(got["outs"], ref["outs"], strict=True)):
        expect_close(o, r, f"{what}(x)[{i}].data", inputs, rel=1e-9)
    _expect_grads(
        got["grads"],
        ref["grads"],
        f"{what}.parameters()[{{i}}].grad after backward from the sum of the outputs",
        inputs,
    )


# --- 10.1 Module ------------------------------------------------------------------------------------------------------


@pytest.mark.task("10.1", points=1, hint="Module.parameters() returns [] (a list): a bare Module has no parameters.")
def test_bare_module_has_no_parameters(learner):
    """Module().parameters() is an empty list, each time it is asked"""
    got = learner.run(module_parameters, 2)
    if got["type"] != "list":
        raise CheckFailed("Module().parameters()", [], got["value"], note=f"parameters() returned a {got['type']}")
    expect_equal(got["value"], [], "Module().parameters()")
    expect_equal(got["lengths"], [0, 0], "the lengths of Module().parameters(), asked twice of one Module")


@pytest.mark.task(
    "10.1",
    points=2,
    hint="zero_grad sets the grad of every parameter in self.parameters() to 0.0, and leaves data alone.",
)
def test_zero_grad_resets_every_parameter(learner):
    """zero_grad sets the grad of every parameter a subclass lists to 0 and keeps the data"""
    case = {"data": [1.5, -2.0, 0.25], "grads": [3.0, -0.5, 7.25]}
    (got,) = learner.run(zero_grad_boxes, [case], bare_too=True)
    inputs = "a Module subclass whose parameters() are Values 1.5, -2.0, 0.25 with grads 3.0, -0.5, 7.25"
    expect_equal(got["grads"], [0.0, 0.0, 0.0], "the grads after zero_grad()", inputs)
    expect_equal(got["data"], [1.5, -2.0, 0.25], "the data after zero_grad() (unchanged)", inputs)


@pytest.mark.hidden
@pytest.mark.task(
    "10.1", points=1, hint="zero_grad must go through self.parameters(), whatever the subclass returns there."
)
def test_zero_grad_seeded(learner):
    """zero_grad on subclasses with seeded numbers of parameters"""
    rng = random.Random(1001)
    cases = []
    for n in (1, 2, 5, 13, 40):
        data = [rng.uniform(-3, 3) for _ in range(n)]
        cases.append({"data": data, "grads": [rng.uniform(-10, 10) for _ in range(n)]})
    for case, got in zip(cases, learner.run(zero_grad_boxes, cases, outsider_grad=4.5), strict=True):
        n = len(case["data"])
        inputs = f"a Module subclass with {n} parameter{'s' if n > 1 else ''}, each with a nonzero grad"
        expect(
            all(g == 0 for g in got["grads"]),
            "every parameter's grad after zero_grad()",
            "all 0.0",
            got["grads"],
            inputs,
        )
        expect_equal(got["data"], case["data"], "the data after zero_grad() (unchanged)", inputs)
        expect_equal(got["outsider"], 4.5, "the grad of a Value that is not a parameter (unchanged)", inputs)


# --- 10.2 Neuron ------------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "10.2",
    points=2,
    hint="One weight per input, each a Value of random.uniform(-1, 1), then the bias the same way: in that order.",
)
def test_neuron_init_draws_weights_then_bias(learner):
    """Neuron(3) draws its 3 weights, then its bias, with random.uniform(-1, 1)"""
    expected = _draws(42, 4)
    got = learner.run(neuron_made, 42, 3)
    expect_equal(len(got["w"]), 3, "len(Neuron(3).w)")
    expect(got["all_values"], "types of Neuron(3).w[i] and .b", "Value", got["types"])
    expect_equal(
        got["w"],
        expected[:3],
        "[w.data for w in Neuron(3).w]",
        "random.seed(42) just before Neuron(3)",
        note="the weights are the first 3 draws",
    )
    expect_equal(
        got["b"],
        expected[3],
        "Neuron(3).b.data",
        "random.seed(42) just before Neuron(3)",
        note="the bias is the 4th draw, after the weights",
    )


@pytest.mark.task(
    "10.2", points=1, hint="parameters(): the weights, then the bias, in one list: the same Value objects, not copies."
)
def test_neuron_parameters_are_weights_then_bias(learner):
    """Neuron.parameters() is the weights, then the bias, as the very same objects"""
    got = learner.run(neuron_parameters, 7, 4)
    expect_equal(got["len"], 5, "len(Neuron(4).parameters())")
    differs = _not_the_same(got["identity"])
    index = got["identity"]["index"]
    copies = differs is not None and isinstance(index, list) and len(index) == 5 and all(j is None for j in index)
    expect(
        differs is None,
        "Neuron(4).parameters()",
        "the very objects self.w[0], ..., self.w[3], self.b, in order",
        differs,
        cause="parameters-are-copies" if copies else "",
    )


@pytest.mark.task("10.2", points=2, hint="z = b + Σ wᵢ·xᵢ, then z.tanh() (the default act is 'tanh').")
def test_neuron_tanh_forward(learner):
    """a tanh neuron with fixed weights gives tanh(w·x + b)"""
    ws, b, x = [0.3, -0.1, 0.8], 0.2, [1.0, -2.0, 0.5]
    expected = math.tanh(0.3 * 1.0 + -0.1 * -2.0 + 0.8 * 0.5 + 0.2)
    (out,) = learner.run(neuron_outputs, 3, {}, ws, b, [x])
    expect(out["is_value"], "type of Neuron(3)(x)", "Value", out["type"])
    expect_close(out["data"][0], expected, "Neuron(3)(x).data", "w = [0.3, -0.1, 0.8], b = 0.2, x = [1.0, -2.0, 0.5]")
    (out,) = learner.run(neuron_outputs, 3, {}, ws, b, [x], as_values=True)
    expect_close(
        out["data"][0],
        expected,
        "Neuron(3)(x).data with x given as Values",
        "w = [0.3, -0.1, 0.8], b = 0.2, x = [Value(1.0), Value(-2.0), Value(0.5)]",
    )


@pytest.mark.task(
    "10.2",
    points=2,
    hint="self.act names a method of Value: look it up on z (getattr) and call it; with nonlin=False return z.",
)
def test_neuron_relu_and_linear(learner):
    """relu and linear (nonlin=False) neurons with fixed weights"""
    ws, b = [0.5, -1.0], 0.25
    cases = [([2.0, 0.5], 0.75), ([-1.0, 1.0], -1.25)]  # x, w·x + b
    for kwargs in ({"act": "relu"}, {"nonlin": False}, {"act": "relu", "nonlin": False}):
        outs = learner.run(neuron_outputs, 2, kwargs, ws, b, [x for x, _ in cases])
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        for (x, z), out in zip(cases, outs, strict=True):
            expected = _act(z, kwargs.get("act", "tanh"), kwargs.get("nonlin", True))
            expect_close(out["data"][0], expected, f"Neuron(2, {args})(x).data", f"w = {ws}, b = {b}, x = {x}")


@pytest.mark.task(
    "10.2", points=1, hint="The output must be built from self.w and self.b themselves, so that backward reaches them."
)
def test_neuron_parameters_get_their_gradients(learner):
    """backward through a neuron's output reaches exactly the Values parameters() lists"""
    ws, b, x = [0.4, -0.7, 0.2], -0.1, [1.5, 0.5, -2.0]
    got = learner.run(neuron_grads, ws, b, x)
    z = sum(w * xi for w, xi in zip(ws, x, strict=True)) + b
    d = _dact(z)
    inputs = f"w = {ws}, b = {b}, x = {x}, tanh neuron, out.backward()"
    expect(got["swept"], "type of Neuron(3)(x)", "Value", got["type"], inputs)
    grads = expect_list(got["grads"], len(x) + 1, "parameters() grads", inputs)
    expect_close(grads[-1], d, "parameters()[-1].grad (the bias)", inputs)
    for i, (g, xi) in enumerate(zip(grads, x, strict=False)):  # the bias is the last
        expect_close(g, xi * d, f"parameters()[{i}].grad (weight {i})", inputs)


@pytest.mark.hidden
@pytest.mark.task(
    "10.2", points=2, hint="Draw nin weights then the bias; output act(b + Σ wᵢ·xᵢ) for tanh, relu and nonlin=False."
)
def test_neuron_seeded(learner):
    """seeded neurons: initial draws, outputs and gradients for every kind"""
    rng = random.Random(1002)
    trials = []
    for trial in range(12):
        nin = rng.randint(1, 7)
        kwargs = [{}, {"act": "relu"}, {"nonlin": False}, {"act": "tanh"}][trial % 4]
        seed = rng.randrange(10**6)
        trials.append({"seed": seed, "nin": nin, "kwargs": kwargs, "x": [rng.uniform(-2, 2) for _ in range(nin)]})
    for t, got in zip(trials, learner.run(neuron_trials, trials), strict=True):
        seed, nin, kwargs, x = t["seed"], t["nin"], t["kwargs"], t["x"]
        expected = _draws(seed, nin + 1)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        what = f"Neuron({nin}{args})"
        inputs = f"seed {seed}, x = {x}"
        expect_equal(
            got["params"], expected, f"[p.data for p in {what}.parameters()]", f"random.seed({seed}) just before {what}"
        )
        z = sum(w * xi for w, xi in zip(expected, x, strict=False)) + expected[-1]
        act, nonlin = kwargs.get("act", "tanh"), kwargs.get("nonlin", True)
        expect_close(got["out"], _act(z, act, nonlin), f"{what}(x).data", inputs, rel=1e-9)
        expect(got["swept"], f"type of {what}(x)", "Value", got["type"], inputs)
        d = _dact(z, act, nonlin)
        grads = expect_list(got["grads"], nin + 1, f"{what}.parameters() grads", inputs)
        expect_close(grads[-1], d, f"bias grad after {what}(x).backward()", inputs)
        for i, xi in enumerate(x):
            expect_close(grads[i], xi * d, f"w[{i}].grad after {what}(x).backward()", inputs)


# --- 10.3 Layer -------------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "10.3",
    points=2,
    hint="nout neurons of nin inputs each, keyword arguments passed on; parameters() flattens theirs in order.",
)
def test_layer_shape_and_parameters(learner):
    """Layer(3, 4) has 4 neurons of 3 inputs and lists their 16 parameters in order"""
    got = learner.run(layer_structure, 3, 4)
    expect_equal(got["neurons"], 4, "len(Layer(3, 4).neurons)")
    expect_equal(got["inputs"], [3, 3, 3, 3], "[len(n.w) for n in Layer(3, 4).neurons]")
    expect_equal(got["len"], 16, "len(Layer(3, 4).parameters())", note="4 neurons × (3 weights + 1 bias)")
    differs = _not_the_same(got["identity"])
    expect(differs is None, "Layer(3, 4).parameters()", "the neurons' own parameter objects, neuron by neuron", differs)


@pytest.mark.task("10.3", points=1, hint="Return outs[0] when the layer has a single neuron, the list otherwise.")
def test_layer_single_output_is_a_value(learner):
    """Layer(n, 1) returns one Value; Layer(n, 2) returns a list of 2 Values"""
    x, weights = [0.5, -1.0], [[[0.5, -0.25], 0.1], [[-1.0, 0.75], 0.0]]
    one = learner.run(layer_outputs, 2, 1, {}, weights[:1], x)
    expect(one["is_value"], "type of Layer(2, 1)(x)", "Value", one["type"], f"x = {x}")
    two = learner.run(layer_outputs, 2, 2, {}, weights, x)
    shown = f"a {two['type']}" + (f" of {len(two['data'])}: {two['data']}" if two["is_list"] else "")
    expect(
        two["is_list"] and len(two["data"]) == 2 and two["all_values"],
        "Layer(2, 2)(x)",
        "a list of 2 Values",
        shown,
        f"x = {x}",
    )


@pytest.mark.task("10.3", points=2, hint="Call every neuron on the same x, in the order of self.neurons.")
def test_layer_outputs_by_hand(learner):
    """a tanh layer with fixed weights gives each neuron's tanh(w·x + b), in order"""
    weights = [([0.5, -0.25], 0.1), ([-1.0, 0.75], 0.0), ([0.2, 0.3], -0.4)]
    x = [1.0, 2.0]
    got = learner.run(layer_outputs, 2, 3, {}, [[ws, b] for ws, b in weights], x)
    expected = [math.tanh(ws[0] * x[0] + ws[1] * x[1] + b) for ws, b in weights]
    expect_equal(len(got["data"]), 3, "number of outputs of Layer(2, 3)(x)")
    inputs = f"neurons (w, b) = {weights}, x = {x}"
    for i, (o, e) in enumerate(zip(got["data"], expected, strict=True)):
        expect_close(o, e, f"Layer(2, 3)(x)[{i}].data", inputs)


@pytest.mark.task("10.3", points=1, hint="Pass **kwargs on to every Neuron, so act='relu' and nonlin=False reach them.")
def test_layer_passes_neuron_options(learner):
    """Layer(2, 2, act='relu') and Layer(2, 2, nonlin=False) make relu and linear neurons"""
    ws = [([1.0, 1.0], -3.0), ([0.5, -0.5], 0.25)]
    x = [1.0, 0.5]
    for kwargs in ({"act": "relu"}, {"nonlin": False}):
        out = learner.run(layer_outputs, 2, 2, kwargs, [[w, b] for w, b in ws], x)["data"]
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        for i, (w, b) in enumerate(ws):
            z = w[0] * x[0] + w[1] * x[1] + b
            expected = _act(z, kwargs.get("act", "tanh"), kwargs.get("nonlin", True))
            expect_close(
                out[i] if i < len(out) else None,
                expected,
                f"Layer(2, 2, {args})(x)[{i}].data",
                f"neurons (w, b) = {ws}, x = {x}",
            )


@pytest.mark.hidden
@pytest.mark.task(
    "10.3", points=1, hint="Make the neurons in order, call each on x, and list their parameters neuron by neuron."
)
def test_layer_seeded(learner, reference):
    """seeded layers: draws neuron by neuron, outputs and the gradients of parameters()"""
    rng = random.Random(1003)
    trials = []
    for _ in range(8):
        nin, nout = rng.randint(1, 5), rng.randint(1, 5)
        kwargs = rng.choice([{}, {"act": "relu"}, {"nonlin": False}])
        seed = rng.randrange(10**6)
        trials.append(
            {"seed": seed, "args": [nin, nout], "kwargs": kwargs, "x": [rng.uniform(-2, 2) for _ in range(nin)]}
        )
    answers = learner.run(module_trials, "Layer", trials)
    twins = reference.run(module_trials, "Layer", trials)
    for t, got, ref in zip(trials, answers, twins, strict=True):
        (nin, nout), seed = t["args"], t["seed"]
        args = "".join(f", {k}={v!r}" for k, v in t["kwargs"].items())
        what = f"Layer({nin}, {nout}{args})"
        expect_equal(
            got["params"],
            _draws(seed, (nin + 1) * nout),
            f"[p.data for p in {what}.parameters()]",
            f"random.seed({seed}) just before {what}",
            note="neuron by neuron: weights, then bias",
        )
        _compare_with_twin(got, ref, what, f"seed {seed}, x = {t['x']}")


# --- 10.4 MLP ---------------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "10.4", points=2, hint="Put nin in front of nouts: one Layer per entry of nouts, from each size to the next."
)
def test_mlp_parameter_counts(learner):
    """MLP(3, [4, 4, 1]) has 41 parameters and MLP(2, [16, 16, 1]) has 337"""
    cases = [(3, [4, 4, 1], 41), (2, [16, 16, 1], 337), (1, [1], 2), (4, [3], 15), (2, [3, 2], 17)]
    got = learner.run(mlp_counts, [[nin, nouts] for nin, nouts, _ in cases])
    for (nin, nouts, count), n in zip(cases, got, strict=True):
        expect_equal(
            n, count, f"len(MLP({nin}, {nouts}).parameters())", note="Σ (inputs + 1) × outputs over the layers"
        )


@pytest.mark.task(
    "10.4", points=1, hint="Layer i maps sizes[i] inputs to sizes[i+1] neurons; keep them in self.layers, in order."
)
def test_mlp_layer_sizes(learner):
    """MLP(3, [4, 5, 2]) has layers of 4, 5, 2 neurons with 3, 4, 5 inputs"""
    got = learner.run(mlp_structure, 3, [4, 5, 2])
    expect_equal(got["layers"], 3, "len(MLP(3, [4, 5, 2]).layers)")
    expect_equal(got["neurons"], [4, 5, 2], "neurons per layer of MLP(3, [4, 5, 2])")
    expect_equal(got["inputs"], [3, 4, 5], "inputs per neuron, layer by layer")


# an MLP(2, [2, 1]) with fixed weights: hidden neurons (w, b), then the output neuron
HIDDEN = [([0.5, -1.0], 0.25), ([1.5, 0.5], -2.0)]
OUTPUT = ([2.0, -1.5], 0.5)
SMALL_WEIGHTS = [[[ws, b] for ws, b in HIDDEN], [list(OUTPUT)]]


def _small_mlp_by_hand(x, act, linear_output):
    h = [_act(ws[0] * x[0] + ws[1] * x[1] + b, act) for ws, b in HIDDEN]
    z = OUTPUT[0][0] * h[0] + OUTPUT[0][1] * h[1] + OUTPUT[1]
    return _act(z, act, not linear_output)


@pytest.mark.task(
    "10.4",
    points=2,
    hint="Feed x through the layers in turn, each on the previous one's output; return the last output.",
)
def test_mlp_forward_by_hand(learner):
    """a tanh MLP(2, [2, 1]) with fixed weights gives the hand-computed tanh of tanh"""
    xs = [[1.0, 0.5], [-0.5, 2.0]]
    for x, out in zip(xs, learner.run(mlp_outputs, 2, [2, 1], {}, SMALL_WEIGHTS, xs), strict=True):
        expect(out["is_value"], "type of MLP(2, [2, 1])(x)", "Value (the last layer has one neuron)", out["type"])
        expect_close(
            out["data"][0],
            _small_mlp_by_hand(x, "tanh", False),
            "MLP(2, [2, 1])(x).data",
            f"hidden neurons (w, b) = {HIDDEN}, output neuron = {OUTPUT}, x = {x}",
        )


@pytest.mark.task(
    "10.4", points=2, hint="Pass act to every layer; only the last layer gets nonlin=False when linear_output=True."
)
def test_mlp_linear_output(learner):
    """MLP(2, [2, 1], act='relu', linear_output=True) has relu hidden units and a linear score"""
    xs = [[1.0, 0.5], [-0.5, 2.0], [2.0, 3.0]]
    for act, linear in (("relu", True), ("tanh", True), ("relu", False)):
        kwargs = {"act": act, "linear_output": linear}
        for x, out in zip(xs, learner.run(mlp_outputs, 2, [2, 1], kwargs, SMALL_WEIGHTS, xs), strict=True):
            expect_close(
                out["data"][0],
                _small_mlp_by_hand(x, act, linear),
                f"MLP(2, [2, 1], act={act!r}, linear_output={linear})(x).data",
                f"hidden neurons (w, b) = {HIDDEN}, output neuron = {OUTPUT}, x = {x}",
            )


@pytest.mark.task(
    "10.4",
    points=1,
    hint="parameters(): every layer's parameters, layer by layer, the same objects the forward pass uses.",
)
def test_mlp_parameters_get_their_gradients(learner, reference):
    """backward through an MLP's output reaches exactly its parameters(), in layer order"""
    x = [2.0, 3.0, -1.0]
    got = learner.run(mlp_wiring, 2024, 3, [4, 4, 1], x)
    differs = _not_the_same(got["identity"])
    expect(
        differs is None, "MLP(3, [4, 4, 1]).parameters()", "the layers' own parameter objects, layer by layer", differs
    )
    twin = reference.run(mlp_wiring, 2024, 3, [4, 4, 1], x)
    _expect_grads(
        got["grads"],
        twin["grads"],
        "mlp.parameters()[{i}].grad after mlp(x).backward()",
        "random.seed(2024) just before MLP(3, [4, 4, 1]); x = [2.0, 3.0, -1.0]",
    )


@pytest.mark.hidden
@pytest.mark.task(
    "10.4", points=2, hint="Check that the sizes start with nin, the layers' order, and that only the last is linear."
)
def test_mlp_seeded_shapes(learner, reference):
    """seeded shapes: parameter counts, outputs and gradients"""
    rng = random.Random(1004)
    trials = []
    for _ in range(10):
        nin = rng.randint(1, 4)
        # a hidden layer of one neuron would hand the next layer a bare Value, as in micrograd: sizes 2 to 5 there
        nouts = [rng.randint(2, 5) for _ in range(rng.randint(0, 2))] + [rng.randint(1, 5)]
        act, linear = rng.choice(["tanh", "relu"]), rng.random() < 0.5
        seed = rng.randrange(10**6)
        trials.append(
            {
                "seed": seed,
                "args": [nin, nouts],
                "kwargs": {"act": act, "linear_output": linear},
                "x": [rng.uniform(-2, 2) for _ in range(nin)],
            }
        )
    answers = learner.run(module_trials, "MLP", trials)
    twins = reference.run(module_trials, "MLP", trials)
    for t, got, ref in zip(trials, answers, twins, strict=True):
        (nin, nouts), seed = t["args"], t["seed"]
        what = f"MLP({nin}, {nouts}, act={t['kwargs']['act']!r}, linear_output={t['kwargs']['linear_output']})"
        expect_equal(len(got["params"]), _count(nin, nouts), f"len({what}.parameters())")
        expect_equal(
            got["params"],
            _draws(seed, len(got["params"])),
            f"[p.data for p in {what}.parameters()]",
            f"random.seed({seed}) just before {what}",
            note="layer by layer, in the order they were made",
        )
        _compare_with_twin(got, ref, what, f"seed {seed}, x = {t['x']}")
