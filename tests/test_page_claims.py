"""What the pages say about the runs they show is true of those runs.

Some sections of the course measure something at build time (how the gradient changes with depth, which units of
lesson 12's network are dead and where they fire, a gradient check that fails at a kink) and then say in words what
the numbers show. The numbers come from the pages' own blocks (kept in `course/_build/executed/`, which
`tests/test_site.py` holds to the pages' current code); the words are written by hand. Each test here computes the
run again, with the reference for what the page runs on it and with NumPy where it only evaluates, then checks that
the page's committed output prints what it gets, and that each sentence the page says about it is on the page and
true of it.
"""

from __future__ import annotations

import json
import math
import random
import statistics
from pathlib import Path

import numpy as np
import pytest
import torch

from solutions import classifier, train
from solutions.engine import Value
from solutions.nn import MLP
from solutions.tensor import Tensor

COURSE = Path(__file__).resolve().parent.parent / "course"


def prose(page: str) -> str:
    """The page's Markdown, with every run of white space one space (a sentence may wrap anywhere)."""
    return " ".join((COURSE / page).read_text().split())


def says(page: str, *sentences: str) -> None:
    text = prose(page)
    for sentence in sentences:
        assert " ".join(sentence.split()) in text, f"{page} no longer says: {sentence}"


def printed(page: str, marker: str) -> str:
    """What the page's one block whose code contains `marker` printed, as committed."""
    results = json.loads((COURSE / "_build" / "executed" / page.replace(".md", ".json")).read_text())["results"]
    found = [r["output"] for r in results if marker in r.get("code", "")]
    assert len(found) == 1, f"{page}: {len(found)} committed blocks contain {marker!r}"
    return found[0]


def layers_of(model) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each layer of a reference MLP as (W, b), row j of W holding neuron j's weights."""
    return [
        (np.array([[w.data for w in n.w] for n in layer.neurons]), np.array([n.b.data for n in layer.neurons]))
        for layer in model.layers
    ]


# ---------------------------------------------------------------- lesson 10: depth


def first_layer_gradient(act: str, depth: int, scale: float, seed: int, width: int = 16) -> float:
    """The page's measurement, backward done with NumPy: the mean |grad| of the first layer's weights of the reference
    MLP(width, [width] * depth + [1]) drawn from `seed`, its weights times `scale`, at the input drawn after them."""
    random.seed(seed)
    model = MLP(width, [width] * depth + [1], act=act, linear_output=True)
    x = np.array([random.uniform(-1, 1) for _ in range(width)])
    layers = [(w * scale, b) for w, b in layers_of(model)]
    inputs, slopes, h = [], [], x
    for w, b in layers[:-1]:
        z = w @ h + b
        inputs.append(h)
        h = np.tanh(z) if act == "tanh" else np.maximum(z, 0.0)
        slopes.append(1 - h**2 if act == "tanh" else (z > 0).astype(float))
    delta = layers[-1][0][0]  # d out / d h of the last hidden layer (the output neuron is linear)
    for k in range(len(slopes) - 1, 0, -1):
        delta = layers[k][0].T @ (delta * slopes[k])
    return float(np.mean(np.abs(np.outer(delta * slopes[0], inputs[0]))))


def test_lesson_10_depth_makes_gradients_vanish_or_explode():
    depths, scales = [1, 2, 4, 8, 16, 32], {"lecture": 1.0, "He": math.sqrt(6 / 16)}
    medians = {
        (name, act): [statistics.median(first_layer_gradient(act, d, scale, s) for s in range(10)) for d in depths]
        for name, scale in scales.items()
        for act in ("tanh", "relu")
    }
    out = printed("10-nn.md", "def first_layer_gradient")
    for (name, act), row in medians.items():
        assert f"  {act:12} " + "".join(f"{g:9.3g}" for g in row) in out, (name, act, row)

    def factor(row):
        return (row[-1] / row[0]) ** (1 / (depths[-1] - depths[0]))

    lecture_tanh, lecture_relu = medians["lecture", "tanh"], medians["lecture", "relu"]
    he_tanh, he_relu = medians["He", "tanh"], medians["He", "relu"]
    says("10-nn.md", "the ReLU network's gradient grows with every layer it passes. It explodes.")
    assert all(a < b for a, b in zip(lecture_relu[:-1], lecture_relu[1:], strict=True)) and factor(lecture_relu) > 1.3
    says("10-nn.md", "its gradient grows only slowly")
    assert 1 < factor(lecture_tanh) < 1.2
    says("10-nn.md", "ReLU's gradient shrinks too, but only a little per layer; the tanh network's shrinks faster")
    assert factor(he_tanh) < factor(he_relu) < 1 and factor(he_relu) > 0.9
    says("10-nn.md", "after 32 layers it is more than ten times smaller than ReLU's: the vanishing gradient")
    assert he_tanh[-1] * 10 < he_relu[-1]


