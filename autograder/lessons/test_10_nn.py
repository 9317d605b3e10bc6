"""Lesson 10 · A neural network library (tasks 10.1 to 10.4).

The learner's nn.py runs over the reference engine (its `from .engine import
Value` gives the reference `Value`), and the classes of the other tasks are the
reference's: `Layer` is graded over the reference `Neuron`, `MLP` over the
reference `Layer`. No check of 10.2 to 10.4 calls `zero_grad`, which the
learner's classes inherit from the learner's `Module` (task 10.1).
"""

import math
import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.kit.testkit import data_of
from autograder.grading.loading import reference



def _draws(seed, n):
    """The first n numbers random.uniform(-1, 1) gives after random.seed(seed)."""
    random.seed(seed)
    return [random.uniform(-1, 1) for _ in range(n)]


def _set_neuron(neuron, ws, b):
    for wi, value in zip(neuron.w, ws):
        wi.data = value
    neuron.b.data = b


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


def _as_list(out):
    return out if isinstance(out, list) else [out]


def _not_the_same(actual, own):
    """None when `actual` lists exactly the objects of `own`, in order; otherwise what differs, in words."""
    actual = list(actual) if isinstance(actual, (list, tuple)) else actual
    if not isinstance(actual, list):
        return f"a {type(actual).__name__}, not a list"
    if len(actual) != len(own):
        return f"{len(actual)} Values instead of {len(own)}"
    wrong = [i for i, (p, q) in enumerate(zip(actual, own)) if p is not q]
    if not wrong:
        return None
    kind = "copies or other Values" if not any(p is q for p in actual for q in own) else "other objects or out of order"
    return f"{len(wrong)} of {len(own)} entries are {kind} (first at index {wrong[0]})"


def _expect_grads(params, expected, what, inputs=None):
    """p.grad of every parameter against the expected list; `what` names parameters()[{i}] with a {i}."""
    for i, (p, e) in enumerate(zip(params, expected)):
        expect_close(getattr(p, "grad", None), e, what.format(i=i), inputs, rel=1e-9, abs_tol=1e-12)


# --- 10.1 Module ------------------------------------------------------------------------------------------------------

def _compare_with_twin(impl, module, twin, params, what, rng, nin, seed):
    """Outputs and parameter grads of the learner's module equal those of its reference twin on a seeded input."""
    x = [rng.uniform(-2, 2) for _ in range(nin)]
    out, ref = module(x), twin(x)
    expect_equal(isinstance(out, list), isinstance(ref, list), f"isinstance({what}(x), list)")
    outs, refs = _as_list(out), _as_list(ref)
    expect_equal(len(outs), len(refs), f"number of outputs of {what}(x)")
    for i, (o, r) in enumerate(zip(outs, refs)):
        expect_close(data_of(o), r.data, f"{what}(x)[{i}].data", f"seed {seed}, x = {x}", rel=1e-9)
    sum(outs, impl.Value(0.0)).backward()
    sum(refs, impl.Value(0.0)).backward()
    _expect_grads(params, [p.grad for p in twin.parameters()],
                  f"{what}.parameters()[{{i}}].grad after backward from the sum of the outputs", f"seed {seed}, x = {x}")


def _box_class(impl):
    """A Module subclass made in the test: it keeps its own Values and lists them in parameters()."""

    class Box(impl.nn.Module):
        def __init__(self, values):
            self.values = values

        def parameters(self):
            return list(self.values)

    return Box


@pytest.mark.task("10.1", points=1, hint="Module.parameters() returns [] (a list): a bare Module has no parameters.")
def test_bare_module_has_no_parameters(impl):
    """Module().parameters() is an empty list"""
    params = impl.nn.Module().parameters()
    expect_equal(params, [], "Module().parameters()")


