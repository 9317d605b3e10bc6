"""Lesson 14 · From scalars to tensors (bonus tasks 14.1 to 14.6): unbroadcast, +, *, @, tanh, sum, backward, a network.

Bonus tasks: the scorecard and Gradescope count their points apart, never in
the full marks. The learner's tensor.py runs in the worker. Tasks 14.1 to 14.5
live in one class, so a check of one of them runs the learner's `Tensor` and
uses only the method it grades, the constructor (which the stub provides) and
the grader's own `_backward` calls or `sweep`: an operation's checks never go
through the learner's other operations or `backward()`. In the checks of 14.2
`unbroadcast` is the reference's; in the checks of 14.6, `Tensor` and
`unbroadcast` are. Task 14.5 is graded on graphs whose `_backward` closures
the scenario writes itself, as lesson 6 is.

Expected values are computed here only: the rules written out with NumPy
(G @ Bᵀ and Aᵀ @ G for a matrix product, a loop over every element of a
broadcast gradient), PyTorch in float64 (`kit.torch_values`), and the scalar
engine of lessons 2 to 11 (`reference.run` of a scenario over the reference
`Value` and `MLP`, with the same weights).

Longer than the grader's other files on purpose: a lesson's checks live in one file, each scenario next to the
judgements that read it, as every lesson's do.
"""

import random

import pytest

from autograder.kit import torch_values
from autograder.kit.checks import expect, expect_close, expect_equal, expect_list
from autograder.worker.scenario import scenario, sweep, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def array_of(impl, x):
    """`x` (a Tensor's data or grad) as {"shape", "values"} of float64, or {"not_an_array": its type}."""
    import numpy as np

    try:
        a = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        return {"not_an_array": type_name(x)}
    return {"shape": list(a.shape), "values": a.tolist()}


@scenario
def tensor_report(impl, out, children):
    """What an operation returned: type, data, op and children (named by `children`, {name: Tensor})."""
    prev = getattr(out, "_prev", None)
    names = {id(t): name for name, t in children.items()}
    return {
        "type": type_name(out),
        "is_tensor": isinstance(out, impl.tensor.Tensor),
        "data": array_of(impl, getattr(out, "data", out)),
        "op": getattr(out, "_op", None),
        "children": sorted(names.get(id(c), type_name(c)) for c in prev) if isinstance(prev, set) else None,
    }


@scenario
def unbroadcast_of(impl, grad, shape):
    import numpy as np

    return array_of(impl, impl.tensor.unbroadcast(np.array(grad, dtype=np.float64), tuple(shape)))


@scenario
def many_unbroadcasts(impl, cases):
    return [unbroadcast_of(impl, grad, shape) for grad, shape in cases]


@scenario
def binary(impl, op, a, b, g=None, before=None, b_is_number=False):
    """`A op B` for Tensors A, B (B a plain number with `b_is_number`); with `g`, out.grad = g, then out._backward().

    `before` presets [A.grad, B.grad] to see that the closure adds to them.
    """
    import numpy as np

    Tensor = impl.tensor.Tensor
    A = Tensor(a)
    B = b if b_is_number else Tensor(b)
    inputs = {"A": A} if b_is_number else {"A": A, "B": B}
    out = {"+": lambda: A + B, "*": lambda: A * B, "@": lambda: A @ B}[op]()
    report = tensor_report(impl, out, inputs)
    report["inputs_after"] = {name: array_of(impl, t.data) for name, t in inputs.items()}
    if g is not None and report["is_tensor"]:
        if before is not None:
            for t, grad in zip(inputs.values(), before, strict=False):
                t.grad = np.array(grad, dtype=np.float64)
        out.grad = np.array(g, dtype=np.float64)
        out._backward()
        report["grads"] = {name: array_of(impl, t.grad) for name, t in inputs.items()}
    return report


@scenario
def binaries(impl, cases):
    return [binary(impl, *case) for case in cases]


@scenario
def unary_op(impl, name, x, g=None, before=None):
    """`A.tanh()` or `A.sum()`; with `g`, out.grad = g, then out._backward() (A.grad preset to `before`)."""
    import numpy as np

    A = impl.tensor.Tensor(x)
    out = getattr(A, name)()
    report = tensor_report(impl, out, {"A": A})
    report["input_after"] = array_of(impl, A.data)
    if g is not None and report["is_tensor"]:
        if before is not None:
            A.grad = np.array(before, dtype=np.float64)
        out.grad = np.array(g, dtype=np.float64)
        out._backward()
        report["grad"] = array_of(impl, A.grad)
    return report


