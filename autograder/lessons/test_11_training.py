"""Lesson 11 · Loss and gradient descent (tasks 11.1 to 11.3).

The learner's train.py runs over the reference engine and the reference nn; in
the checks of 11.3 its `squared_error_loss` and `sgd_step` are the reference's.
The oracle of the training loop is a run of the reference `train` on an
identically seeded model, made in the test.
"""

import random

import pytest

from autograder.kit.checks import expect, expect_close, expect_equal
from autograder.kit.testkit import collector_sees_only_new_objects, data_of
from autograder.grading.loading import reference

XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
YS = [1.0, -1.0, -1.0, 1.0]



# --- 11.1 squared_error_loss ------------------------------------------------------------------------------------------

def _check_loss(impl, preds, targets, inputs, gradient=True):
    ps = [impl.Value(p) for p in preds]
    loss = impl.train.squared_error_loss(ps, targets)
    expect(isinstance(loss, impl.Value), "type of squared_error_loss(...)", "Value", type(loss).__name__, inputs)
    expected = sum((p - y) ** 2 for p, y in zip(preds, targets))
    expect_close(loss.data, expected, "squared_error_loss(predictions, targets).data", inputs, rel=1e-9)
    if gradient:
        loss.backward()
        for i, (p, y) in enumerate(zip(preds, targets)):
            expect_close(ps[i].grad, 2 * (p - y), f"predictions[{i}].grad after loss.backward()", inputs,
                         rel=1e-9, note="d/dŷ (ŷ - y)² = 2(ŷ - y)")


@pytest.mark.task("11.1", points=2, hint="Add up (prediction - target) ** 2 over the examples into one Value.")
def test_squared_error_value(impl):
    """Σ (ŷ - y)² on hand values, returned as a Value"""
    _check_loss(impl, [0.5, -0.2, 0.9], [1.0, -1.0, 0.0],
                "predictions = [Value(0.5), Value(-0.2), Value(0.9)], targets = [1.0, -1.0, 0.0]", gradient=False)
    _check_loss(impl, [3.0], [1.0], "predictions = [Value(3.0)], targets = [1.0]", gradient=False)


@pytest.mark.task("11.1", points=1, hint="Build the loss from the prediction Values themselves (Value operations), so backward reaches them.")
def test_squared_error_gradient(impl):
    """backward through the loss gives each prediction 2(ŷ - y)"""
    _check_loss(impl, [0.5, -0.2, 0.9], [1.0, -1.0, 0.0],
                "predictions = [Value(0.5), Value(-0.2), Value(0.9)], targets = [1.0, -1.0, 0.0]")


@pytest.mark.hidden
@pytest.mark.task("11.1", points=1, hint="Every example counts once: Σ over all (prediction, target) pairs, squared, no mean.")
def test_squared_error_seeded(impl):
    """seeded predictions and targets: value and gradients"""
    rng = random.Random(1101)
    for n in (1, 2, 4, 7, 12):
        preds = [rng.uniform(-2, 2) for _ in range(n)]
        targets = [rng.choice([-1.0, 1.0, rng.uniform(-3, 3)]) for _ in range(n)]
        _check_loss(impl, preds, targets, f"predictions = {preds}, targets = {targets}")


# --- 11.2 sgd_step ----------------------------------------------------------------------------------------------------

def _params(impl, datas, grads):
    ps = [impl.Value(d) for d in datas]
    for p, g in zip(ps, grads):
        p.grad = g
    return ps


@pytest.mark.task("11.2", points=2, hint="For each parameter: p.data += -learning_rate * p.grad.")
def test_sgd_step_moves_data(impl):
    """sgd_step moves each p.data by -lr * p.grad"""
    datas, grads = [1.0, -2.0, 0.5], [0.5, -1.0, 0.0]
    ps = _params(impl, datas, grads)
    impl.train.sgd_step(ps, 0.1)
    inputs = f"data = {datas}, grads = {grads}, learning_rate = 0.1"
    for i, expected in enumerate([0.95, -1.9, 0.5]):
        expect_close(ps[i].data, expected, f"parameters[{i}].data after sgd_step", inputs, rel=1e-12)


