"""Lesson 12 · A real classifier (tasks 12.1 to 12.4).

The learner's classifier.py runs over the reference engine and nn; in the
checks of 12.4 its `hinge_loss`, `l2_penalty` and `accuracy` are the
reference's. The training checks use small seeded runs on the grader's own
two-moons points (made here with `random.Random`, so no scikit-learn import),
compared step by step with the reference `train_step`/`train_classifier` on an
identically seeded model.

Each training step leaves a graph full of reference cycles, and the reference
calls `gc.collect()` once per step; a full collection walks every object of the
grader's process (PyTorch included), which would cost far more than the step
itself. The training checks therefore run inside `collector_sees_only_new_objects()`, which freezes
the objects alive before the run (`gc.freeze`) so that collections only walk
what the run creates. It changes no result.
"""

import math
import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.kit.testkit import collector_sees_only_new_objects, is_number
from autograder.grading.loading import reference




# --- 12.1 hinge_loss --------------------------------------------------------------------------------------------------

def _check_hinge(impl, scores, labels, inputs, gradient=True):
    ss = [impl.Value(s) for s in scores]
    loss = impl.classifier.hinge_loss(ss, labels)
    expect(isinstance(loss, impl.Value), "type of hinge_loss(scores, labels)", "Value", type(loss).__name__, inputs)
    n = len(scores)
    expected = sum(max(0.0, 1 - y * s) for s, y in zip(scores, labels)) / n
    expect_close(loss.data, expected, "hinge_loss(scores, labels).data", inputs, rel=1e-9)
    if gradient:
        loss.backward()
        for i, (s, y) in enumerate(zip(scores, labels)):
            expect_close(ss[i].grad, -y / n if 1 - y * s > 0 else 0.0, f"scores[{i}].grad after loss.backward()",
                         inputs, rel=1e-9, abs_tol=1e-12,
                         note="-y/n while the margin is violated (1 - y·score > 0), 0 once it is met")


@pytest.mark.task("12.1", points=2, hint="Average relu(1 - y * score) over the examples: sum them, then multiply by 1 / n.")
def test_hinge_loss_value(impl):
    """the mean of relu(1 - y·score) on hand values, as a Value"""
    _check_hinge(impl, [2.0, 0.5, -0.3, -1.5], [1, 1, 1, -1],
                 "scores = [Value(2.0), Value(0.5), Value(-0.3), Value(-1.5)], labels = [1, 1, 1, -1]", gradient=False)
    _check_hinge(impl, [0.25], [-1], "scores = [Value(0.25)], labels = [-1]", gradient=False)


@pytest.mark.task("12.1", points=1, hint="Build the loss with Value operations on the scores ((1 - y * s).relu()), so backward reaches them.")
def test_hinge_loss_gradient(impl):
    """backward through the hinge loss gives -y/n where the margin is violated, 0 elsewhere"""
    _check_hinge(impl, [2.0, 0.5, -0.3, -1.5], [1, 1, 1, -1],
                 "scores = [Value(2.0), Value(0.5), Value(-0.3), Value(-1.5)], labels = [1, 1, 1, -1]")


@pytest.mark.hidden
@pytest.mark.task("12.1", points=1, hint="Mean over all examples (divide by n, not by the number of violated margins).")
def test_hinge_loss_seeded(impl):
    """seeded scores and labels: value and gradients"""
    rng = random.Random(1201)
    for n in (1, 3, 6, 11, 25):
        scores = [rng.uniform(-3, 3) for _ in range(n)]
        labels = [rng.choice([-1, 1]) for _ in range(n)]
        _check_hinge(impl, scores, labels, f"scores = {scores}, labels = {labels}")


# --- 12.2 l2_penalty --------------------------------------------------------------------------------------------------

def _check_l2(impl, datas, alpha, inputs):
    ps = [impl.Value(d) for d in datas]
    pen = impl.classifier.l2_penalty(ps) if alpha is None else impl.classifier.l2_penalty(ps, alpha)
    a = 1e-4 if alpha is None else alpha
    call = "l2_penalty(parameters)" if alpha is None else f"l2_penalty(parameters, {alpha!r})"
    expect(isinstance(pen, impl.Value), f"type of {call}", "Value", type(pen).__name__, inputs)
    expect_close(pen.data, a * sum(d * d for d in datas), f"{call}.data", inputs, rel=1e-9,
                 note="the default alpha is 1e-4" if alpha is None else None)
    pen.backward()
    for i, d in enumerate(datas):
        expect_close(ps[i].grad, 2 * a * d, f"parameters[{i}].grad after {call}.backward()", inputs, rel=1e-9,
                     abs_tol=1e-15, note="d/dp α·p² = 2αp")