@scenario
def unary_ops(impl, cases):
    return [unary_op(impl, *case) for case in cases]


@scenario
def written_graph_backward(impl, spec, root, shape):
    """Tensors of `shape` whose `_prev` and `_backward` this scenario sets (as lesson 6's checks do); root.backward().

    `spec` is [name, [[child, weight], ...]], children first. Each closure records
    its name, its own grad when it runs, and adds weight · its grad to each child's.
    """
    import numpy as np

    calls, grad_when_called, nodes = [], {}, {}

    def closure(node, name, children):
        def _backward():
            calls.append(name)
            grad_when_called.setdefault(name, array_of(impl, node.grad))
            for child, weight in children:
                child.grad += weight * node.grad

        return _backward

    for name, children in spec:
        node = impl.tensor.Tensor(np.zeros(shape))
        node._prev = {nodes[c] for c, _ in children}
        node._backward = closure(node, name, [(nodes[c], w) for c, w in children])
        nodes[name] = node
    nodes[root].backward()
    return {
        "calls": calls,
        "grad_when_called": grad_when_called,
        "grads": {name: array_of(impl, node.grad) for name, node in nodes.items()},
    }


@scenario
def deep_chain_backward(impl, size):
    """A chain of `size` Tensors, each using the one before, under Python's default recursion limit: backward()."""
    import sys
    from functools import partial

    calls, nodes = [], []
    for i in range(size):
        node = impl.tensor.Tensor([0.0, 0.0])
        node._prev = {nodes[-1]} if nodes else set()
        node._backward = partial(calls.append, i)
        nodes.append(node)
    root = nodes[-1]
    del nodes
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        root.backward()
        error = None
    except RecursionError as exc:
        error = f"RecursionError: {exc}"
    finally:
        sys.setrecursionlimit(old)
    return {"error": error, "count": len(calls), "in_order": calls == list(range(size - 1, -1, -1))}


@scenario
def scalar_network(impl, seed, nin, nouts, xs, ys):
    """The scalar engine's MLP(nin, nouts) after random.seed(seed): its weights, its loss on xs, ys, every grad.

    Weights come as matrices (nin, nout) per layer, column j holding neuron j's weights, so they line up with a
    TensorMLP's; the grads the same way. Run here over the reference only (`reference.run`).
    """
    random.seed(seed)
    model = impl.nn.MLP(nin, nouts)
    loss = impl.train.squared_error_loss([model(x) for x in xs], ys)
    sweep(loss)

    def matrix(layer, attr):
        return [[getattr(n.w[i], attr) for n in layer.neurons] for i in range(len(layer.neurons[0].w))]

    return {
        "weights": [matrix(layer, "data") for layer in model.layers],
        "biases": [[n.b.data for n in layer.neurons] for layer in model.layers],
        "loss": loss.data,
        "weight_grads": [matrix(layer, "grad") for layer in model.layers],
        "bias_grads": [[[n.b.grad for n in layer.neurons]] for layer in model.layers],
    }


@scenario
def tensor_network(impl, weights, biases, xs, ys):
    """The learner's TensorMLP with these weights on the batch xs: outputs, squared_error, and every grad."""
    import numpy as np

    model = impl.tensor.TensorMLP(weights, biases)
    out = model(impl.tensor.Tensor(xs))
    report = {"out": tensor_report(impl, out, {})}
    if not report["out"]["is_tensor"]:
        return report
    loss = impl.tensor.squared_error(out, ys)
    report["loss"] = tensor_report(impl, loss, {"out": out})
    if report["loss"]["is_tensor"]:
        sweep(loss, seed=np.ones_like(loss.data))
        report["weight_grads"] = [array_of(impl, w.grad) for w in model.weights]
        report["bias_grads"] = [array_of(impl, b.grad) for b in model.biases]
    return report


@scenario
def scalar_training(impl, seed, steps, learning_rate):
    """Lesson 11's train on its MLP(3, [4, 4, 1]) from `seed` (the scalar engine): the loss history."""
    random.seed(seed)
    model = impl.nn.MLP(3, [4, 4, 1])
    return impl.train.train(model, impl.train.XS, impl.train.YS, steps, learning_rate)


@scenario
def tensor_training(impl, weights, biases, xs, ys, steps, learning_rate):
    """train_tensor_mlp on a TensorMLP with these weights: the history and the parameters after."""
    model = impl.tensor.TensorMLP(weights, biases)
    history = impl.tensor.train_tensor_mlp(model, xs, ys, steps, learning_rate)
    return {
        "type": type_name(history),
        "history": [float(h) for h in history] if isinstance(history, list) else None,
        "params": [array_of(impl, p.data) for p in model.parameters()],
    }


