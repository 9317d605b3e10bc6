"""The reference reproduces every number of the syllabus (shared/CURRICULUM.md)."""

from __future__ import annotations

import math

import pytest
import torch

from solutions import backprop_by_hand, classifier, derivatives, further, nn, tensor, torch_bridge, train
from solutions.engine import Value


def test_lesson_1_derivatives():
    assert derivatives.f(3.0) == 20.0
    assert f"{derivatives.forward_difference(derivatives.f, 3.0, h=1e-8):.8f}".startswith("14.00000009")
    assert derivatives.central_difference(derivatives.f, 2 / 3) == pytest.approx(0, abs=1e-6)
    assert derivatives.central_difference(derivatives.f, -3.0) == pytest.approx(-22)
    d = lambda a, b, c: a * b + c  # noqa: E731
    assert d(2, -3, 10) == 4.0
    partials = [derivatives.partial_derivative(d, [2.0, -3.0, 10.0], i, h=0.0001) for i in range(3)]
    assert partials == pytest.approx([-3, 2, 1], abs=1e-6)

    # forward error ~ h, central ~ h², until round-off wins for tiny h
    def errors(h):
        return (
            abs(derivatives.forward_difference(math.sin, 1.0, h) - math.cos(1.0)),
            abs(derivatives.central_difference(math.sin, 1.0, h) - math.cos(1.0)),
        )

    (f1, c1), (f2, c2) = errors(1e-2), errors(1e-3)
    assert 8 < f1 / f2 < 12 and 80 < c1 / c2 < 120
    assert errors(1e-15)[0] > errors(1e-8)[0]


def test_lessons_3_and_4_running_example():
    nodes = backprop_by_hand.running_example()
    assert [nodes[k].data for k in "abcedfL"] == [2.0, -3.0, 10.0, -6.0, 4.0, -2.0, -8.0]
    nodes["L"].backward()
    expected = {"L": 1.0, "f": 4.0, "d": -2.0, "c": -2.0, "e": -2.0, "a": 6.0, "b": -4.0}
    assert {k: v.grad for k, v in nodes.items()} == expected
    assert backprop_by_hand.hand_gradients(2.0, -3.0, 10.0, -2.0) == expected
    L = lambda **kw: backprop_by_hand.running_example(**kw)["L"]  # noqa: E731
    inputs = {"a": 2.0, "b": -3.0, "c": 10.0, "f": -2.0}
    for leaf in inputs:
        assert backprop_by_hand.numerical_gradient(L, inputs, leaf) == pytest.approx(expected[leaf], abs=1e-6)
    backprop_by_hand.ascent_step([nodes[k] for k in "abcf"])
    assert round(L(**{k: nodes[k].data for k in "abcf"}).data, 6) == -7.286496


def lesson_5_neuron():
    x1, x2 = Value(2.0, label="x1"), Value(0.0, label="x2")
    w1, w2 = Value(-3.0, label="w1"), Value(1.0, label="w2")
    b = Value(6.8813735870195432, label="b")
    x1w1, x2w2 = x1 * w1, x2 * w2
    n = x1w1 + x2w2 + b
    return n, {"x1": x1, "x2": x2, "w1": w1, "w2": w2, "b": b, "x1w1": x1w1, "x2w2": x2w2}


