"""Lesson 12 · A real classifier (tasks 12.1 to 12.4).

The learner's classifier.py runs in the worker over the reference engine and
nn; in the checks of 12.4 its `hinge_loss`, `l2_penalty` and `accuracy` are the
reference's. The training checks use small seeded runs on the grader's own
two-moons points (made here with `random.Random`, so no scikit-learn import),
compared step by step with the same scenario run here over the reference
(`reference.run`), on an identically seeded model.

Each training step leaves a graph full of reference cycles, and the reference
calls `gc.collect()` once per step; a full collection walks every object of the
process (PyTorch included, on the trusted side), which would cost far more than
the step itself. The training scenarios therefore run inside
`collecting_only_new_objects`, which freezes the objects alive before the run
(`gc.freeze`) so that collections only walk what the run creates. It changes
no result.

Longer than the grader's other files on purpose: a lesson's checks live in one file, each scenario next to the
judgements that read it, as every lesson's do.
"""

import json
import math
import random
import weakref

import pytest

from autograder.kit import torch_values
from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.worker.scenario import (
    collecting_only_new_objects,
    data_of,
    headline_expression,
    loss_report,
    sanity_expression,
    scenario,
    sweep,
    type_name,
)

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def hinge(impl, scores, labels, gradient=True):
    """hinge_loss over Values made from `scores`: the loss and, through the grader's sweep, each score's grad."""
    return loss_report(impl, impl.classifier.hinge_loss, scores, labels, gradient=gradient)


@scenario
def l2(impl, datas, alpha):
    """l2_penalty over Values made from `datas` (with its default alpha when `alpha` is None), and each grad."""
    ps = [impl.Value(d) for d in datas]
    pen = impl.classifier.l2_penalty(ps) if alpha is None else impl.classifier.l2_penalty(ps, alpha)
    is_value = isinstance(pen, impl.Value)
    if is_value:
        sweep(pen)
    return {
        "is_value": is_value,
        "type": type_name(pen),
        "data": data_of(pen),
        "grads": [p.grad for p in ps] if is_value else None,
    }


@scenario
def accuracy_of(impl, scores, labels):
    """`accuracy` of the scores as Values, with the scores (a graded run draws them afresh: the share is the same)."""
    return {"accuracy": impl.classifier.accuracy([impl.Value(s) for s in scores], labels), "scores": scores}


@scenario
def moons_model(impl, seed, hidden):
    """MLP(2, [*hidden, 1]) with ReLU hidden units and a linear score, after random.seed(seed)."""
    random.seed(seed)
    return impl.nn.MLP(2, [*hidden, 1], act="relu", linear_output=True)


@scenario
def train_step_run(impl, X, y, model_seed, hidden, learning_rate, leftover_grad=None):
    """One train_step on a seeded model (whose grads may hold leftovers): what it returned, the parameters after."""

    def run():
        model = moons_model(impl, model_seed, hidden)
        if leftover_grad is not None:
            for p in model.parameters():
                p.grad = leftover_grad
        result = impl.classifier.train_step(model, X, y, learning_rate)
        return {"result": result, "params": [p.data for p in model.parameters()]}

    return collecting_only_new_objects(run)


@scenario
def grader_steps(impl, X, y, model_seed, hidden, rates):
    """The grader's own steps, one per learning rate in `rates`, built from classifier.py's pieces.

    Each entry is [loss, accuracy, hinge loss alone], all of the scores before
    the step's update. Run over the reference only, as an oracle.
    """

    def run():
        model = moons_model(impl, model_seed, hidden)
        history = []
        for lr in rates:
            scores = [model(x) for x in X]
            hinge_only = impl.classifier.hinge_loss(scores, y)
            loss = hinge_only + impl.classifier.l2_penalty(model.parameters())
            for p in model.parameters():
                p.grad = 0.0
            sweep(loss)
            for p in model.parameters():
                p.data -= lr * p.grad
            history.append([loss.data, impl.classifier.accuracy(scores, y), hinge_only.data])
        return {"history": history, "params": [p.data for p in model.parameters()]}

    return collecting_only_new_objects(run)