@pytest.mark.task("11.2", points=1, hint="Change p.data only: leave p.grad as it is (zeroing is the training loop's job).")
def test_sgd_step_keeps_grads(impl):
    """sgd_step leaves the gradients as they were"""
    datas, grads = [1.0, -2.0, 0.5], [0.5, -1.0, 0.25]
    ps = _params(impl, datas, grads)
    impl.train.sgd_step(ps, 0.5)
    expect_equal([p.grad for p in ps], grads, "the grads after sgd_step",
                 f"data = {datas}, grads = {grads}, learning_rate = 0.5")


@pytest.mark.hidden
@pytest.mark.task("11.2", points=1, hint="Use the learning rate you are given and each parameter's own grad; change nothing else.")
def test_sgd_step_seeded(impl):
    """seeded parameters, gradients and learning rates, two steps in a row"""
    rng = random.Random(1102)
    for n in (1, 3, 10, 41):
        datas = [rng.uniform(-1, 1) for _ in range(n)]
        grads = [rng.uniform(-5, 5) for _ in range(n)]
        lr = rng.choice([0.001, 0.05, 0.3, 1.0])
        ps = _params(impl, datas, grads)
        impl.train.sgd_step(ps, lr)
        impl.train.sgd_step(ps, lr)
        inputs = f"{n} parameter{'s' if n > 1 else ''}, seeded data and grads, learning_rate = {lr}, sgd_step called twice"
        for i, (d, g) in enumerate(zip(datas, grads)):
            expect_close(ps[i].data, d - 2 * lr * g, f"parameters[{i}].data", inputs, rel=1e-9, abs_tol=1e-12)
        expect_equal([p.grad for p in ps], grads, "the grads after sgd_step (unchanged)", inputs)


# --- 11.3 train -------------------------------------------------------------------------------------------------------


def _model(seed):
    """The lesson's MLP(3, [4, 4, 1]), made by the reference from `seed`."""
    return reference("train").lesson_model(seed)


def _run_without_zeroing(model, xs, ys, steps, lr):
    """The classic bug, as an oracle of what a wrong history looks like: no zero_grad."""
    ref = reference("train")
    history = []
    for _ in range(steps):
        loss = ref.squared_error_loss([model(x) for x in xs], ys)
        loss.backward()
        ref.sgd_step(model.parameters(), lr)
        history.append(loss.data)
    return history


def _matches(history, expected):
    return (isinstance(history, list) and len(history) == len(expected)
            and all(isinstance(h, float) and abs(h - e) <= 1e-9 * max(1.0, abs(e)) for h, e in zip(history, expected)))


def _check_history(impl, seed, xs, ys, steps, lr, inputs, stale_grads=False):
    """Train the learner's way and the reference way from the same seed; compare step by step."""
    model, twin = _model(seed), _model(seed)
    if stale_grads:  # gradients left over from an earlier backward
        reference("train").squared_error_loss([model(x) for x in xs], ys).backward()
    with collector_sees_only_new_objects():
        history = impl.train.train(model, xs, ys, steps, lr)
        expected = reference("train").train(twin, xs, ys, steps, lr)
        without_zeroing = _run_without_zeroing(_model(seed), xs, ys, steps, lr) if steps > 1 else None
    expect(isinstance(history, list), "type of the history train returns", "list", type(history).__name__, inputs)
    expect_equal(len(history), steps, "len(history)", inputs, note="one loss per step")
    expect(all(isinstance(h, float) for h in history), "types in the history", "floats (loss.data)",
           sorted({type(h).__name__ for h in history}), inputs)
    note = None
    if steps > 1 and isinstance(history, list) and _matches(history[:-1], expected[1:]):
        note = "history[k] is the loss after step k's update: record the loss computed before the update"
    if without_zeroing and _matches(history, without_zeroing):
        note = "this is the history of a loop that never zeroes the gradients: they pile up from step to step"
    for k, (h, e) in enumerate(zip(history, expected)):
        expect_close(h, e, f"history[{k}] (the loss of step {k})", inputs, rel=1e-9, note=note)
    for i, (p, q) in enumerate(zip(model.parameters(), twin.parameters())):
        expect_close(p.data, q.data, f"model.parameters()[{i}].data after training", inputs, rel=1e-9)
    return history