@pytest.mark.task("12.2", points=1, hint="alpha defaults to 1e-4: return alpha * Σ p * p as one Value.")
def test_l2_penalty_default_alpha(impl):
    """l2_penalty with the default alpha = 1e-4"""
    _check_l2(impl, [1.0, -2.0, 0.5], None, "parameters = [Value(1.0), Value(-2.0), Value(0.5)]")


@pytest.mark.task("12.2", points=1, hint="Square each parameter as a Value (p * p), add them up, multiply by alpha.")
def test_l2_penalty_alpha_and_gradient(impl):
    """l2_penalty(parameters, 0.1) and its gradient 2·alpha·p"""
    _check_l2(impl, [1.0, -2.0, 0.5], 0.1, "parameters = [Value(1.0), Value(-2.0), Value(0.5)], alpha = 0.1")


@pytest.mark.hidden
@pytest.mark.task("12.2", points=1, hint="Every parameter counts once, squared; use the alpha you are given.")
def test_l2_penalty_seeded(impl):
    """seeded parameters and alphas"""
    rng = random.Random(1202)
    for n in (1, 4, 9, 41):
        datas = [rng.uniform(-2, 2) for _ in range(n)]
        alpha = rng.choice([None, 1e-3, 0.05, 1.0])
        _check_l2(impl, datas, alpha, f"parameters = {datas}, alpha = {'default' if alpha is None else alpha}")


# --- 12.3 accuracy ----------------------------------------------------------------------------------------------------

def _check_accuracy(impl, scores, labels, inputs):
    got = impl.classifier.accuracy([impl.Value(s) for s in scores], labels)
    right = sum((s > 0 and y > 0) or (s < 0 and y < 0) for s, y in zip(scores, labels))
    expect_close(got, right / len(labels), "accuracy(scores, labels)", inputs, rel=1e-12,
                 note="the share of examples with sign(score) = label; a score of 0 is never right")


@pytest.mark.task("12.3", points=2, hint="Count the examples whose score has the sign of the label; divide by the number of examples.")
def test_accuracy_by_hand(impl):
    """accuracy on hand values: the share of scores with the label's sign"""
    _check_accuracy(impl, [0.5, -0.2, 3.0, -1.0, 2.0], [1, -1, -1, -1, 1],
                    "scores = [0.5, -0.2, 3.0, -1.0, 2.0] as Values, labels = [1, -1, -1, -1, 1]")
    _check_accuracy(impl, [1.0, -1.0], [1, -1], "scores = [1.0, -1.0] as Values, labels = [1, -1]")
    _check_accuracy(impl, [1.0, -1.0], [-1, 1], "scores = [1.0, -1.0] as Values, labels = [-1, 1]")


@pytest.mark.task("12.3", points=1, hint="A score of exactly 0 has no sign: it is wrong for either label.")
def test_accuracy_zero_score_is_wrong(impl):
    """a score of exactly 0 counts as wrong for both labels"""
    _check_accuracy(impl, [0.0, 0.0, 1.0], [1, -1, 1], "scores = [0.0, 0.0, 1.0] as Values, labels = [1, -1, 1]")
    _check_accuracy(impl, [0.0, 0.0], [1, -1], "scores = [0.0, 0.0] as Values, labels = [1, -1]")


@pytest.mark.hidden
@pytest.mark.task("12.3", points=1, hint="Return a number between 0 and 1 (right / total), whatever the number of examples.")
def test_accuracy_seeded(impl):
    """seeded scores (some exactly 0) and labels"""
    rng = random.Random(1203)
    for n in (1, 2, 7, 10, 33):
        scores = [rng.choice([0.0, rng.uniform(-2, 2), rng.uniform(-2, 2)]) for _ in range(n)]
        labels = [rng.choice([-1, 1]) for _ in range(n)]
        _check_accuracy(impl, scores, labels, f"scores = {scores} as Values, labels = {labels}")


# --- 12.4 train_step and train_classifier ---------------------------------------------------------------------------