@scenario
def classifier_run(impl, X, y, model_seed, hidden, steps, batch_size=None, seed=0):
    """train_classifier on a seeded model: the history, the parameters and scores after, and the global random state."""

    def run():
        model = moons_model(impl, model_seed, hidden)
        kwargs = {} if batch_size is None else {"batch_size": batch_size, "seed": seed}
        state = random.getstate()
        history = impl.classifier.train_classifier(model, X, y, steps, **kwargs)
        kept = random.getstate() == state
        return {
            "type": type_name(history),
            "history": history,
            "params": [p.data for p in model.parameters()],
            "scores": [data_of(model(x)) for x in X],
            "random_state_kept": kept,
        }

    return collecting_only_new_objects(run)


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------


def _number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _shown(x):
    """A returned thing as the learner would name it (the worker turns a Value into a marker)."""
    if isinstance(x, dict) and "$type" in x:
        return f"{x['$type']}: {x.get('$repr', '')}"
    return f"{type(x).__name__}: {x!r}"


# --- 12.1 hinge_loss ------------------------------------------------------------------------------------------------


def _check_hinge(learner, scores, labels, inputs, gradient=True):
    got = learner.run(hinge, scores, labels, gradient)
    expect(got["is_value"], "type of hinge_loss(scores, labels)", "Value", got["type"], inputs)
    n = len(scores)
    expected = sum(max(0.0, 1 - y * s) for s, y in zip(scores, labels, strict=True)) / n
    expect_close(got["data"], expected, "hinge_loss(scores, labels).data", inputs, rel=1e-9)
    if gradient:
        for i, (s, y) in enumerate(zip(scores, labels, strict=True)):
            expect_close(
                got["grads"][i],
                -y / n if 1 - y * s > 0 else 0.0,
                f"scores[{i}].grad after loss.backward()",
                inputs,
                rel=1e-9,
                abs_tol=1e-12,
                note="-y/n while the margin is violated (1 - y·score > 0), 0 once it is met",
            )


@pytest.mark.task(
    "12.1", points=2, hint="Average relu(1 - y * score) over the examples: sum them, then multiply by 1 / n."
)
def test_hinge_loss_value(learner):
    """the mean of relu(1 - y·score) on hand values, as a Value"""
    _check_hinge(
        learner,
        [2.0, 0.5, -0.3, -1.5],
        [1, 1, 1, -1],
        "scores = [Value(2.0), Value(0.5), Value(-0.3), Value(-1.5)], labels = [1, 1, 1, -1]",
        gradient=False,
    )
    _check_hinge(learner, [0.25], [-1], "scores = [Value(0.25)], labels = [-1]", gradient=False)


@pytest.mark.task(
    "12.1",
    points=1,
    hint="Build the loss with Value operations (relu too) on the score Values themselves, so backward reaches them.",
)
def test_hinge_loss_gradient(learner):
    """backward through the hinge loss gives -y/n where the margin is violated, 0 elsewhere"""
    _check_hinge(
        learner,
        [2.0, 0.5, -0.3, -1.5],
        [1, 1, 1, -1],
        "scores = [Value(2.0), Value(0.5), Value(-0.3), Value(-1.5)], labels = [1, 1, 1, -1]",
    )


@pytest.mark.hidden
@pytest.mark.task("12.1", points=1, hint="Mean over all examples (divide by n, not by the number of violated margins).")
def test_hinge_loss_seeded(learner):
    """seeded scores and labels: value and gradients"""
    rng = random.Random(1201)
    for n in (1, 3, 6, 11, 25):
        scores = [rng.uniform(-3, 3) for _ in range(n)]
        labels = [rng.choice([-1, 1]) for _ in range(n)]
        _check_hinge(learner, scores, labels, f"scores = {scores}, labels = {labels}")


# --- 12.2 l2_penalty ------------------------------------------------------------------------------------------------


def _check_l2(learner, datas, alpha, inputs):
    got = learner.run(l2, datas, alpha)
    a = 1e-4 if alpha is None else alpha
    call = "l2_penalty(parameters)" if alpha is None else f"l2_penalty(parameters, {alpha!r})"
    expect(got["is_value"], f"type of {call}", "Value", got["type"], inputs)
    expect_close(
        got["data"],
        a * sum(d * d for d in datas),
        f"{call}.data",
        inputs,
        rel=1e-9,
        note="the default alpha is 1e-4" if alpha is None else None,
    )
    for i, d in enumerate(datas):
        expect_close(
            got["grads"][i],
            2 * a * d,
            f"parameters[{i}].grad after {call}.backward()",
            inputs,
            rel=1e-9,
            abs_tol=1e-15,
            note="d/dp α·p² = 2αp",
        )