def test_lesson_5_neuron():
    n, v = lesson_5_neuron()
    assert round(n.data, 4) == 0.8814
    o = n.tanh()
    assert o.data == pytest.approx(1 / math.sqrt(2))
    o.backward()
    assert n.grad == pytest.approx(0.5)
    grads = {k: x.grad for k, x in v.items()}
    assert grads == pytest.approx({"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5, "x1w1": 0.5, "x2w2": 0.5})


def test_lesson_6_backward_survives_a_million_deep_chain():
    x = Value(1.0)
    y = x
    for _ in range(1_000_000):
        y = y.tanh()
    y.backward()
    assert 0 < x.grad < 1


def test_lesson_7_accumulation():
    a = Value(3.0)
    b = a + a
    b.backward()
    assert a.grad == 2.0
    a, b = Value(-2.0), Value(3.0)
    d, e = a * b, a + b
    f = d * e
    f.backward()
    assert (d.data, e.data, f.data, a.grad, b.grad) == (-6.0, 1.0, -6.0, -3.0, -8.0)
    a, b = Value(-2.0), Value(3.0)
    for expected in (3.0, 6.0):  # a second backward without zeroing doubles the grads
        (a * b).backward()
        assert a.grad == expected


def headline(lib_value, relu):
    a, b = lib_value(-4.0), lib_value(2.0)
    c = a + b
    d = a * b + b**3
    c = c + c + 1
    c = c + 1 + c + (-a)
    d = d + d * 2 + relu(b + a)
    d = d + 3 * d + relu(b - a)
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    return a, b, g


def test_lesson_8_headline_and_lesson_9_pytorch_agreement():
    a, b, g = headline(Value, Value.relu)
    g.backward()
    assert (round(g.data, 4), round(a.grad, 4), round(b.grad, 4)) == (24.7041, 138.8338, 645.5773)
    ta, tb, tg = headline(lambda x: torch.tensor(x, dtype=torch.double, requires_grad=True), torch.relu)
    tg.backward()
    assert (
        abs(g.data - tg.item()) < 1e-6 and abs(a.grad - ta.grad.item()) < 1e-6 and abs(b.grad - tb.grad.item()) < 1e-6
    )


def test_lesson_8_tanh_from_exp_matches_tanh():
    n1, v1 = lesson_5_neuron()
    o1 = n1.tanh()
    o1.backward()
    n2, v2 = lesson_5_neuron()
    e = (2 * n2).exp()
    o2 = (e - 1) / (e + 1)
    o2.backward()
    assert o2.data == pytest.approx(o1.data)
    assert {k: x.grad for k, x in v2.items()} == pytest.approx({k: x.grad for k, x in v1.items()})


def test_lesson_9_sanity_expression_matches_pytorch():
    def sanity(x, relu):
        z = 2 * x + 2 + x
        q = relu(z) + z * x
        h = relu(z * z)
        return h + q + q * x

    x = Value(-4.0)
    y = sanity(x, Value.relu)
    y.backward()
    tx = torch.tensor(-4.0, dtype=torch.double, requires_grad=True)
    ty = sanity(tx, torch.relu)
    ty.backward()
    assert (y.data, x.grad) == (ty.item(), tx.grad.item()) == (-20.0, 46.0)
    o, grads = torch_bridge.torch_neuron(2.0, 0.0, -3.0, 1.0, 6.8813735870195432)
    assert o == pytest.approx(1 / math.sqrt(2)) and grads == pytest.approx(
        {"x1": -1.5, "w1": 1.0, "x2": 0.5, "w2": 0.0, "b": 0.5}
    )
    x = torch.randn(5, dtype=torch.double, requires_grad=True, generator=torch.Generator().manual_seed(0))
    assert torch.autograd.gradcheck(torch_bridge.Tanh.apply, (x,))


def test_lesson_10_parameter_counts():
    assert len(nn.MLP(3, [4, 4, 1]).parameters()) == 41
    assert len(nn.MLP(2, [16, 16, 1]).parameters()) == 337


def test_lesson_11_loss_falls_to_near_zero():
    model = train.lesson_model()
    history = train.train(model, train.XS, train.YS, steps=40, learning_rate=0.05)
    assert 1 < history[0] < 10 and history[-1] < 0.05
    predictions = [model(x).data for x in train.XS]
    assert all(abs(p - y) < 0.2 for p, y in zip(predictions, train.YS, strict=True))


def test_lesson_12_demo_reaches_full_training_accuracy(trained_classifier):
    """The lesson-12 demo itself: 100 steps, full batch (about a minute, once for the suite: conftest.py)."""
    X, y = classifier.moons()
    model, history = trained_classifier
    assert history[-1][1] >= 0.99
    assert history[-1][0] < history[0][0] / 10
    # the held-out split: a second draw of the same moons, disjoint from the 100 training points
    X_test, y_test = classifier.held_out_moons()
    assert len(X_test) == 200 and not {tuple(x) for x in X} & {tuple(x) for x in X_test}
    assert classifier.accuracy([model(x) for x in X_test], y_test) >= 0.95


def test_lesson_13_bonus_cross_entropy_is_stable_and_momentum_trains():
    """Bonus challenges: cross-entropy of scores like 1000 without overflow; momentum fits lesson 11's data."""
    logits = [Value(1000.0), Value(0.0), Value(-1000.0)]
    loss = further.cross_entropy(logits, 2)
    loss.backward()
    assert loss.data == 2000.0 and [s.grad for s in logits] == [1.0, 0.0, -1.0]
    assert [p.data for p in further.softmax([Value(1000.0), Value(1000.0)])] == [0.5, 0.5]
    model = train.lesson_model()
    opt = further.Momentum(model.parameters(), lr=0.05, beta=0.9)
    history = []
    for _ in range(20):
        loss = train.squared_error_loss([model(x) for x in train.XS], train.YS)
        opt.zero_grad()
        loss.backward()
        opt.step()
        history.append(loss.data)
    assert history[-1] < 0.05 < 1 < history[0]


def test_lesson_14_bonus_tensor_network_is_the_scalar_network():
    """Lesson 11's network as matrices: the same loss and gradients as the scalar engine, the same training run."""
    scalar, tensors = train.lesson_model(), tensor.lesson_model()
    loss = train.squared_error_loss([scalar(x) for x in train.XS], train.YS)
    loss.backward()
    tloss = tensor.squared_error(tensors(tensor.Tensor(train.XS)), train.YS)
    tloss.backward()
    assert tloss.shape == () and float(tloss.data) == pytest.approx(loss.data, rel=1e-12)
    for layer, w, b in zip(scalar.layers, tensors.weights, tensors.biases, strict=True):
        want_w = [[n.w[i].grad for n in layer.neurons] for i in range(w.shape[0])]
        assert w.grad.shape == (len(want_w), len(layer.neurons)) and b.grad.shape == (1, len(layer.neurons))
        assert w.grad.ravel().tolist() == pytest.approx([g for row in want_w for g in row], rel=1e-12, abs=1e-14)
        assert b.grad.ravel().tolist() == pytest.approx([n.b.grad for n in layer.neurons], rel=1e-12, abs=1e-14)
    history = tensor.train_tensor_mlp(tensor.lesson_model(), train.XS, train.YS, steps=20, learning_rate=0.05)
    assert history == pytest.approx(train.train(train.lesson_model(), train.XS, train.YS, 20, 0.05), rel=1e-12)