def _moons(n, noise, seed):
    """The grader's two interleaving half-moons: n points, labels -1 (upper moon) and +1 (lower moon)."""
    rng = random.Random(seed)
    n_up = n // 2
    n_down = n - n_up
    points = [([math.cos(math.pi * i / (n_up - 1)), math.sin(math.pi * i / (n_up - 1))], -1) for i in range(n_up)]
    points += [([1 - math.cos(math.pi * i / (n_down - 1)), 0.5 - math.sin(math.pi * i / (n_down - 1))], 1)
               for i in range(n_down)]
    points = [([x + rng.gauss(0, noise), y + rng.gauss(0, noise)], label) for (x, y), label in points]
    rng.shuffle(points)
    return [p for p, _ in points], [label for _, label in points]


def _model(seed, hidden=(8, 8)):
    """MLP(2, [*hidden, 1]) with ReLU hidden units and a linear score, made by the reference from `seed`."""
    random.seed(seed)
    return reference("nn").MLP(2, [*hidden, 1], act="relu", linear_output=True)


def _describe(n, data_seed, model_seed, hidden=(8, 8)):
    return (f"{n} two-moons points (grader's seed {data_seed}), random.seed({model_seed}) then "
            f"MLP(2, {[*hidden, 1]}, act='relu', linear_output=True)")


def _check_entry(entry, what, inputs):
    expect(isinstance(entry, (tuple, list)) and len(entry) == 2, what, "a pair (loss, accuracy)", entry, inputs)
    loss, acc = entry
    expect(isinstance(loss, float), f"{what}: the loss", "a float (loss.data, not the Value)",
           f"{type(loss).__name__}: {loss!r}", inputs)
    expect(is_number(acc) and 0 <= acc <= 1, f"{what}: the accuracy", "a number between 0 and 1", acc, inputs)


def _expected_step(model, X, y, lr):
    """One step the grader's way, from the reference pieces: returns (loss, accuracy); updates the model."""
    ref = reference("classifier")
    scores = [model(x) for x in X]
    loss = ref.hinge_loss(scores, y) + ref.l2_penalty(model.parameters())
    for p in model.parameters():
        p.grad = 0.0
    loss.backward()
    for p in model.parameters():
        p.data -= lr * p.grad
    return loss.data, ref.accuracy(scores, y)


def _compare_params(model, twin, inputs, note=None):
    for i, (p, q) in enumerate(zip(model.parameters(), twin.parameters())):
        expect_close(p.data, q.data, f"model.parameters()[{i}].data after training", inputs, rel=1e-9,
                     abs_tol=1e-12, note=note)


def _compare_histories(history, expected, inputs, note=None):
    expect(isinstance(history, list), "type of the history", "list", type(history).__name__, inputs)
    expect_equal(len(history), len(expected), "len(history)", inputs, note="one (loss, accuracy) per step")
    for k, (entry, (loss, acc)) in enumerate(zip(history, expected)):
        _check_entry(entry, f"history[{k}]", inputs)
        expect_close(entry[0], loss, f"history[{k}] loss", inputs, rel=1e-9, note=note)
        expect_close(entry[1], acc, f"history[{k}] accuracy", inputs, rel=1e-12, note=note)


def _same(history, expected):
    return (isinstance(history, list) and len(history) == len(expected)
            and all(isinstance(e, (tuple, list)) and len(e) == 2 and is_number(e[0])
                    and math.isclose(e[0], x[0], rel_tol=1e-9) for e, x in zip(history, expected)))


@pytest.mark.task("12.4", points=2, hint="train_step: scores, hinge_loss + l2_penalty, zero_grad, backward, p.data -= lr * p.grad.")
def test_train_step_one_update(impl):
    """one train_step returns (loss, accuracy) and moves every parameter by -lr·grad"""
    X, y = _moons(8, 0.1, 5)
    inputs = _describe(8, 5, 12, (4, 4)) + ", learning_rate = 0.5"
    model, twin = _model(12, (4, 4)), _model(12, (4, 4))
    with collector_sees_only_new_objects():
        hinge_only = reference("classifier").hinge_loss([twin(x) for x in X], y).data
        result = impl.classifier.train_step(model, X, y, 0.5)
        expected = _expected_step(twin, X, y, 0.5)
    _check_entry(result, "train_step(...)", inputs)
    note = "this is hinge_loss alone: add l2_penalty(model.parameters())" if math.isclose(
        result[0], hinge_only, rel_tol=1e-12) else None
    expect_close(result[0], expected[0], "train_step(...) loss (hinge_loss + l2_penalty, before the update)", inputs,
                 rel=1e-9, note=note)
    expect_close(result[1], expected[1], "train_step(...) accuracy (of the scores before the update)", inputs,
                 rel=1e-12)
    _compare_params(model, twin, inputs)