@pytest.mark.task(
    "12.2", points=1, hint="alpha defaults to 1e-4: alpha times the sum of the squared parameters, as one Value."
)
def test_l2_penalty_default_alpha(learner):
    """l2_penalty with the default alpha = 1e-4"""
    _check_l2(learner, [1.0, -2.0, 0.5], None, "parameters = [Value(1.0), Value(-2.0), Value(0.5)]")


@pytest.mark.task("12.2", points=1, hint="Square each parameter as a Value (p * p), add them up, multiply by alpha.")
def test_l2_penalty_alpha_and_gradient(learner):
    """l2_penalty(parameters, 0.1) and its gradient 2·alpha·p"""
    _check_l2(learner, [1.0, -2.0, 0.5], 0.1, "parameters = [Value(1.0), Value(-2.0), Value(0.5)], alpha = 0.1")


@pytest.mark.hidden
@pytest.mark.task("12.2", points=1, hint="Every parameter counts once, squared; use the alpha you are given.")
def test_l2_penalty_seeded(learner):
    """seeded parameters and alphas"""
    rng = random.Random(1202)
    for n in (1, 4, 9, 41):
        datas = [rng.uniform(-2, 2) for _ in range(n)]
        alpha = rng.choice([None, 1e-3, 0.05, 1.0])
        _check_l2(learner, datas, alpha, f"parameters = {datas}, alpha = {'default' if alpha is None else alpha}")


# --- 12.3 accuracy --------------------------------------------------------------------------------------------------


def _check_accuracy(learner, scores, labels, inputs):
    got = learner.run(accuracy_of, scores, labels)["accuracy"]
    right = sum((s > 0 and y > 0) or (s < 0 and y < 0) for s, y in zip(scores, labels, strict=True))
    expect_close(
        got,
        right / len(labels),
        "accuracy(scores, labels)",
        inputs,
        rel=1e-12,
        note="the share of examples with sign(score) = label; a score of 0 is never right",
    )


@pytest.mark.task(
    "12.3", points=2, hint="Count the examples whose score has the sign of the label; divide by the number of examples."
)
def test_accuracy_by_hand(learner):
    """accuracy on hand values: the share of scores with the label's sign"""
    _check_accuracy(
        learner,
        [0.5, -0.2, 3.0, -1.0, 2.0],
        [1, -1, -1, -1, 1],
        "scores = [0.5, -0.2, 3.0, -1.0, 2.0] as Values, labels = [1, -1, -1, -1, 1]",
    )
    _check_accuracy(learner, [1.0, -1.0], [1, -1], "scores = [1.0, -1.0] as Values, labels = [1, -1]")
    _check_accuracy(learner, [1.0, -1.0], [-1, 1], "scores = [1.0, -1.0] as Values, labels = [-1, 1]")


@pytest.mark.task("12.3", points=1, hint="A score of exactly 0 has no sign: it is wrong for either label.")
def test_accuracy_zero_score_is_wrong(learner):
    """a score of exactly 0 counts as wrong for both labels"""
    _check_accuracy(learner, [0.0, 0.0, 1.0], [1, -1, 1], "scores = [0.0, 0.0, 1.0] as Values, labels = [1, -1, 1]")
    _check_accuracy(learner, [0.0, 0.0], [1, -1], "scores = [0.0, 0.0] as Values, labels = [1, -1]")


@pytest.mark.hidden
@pytest.mark.task(
    "12.3", points=1, hint="Return a number between 0 and 1 (right / total), whatever the number of examples."
)
def test_accuracy_seeded(learner):
    """seeded scores (some exactly 0) and labels"""
    rng = random.Random(1203)
    for n in (1, 2, 7, 10, 33):
        scores = [rng.choice([0.0, rng.uniform(-2, 2), rng.uniform(-2, 2)]) for _ in range(n)]
        labels = [rng.choice([-1, 1]) for _ in range(n)]
        _check_accuracy(learner, scores, labels, f"scores = {scores} as Values, labels = {labels}")


# --- 12.4 train_step and train_classifier ---------------------------------------------------------------------------


def _moons(n, noise, seed):
    """The grader's two interleaving half-moons: n points, labels -1 (upper moon) and +1 (lower moon)."""
    rng = random.Random(seed)
    n_up = n // 2
    n_down = n - n_up
    points = [([math.cos(math.pi * i / (n_up - 1)), math.sin(math.pi * i / (n_up - 1))], -1) for i in range(n_up)]
    points += [
        ([1 - math.cos(math.pi * i / (n_down - 1)), 0.5 - math.sin(math.pi * i / (n_down - 1))], 1)
        for i in range(n_down)
    ]
    points = [([x + rng.gauss(0, noise), y + rng.gauss(0, noise)], label) for (x, y), label in points]
    rng.shuffle(points)
    return [p for p, _ in points], [label for _, label in points]