@pytest.mark.task("11.3", points=3, hint="Each step: predictions, loss, zero_grad, backward, sgd_step; record loss.data.")
def test_train_matches_reference_run(impl):
    """the loss history of the lesson's run matches the reference step by step"""
    _check_history(impl, 1337, XS, YS, 20, 0.05,
                   "lesson_model(1337), the lesson's xs and ys, steps = 20, learning_rate = 0.05")


@pytest.mark.task("11.3", points=2, hint="Zero the gradients every step, before backward: otherwise they pile up from step to step.")
def test_train_zeroes_gradients_every_step(impl):
    """gradients are zeroed every step, even when the model starts with leftover gradients"""
    _check_history(impl, 1337, XS, YS, 6, 0.05,
                   "lesson_model(1337), the lesson's xs and ys, steps = 6, learning_rate = 0.05")
    _check_history(impl, 1337, XS, YS, 6, 0.05,
                   "lesson_model(1337) holding gradients from an earlier backward, the lesson's xs and ys, "
                   "steps = 6, learning_rate = 0.05", stale_grads=True)


@pytest.mark.task("11.3", points=1, hint="Record the loss before each update; the loss must fall as the steps go on.")
def test_train_final_loss_is_small(impl):
    """40 steps on the lesson's data bring the loss from a few units to near zero"""
    model = _model(1337)
    with collector_sees_only_new_objects():
        history = impl.train.train(model, XS, YS, 40, 0.05)
    inputs = "lesson_model(1337), the lesson's xs and ys, steps = 40, learning_rate = 0.05"
    expect(isinstance(history, list) and len(history) == 40, "train(...) returns 40 losses", "a list of 40 floats",
           history, inputs)
    expect(data_of(history[0]) > 1.0, "history[0] (the loss before any update)", "a few units", history[0], inputs)
    expect(data_of(history[-1]) < 0.05, "history[-1] (the last loss)", "< 0.05", history[-1], inputs)
    preds = [model(x).data for x in XS]
    expect(all(abs(p - y) < 0.2 for p, y in zip(preds, YS)), "the trained model's predictions",
           f"within 0.2 of the targets {YS}", preds, inputs)


@pytest.mark.hidden
@pytest.mark.task("11.3", points=2, hint="Use the steps and learning_rate you are given, and the model, xs and ys you are given.")
def test_train_seeded_runs(impl):
    """seeded models, data, learning rates and step counts match the reference"""
    rng = random.Random(1103)
    cases = [(rng.randrange(10**6), XS, YS, 12, 0.1), (rng.randrange(10**6), XS, YS, 1, 0.05),
             (rng.randrange(10**6), XS, YS, 0, 0.05)]
    for _ in range(3):
        n = rng.randint(2, 6)
        xs = [[rng.uniform(-2, 2) for _ in range(3)] for _ in range(n)]
        ys = [rng.choice([-1.0, 1.0]) for _ in range(n)]
        cases.append((rng.randrange(10**6), xs, ys, rng.randint(5, 15), rng.choice([0.01, 0.03, 0.08])))
    for seed, xs, ys, steps, lr in cases:
        _check_history(impl, seed, xs, ys, steps, lr,
                       f"lesson_model({seed}), xs = {xs}, ys = {ys}, steps = {steps}, learning_rate = {lr}")