# ---------------------------------------------------------------- lesson 11: too large a step


def test_lesson_11_names_the_unstable_and_the_exploding_step():
    def run(model, rate, steps):
        losses, grads = [], []
        for _ in range(steps):
            loss = train.squared_error_loss([model(x) for x in train.XS], train.YS)
            model.zero_grad()
            loss.backward()
            grads.append(max(abs(p.grad) for p in model.parameters()))
            train.sgd_step(model.parameters(), rate)
            losses.append(loss.data)
        return losses, grads, max(abs(p.data) for p in model.parameters())

    table = printed("11-training.md", 'print("lr      loss: step 0')
    capped = {}
    for rate in (0.05, 0.5, 2.0):
        capped[rate] = losses, grads, largest_w = run(train.lesson_model(), rate, 60)
        line = f"{rate:<4}  {losses[0]:14.4f} {losses[1]:8.4f} {losses[-1]:8.4f} {largest_w:13.2f} {grads[-1]:13.4f}"
        assert line in table, line
    losses, grads, largest_w = capped[2.0]
    says("11-training.md", "At `2.0` the very first step *raises* the loss")
    assert losses[1] > losses[0] and all(capped[r][0][1] < capped[r][0][0] for r in (0.05, 0.5))
    says("11-training.md", "the weights end far outside the range they were drawn from")
    assert largest_w > 10
    says("11-training.md", "once the neurons sit on their flat tails the gradient is gone and the loss stays")
    assert grads[-1] < 1e-6 and abs(losses[-1] - losses[-2]) < 1e-9

    shown = [0, 1, 2, 5, 10, 20, 29]
    uncapped = printed("11-training.md", "uncapped = MLP(3, [4, 4, 1], linear_output=True)")
    runs = {}
    for rate in (0.05, 0.2):
        random.seed(1337)
        runs[rate] = losses, grads, _ = run(MLP(3, [4, 4, 1], linear_output=True), rate, 30)
        assert f"{f'lr {rate} loss':14} " + "".join(f"{losses[k]:9.3g}" for k in shown) in uncapped
        assert f"{'largest |grad|':14} " + "".join(f"{grads[k]:9.3g}" for k in shown) in uncapped
    says("11-training.md", "At `0.05` the uncapped network trains well: its loss falls to nearly nothing.")
    assert runs[0.05][0][-1] < 1e-3
    says("11-training.md", "its loss and its gradients grow by orders of magnitude within a few dozen steps")
    assert runs[0.2][0][-1] > 1e20 * runs[0.2][0][0] and runs[0.2][1][-1] > 1e20 * runs[0.2][1][0]
    says("11-training.md", "Carried on long enough, the numbers grow too large for a float: a loss of `inf` or `nan`")
    random.seed(1337)
    try:  # which comes first depends on the order of the sums, which depends on the order of sets
        overflowed = not math.isfinite(run(MLP(3, [4, 4, 1], linear_output=True), 0.2, 200)[0][-1])
    except OverflowError:
        overflowed = True
    assert overflowed


# ---------------------------------------------------------------- lesson 12: dead units, kinks


@pytest.fixture(scope="module")
def moons():
    return classifier.moons()


def hidden(layers, points: np.ndarray, off=((), ())) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Both hidden layers' outputs and the score of a ReLU MLP(2, [16, 16, 1]) at each point, the units `off` at 0."""
    (w1, b1), (w2, b2), (w3, b3) = layers
    h1 = np.maximum(points @ w1.T + b1, 0.0)
    h1[:, list(off[0])] = 0.0
    h2 = np.maximum(h1 @ w2.T + b2, 0.0)
    h2[:, list(off[1])] = 0.0
    return h1, h2, h2 @ w3[0] + b3[0]


def dead(layers, points) -> list[list[int]]:
    h1, h2, _ = hidden(layers, np.array(points))
    return [[j for j in range(16) if not (h[:, j] > 0).any()] for h in (h1, h2)]