def _describe(n, data_seed, model_seed, hidden=(8, 8)):
    return (
        f"{n} two-moons points (grader's seed {data_seed}), random.seed({model_seed}) then "
        f"MLP(2, {[*hidden, 1]}, act='relu', linear_output=True)"
    )


def _check_entry(entry, what, inputs):
    expect(isinstance(entry, list) and len(entry) == 2, what, "a pair (loss, accuracy)", entry, inputs)
    loss, acc = entry
    expect(isinstance(loss, float), f"{what}: the loss", "a float (loss.data, not the Value)", _shown(loss), inputs)
    expect(_number(acc) and 0 <= acc <= 1, f"{what}: the accuracy", "a number between 0 and 1", acc, inputs)


def _compare_params(params, expected, inputs, note=None):
    for i, (p, q) in enumerate(zip(params, expected, strict=True)):
        expect_close(p, q, f"model.parameters()[{i}].data after training", inputs, rel=1e-9, abs_tol=1e-12, note=note)


def _compare_histories(history, expected, inputs, note=None, cause=""):
    expect(isinstance(history, list), "type of the history", "list", _shown(history), inputs)
    expect_equal(len(history), len(expected), "len(history)", inputs, note="one (loss, accuracy) per step")
    for k, (entry, (loss, acc, *_)) in enumerate(zip(history, expected, strict=True)):
        _check_entry(entry, f"history[{k}]", inputs)
        expect_close(entry[0], loss, f"history[{k}] loss", inputs, rel=1e-9, note=note, cause=cause)
        expect_close(entry[1], acc, f"history[{k}] accuracy", inputs, rel=1e-12, note=note, cause=cause)


def _same(history, expected):
    return (
        isinstance(history, list)
        and len(history) == len(expected)
        and all(
            isinstance(e, list) and len(e) == 2 and _number(e[0]) and math.isclose(e[0], x[0], rel_tol=1e-9)
            for e, x in zip(history, expected, strict=True)
        )
    )


@pytest.mark.task(
    "12.4",
    points=2,
    hint="train_step: scores, loss = hinge_loss + l2_penalty, zero_grad, backward, each parameter against its grad.",
)
def test_train_step_one_update(learner, reference):
    """one train_step returns (loss, accuracy) and moves every parameter by -lr·grad"""
    X, y = _moons(8, 0.1, 5)
    inputs = _describe(8, 5, 12, (4, 4)) + ", learning_rate = 0.5"
    got = learner.run(train_step_run, X, y, 12, [4, 4], 0.5)
    expected = reference.run(grader_steps, X, y, 12, [4, 4], [0.5])
    result = got["result"]
    (loss, acc, hinge_only) = expected["history"][0]
    _check_entry(result, "train_step(...)", inputs)
    alone = math.isclose(result[0], hinge_only, rel_tol=1e-12)
    expect_close(
        result[0],
        loss,
        "train_step(...) loss (hinge_loss + l2_penalty, before the update)",
        inputs,
        rel=1e-9,
        note="this is hinge_loss alone: add l2_penalty(model.parameters())" if alone else None,
        cause="hinge-loss-without-penalty" if alone else "",
    )
    expect_close(result[1], acc, "train_step(...) accuracy (of the scores before the update)", inputs, rel=1e-12)
    _compare_params(got["params"], expected["params"], inputs)


@pytest.mark.task(
    "12.4", points=1, hint="Zero the gradients in train_step before backward: the model may come with leftover grads."
)
def test_train_step_zeroes_leftover_gradients(learner, reference):
    """train_step gives the same update when the parameters start with leftover gradients"""
    X, y = _moons(8, 0.1, 6)
    inputs = _describe(8, 6, 13, (4, 4)) + " whose parameters hold leftover grads of 5.0, learning_rate = 0.3"
    got = learner.run(train_step_run, X, y, 13, [4, 4], 0.3, leftover_grad=5.0)
    expected = reference.run(grader_steps, X, y, 13, [4, 4], [0.3])
    _check_entry(got["result"], "train_step(...)", inputs)
    expect_close(got["result"][0], expected["history"][0][0], "train_step(...) loss", inputs, rel=1e-9)
    _compare_params(got["params"], expected["params"], inputs, note="the leftover gradients must not reach the update")