@pytest.mark.task("10.1", points=2, hint="zero_grad: for p in self.parameters(): p.grad = 0.0 (and leave p.data alone).")
def test_zero_grad_resets_every_parameter(impl):
    """zero_grad sets the grad of every parameter a subclass lists to 0 and keeps the data"""
    values = [impl.Value(x) for x in (1.5, -2.0, 0.25)]
    for v, g in zip(values, (3.0, -0.5, 7.25)):
        v.grad = g
    box = _box_class(impl)(values)
    box.zero_grad()
    inputs = "a Module subclass whose parameters() are Values 1.5, -2.0, 0.25 with grads 3.0, -0.5, 7.25"
    expect_equal([v.grad for v in values], [0.0, 0.0, 0.0], "the grads after zero_grad()", inputs)
    expect_equal([v.data for v in values], [1.5, -2.0, 0.25], "the data after zero_grad() (unchanged)", inputs)
    impl.nn.Module().zero_grad()  # a bare Module: nothing to reset, and no error


@pytest.mark.hidden
@pytest.mark.task("10.1", points=1, hint="zero_grad must go through self.parameters(), whatever the subclass returns there.")
def test_zero_grad_seeded(impl):
    """zero_grad on subclasses with seeded numbers of parameters"""
    rng = random.Random(1001)
    Box = _box_class(impl)
    for n in (1, 2, 5, 13, 40):
        values = [impl.Value(rng.uniform(-3, 3)) for _ in range(n)]
        datas = [v.data for v in values]
        for v in values:
            v.grad = rng.uniform(-10, 10)
        outsider = impl.Value(1.0)
        outsider.grad = 4.5
        Box(values).zero_grad()
        inputs = f"a Module subclass with {n} parameter{'s' if n > 1 else ''}, each with a nonzero grad"
        expect(all(v.grad == 0 for v in values), "every parameter's grad after zero_grad()", "all 0.0",
               [v.grad for v in values], inputs)
        expect_equal([v.data for v in values], datas, "the data after zero_grad() (unchanged)", inputs)
        expect_equal(outsider.grad, 4.5, "the grad of a Value that is not a parameter (unchanged)", inputs)


# --- 10.2 Neuron ------------------------------------------------------------------------------------------------------

@pytest.mark.task("10.2", points=2, hint="self.w = [Value(random.uniform(-1, 1)) for each input], then self.b the same way, in that order.")
def test_neuron_init_draws_weights_then_bias(impl):
    """Neuron(3) draws its 3 weights, then its bias, with random.uniform(-1, 1)"""
    expected = _draws(42, 4)
    random.seed(42)
    n = impl.nn.Neuron(3)
    expect_equal(len(n.w), 3, "len(Neuron(3).w)")
    expect(all(isinstance(wi, impl.Value) for wi in n.w) and isinstance(n.b, impl.Value),
           "types of Neuron(3).w[i] and .b", "Value", [type(wi).__name__ for wi in n.w] + [type(n.b).__name__])
    expect_equal([wi.data for wi in n.w], expected[:3], "[w.data for w in Neuron(3).w]",
                 "random.seed(42) just before Neuron(3)", note="the weights are the first 3 draws")
    expect_equal(n.b.data, expected[3], "Neuron(3).b.data", "random.seed(42) just before Neuron(3)",
                 note="the bias is the 4th draw, after the weights")


@pytest.mark.task("10.2", points=1, hint="parameters() returns self.w + [self.b]: the same Value objects, not copies.")
def test_neuron_parameters_are_weights_then_bias(impl):
    """Neuron.parameters() is the weights, then the bias, as the very same objects"""
    random.seed(7)
    n = impl.nn.Neuron(4)
    params = n.parameters()
    expect_equal(len(params), 5, "len(Neuron(4).parameters())")
    differs = _not_the_same(params, n.w + [n.b])
    expect(differs is None, "Neuron(4).parameters()", "the very objects self.w[0], ..., self.w[3], self.b, in order",
           differs)