def test_lesson_12_dead_units_at_the_start_and_after_training(trained_classifier, moons):
    X, _ = moons
    at_start, trained = dead(layers_of(classifier.classifier_model()), X), dead(layers_of(trained_classifier[0]), X)
    out = printed("12-classifier.md", "at_start, trained = dead_units(")
    for k, name in enumerate(["first", "second"]):
        assert f"{name} hidden layer: dead at the start {at_start[k]}, after training {trained[k]}" in out
    assert f"{sum(map(len, at_start))} of 32 at the start, {sum(map(len, trained))} of 32 after training" in out
    says(
        "12-classifier.md",
        "On the training points those units output 0",
        "Only the units listed at the start were dead before training began, drawn that way; the others died "
        "*during* training.",
    )
    assert all(set(a) <= set(t) for a, t in zip(at_start, trained, strict=True))
    assert sum(map(len, trained)) > 2 * sum(map(len, at_start)) > 0


def first_steps(moons, start_rate: float) -> list[tuple[float, float, list[list[int]]]]:
    """The run's first five steps with the reference, its rates scaled to start at `start_rate`:
    (rate, loss before the step, dead units after it)."""
    X, y = moons
    model, steps = classifier.classifier_model(), []
    for k in range(5):
        rate = start_rate * (1.0 - 0.9 * k / 100)
        loss, _ = classifier.train_step(model, X, y, rate)
        steps.append((rate, loss, dead(layers_of(model), X)))
    return steps


def test_lesson_12_the_first_large_steps_killed_the_units(trained_classifier, moons):
    X, _ = moons
    model, history = trained_classifier
    fast, slow = first_steps(moons, 1.0), first_steps(moons, 0.1)
    assert [loss for _, loss, _ in fast] == pytest.approx([loss for loss, _ in history[:5]], rel=1e-9)  # the same run
    for steps, call in ((fast, "first_steps(1.0)"), (slow, "first_steps(0.1)")):
        out = printed("12-classifier.md", call)
        for k, (rate, loss, (first, second)) in enumerate(steps):
            assert f"{k:4}  {rate:.3f}  {loss:11.4f}   {str(first):18} {second}" in out
    at_start, trained = dead(layers_of(classifier.classifier_model()), X), dead(layers_of(model), X)

    says("12-classifier.md", "By the end of the first two steps, the two largest of the run, the first layer has every")
    assert fast[1][2][0] == trained[0] != at_start[0]
    says("12-classifier.md", "the loss before the second step is higher than before the first")
    assert fast[1][1] > fast[0][1]
    says("12-classifier.md", "Such a death is for good.")
    firsts = [set(at_start[0])] + [set(first) for _, _, (first, _) in fast]
    assert all(a <= b for a, b in zip(firsts[:-1], firsts[1:], strict=True)) and firsts[-1] <= set(trained[0])
    says("12-classifier.md", "the dead units counted above mostly died in its first two steps")
    died = [(k, j) for k in (0, 1) for j in trained[k] if j not in at_start[k]]
    assert 2 * sum(j in fast[1][2][k] for k, j in died) > len(died)
    says("12-classifier.md", "A second-layer unit can come back", "its list above goes up and down")
    seconds = [set(second) for _, _, (_, second) in fast]
    assert any(a - b for a, b in zip(seconds[:-1], seconds[1:], strict=True))
    says("12-classifier.md", "The first layer loses no unit this time, and fewer units die in all.")
    assert all(first == at_start[0] for _, _, (first, _) in slow)
    assert sum(map(len, slow[-1][2])) < sum(map(len, fast[-1][2]))