def _check_run(
    learner, reference, n, data_seed, model_seed, steps, inputs_extra="", hidden=(8, 8), batch_size=None, seed=0
):
    """train_classifier the learner's way and the reference way from the same seeds; compare step by step."""
    X, y = _moons(n, 0.1, data_seed)
    kwargs = {} if batch_size is None else {"batch_size": batch_size, "seed": seed}
    inputs = (
        _describe(n, data_seed, model_seed, hidden)
        + f", steps = {steps}"
        + "".join(f", {k} = {v}" for k, v in kwargs.items())
        + inputs_extra
    )
    got = learner.run(classifier_run, X, y, model_seed, list(hidden), steps, **kwargs)
    expected = reference.run(classifier_run, X, y, model_seed, list(hidden), steps, **kwargs)
    _compare_histories(got["history"], expected["history"], inputs)
    _compare_params(got["params"], expected["params"], inputs)


@pytest.mark.task(
    "12.4", points=2, hint="Run train_step once per step on all the examples; record its (loss, accuracy) in a list."
)
def test_train_classifier_matches_reference_run(learner, reference):
    """a short full-batch run matches a correct run step by step"""
    _check_run(learner, reference, 12, 7, 21, 6)


@pytest.mark.task("12.4", points=1, hint="Step k of `steps` (k from 0) uses the learning rate 1.0 - 0.9 * k / steps.")
def test_train_classifier_learning_rate_schedule(learner, reference):
    """the learning rate of step k is 1.0 - 0.9·k/steps"""
    steps = 4
    X, y = _moons(10, 0.1, 8)
    inputs = _describe(10, 8, 22, (4, 4)) + f", steps = {steps}"
    got = learner.run(classifier_run, X, y, 22, [4, 4], steps)
    history = got["history"]
    expected = reference.run(grader_steps, X, y, 22, [4, 4], [1.0 - 0.9 * k / steps for k in range(steps)])
    note = None
    # the usual slips, run every time so that a student edition's recorded reference answers hold them all
    wrong = {
        "1.0 at every step": [1.0] * steps,
        "1.0 - 0.9 * (k + 1) / steps": [1.0 - 0.9 * (k + 1) / steps for k in range(steps)],
        "1.0 - 0.9 * k / (steps - 1)": [1.0 - 0.9 * k / (steps - 1) for k in range(steps)],
    }
    for name, rates in wrong.items():
        if _same(history, reference.run(grader_steps, X, y, 22, [4, 4], rates)["history"]):
            note = f"these are the losses of a run with the learning rate {name}"
    _compare_histories(
        history, expected["history"], inputs, note=note, cause="learning-rate-schedule-slip" if note else ""
    )
    _compare_params(
        got["params"], expected["params"], inputs, note="the rates of the 4 steps are 1.0, 0.775, 0.55, 0.325"
    )


@pytest.mark.task(
    "12.4",
    points=2,
    hint="Each step must lower the loss on average: zero the grads, backward, then move each p.data against its grad.",
)
def test_train_classifier_reaches_high_accuracy(learner):
    """a short seeded run on 16 two-moons points reaches at least 90% training accuracy"""
    _check_learns(learner, data_seed=3, model_seed=3)


@pytest.mark.task(
    "12.4",
    points=1,
    hint="A model that learns the moons, not the noise of 16 points: train with the steps and rates you are given.",
)
def test_train_classifier_does_well_on_held_out_points(learner):
    """the model of that short run classifies at least 80% of 200 held-out two-moons points right"""
    _check_held_out(learner, data_seed=3, model_seed=3)


def _scores_from(params, X, sizes: list[int], inputs: str) -> list[float]:
    """The scores of moons_model's MLP (ReLU hidden units, a linear score) with `params`, computed here.

    `params` is what the worker reported of `model.parameters()`: layer by layer, neuron by neuron, its
    weights and then its bias. The grader's own forward pass, so no answer the worker sends decides it alone.
    """
    count = sum((nin + 1) * nout for nin, nout in zip(sizes, sizes[1:], strict=False))
    expect(
        isinstance(params, list) and len(params) == count and all(_number(p) and math.isfinite(p) for p in params),
        "the trained model's parameters",
        f"{count} finite numbers",
        params if not isinstance(params, list) else f"a list of {len(params)}",
        inputs,
    )
    scores = []
    for x in X:
        at, values = 0, list(x)
        for layer, (nin, nout) in enumerate(zip(sizes, sizes[1:], strict=False)):
            out = []
            for _ in range(nout):
                z = sum(w * v for w, v in zip(params[at : at + nin], values, strict=True)) + params[at + nin]
                at += nin + 1
                out.append(z if layer == len(sizes) - 2 else max(z, 0.0))
            values = out
        scores.append(values[0])
    return scores