@pytest.mark.task("12.4", points=1, hint="Zero the gradients in train_step before backward: the model may come with leftover grads.")
def test_train_step_zeroes_leftover_gradients(impl):
    """train_step gives the same update when the parameters start with leftover gradients"""
    X, y = _moons(8, 0.1, 6)
    inputs = _describe(8, 6, 13, (4, 4)) + " whose parameters hold leftover grads of 5.0, learning_rate = 0.3"
    model, twin = _model(13, (4, 4)), _model(13, (4, 4))
    for p in model.parameters():
        p.grad = 5.0
    with collector_sees_only_new_objects():
        result = impl.classifier.train_step(model, X, y, 0.3)
        expected = _expected_step(twin, X, y, 0.3)
    _check_entry(result, "train_step(...)", inputs)
    expect_close(result[0], expected[0], "train_step(...) loss", inputs, rel=1e-9)
    _compare_params(model, twin, inputs, note="the leftover gradients must not reach the update")


def _check_run(impl, n, data_seed, model_seed, steps, inputs_extra="", hidden=(8, 8), batch_size=None, seed=0):
    """train_classifier the learner's way and the reference way from the same seeds; compare step by step."""
    X, y = _moons(n, 0.1, data_seed)
    model, twin = _model(model_seed, hidden), _model(model_seed, hidden)
    kwargs = {} if batch_size is None else {"batch_size": batch_size, "seed": seed}
    inputs = _describe(n, data_seed, model_seed, hidden) + f", steps = {steps}" + "".join(
        f", {k} = {v}" for k, v in kwargs.items()) + inputs_extra
    with collector_sees_only_new_objects():
        history = impl.classifier.train_classifier(model, X, y, steps, **kwargs)
        expected = reference("classifier").train_classifier(twin, X, y, steps, **kwargs)
    _compare_histories(history, expected, inputs)
    _compare_params(model, twin, inputs)


@pytest.mark.task("12.4", points=2, hint="Run train_step once per step on all the examples; record its (loss, accuracy) in a list.")
def test_train_classifier_matches_reference_run(impl):
    """a short full-batch run matches the reference step by step"""
    _check_run(impl, 12, 7, 21, 6)


def _run_with_rates(model, X, y, rates):
    return [_expected_step(model, X, y, lr) for lr in rates]


@pytest.mark.task("12.4", points=1, hint="Step k of `steps` (k from 0) uses the learning rate 1.0 - 0.9 * k / steps.")
def test_train_classifier_learning_rate_schedule(impl):
    """the learning rate of step k is 1.0 - 0.9·k/steps"""
    steps = 4
    X, y = _moons(10, 0.1, 8)
    inputs = _describe(10, 8, 22, (4, 4)) + f", steps = {steps}"
    model = _model(22, (4, 4))
    with collector_sees_only_new_objects():
        history = impl.classifier.train_classifier(model, X, y, steps)
        twin = _model(22, (4, 4))
        expected = _run_with_rates(twin, X, y, [1.0 - 0.9 * k / steps for k in range(steps)])
        note = None
        wrong = {"1.0 at every step": [1.0] * steps,
                 "1.0 - 0.9 * (k + 1) / steps": [1.0 - 0.9 * (k + 1) / steps for k in range(steps)],
                 "1.0 - 0.9 * k / (steps - 1)": [1.0 - 0.9 * k / (steps - 1) for k in range(steps)]}
        for name, rates in wrong.items():
            if _same(history, _run_with_rates(_model(22, (4, 4)), X, y, rates)):
                note = f"these are the losses of a run with the learning rate {name}"
    _compare_histories(history, expected, inputs, note=note)
    _compare_params(model, twin, inputs, note="the rates of the 4 steps are 1.0, 0.775, 0.55, 0.325")


@pytest.mark.task("12.4", points=2, hint="Each step must lower the loss on average: zero the grads, backward, then p.data -= lr * p.grad.")
def test_train_classifier_reaches_high_accuracy(impl):
    """a short seeded run on 16 two-moons points reaches at least 90% training accuracy"""
    _check_learns(impl, data_seed=3, model_seed=3)