# --- the trusted side's oracles (NumPy and PyTorch, imported only when an answer is not known yet) ------------------


def unbroadcast_by_loop(grad: list, shape: list) -> list:
    """Each element of the small shape receives the sum of the big gradient's elements that copied it."""
    import numpy as np

    g = np.array(grad, dtype=np.float64)
    acc = np.zeros(shape)
    for idx in np.ndindex(g.shape):
        tail = idx[len(idx) - len(shape) :]
        acc[tuple(0 if size == 1 else i for i, size in zip(tail, shape, strict=True))] += g[idx]
    return acc.tolist()


def matmul_rule(a: list, b: list, g: list) -> list:
    """[A @ B, G @ Bᵀ, Aᵀ @ G]: the forward pass and the rule of the page."""
    import numpy as np

    A, B, G = (np.array(x, dtype=np.float64) for x in (a, b, g))
    return [(A @ B).tolist(), (G @ B.T).tolist(), (A.T @ G).tolist()]


def add_arrays(arrays: list, more: list) -> list:
    """Each array of `arrays` plus the one of `more` at the same place: a gradient added to what grad held."""
    import numpy as np

    return [
        (np.array(x, dtype=np.float64) + np.array(y, dtype=np.float64)).tolist()
        for x, y in zip(arrays, more, strict=True)
    ]


def seeded_array(rng: random.Random, shape: tuple, low: float = -2.0, high: float = 2.0):
    """Nested lists of the given shape (a float for shape ())."""
    if not shape:
        return rng.uniform(low, high)
    return [seeded_array(rng, shape[1:], low, high) for _ in range(shape[0])]


def _shape_of(x) -> tuple:
    shape = []
    while isinstance(x, list):
        shape.append(len(x))
        x = x[0] if x else None
    return tuple(shape)


def _flat(x) -> list:
    return [y for item in x for y in _flat(item)] if isinstance(x, list) else [x]


def expect_array(got, want, what: str, inputs: str, rel: float = 1e-9, abs_tol: float = 1e-12) -> None:
    """`got` ({"shape", "values"} from `array_of`) has exactly `want`'s shape and its numbers, element by element."""
    shape = _shape_of(want)
    expect(
        isinstance(got, dict) and isinstance(got.get("shape"), list) and "values" in got,
        f"{what} (an array)",
        f"an array of shape {shape}",
        got.get("not_an_array") if isinstance(got, dict) else got,
        inputs,
    )
    expect_equal(tuple(got["shape"]), shape, f"shape of {what}", inputs)
    wanted = _flat(want)
    values = expect_list(_flat(got["values"]), len(wanted), f"the numbers of {what}", inputs)
    for k, (g, w) in enumerate(zip(values, wanted, strict=True)):
        expect_close(g, w, f"{what}, element {k} (row by row)", inputs, rel=rel, abs_tol=abs_tol)


def _expect_tensor(report, what, inputs, op=None, children=None):
    expect(
        report["is_tensor"],
        f"type of {what}",
        "Tensor",
        report["type"],
        inputs,
        note="gradients flow through Tensors",
    )
    if op is not None:
        expect_equal(report["op"], op, f"{what}._op", inputs)
    if children is not None:
        expect_equal(report["children"], sorted(children), f"{what}._prev", inputs, note="the inputs, each once")


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

# 14.1 unbroadcast

GRAD_3x4 = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]


@pytest.mark.task("14.1", points=2, hint="A bias row (1, 4) added to 3 rows was used 3 times: sum the 3 rows.")
def test_unbroadcast_bias_row(learner):
    """a (3, 4) gradient summed down to a bias row (1, 4), to (4,), to a column (3, 1) and to ()"""
    shapes = [[1, 4], [4], [3, 1], []]
    got = expect_list(learner.run(many_unbroadcasts, [[GRAD_3x4, s] for s in shapes]), 4, "the four results")
    wants = [[[15.0, 18.0, 21.0, 24.0]], [15.0, 18.0, 21.0, 24.0], [[10.0], [26.0], [42.0]], 78.0]
    for shape, report, want in zip(shapes, got, wants, strict=True):
        expect_array(report, want, f"unbroadcast(grad, {tuple(shape)})", f"grad = {GRAD_3x4}")


@pytest.mark.task("14.1", points=1, hint="When nothing was broadcast, the gradient comes back unchanged.")
def test_unbroadcast_same_shape(learner):
    """a gradient that already has the shape comes back as it is"""
    expect_array(learner.run(unbroadcast_of, GRAD_3x4, [3, 4]), GRAD_3x4, "unbroadcast(grad, (3, 4))", "grad (3, 4)")