@pytest.mark.task("10.2", points=2, hint="z = b + Σ wᵢ·xᵢ, then z.tanh() (the default act is 'tanh').")
def test_neuron_tanh_forward(impl):
    """a tanh neuron with fixed weights gives tanh(w·x + b)"""
    n = impl.nn.Neuron(3)
    _set_neuron(n, [0.3, -0.1, 0.8], 0.2)
    x = [1.0, -2.0, 0.5]
    out = n(x)
    expected = math.tanh(0.3 * 1.0 + -0.1 * -2.0 + 0.8 * 0.5 + 0.2)
    expect(isinstance(out, impl.Value), "type of Neuron(3)(x)", "Value", type(out).__name__)
    expect_close(data_of(out), expected, "Neuron(3)(x).data", "w = [0.3, -0.1, 0.8], b = 0.2, x = [1.0, -2.0, 0.5]")
    xv = [impl.Value(v) for v in x]
    expect_close(data_of(n(xv)), expected, "Neuron(3)(x).data with x given as Values",
                 "w = [0.3, -0.1, 0.8], b = 0.2, x = [Value(1.0), Value(-2.0), Value(0.5)]")


@pytest.mark.task("10.2", points=2, hint="getattr(z, self.act)() applies the activation by name; with nonlin=False return z itself.")
def test_neuron_relu_and_linear(impl):
    """relu and linear (nonlin=False) neurons with fixed weights"""
    ws, b = [0.5, -1.0], 0.25
    cases = [([2.0, 0.5], 0.75), ([-1.0, 1.0], -1.25)]  # x, w·x + b
    for kwargs in ({"act": "relu"}, {"nonlin": False}, {"act": "relu", "nonlin": False}):
        n = impl.nn.Neuron(2, **kwargs)
        _set_neuron(n, ws, b)
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        for x, z in cases:
            expected = _act(z, kwargs.get("act", "tanh"), kwargs.get("nonlin", True))
            expect_close(data_of(n(x)), expected, f"Neuron(2, {args})(x).data", f"w = {ws}, b = {b}, x = {x}")


@pytest.mark.task("10.2", points=1, hint="The output must be built from self.w and self.b themselves, so that backward reaches them.")
def test_neuron_parameters_get_their_gradients(impl):
    """backward through a neuron's output reaches exactly the Values parameters() lists"""
    n = impl.nn.Neuron(3)
    ws, b, x = [0.4, -0.7, 0.2], -0.1, [1.5, 0.5, -2.0]
    _set_neuron(n, ws, b)
    out = n(x)
    out.backward()
    z = sum(w * xi for w, xi in zip(ws, x)) + b
    d = _dact(z)
    inputs = f"w = {ws}, b = {b}, x = {x}, tanh neuron, out.backward()"
    expect_close([p.grad for p in n.parameters()][-1], d, "parameters()[-1].grad (the bias)", inputs)
    for i, (p, xi) in enumerate(zip(n.parameters(), x)):
        expect_close(p.grad, xi * d, f"parameters()[{i}].grad (weight {i})", inputs)


@pytest.mark.hidden
@pytest.mark.task("10.2", points=2, hint="Draw nin weights then the bias; output act(b + Σ wᵢ·xᵢ) for tanh, relu and nonlin=False.")
def test_neuron_seeded(impl):
    """seeded neurons: initial draws, outputs and gradients for every kind"""
    rng = random.Random(1002)
    for trial in range(12):
        nin = rng.randint(1, 7)
        kwargs = [{}, {"act": "relu"}, {"nonlin": False}, {"act": "tanh"}][trial % 4]
        seed = rng.randrange(10**6)
        expected = _draws(seed, nin + 1)
        random.seed(seed)
        n = impl.nn.Neuron(nin, **kwargs)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        what = f"Neuron({nin}{args})"
        expect_equal([data_of(p) for p in n.parameters()], expected, f"[p.data for p in {what}.parameters()]",
                     f"random.seed({seed}) just before {what}")
        x = [rng.uniform(-2, 2) for _ in range(nin)]
        z = sum(w * xi for w, xi in zip(expected, x)) + expected[-1]
        act, nonlin = kwargs.get("act", "tanh"), kwargs.get("nonlin", True)
        out = n(x)
        expect_close(data_of(out), _act(z, act, nonlin), f"{what}(x).data", f"seed {seed}, x = {x}", rel=1e-9)
        out.backward()
        d = _dact(z, act, nonlin)
        expect_close(n.parameters()[-1].grad, d, f"bias grad after {what}(x).backward()", f"seed {seed}, x = {x}")
        for i, xi in enumerate(x):
            expect_close(n.parameters()[i].grad, xi * d, f"w[{i}].grad after {what}(x).backward()",
                         f"seed {seed}, x = {x}")