# one short training run serves the two checks that judge it (`_check_learns`, `_check_held_out`): by run, its answers
_SHORT_RUNS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _short_run(learner, X, y, model_seed, steps) -> dict:
    if learner.afresh:  # a graded run's second look: each check's own inputs, drawn for it
        return learner.run(classifier_run, X, y, model_seed, [8, 8], steps)
    runs = _SHORT_RUNS.setdefault(learner.grader, {})
    key = json.dumps([learner.task, X, y, model_seed, steps])
    if key not in runs:
        runs[key] = learner.run(classifier_run, X, y, model_seed, [8, 8], steps)
    return runs[key]


def _check_held_out(learner, data_seed, model_seed, n=16, steps=20, n_test=200, at_least=0.8):
    """The model of `_check_learns`' run, scored by the grader on `n_test` two-moons points it never trained on.

    The held-out points are the grader's own draw (seed `data_seed + 100`), and their scores come from the
    trained parameters the worker reported, through the grader's own forward pass (`_scores_from`).
    """
    X, y = _moons(n, 0.1, data_seed)
    X_test, y_test = _moons(n_test, 0.1, data_seed + 100)
    inputs = (
        _describe(n, data_seed, model_seed) + f", steps = {steps}; held out: {n_test} points (seed {data_seed + 100})"
    )
    got = _short_run(learner, X, y, model_seed, steps)
    scores = _scores_from(got["params"], X_test, [2, 8, 8, 1], inputs)
    right = sum(s != 0 and (s > 0) == (label > 0) for s, label in zip(scores, y_test, strict=True))
    expect(
        right / n_test >= at_least,
        "test accuracy of the trained model on held-out points (computed by the grader)",
        f">= {at_least}",
        f"{right / n_test} ({right} of {n_test} points)",
        inputs,
        note="a correct run classifies about 90% of them right",
    )


def _check_learns(learner, data_seed, model_seed, n=16, steps=20):
    X, y = _moons(n, 0.1, data_seed)
    inputs = _describe(n, data_seed, model_seed) + f", steps = {steps}"
    got = _short_run(learner, X, y, model_seed, steps)
    history = got["history"]
    expect(
        isinstance(history, list) and len(history) == steps,
        "train_classifier(...) returns one entry per step",
        f"a list of {steps} (loss, accuracy) pairs",
        history,
        inputs,
    )
    for k, entry in enumerate(history):
        _check_entry(entry, f"history[{k}]", inputs)
    expect(
        history[-1][0] < 0.5 * history[0][0],
        "the loss of the last step",
        f"< half the first ({history[0][0]:.4g})",
        history[-1][0],
        inputs,
    )
    # the worker's scores are not taken on trust: the grader computes them from the trained parameters it reported
    scores = _scores_from(got["params"], X, [2, 8, 8, 1], inputs)
    right = sum((s > 0) == (label > 0) for s, label in zip(scores, y, strict=True))
    expect(
        right / n >= 0.9,
        "training accuracy of the trained model (computed by the grader)",
        ">= 0.9",
        f"{right / n} ({right} of {n} points)",
        inputs,
    )