@pytest.mark.hidden
@pytest.mark.task("14.1", points=2, hint="Sum the axes put in front, then every axis where the shape has 1 (kept).")
def test_unbroadcast_seeded(learner, reference):
    """seeded shapes of 0 to 3 axes, broadcast to up to 4 axes, against a sum element by element"""
    rng = random.Random(1401)
    cases = []
    for _ in range(12):
        small = [rng.choice([1, 1, 2, 3]) for _ in range(rng.randint(0, 3))]
        big = [rng.randint(1, 3) for _ in range(rng.randint(0, 1))] + [
            rng.randint(2, 3) if size == 1 and rng.random() < 0.7 else size for size in small
        ]
        cases.append([seeded_array(rng, tuple(big)), small])
    got = expect_list(learner.run(many_unbroadcasts, cases), len(cases), "the results")
    for (grad, shape), report in zip(cases, got, strict=True):
        want = reference.compute(unbroadcast_by_loop, grad, shape)
        expect_array(report, want, f"unbroadcast(grad, {tuple(shape)})", f"grad = {grad}")


# 14.2 + and *

BATCH = [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0], [9.0, 10.0, 11.0, 12.0]]
BIAS = [[0.5, -1.0, 2.0, 0.0]]


@pytest.mark.task(
    "14.2", points=1, hint="Forward: a new Tensor of self.data + other.data, children (self, other), '+'."
)
def test_tensor_add_forward(learner):
    """a (3, 4) batch plus a bias row (1, 4): the sum row by row, op '+', both inputs as children, inputs unchanged"""
    got = learner.run(binary, "+", BATCH, BIAS)
    inputs = f"A = Tensor({BATCH}), B = Tensor({BIAS}); A + B"
    _expect_tensor(got, "A + B", inputs, "+", ["A", "B"])
    want = [[x + b for x, b in zip(row, BIAS[0], strict=True)] for row in BATCH]
    expect_array(got["data"], want, "(A + B).data", inputs)
    expect_array(got["inputs_after"]["B"], BIAS, "B.data after A + B (unchanged)", inputs)


@pytest.mark.task("14.2", points=2, hint="The bias row was used by every row of the batch: its grad sums them.")
def test_add_backward_sums_over_the_batch(learner):
    """out._backward() gives A the gradient and the bias row its sum over the 3 rows, added to what they held"""
    g = [[1.0, 0.0, -1.0, 2.0], [0.5, 0.5, 0.5, 0.5], [-2.0, 1.0, 0.0, 3.0]]
    before = [[[0.0] * 4] * 3, [[10.0, 10.0, 10.0, 10.0]]]
    got = learner.run(binary, "+", BATCH, BIAS, g, before)
    inputs = f"A (3, 4) + B = Tensor({BIAS}); out.grad = {g}; B.grad was [[10, 10, 10, 10]]"
    _expect_tensor(got, "A + B", inputs)
    expect_array(got["grads"]["A"], g, "A.grad", inputs)
    expect_array(got["grads"]["B"], [[10.0 + sum(col) for col in zip(*g, strict=True)]], "B.grad", inputs)


@pytest.mark.task("14.2", points=2, hint="Each input of * receives the other input's data times out.grad, summed down.")
def test_tensor_mul_backward(learner, reference):
    """A (2, 3) times a row (1, 3) and times the number 2.5: data and grads as PyTorch's"""
    a, b, g = [[1.0, -2.0, 3.0], [0.5, 4.0, -1.0]], [[2.0, 0.5, -1.0]], [[1.0, 2.0, 3.0], [-1.0, 0.0, 1.0]]
    got = learner.run(binary, "*", a, b, g)
    inputs = f"A = Tensor({a}), B = Tensor({b}); out = A * B; out.grad = {g}"
    _expect_tensor(got, "A * B", inputs, "*", ["A", "B"])
    data, grad_a, grad_b = reference.compute(torch_values.elementwise, "*", a, b, g)
    expect_array(got["data"], data, "(A * B).data", inputs)
    expect_array(got["grads"]["A"], grad_a, "A.grad", inputs)
    expect_array(got["grads"]["B"], grad_b, "B.grad (summed over the 2 rows)", inputs)
    got = learner.run(binary, "*", a, 2.5, g, None, True)
    inputs = f"A = Tensor({a}); out = A * 2.5; out.grad = {g}"
    _expect_tensor(got, "A * 2.5", inputs)
    expect_array(got["data"], [[2.5 * x for x in row] for row in a], "(A * 2.5).data", inputs)
    expect_array(got["grads"]["A"], [[2.5 * x for x in row] for row in g], "A.grad", inputs)