# --- 10.3 Layer -------------------------------------------------------------------------------------------------------

@pytest.mark.task("10.3", points=2, hint="self.neurons = [Neuron(nin, **kwargs) for _ in range(nout)]; parameters() flattens theirs in order.")
def test_layer_shape_and_parameters(impl):
    """Layer(3, 4) has 4 neurons of 3 inputs and lists their 16 parameters in order"""
    layer = impl.nn.Layer(3, 4)
    expect_equal(len(layer.neurons), 4, "len(Layer(3, 4).neurons)")
    expect_equal([len(n.w) for n in layer.neurons], [3, 3, 3, 3], "[len(n.w) for n in Layer(3, 4).neurons]")
    params = layer.parameters()
    expect_equal(len(params), 16, "len(Layer(3, 4).parameters())", note="4 neurons × (3 weights + 1 bias)")
    own = [p for n in layer.neurons for p in n.parameters()]
    differs = _not_the_same(params, own)
    expect(differs is None, "Layer(3, 4).parameters()", "the neurons' own parameter objects, neuron by neuron",
           differs)


@pytest.mark.task("10.3", points=1, hint="Return outs[0] when the layer has a single neuron, the list otherwise.")
def test_layer_single_output_is_a_value(impl):
    """Layer(n, 1) returns one Value; Layer(n, 2) returns a list of 2 Values"""
    x = [0.5, -1.0]
    one = impl.nn.Layer(2, 1)(x)
    expect(isinstance(one, impl.Value), "type of Layer(2, 1)(x)", "Value", type(one).__name__, f"x = {x}")
    two = impl.nn.Layer(2, 2)(x)
    expect(isinstance(two, list) and len(two) == 2 and all(isinstance(o, impl.Value) for o in two),
           "Layer(2, 2)(x)", "a list of 2 Values", two, f"x = {x}")


@pytest.mark.task("10.3", points=2, hint="Call every neuron on the same x, in the order of self.neurons.")
def test_layer_outputs_by_hand(impl):
    """a tanh layer with fixed weights gives each neuron's tanh(w·x + b), in order"""
    layer = impl.nn.Layer(2, 3)
    weights = [([0.5, -0.25], 0.1), ([-1.0, 0.75], 0.0), ([0.2, 0.3], -0.4)]
    for n, (ws, b) in zip(layer.neurons, weights):
        _set_neuron(n, ws, b)
    x = [1.0, 2.0]
    out = _as_list(layer(x))
    expected = [math.tanh(ws[0] * x[0] + ws[1] * x[1] + b) for ws, b in weights]
    expect_equal(len(out), 3, "number of outputs of Layer(2, 3)(x)")
    inputs = f"neurons (w, b) = {weights}, x = {x}"
    for i, (o, e) in enumerate(zip(out, expected)):
        expect_close(data_of(o), e, f"Layer(2, 3)(x)[{i}].data", inputs)


@pytest.mark.task("10.3", points=1, hint="Pass **kwargs on to every Neuron, so act='relu' and nonlin=False reach them.")
def test_layer_passes_neuron_options(impl):
    """Layer(2, 2, act='relu') and Layer(2, 2, nonlin=False) make relu and linear neurons"""
    ws = [([1.0, 1.0], -3.0), ([0.5, -0.5], 0.25)]
    x = [1.0, 0.5]
    for kwargs in ({"act": "relu"}, {"nonlin": False}):
        layer = impl.nn.Layer(2, 2, **kwargs)
        for n, (w, b) in zip(layer.neurons, ws):
            _set_neuron(n, w, b)
        out = _as_list(layer(x))
        args = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        for i, (w, b) in enumerate(ws):
            z = w[0] * x[0] + w[1] * x[1] + b
            expected = _act(z, kwargs.get("act", "tanh"), kwargs.get("nonlin", True))
            expect_close(data_of(out[i]) if i < len(out) else None, expected, f"Layer(2, 2, {args})(x)[{i}].data",
                         f"neurons (w, b) = {ws}, x = {x}")