@pytest.mark.task(
    "12.4",
    points=1,
    hint="With batch_size, each step draws batch_size example indices with rng = random.Random(seed), made once.",
)
def test_train_classifier_batches(learner, reference):
    """with batch_size, each step trains on a batch of that many examples drawn with random.Random(seed)"""
    X, y = _moons(20, 0.1, 9)
    inputs = _describe(20, 9, 23, (4, 4)) + ", steps = 5, batch_size = 4, seed = 11"
    runs = []
    for _ in range(2):
        got = learner.run(classifier_run, X, y, 23, [4, 4], 5, batch_size=4, seed=11)
        expect(
            got["random_state_kept"],
            "the global random state after train_classifier(..., batch_size=4)",
            "unchanged (draw the batches with random.Random(seed), not the random module)",
            "changed",
            inputs,
        )
        runs.append(got["history"])
    other = learner.run(classifier_run, X, y, 23, [4, 4], 5, batch_size=4, seed=12)["history"]
    full = reference.run(classifier_run, X, y, 23, [4, 4], 5)["history"]
    history = runs[0]
    expect(
        isinstance(history, list) and len(history) == 5,
        "train_classifier(..., steps=5, batch_size=4)",
        "a list of 5 (loss, accuracy) pairs",
        history,
        inputs,
    )
    for k, entry in enumerate(history):
        _check_entry(entry, f"history[{k}]", inputs)
        expect(
            any(abs(entry[1] - j / 4) < 1e-9 for j in range(5)),
            f"history[{k}] accuracy",
            "a multiple of 1/4",
            entry[1],
            inputs,
            note="the accuracy of a batch of 4 examples",
        )
    expect(
        _same(runs[1], history),
        "a second run with the same seed",
        "the same history",
        runs[1],
        inputs,
        note="the batches depend only on seed",
    )
    expect(
        not _same(other, history),
        "a run with seed = 12 instead of 11",
        "a different history",
        other,
        inputs,
        note="the batches are drawn with random.Random(seed)",
    )
    expect(
        not _same(history, full),
        "the history with batch_size = 4",
        "different from a full-batch run",
        history,
        inputs,
        note="each step uses only batch_size examples",
    )


@pytest.mark.hidden
@pytest.mark.task(
    "12.4",
    points=1,
    hint="Use the model, data and steps you are given; the learning rate decays over exactly `steps` steps.",
)
def test_train_classifier_seeded_runs(learner, reference):
    """seeded short runs match the reference, and another seeded run reaches 90% accuracy, 80% on held-out points"""
    rng = random.Random(1204)
    for _ in range(2):
        _check_run(
            learner,
            reference,
            rng.randint(6, 12),
            rng.randrange(10**6),
            rng.randrange(10**6),
            rng.randint(2, 5),
            hidden=(rng.randint(2, 5), rng.randint(2, 5)),
        )
    _check_learns(learner, data_seed=4, model_seed=1)
    _check_held_out(learner, data_seed=4, model_seed=1)


@pytest.mark.hidden
@pytest.mark.task(
    "12.4",
    points=1,
    hint="Make one random.Random(seed) before the loop and draw each batch's indices from it with sample.",
)
def test_train_classifier_seeded_batches(learner, reference):
    """seeded mini-batch runs match the reference's batches step by step"""
    rng = random.Random(1205)
    for _ in range(2):
        n = rng.randint(8, 14)
        _check_run(
            learner,
            reference,
            n,
            rng.randrange(10**6),
            rng.randrange(10**6),
            rng.randint(3, 6),
            hidden=(4, 4),
            batch_size=rng.randint(2, n - 1),
            seed=rng.randrange(1000),
            inputs_extra=" (batches drawn as rng.sample(range(len(X)), batch_size), rng = random.Random(seed))",
        )


# --- 12.5: your engine, whole (no reference underneath: engine.py and nn.py are all the learner's) ---------------


@scenario
def whole_headline(impl, av, bv):
    """The headline expression on the learner's own Value, gradients by the learner's own backward()."""
    a, b = impl.Value(av), impl.Value(bv)
    g = headline_expression(a, b, lambda v: v.relu())
    g.backward()
    return [data_of(g), a.grad, b.grad]


@scenario
def whole_sanity(impl, xv):
    x = impl.Value(xv)
    y = sanity_expression(x, lambda v: v.relu())
    y.backward()
    return [data_of(y), x.grad]


@scenario
def whole_training(impl, X, y, model_seed, steps):
    """A short lesson-12 run written by the grader, on the learner's MLP and Value: hinge + L2, SGD, decaying rate."""

    def run():
        random.seed(model_seed)
        model = impl.nn.MLP(2, [8, 8, 1], act="relu", linear_output=True)
        history = []
        for k in range(steps):
            scores = [model([impl.Value(a), impl.Value(b)]) for a, b in X]
            losses = [(1 + -yi * s).relu() for yi, s in zip(y, scores, strict=True)]
            loss = sum(losses, impl.Value(0.0)) * (1.0 / len(losses))
            loss = loss + 1e-4 * sum((p * p for p in model.parameters()), impl.Value(0.0))
            correct = sum((s.data > 0) == (yi > 0) for yi, s in zip(y, scores, strict=True))
            model.zero_grad()
            loss.backward()
            rate = 1.0 - 0.9 * k / steps
            for p in model.parameters():
                p.data -= rate * p.grad
            history.append([loss.data, correct / len(y)])
        return history

    return collecting_only_new_objects(run)