@pytest.mark.hidden
@pytest.mark.task("14.2", points=2, hint="+ and * must hold for any shapes that broadcast, on either side.")
def test_add_and_mul_seeded(learner, reference):
    """seeded shapes broadcast on either side, against PyTorch float64, grads added to preset ones"""
    rng = random.Random(1402)
    cases = []
    for k in range(12):
        full = (rng.randint(1, 4), rng.randint(1, 4))
        small = rng.choice([full, (1, full[1]), (full[0], 1), (full[1],), ()])
        shapes = (full, small) if k % 2 else (small, full)
        a, b = (seeded_array(rng, s) for s in shapes)
        g = seeded_array(rng, full)
        before = [seeded_array(rng, s) for s in shapes]
        cases.append(["+" if k % 3 else "*", a, b, g, before])
    got = expect_list(learner.run(binaries, cases), len(cases), "the results")
    for (op, a, b, g, before), report in zip(cases, got, strict=True):
        inputs = f"A = Tensor({a}), B = Tensor({b}); out = A {op} B; out.grad = {g}; A.grad, B.grad were {before}"
        _expect_tensor(report, f"A {op} B", inputs, op, ["A", "B"])
        data, grad_a, grad_b = reference.compute(torch_values.elementwise, op, a, b, g)
        expect_array(report["data"], data, f"(A {op} B).data vs PyTorch", inputs)
        add = reference.compute(add_arrays, [grad_a, grad_b], before)
        expect_array(report["grads"]["A"], add[0], "A.grad vs PyTorch", inputs)
        expect_array(report["grads"]["B"], add[1], "B.grad vs PyTorch", inputs)


# 14.3 @

A_23 = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
B_32 = [[1.0, -1.0], [0.0, 2.0], [0.5, 0.0]]
G_22 = [[1.0, 0.0], [-1.0, 2.0]]


@pytest.mark.task("14.3", points=1, hint="Forward: self.data @ other.data, children (self, other), op '@'.")
def test_matmul_forward(learner, reference):
    """a (2, 3) matrix times a (3, 2): the (2, 2) product, op '@', both inputs as children"""
    got = learner.run(binary, "@", A_23, B_32)
    inputs = f"A = Tensor({A_23}), B = Tensor({B_32}); A @ B"
    _expect_tensor(got, "A @ B", inputs, "@", ["A", "B"])
    product, _, _ = reference.compute(matmul_rule, A_23, B_32, G_22)
    expect_array(got["data"], product, "(A @ B).data", inputs)


@pytest.mark.task("14.3", points=3, hint="A receives G @ B.T and B receives A.T @ G, where G is out.grad.")
def test_matmul_backward_rule(learner, reference):
    """out._backward() gives A the gradient G @ Bᵀ (2, 3) and B the gradient Aᵀ @ G (3, 2), added to what they held"""
    got = learner.run(binary, "@", A_23, B_32, G_22)
    inputs = f"A = Tensor({A_23}), B = Tensor({B_32}); out = A @ B; out.grad = G = {G_22}"
    _expect_tensor(got, "A @ B", inputs)
    _, grad_a, grad_b = reference.compute(matmul_rule, A_23, B_32, G_22)
    expect_array(got["grads"]["A"], grad_a, "A.grad (G @ B.T)", inputs)
    expect_array(got["grads"]["B"], grad_b, "B.grad (A.T @ G)", inputs)
    before = [[[1.0] * 3] * 2, [[1.0] * 2] * 3]
    again = learner.run(binary, "@", A_23, B_32, G_22, before)
    shown = inputs + "; A.grad and B.grad were all ones"
    expect_array(again["grads"]["A"], [[x + 1 for x in row] for row in grad_a], "A.grad (added to)", shown)
    expect_array(again["grads"]["B"], [[x + 1 for x in row] for row in grad_b], "B.grad (added to)", shown)