def _check_learns(impl, data_seed, model_seed, n=16, steps=20):
    X, y = _moons(n, 0.1, data_seed)
    model = _model(model_seed)
    inputs = _describe(n, data_seed, model_seed) + f", steps = {steps}"
    with collector_sees_only_new_objects():
        history = impl.classifier.train_classifier(model, X, y, steps)
    expect(isinstance(history, list) and len(history) == steps, "train_classifier(...) returns one entry per step",
           f"a list of {steps} (loss, accuracy) pairs", history, inputs)
    for k, entry in enumerate(history):
        _check_entry(entry, f"history[{k}]", inputs)
    expect(history[-1][0] < 0.5 * history[0][0], "the loss of the last step", f"< half the first ({history[0][0]:.4g})",
           history[-1][0], inputs)
    right = sum((model(x).data > 0) == (label > 0) for x, label in zip(X, y))
    expect(right / n >= 0.9, "training accuracy of the trained model (computed by the grader)", ">= 0.9",
           f"{right / n} ({right} of {n} points)", inputs)


@pytest.mark.task("12.4", points=1, hint="With batch_size, each step draws batch_size example indices with rng = random.Random(seed), made once.")
def test_train_classifier_batches(impl):
    """with batch_size, each step trains on a batch of that many examples drawn with random.Random(seed)"""
    X, y = _moons(20, 0.1, 9)
    inputs = _describe(20, 9, 23, (4, 4)) + ", steps = 5, batch_size = 4, seed = 11"
    runs = []
    with collector_sees_only_new_objects():
        for _ in range(2):
            model = _model(23, (4, 4))
            state = random.getstate()
            runs.append(impl.classifier.train_classifier(model, X, y, 5, batch_size=4, seed=11))
            expect(random.getstate() == state, "the global random state after train_classifier(..., batch_size=4)",
                   "unchanged (draw the batches with random.Random(seed), not the random module)", "changed",
                   inputs)
        other = impl.classifier.train_classifier(_model(23, (4, 4)), X, y, 5, batch_size=4, seed=12)
        full = reference("classifier").train_classifier(_model(23, (4, 4)), X, y, 5)
    history = runs[0]
    expect(isinstance(history, list) and len(history) == 5, "train_classifier(..., steps=5, batch_size=4)",
           "a list of 5 (loss, accuracy) pairs", history, inputs)
    for k, entry in enumerate(history):
        _check_entry(entry, f"history[{k}]", inputs)
        expect(any(abs(entry[1] - j / 4) < 1e-9 for j in range(5)), f"history[{k}] accuracy", "a multiple of 1/4",
               entry[1], inputs, note="the accuracy of a batch of 4 examples")
    expect(_same(runs[1], history), "a second run with the same seed", "the same history", runs[1], inputs,
           note="the batches depend only on seed")
    expect(not _same(other, history), "a run with seed = 12 instead of 11", "a different history", other, inputs,
           note="the batches are drawn with random.Random(seed)")
    expect(not _same(history, full), "the history with batch_size = 4", "different from a full-batch run", history,
           inputs, note="each step uses only batch_size examples")


@pytest.mark.hidden
@pytest.mark.task("12.4", points=1, hint="Use the model, data and steps you are given; the learning rate decays over exactly `steps` steps.")
def test_train_classifier_seeded_runs(impl):
    """seeded short runs match the reference, and another seeded run reaches 90% accuracy"""
    rng = random.Random(1204)
    for _ in range(2):
        _check_run(impl, rng.randint(6, 12), rng.randrange(10**6), rng.randrange(10**6), rng.randint(2, 5),
                   hidden=(rng.randint(2, 5), rng.randint(2, 5)))
    _check_learns(impl, data_seed=4, model_seed=1)


@pytest.mark.hidden
@pytest.mark.task("12.4", points=1, hint="Make rng = random.Random(seed) once, then draw each batch with rng.sample(range(len(X)), batch_size).")
def test_train_classifier_seeded_batches(impl):
    """seeded mini-batch runs match the reference's batches step by step"""
    rng = random.Random(1205)
    for _ in range(2):
        n = rng.randint(8, 14)
        _check_run(impl, n, rng.randrange(10**6), rng.randrange(10**6), rng.randint(3, 6), hidden=(4, 4),
                   batch_size=rng.randint(2, n - 1), seed=rng.randrange(1000),
                   inputs_extra=" (batches drawn as rng.sample(range(len(X)), batch_size), rng = random.Random(seed))")
