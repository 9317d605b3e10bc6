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

from solutions import train
from solutions.nn import MLP

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