@pytest.mark.hidden
@pytest.mark.task("14.3", points=3, hint="The rule holds for any (n, k) @ (k, m): each gradient has its input's shape.")
def test_matmul_seeded(learner, reference):
    """seeded (n, k) @ (k, m) products, against the rule G @ Bᵀ, Aᵀ @ G and against PyTorch float64"""
    rng = random.Random(1403)
    cases = []
    for _ in range(10):
        n, k, m = rng.randint(1, 5), rng.randint(1, 5), rng.randint(1, 5)
        cases.append(["@", seeded_array(rng, (n, k)), seeded_array(rng, (k, m)), seeded_array(rng, (n, m))])
    got = expect_list(learner.run(binaries, cases), len(cases), "the results")
    for (_, a, b, g), report in zip(cases, got, strict=True):
        inputs = f"A = Tensor({a}), B = Tensor({b}); out = A @ B; out.grad = G = {g}"
        _expect_tensor(report, "A @ B", inputs, "@", ["A", "B"])
        product, grad_a, grad_b = reference.compute(matmul_rule, a, b, g)
        expect_array(report["data"], product, "(A @ B).data", inputs)
        expect_array(report["grads"]["A"], grad_a, "A.grad (G @ B.T)", inputs)
        expect_array(report["grads"]["B"], grad_b, "B.grad (A.T @ G)", inputs)
        data, torch_a, torch_b = reference.compute(torch_values.matmul, a, b, g)
        expect_array(report["grads"]["A"], torch_a, "A.grad vs PyTorch", inputs)
        expect_array(report["grads"]["B"], torch_b, "B.grad vs PyTorch", inputs)


# 14.4 tanh and sum

X_23 = [[0.0, 0.5, -1.0], [2.0, -0.25, 1.5]]


@pytest.mark.task("14.4", points=2, hint="tanh element by element; backward: (1 - t**2) * out.grad, added (+=).")
def test_tanh(learner, reference):
    """tanh of a (2, 3) Tensor: values, op 'tanh', and the gradient (1 - t²)·G added to what A.grad held"""
    g = [[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]]
    got = learner.run(unary_op, "tanh", X_23, g, [[1.0] * 3] * 2)
    inputs = f"A = Tensor({X_23}); out = A.tanh(); out.grad = {g}; A.grad was all ones"
    _expect_tensor(got, "A.tanh()", inputs, "tanh", ["A"])
    data, grad = reference.compute(torch_values.tensor_unary, "tanh", X_23, g)
    expect_array(got["data"], data, "A.tanh().data vs torch.tanh", inputs)
    expect_array(got["grad"], [[1 + x for x in row] for row in grad], "A.grad", inputs)


@pytest.mark.task("14.4", points=2, hint="sum gives one number, shape (); every element receives out.grad.")
def test_sum(learner):
    """the sum of a (2, 3) Tensor: one number of shape (), op 'sum', and out.grad sent to every element"""
    got = learner.run(unary_op, "sum", X_23, 2.0)
    inputs = f"A = Tensor({X_23}); out = A.sum(); out.grad = 2.0"
    _expect_tensor(got, "A.sum()", inputs, "sum", ["A"])
    expect_array(got["data"], 2.75, "A.sum().data", inputs)
    expect_array(got["grad"], [[2.0] * 3] * 2, "A.grad", inputs)


@pytest.mark.hidden
@pytest.mark.task("14.4", points=2, hint="tanh and sum must hold for arrays of any shape.")
def test_tanh_and_sum_seeded(learner, reference):
    """seeded arrays of 0 to 3 axes, against PyTorch float64"""
    rng = random.Random(1404)
    cases = []
    for k in range(12):
        shape = tuple(rng.randint(1, 4) for _ in range(rng.randint(0, 3)))
        name = "tanh" if k % 2 else "sum"
        g = seeded_array(rng, shape if name == "tanh" else ())
        cases.append([name, seeded_array(rng, shape, -3, 3), g, seeded_array(rng, shape)])
    got = expect_list(learner.run(unary_ops, cases), len(cases), "the results")
    for (name, x, g, before), report in zip(cases, got, strict=True):
        inputs = f"A = Tensor({x}); out = A.{name}(); out.grad = {g}; A.grad was {before}"
        _expect_tensor(report, f"A.{name}()", inputs, name, ["A"])
        data, grad = reference.compute(torch_values.tensor_unary, name, x, g)
        expect_array(report["data"], data, f"A.{name}().data vs PyTorch", inputs)
        total = reference.compute(add_arrays, [grad], [before])[0]
        expect_array(report["grad"], total, "A.grad vs PyTorch", inputs)


# 14.5 backward

DIAMOND = [["a", []], ["b", [["a", 2.0]]], ["c", [["a", -1.0]]], ["d", [["b", 1.0], ["c", 3.0]]]]