HEADLINE = "the headline expression of lesson 8 with your Value and your backward()"
SANITY = "z = 2*x + 2 + x; q = z.relu() + z*x; h = (z*z).relu(); y = h + q + q*x, your Value and your backward()"


@pytest.mark.task("12.5", points=2, hint="Your engine alone must give lesson 8's numbers: re-run 8.x if not.")
def test_whole_engine_headline(learner, reference):
    """your engine, whole: 24.7041 / 138.8338 / 645.5773, and PyTorch to 1e-6"""
    got = learner.run(whole_headline, -4.0, 2.0)
    want = reference.compute(torch_values.headline, -4.0, 2.0)
    for name, value, page, torch_value in zip(
        ("g.data", "a.grad", "b.grad"), got, (24.7041, 138.8338, 645.5773), want, strict=True
    ):
        expect_close(value, page, f"{name} (4 decimals)", f"a = -4, b = 2; {HEADLINE}", rel=0, abs_tol=5e-5)
        expect_close(value, torch_value, f"{name} vs PyTorch float64", f"a = -4, b = 2; {HEADLINE}", rel=1e-9)


@pytest.mark.task("12.5", points=2, hint="The sanity check on your engine alone: y = -20, dy/dx = 46, as PyTorch says.")
def test_whole_engine_sanity(learner, reference):
    """your engine, whole: the PyTorch sanity check gives y = -20 and dy/dx = 46"""
    got = learner.run(whole_sanity, -4.0)
    expect_equal(got, [-20.0, 46.0], "[y.data, x.grad]", f"x = -4; {SANITY}")
    expect_equal(
        got, reference.compute(torch_values.sanity, -4.0), "[y.data, x.grad] vs PyTorch float64", f"x = -4; {SANITY}"
    )


@pytest.mark.task(
    "12.5", points=2, hint="A short training run on your engine and your MLP must follow a correct run's, step by step."
)
def test_whole_engine_trains_the_classifier(learner, reference):
    """your engine, whole: a short two-moons training follows a correct run step by step and learns"""
    X, y = _moons(16, 0.1, 1205)
    inputs = "16 two-moons points (noise 0.1), MLP(2, [8, 8, 1]) seeded 7, 10 steps of hinge + L2 at a decaying rate"
    got = learner.run(whole_training, X, y, 7, 10)
    want = reference.run(whole_training, X, y, 7, 10)
    for step, (mine, theirs) in enumerate(zip(got, want, strict=True)):
        expect_close(mine[0], theirs[0], f"loss at step {step}", inputs, rel=1e-9, abs_tol=1e-12)
        expect_close(mine[1], theirs[1], f"accuracy at step {step}", inputs)
    expect(got[-1][0] < got[0][0], "the loss falls", f"below {got[0][0]!r}", got[-1][0], inputs)


@pytest.mark.hidden
@pytest.mark.task("12.5", points=2, hint="Both classic expressions on other inputs: your engine alone against PyTorch.")
def test_whole_engine_seeded_expressions(learner, reference):
    """your engine, whole: both classic expressions at seeded inputs, against PyTorch"""
    rng = random.Random(20125)
    for _ in range(6):
        av, bv = rng.uniform(-5, 5), rng.uniform(-5, 5)
        if abs(av + bv) < 0.1 or abs(bv - av) < 0.1:  # away from the relu kinks
            continue
        for value, torch_value in zip(
            learner.run(whole_headline, av, bv), reference.compute(torch_values.headline, av, bv), strict=True
        ):
            expect_close(
                value,
                torch_value,
                "headline vs PyTorch float64",
                f"a = {av!r}, b = {bv!r}; {HEADLINE}",
                rel=1e-6,
                abs_tol=1e-6,
            )
        xv = rng.uniform(-5, 5)
        if abs(3 * xv + 2) > 0.1:
            for value, torch_value in zip(
                learner.run(whole_sanity, xv), reference.compute(torch_values.sanity, xv), strict=True
            ):
                expect_close(value, torch_value, "sanity vs PyTorch float64", f"x = {xv!r}; {SANITY}", rel=1e-9)