@pytest.mark.hidden
@pytest.mark.task("10.3", points=1, hint="Make the neurons in order, call each on x, and list their parameters neuron by neuron.")
def test_layer_seeded(impl):
    """seeded layers: draws neuron by neuron, outputs and the gradients of parameters()"""
    rng = random.Random(1003)
    RefLayer = reference("nn").Layer
    for _ in range(8):
        nin, nout = rng.randint(1, 5), rng.randint(1, 5)
        kwargs = rng.choice([{}, {"act": "relu"}, {"nonlin": False}])
        seed = rng.randrange(10**6)
        expected = _draws(seed, (nin + 1) * nout)
        random.seed(seed)
        layer = impl.nn.Layer(nin, nout, **kwargs)
        random.seed(seed)
        twin = RefLayer(nin, nout, **kwargs)
        args = "".join(f", {k}={v!r}" for k, v in kwargs.items())
        what = f"Layer({nin}, {nout}{args})"
        params = layer.parameters()
        expect_equal([data_of(p) for p in params], expected, f"[p.data for p in {what}.parameters()]",
                     f"random.seed({seed}) just before {what}", note="neuron by neuron: weights, then bias")
        _compare_with_twin(impl, layer, twin, params, what, rng, nin, seed)


# --- 10.4 MLP ---------------------------------------------------------------------------------------------------------

@pytest.mark.task("10.4", points=2, hint="sizes = [nin] + nouts and one Layer(sizes[i], sizes[i+1]) per entry of nouts.")
def test_mlp_parameter_counts(impl):
    """MLP(3, [4, 4, 1]) has 41 parameters and MLP(2, [16, 16, 1]) has 337"""
    for nin, nouts, count in ((3, [4, 4, 1], 41), (2, [16, 16, 1], 337), (1, [1], 2), (4, [3], 15), (2, [3, 2], 17)):
        expect_equal(len(impl.nn.MLP(nin, nouts).parameters()), count, f"len(MLP({nin}, {nouts}).parameters())",
                     note="Σ (inputs + 1) × outputs over the layers")


@pytest.mark.task("10.4", points=1, hint="Layer i maps sizes[i] inputs to sizes[i+1] neurons; keep them in self.layers, in order.")
def test_mlp_layer_sizes(impl):
    """MLP(3, [4, 5, 2]) has layers of 4, 5, 2 neurons with 3, 4, 5 inputs"""
    mlp = impl.nn.MLP(3, [4, 5, 2])
    expect_equal(len(mlp.layers), 3, "len(MLP(3, [4, 5, 2]).layers)")
    expect_equal([len(layer.neurons) for layer in mlp.layers], [4, 5, 2], "neurons per layer of MLP(3, [4, 5, 2])")
    expect_equal([len(layer.neurons[0].w) for layer in mlp.layers], [3, 4, 5], "inputs per neuron, layer by layer")


def _small_mlp(mlp):
    """Fix the weights of an MLP(2, [2, 1]): hidden neurons (w, b), then the output neuron."""
    hidden = [([0.5, -1.0], 0.25), ([1.5, 0.5], -2.0)]
    output = ([2.0, -1.5], 0.5)
    for n, (ws, b) in zip(mlp.layers[0].neurons, hidden):
        _set_neuron(n, ws, b)
    _set_neuron(mlp.layers[1].neurons[0], *output)
    return hidden, output


def _small_mlp_by_hand(x, hidden, output, act, linear_output):
    h = [_act(ws[0] * x[0] + ws[1] * x[1] + b, act) for ws, b in hidden]
    z = output[0][0] * h[0] + output[0][1] * h[1] + output[1]
    return _act(z, act, not linear_output)