def _weighted_grads(spec, root, shape):
    """The grad each node must end with: the root's is ones; each child receives weight · its user's grad."""
    import numpy as np

    grads = {name: np.zeros(shape) for name, _ in spec}
    grads[root] = np.ones(shape)
    for name, children in reversed(spec):
        for child, weight in children:
            grads[child] = grads[child] + weight * grads[name]
    return {name: g.tolist() for name, g in grads.items()}


def _check_backward(got, spec, root, shape, inputs, want):
    users = {name: [user for user, children in spec if any(c == name for c, _ in children)] for name, _ in spec}
    calls = expect_list(got["calls"], len(spec), "how many _backward calls (one per node)", inputs)
    expect_equal(sorted(calls), sorted(name for name, _ in spec), "the nodes whose _backward ran", inputs)
    expect_equal(calls[0], root, "the first _backward called", inputs)
    for i, name in enumerate(calls):
        late = [u for u in users[name] if u not in calls[:i]]
        expect(not late, f"when {name}._backward ran", f"after {users[name]}", f"before {late}", inputs)
    expect_array(got["grad_when_called"][root], [[1.0] * shape[1]] * shape[0], f"{root}.grad, the seed", inputs)
    for name, _ in spec:
        expect_array(got["grads"][name], want[name], f"{name}.grad", inputs)


@pytest.mark.task("14.5", points=2, hint="Seed the root's grad with ones of its shape; then the sweep of task 6.2.")
def test_backward_on_a_diamond(learner, reference):
    """a diamond of (2, 2) Tensors with written closures: seed of ones, each closure once, users before children"""
    got = learner.run(written_graph_backward, DIAMOND, "d", [2, 2])
    inputs = "d = f(b, c), b = f(a), c = f(a), Tensors of shape (2, 2); d.backward()"
    _check_backward(got, DIAMOND, "d", (2, 2), inputs, reference.compute(_weighted_grads, DIAMOND, "d", [2, 2]))


@pytest.mark.hidden
@pytest.mark.task("14.5", points=2, hint="backward must order any graph: every node after all the nodes that use it.")
def test_backward_seeded_graphs(learner, reference):
    """seeded graphs of 6 to 15 Tensors with shared nodes, and a chain of 5,000 under the default recursion limit"""
    rng = random.Random(1405)
    for _ in range(4):
        size, shape = rng.randint(6, 15), [rng.randint(1, 3), rng.randint(1, 3)]
        spec = [["n0", []]]
        for i in range(1, size):
            children = [i - 1, *rng.sample(range(i - 1), rng.randint(0, min(2, i - 1)))]  # every node reachable
            spec.append([f"n{i}", [[f"n{c}", round(rng.uniform(-2, 2), 3)] for c in children]])
        root = spec[-1][0]
        got = learner.run(written_graph_backward, spec, root, shape)
        inputs = f"graph {spec} of Tensors of shape {tuple(shape)}; {root}.backward()"
        want = reference.compute(_weighted_grads, spec, root, shape)
        _check_backward(got, spec, root, tuple(shape), inputs, want)
    got = learner.run(deep_chain_backward, 5000)
    inputs = "a chain of 5,000 Tensors, recursion limit 1000; root.backward()"
    expect_equal(got["error"], None, "error raised by backward()", inputs, note="no recursion: use your own stack")
    expect_equal(got["count"], 5000, "how many _backward calls", inputs)
    expect_equal(got["in_order"], True, "closures called from the root back to the first node", inputs)


# 14.6 the network

XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
YS = [1.0, -1.0, -1.0, 1.0]


def _check_network(learner, reference, seed, nin, nouts, xs, ys, inputs):
    scalar = reference.run(scalar_network, seed, nin, nouts, xs, ys)
    got = learner.run(tensor_network, scalar["weights"], scalar["biases"], xs, ys)
    _expect_tensor(got["out"], "model(x)", inputs)
    expect_equal(got["out"]["data"].get("shape"), [len(xs), nouts[-1]], "shape of model(x)", inputs)
    _expect_tensor(got["loss"], "squared_error(model(x), ys)", inputs)
    expect_equal(got["loss"]["data"].get("shape"), [], "shape of the loss (one number)", inputs)
    value = got["loss"]["data"]["values"]
    expect_close(value, scalar["loss"], "loss vs the scalar engine", inputs, rel=1e-9)
    want = reference.compute(torch_values.tensor_mlp, scalar["weights"], scalar["biases"], xs, ys)
    expect_close(value, want["loss"], "loss vs PyTorch float64", inputs, rel=1e-9)
    layers = len(nouts)
    for name in ("weight_grads", "bias_grads"):
        expect_list(got[name], layers, f"{name.replace('_', ' ')} (one per layer)", inputs)
    for i in range(layers):
        for name, what in (("weight_grads", f"W{i + 1}.grad"), ("bias_grads", f"b{i + 1}.grad")):
            expect_array(got[name][i], scalar[name][i], f"{what} vs the scalar engine", inputs, abs_tol=1e-12)
            expect_array(got[name][i], want[name][i], f"{what} vs PyTorch float64", inputs, abs_tol=1e-12)