def test_lesson_12_dead_units_fire_off_the_training_points(trained_classifier, moons):
    X, _ = moons
    layers = layers_of(trained_classifier[0])
    off = dead(layers, X)
    n = 30  # the page's grid
    gx, gy = np.meshgrid(np.linspace(-1.6, 2.6, n), np.linspace(-1.2, 1.6, n))
    grid = np.c_[gx.ravel(), gy.ravel()]
    X_held, _ = classifier.held_out_moons()
    grid_h, held_h = hidden(layers, grid), hidden(layers, np.array(X_held))
    out = printed("12-classifier.md", "def score_without(")
    woken_held = np.zeros(len(X_held), dtype=bool)
    for k, name in enumerate(["first", "second"]):
        for j in off[k]:
            on_grid, on_held = int((grid_h[k][:, j] > 0).sum()), int((held_h[k][:, j] > 0).sum())
            woken_held |= held_h[k][:, j] > 0
            assert f"  {name} layer, unit {j:2}: on {on_grid:3} of {n * n} grid points, {on_held} of 200" in out
    flipped = int(((hidden(layers, grid, off)[2] > 0) != (grid_h[2] > 0)).sum())
    held_flipped = int(((hidden(layers, np.array(X_held), off)[2] > 0) != (held_h[2] > 0)).sum())
    assert f"switched off, they change the sign of {flipped} grid points and of {held_flipped} held-out" in out

    says("12-classifier.md", '"Dead on the training points" is not dead everywhere', "some of these units do fire")
    assert any((grid_h[k][:, j] > 0).any() for k in (0, 1) for j in off[k])
    says("12-classifier.md", "No training point lies there; the boundary passes through it.")
    says("12-classifier.md", "switching them off moves the boundary there, by the grid points marked")
    assert flipped > 0
    says("12-classifier.md", "The held-out points barely reach that part, and none of their answers depends on it.")
    assert 0 < woken_held.sum() <= 5 and held_flipped == 0


def test_lesson_12_a_gradient_check_fails_only_where_a_nudge_crosses_a_kink(trained_classifier, moons):
    X, y = moons
    model = trained_classifier[0]
    layers = layers_of(model)
    margins = hidden(layers, np.array(X))[2] * np.array(y)
    nearest = sorted(range(len(X)), key=lambda i: abs(margins[i] - 1))[:2]
    points, labels = np.array([X[i] for i in nearest]), np.array([y[i] for i in nearest], dtype=float)

    loss = classifier.hinge_loss([model(list(p)) for p in points], [int(v) for v in labels])
    loss = loss + classifier.l2_penalty(model.parameters())
    params = model.parameters()
    saved = [p.grad for p in params]
    for p in params:
        p.grad = 0.0
    loss.backward()
    analytic = np.array([p.grad for p in params])
    for p, g in zip(params, saved, strict=True):
        p.grad = g
    theta = np.array([p.data for p in params])
    shapes = [(w.shape, b.shape) for w, b in layers]

    def unpack(vector):  # parameters() order: layer by layer, neuron by neuron, weights then bias
        out, at = [], 0
        for (rows, cols), _ in shapes:
            block = vector[at : at + rows * (cols + 1)].reshape(rows, cols + 1)
            out.append((block[:, :cols], block[:, cols]))
            at += rows * (cols + 1)
        return out

    def loss_and_sides(vector):
        h1, h2, scores = hidden(unpack(vector), points)
        hinge = 1 - labels * scores
        sides = np.concatenate([(h1 > 0).ravel(), (h2 > 0).ravel(), hinge > 0])
        return np.maximum(hinge, 0).mean() + 1e-4 * (vector**2).sum(), sides

    out = printed("12-classifier.md", "def gradient_check(")
    kinks = printed("12-classifier.md", "def crosses_a_kink(")
    assert f"margins y·s of the two points: {[round(float(margins[i]), 4) for i in nearest]}" in out
    failed = {}
    for h in (1e-5, 1e-2):
        errors, crossed = [], []
        for i in range(len(theta)):
            nudge = np.zeros_like(theta)
            nudge[i] = h
            (up, up_sides), (down, down_sides) = loss_and_sides(theta + nudge), loss_and_sides(theta - nudge)
            numerical = (up - down) / (2 * h)
            size = max(abs(analytic[i]), abs(numerical))
            errors.append(abs(analytic[i] - numerical) / size if size else 0.0)
            crossed.append(bool((up_sides != down_sides).any()))
        failed[h] = [c for e, c in zip(errors, crossed, strict=True) if e > 1e-4]
        assert f"h = {h:g}: worst relative error" in out
        assert f"{len(failed[h])} of {len(theta)} parameters above 1e-4" in out
    says("12-classifier.md", "Nothing is wrong with `backward()` at $h = 10^{-2}$.")
    assert not failed[1e-5] and failed[1e-2]
    says("12-classifier.md", "for every parameter that failed, some ReLU")
    assert all(failed[1e-2])
    assert f"h = 0.01: {len(failed[1e-2])} of the {len(failed[1e-2])} that failed cross a kink" in kinks

    corner = printed("12-classifier.md", "s = Value(1.0)")
    s = Value(1.0)
    classifier.hinge_loss([s], [+1]).backward()
    up, down = (classifier.hinge_loss([Value(1.0 + step)], [+1]).data for step in (1e-5, -1e-5))
    numerical = (up - down) / 2e-5
    assert s.grad == 0.0 and numerical == pytest.approx(-0.5)
    assert "backward 0.0, central difference -0.5000, relative error 1.0" in corner