@pytest.mark.task("10.4", points=2, hint="Feed x through the layers in turn: x = layer(x) for each layer; return the last x.")
def test_mlp_forward_by_hand(impl):
    """a tanh MLP(2, [2, 1]) with fixed weights gives the hand-computed tanh of tanh"""
    mlp = impl.nn.MLP(2, [2, 1])
    hidden, output = _small_mlp(mlp)
    for x in ([1.0, 0.5], [-0.5, 2.0]):
        out = mlp(x)
        expect(isinstance(out, impl.Value), "type of MLP(2, [2, 1])(x)", "Value (the last layer has one neuron)",
               type(out).__name__)
        expect_close(data_of(out), _small_mlp_by_hand(x, hidden, output, "tanh", False), "MLP(2, [2, 1])(x).data",
                     f"hidden neurons (w, b) = {hidden}, output neuron = {output}, x = {x}")


@pytest.mark.task("10.4", points=2, hint="Pass act to every layer; only the last layer gets nonlin=False when linear_output=True.")
def test_mlp_linear_output(impl):
    """MLP(2, [2, 1], act='relu', linear_output=True) has relu hidden units and a linear score"""
    for act, linear in (("relu", True), ("tanh", True), ("relu", False)):
        mlp = impl.nn.MLP(2, [2, 1], act=act, linear_output=linear)
        hidden, output = _small_mlp(mlp)
        for x in ([1.0, 0.5], [-0.5, 2.0], [2.0, 3.0]):
            expect_close(data_of(mlp(x)), _small_mlp_by_hand(x, hidden, output, act, linear),
                         f"MLP(2, [2, 1], act={act!r}, linear_output={linear})(x).data",
                         f"hidden neurons (w, b) = {hidden}, output neuron = {output}, x = {x}")


@pytest.mark.task("10.4", points=1, hint="parameters(): every layer's parameters, layer by layer, the same objects the forward pass uses.")
def test_mlp_parameters_get_their_gradients(impl):
    """backward through an MLP's output reaches exactly its parameters(), in layer order"""
    ref_nn = reference("nn")
    random.seed(2024)
    mlp = impl.nn.MLP(3, [4, 4, 1])
    random.seed(2024)
    twin = ref_nn.MLP(3, [4, 4, 1])
    params = mlp.parameters()
    own = [p for layer in mlp.layers for n in layer.neurons for p in n.parameters()]
    differs = _not_the_same(params, own)
    expect(differs is None, "MLP(3, [4, 4, 1]).parameters()", "the layers' own parameter objects, layer by layer",
           differs)
    x = [2.0, 3.0, -1.0]
    mlp(x).backward()
    twin(x).backward()
    _expect_grads(params, [p.grad for p in twin.parameters()], "mlp.parameters()[{i}].grad after mlp(x).backward()",
                 "random.seed(2024) just before MLP(3, [4, 4, 1]); x = [2.0, 3.0, -1.0]")


@pytest.mark.hidden
@pytest.mark.task("10.4", points=2, hint="Check sizes = [nin] + nouts, the layer order, and that only the last layer is linear.")
def test_mlp_seeded_shapes(impl):
    """seeded shapes: parameter counts, outputs and gradients"""
    rng = random.Random(1004)
    RefMLP = reference("nn").MLP
    for _ in range(10):
        nin = rng.randint(1, 4)
        # a hidden layer of one neuron would hand the next layer a bare Value, as in micrograd: sizes 2 to 5 there
        nouts = [rng.randint(2, 5) for _ in range(rng.randint(0, 2))] + [rng.randint(1, 5)]
        act, linear = rng.choice(["tanh", "relu"]), rng.random() < 0.5
        seed = rng.randrange(10**6)
        what = f"MLP({nin}, {nouts}, act={act!r}, linear_output={linear})"
        random.seed(seed)
        mlp = impl.nn.MLP(nin, nouts, act=act, linear_output=linear)
        random.seed(seed)
        twin = RefMLP(nin, nouts, act=act, linear_output=linear)
        params = mlp.parameters()
        expect_equal(len(params), _count(nin, nouts), f"len({what}.parameters())")
        expect_equal([p.data for p in params], _draws(seed, len(params)), f"[p.data for p in {what}.parameters()]",
                     f"random.seed({seed}) just before {what}", note="layer by layer, in the order they were made")
        _compare_with_twin(impl, mlp, twin, params, what, rng, nin, seed)