@pytest.mark.task(
    "14.6", points=3, hint="Each layer: tanh(x @ W + b); the loss sums (prediction - target)² over the batch."
)
def test_network_matches_scalar_engine_and_pytorch(learner, reference):
    """lesson 11's MLP(3, [4, 4, 1]) as matrices: the loss and all 6 parameter gradients as the scalar engine's"""
    inputs = "MLP(3, [4, 4, 1]) from seed 1337 as TensorMLP.from_mlp; x = Tensor(XS), lesson 11's 4 examples"
    _check_network(learner, reference, 1337, 3, [4, 4, 1], XS, YS, inputs)


@pytest.mark.task("14.6", points=2, hint="Lesson 11's loop: forward, loss, zero_grad, backward, update; record floats.")
def test_training_matches_lesson_11(learner, reference):
    """20 steps at learning rate 0.05: the loss history of the scalar engine's train, step by step"""
    scalar = reference.run(scalar_network, 1337, 3, [4, 4, 1], XS, YS)
    got = learner.run(tensor_training, scalar["weights"], scalar["biases"], XS, YS, 20, 0.05)
    inputs = "TensorMLP of lesson 11's MLP (seed 1337); train_tensor_mlp(model, XS, YS, steps=20, learning_rate=0.05)"
    expect(got["history"] is not None, "type of the history", "list", got["type"], inputs)
    history = expect_list(got["history"], 20, "the loss history (one per step)", inputs)
    want = reference.run(scalar_training, 1337, 20, 0.05)
    for k, (g, w) in enumerate(zip(history, want, strict=True)):
        expect_close(g, w, f"loss at step {k} vs lesson 11's train", inputs, rel=1e-9)


@pytest.mark.hidden
@pytest.mark.task("14.6", points=2, hint="The network must work for any layer sizes and any batch size.")
def test_network_seeded_shapes(learner, reference):
    """seeded layer sizes and batches, against the scalar engine and PyTorch float64"""
    rng = random.Random(1406)
    for _ in range(3):
        nin, nouts = rng.randint(1, 4), [rng.randint(1, 5) for _ in range(rng.randint(1, 3))] + [1]
        n = rng.randint(1, 6)
        xs = [[rng.uniform(-2, 2) for _ in range(nin)] for _ in range(n)]
        ys = [rng.choice([-1.0, 1.0]) for _ in range(n)]
        seed = rng.randint(0, 10**6)
        inputs = f"MLP({nin}, {nouts}) from seed {seed} as TensorMLP; xs = {xs}, ys = {ys}"
        _check_network(learner, reference, seed, nin, nouts, xs, ys, inputs)


@pytest.mark.hidden
@pytest.mark.task("14.6", points=2, hint="train_tensor_mlp must follow the reference's run step by step.")
def test_training_seeded(learner, reference):
    """a seeded network and batch trained 15 steps, against the reference's loss history and parameters"""
    rng = random.Random(1407)
    nin, nouts, n = 2, [3, 1], 5
    xs = [[rng.uniform(-2, 2) for _ in range(nin)] for _ in range(n)]
    ys = [rng.choice([-1.0, 1.0]) for _ in range(n)]
    scalar = reference.run(scalar_network, 1408, nin, nouts, xs, ys)
    args = (scalar["weights"], scalar["biases"], xs, ys, 15, 0.1)
    got, want = learner.run(tensor_training, *args), reference.run(tensor_training, *args)
    inputs = f"TensorMLP of MLP(2, [3, 1]) from seed 1408; xs = {xs}, ys = {ys}; 15 steps at learning rate 0.1"
    expect(got["history"] is not None, "type of the history", "list", got["type"], inputs)
    history = expect_list(got["history"], 15, "the loss history (one per step)", inputs)
    for k, (g, w) in enumerate(zip(history, want["history"], strict=True)):
        expect_close(g, w, f"loss at step {k}", inputs, rel=1e-9)
    params = expect_list(got["params"], 4, "the parameters after training (W1, b1, W2, b2)", inputs)
    for k, (g, w) in enumerate(zip(params, want["params"], strict=True)):
        expect_array(g, w["values"], f"parameter {k} after training", inputs, rel=1e-9)