# ---------------------------------------------------------------- lesson 9: control flow, detach


def test_lesson_9_control_flow_and_a_stopped_gradient():
    def newton_sqrt(a, number):
        y, steps = (a + 1) / 2, 0
        while abs(number(y) ** 2 - number(a)) > 1e-12 * number(a):
            y, steps = (y + a / y) / 2, steps + 1
        return y, steps

    a = Value(2.0)
    y, steps = newton_sqrt(a, lambda v: v.data)
    y.backward()
    at = torch.tensor(2.0, dtype=torch.double, requires_grad=True)
    newton_sqrt(at, lambda t: t.item())[0].backward()
    out = printed("09-pytorch.md", "def newton_sqrt(")
    assert f"sqrt(2) in {steps} steps: {y.data:.12f}" in out
    exact = 1 / (2 * math.sqrt(2))
    assert f"dy/da: ours {a.grad:.12f}   PyTorch {at.grad.item():.12f}   1/(2 sqrt(2)) {exact:.12f}" in out
    says("09-pytorch.md", "it agrees with the derivative of $\\sqrt{a}$, $1/(2\\sqrt{a})$, in every digit printed")
    assert abs(a.grad - exact) < 5e-13 and abs(at.grad.item() - a.grad) < 5e-13
    assert "bent at x = +3.0: ours +6.0   PyTorch +6.0" in out and "bent at x = -3.0: ours -2.0   PyTorch -2.0" in out

    def derivative(stop: bool) -> tuple[float, float]:
        x = Value(2.0)
        y = x * x
        (x * (Value(y.data) if stop else y)).backward()
        return x.grad, y.grad

    out = printed("09-pytorch.md", "def detach(")
    (plain, y_plain), (stopped, y_stopped) = derivative(False), derivative(True)
    assert (plain, stopped, y_stopped) == (12.0, 4.0, 0.0)
    assert f"x * y          dz/dx: ours {plain}   PyTorch {plain}   y.grad {y_plain}" in out
    assert f"x * detach(y)  dz/dx: ours {stopped}   PyTorch {stopped}   y.grad {y_stopped}" in out
    says("09-pytorch.md", "Detached, $y$ receives nothing (its `grad` stays 0)")

    # the exercise: x · detach(x) + detach(x · x) at x = 3, and the same without the detaches
    x = Value(3.0)
    (x * Value(x.data) + Value((x * x).data)).backward()
    whole = Value(3.0)
    (whole * whole + whole * whole).backward()
    says("09-pytorch.md", "the derivative is 3", "$4x = 12$")
    assert (x.grad, whole.grad) == (3.0, 12.0)


# ---------------------------------------------------------------- lesson 14: a seed that is not all ones


def test_lesson_14_a_seed_v_gives_the_vector_jacobian_product():
    A = np.array([[1.0, -1.0, 0.5], [0.5, 2.0, -1.0], [-0.5, 0.0, 1.0]])
    x0, v = np.array([[0.3, -0.2, 0.1]]), np.array([[1.0, -2.0, 0.5]])

    def seeded(seed):
        x = Tensor(x0)
        y = (x @ Tensor(A)).tanh()
        (y * Tensor(seed)).sum().backward()
        return x.grad

    xt = torch.tensor(x0, requires_grad=True)
    torch.tanh(xt @ torch.tensor(A)).backward(gradient=torch.tensor(v))
    jacobian = (1 - np.tanh(x0 @ A) ** 2).T * A.T  # row i: d y_i / d x, by hand
    assert seeded(v) == pytest.approx(xt.grad.numpy(), abs=1e-14)
    assert seeded(v) == pytest.approx(v @ jacobian, abs=1e-14)
    out = printed("14-tensors.md", "def gradient_of_x(")
    for label, value in (("ours, seed v:", seeded(v)), ("PyTorch, gradient=v:", xt.grad.numpy())):
        assert f"{label:22} " + str(np.round(value, 6).tolist()) in out
    assert f"{'v @ J, J row by row:':22} " + str(np.round(v @ jacobian, 6).tolist()) in out
