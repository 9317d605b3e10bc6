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
