"""Lesson 11 · Loss and gradient descent (tasks 11.1 to 11.3).

The learner's train.py runs in the worker over the reference engine and the
reference nn; in the checks of 11.3 its `squared_error_loss` and `sgd_step` are
the reference's. The oracle of the training loop is the same scenario run here
over the reference (`reference.run`), on an identically seeded model.
"""

import random

import pytest

from autograder.kit.checks import close, expect, expect_close, expect_equal, expect_list
from autograder.worker.scenario import collecting_only_new_objects, data_of, loss_report, scenario, sweep, type_name

XS = [[2.0, 3.0, -1.0], [3.0, -1.0, 0.5], [0.5, 1.0, 1.0], [1.0, 1.0, -1.0]]
YS = [1.0, -1.0, -1.0, 1.0]
LESSON_RUN = "lesson_model(1337), the lesson's xs and ys"

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def squared_error(impl, preds, targets, gradient=True):
    """squared_error_loss over Values made from `preds`: the loss and, through the grader's sweep, each grad."""
    return loss_report(impl, impl.train.squared_error_loss, preds, targets, gradient=gradient)


@scenario
def sgd(impl, datas, grads, learning_rate, times=1):
    """sgd_step called `times` times on Values holding `datas` and `grads`: their data and grads afterwards."""
    ps = [impl.Value(d) for d in datas]
    for p, g in zip(ps, grads, strict=True):
        p.grad = g
    for _ in range(times):
        impl.train.sgd_step(ps, learning_rate)
    return {"data": [p.data for p in ps], "grads": [p.grad for p in ps]}


@scenario
def lesson_model(impl, seed):
    """The lesson's MLP(3, [4, 4, 1]) from `seed`, built by the nn of the worker (the reference's, for lesson 11)."""
    random.seed(seed)
    return impl.nn.MLP(3, [4, 4, 1])


@scenario
def train_run(impl, seed, xs, ys, steps, learning_rate, stale_grads=False):
    """train(...) on a seeded model: the history as returned, its losses, the parameters and predictions after."""

    def run():
        model = lesson_model(impl, seed)
        if stale_grads:  # gradients left over from an earlier backward
            sweep(impl.train.squared_error_loss([model(x) for x in xs], ys))
        history = impl.train.train(model, xs, ys, steps, learning_rate)
        listed = isinstance(history, list)
        return {
            "type": type_name(history),
            "types": sorted({type_name(h) for h in history}) if listed else None,
            "floats": listed and all(isinstance(h, float) for h in history),
            "losses": [data_of(h) for h in history] if listed else None,
            "params": [p.data for p in model.parameters()],
            "predictions": [data_of(model(x)) for x in xs],
        }

    return collecting_only_new_objects(run)


@scenario
def train_without_zeroing(impl, seed, xs, ys, steps, learning_rate):
    """The classic bug, run over the reference as an oracle of what a wrong history looks like: `train` with a
    `zero_grad` that does nothing. Only `reference.run` runs it, so `train` is the reference's: the oracle holds no
    line of the task's solution (a student edition ships this file, and records the answer)."""
    model = lesson_model(impl, seed)
    model.zero_grad = lambda: None
    return impl.train.train(model, xs, ys, steps, learning_rate)


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------

# --- 11.1 squared_error_loss ----------------------------------------------------------------------------------------


def _check_loss(learner, preds, targets, inputs, gradient=True):
    got = learner.run(squared_error, preds, targets, gradient)
    expect(got["is_value"], "type of squared_error_loss(...)", "Value", got["type"], inputs)
    expected = sum((p - y) ** 2 for p, y in zip(preds, targets, strict=True))
    expect_close(got["data"], expected, "squared_error_loss(predictions, targets).data", inputs, rel=1e-9)
    if gradient:
        for i, (p, y) in enumerate(zip(preds, targets, strict=True)):
            expect_close(
                got["grads"][i],
                2 * (p - y),
                f"predictions[{i}].grad after loss.backward()",
                inputs,
                rel=1e-9,
                note="d/dŷ (ŷ - y)² = 2(ŷ - y)",
            )


@pytest.mark.task("11.1", points=2, hint="Add up (prediction - target) ** 2 over the examples into one Value.")
def test_squared_error_value(learner):
    """Σ (ŷ - y)² on hand values, returned as a Value"""
    _check_loss(
        learner,
        [0.5, -0.2, 0.9],
        [1.0, -1.0, 0.0],
        "predictions = [Value(0.5), Value(-0.2), Value(0.9)], targets = [1.0, -1.0, 0.0]",
        gradient=False,
    )
    _check_loss(learner, [3.0], [1.0], "predictions = [Value(3.0)], targets = [1.0]", gradient=False)


@pytest.mark.task(
    "11.1",
    points=1,
    hint="Build the loss from the prediction Values themselves (Value operations), so backward reaches them.",
)
def test_squared_error_gradient(learner):
    """backward through the loss gives each prediction 2(ŷ - y)"""
    _check_loss(
        learner,
        [0.5, -0.2, 0.9],
        [1.0, -1.0, 0.0],
        "predictions = [Value(0.5), Value(-0.2), Value(0.9)], targets = [1.0, -1.0, 0.0]",
    )


@pytest.mark.hidden
@pytest.mark.task(
    "11.1", points=1, hint="Every example counts once: Σ over all (prediction, target) pairs, squared, no mean."
)
def test_squared_error_seeded(learner):
    """seeded predictions and targets: value and gradients"""
    rng = random.Random(1101)
    for n in (1, 2, 4, 7, 12):
        preds = [rng.uniform(-2, 2) for _ in range(n)]
        targets = [rng.choice([-1.0, 1.0, rng.uniform(-3, 3)]) for _ in range(n)]
        _check_loss(learner, preds, targets, f"predictions = {preds}, targets = {targets}")


# --- 11.2 sgd_step --------------------------------------------------------------------------------------------------


@pytest.mark.task(
    "11.2", points=2, hint="Move each parameter's data against its grad, by learning_rate times that grad."
)
def test_sgd_step_moves_data(learner):
    """sgd_step moves each p.data by -lr * p.grad"""
    datas, grads = [1.0, -2.0, 0.5], [0.5, -1.0, 0.0]
    got = learner.run(sgd, datas, grads, 0.1)
    inputs = f"data = {datas}, grads = {grads}, learning_rate = 0.1"
    uphill = {}
    if (
        got["data"] != [0.95, -1.9, 0.5]
        and expect_list(got["data"], 3, "the parameters' data after sgd_step")
        and all(close(d, x + 0.1 * g) for d, x, g in zip(got["data"], datas, grads, strict=True))
    ):
        uphill = {"note": "each p.data moved by +lr * p.grad, up the slope", "cause": "sgd-step-uphill"}
    for i, expected in enumerate([0.95, -1.9, 0.5]):
        expect_close(got["data"][i], expected, f"parameters[{i}].data after sgd_step", inputs, rel=1e-12, **uphill)


@pytest.mark.task(
    "11.2", points=1, hint="Change p.data only: leave p.grad as it is (zeroing is the training loop's job)."
)
def test_sgd_step_keeps_grads(learner):
    """sgd_step leaves the gradients as they were"""
    datas, grads = [1.0, -2.0, 0.5], [0.5, -1.0, 0.25]
    got = learner.run(sgd, datas, grads, 0.5)
    expect_equal(
        got["grads"], grads, "the grads after sgd_step", f"data = {datas}, grads = {grads}, learning_rate = 0.5"
    )


@pytest.mark.hidden
@pytest.mark.task(
    "11.2", points=1, hint="Use the learning rate you are given and each parameter's own grad; change nothing else."
)
def test_sgd_step_seeded(learner):
    """seeded parameters, gradients and learning rates, two steps in a row"""
    rng = random.Random(1102)
    for n in (1, 3, 10, 41):
        datas = [rng.uniform(-1, 1) for _ in range(n)]
        grads = [rng.uniform(-5, 5) for _ in range(n)]
        lr = rng.choice([0.001, 0.05, 0.3, 1.0])
        got = learner.run(sgd, datas, grads, lr, times=2)
        inputs = (
            f"{n} parameter{'s' if n > 1 else ''}, seeded data and grads, learning_rate = {lr}, sgd_step called twice"
        )
        for i, (d, g) in enumerate(zip(datas, grads, strict=True)):
            expect_close(got["data"][i], d - 2 * lr * g, f"parameters[{i}].data", inputs, rel=1e-9, abs_tol=1e-12)
        expect_equal(got["grads"], grads, "the grads after sgd_step (unchanged)", inputs)


# --- 11.3 train -----------------------------------------------------------------------------------------------------


def _matches(history, expected):
    return (
        isinstance(history, list)
        and len(history) == len(expected)
        and all(
            isinstance(h, float) and abs(h - e) <= 1e-9 * max(1.0, abs(e))
            for h, e in zip(history, expected, strict=True)
        )
    )


def _check_history(learner, reference, seed, xs, ys, steps, lr, inputs, stale_grads=False):
    """Train the learner's way (in the worker) and the reference way (here) from the same seed; compare step by step."""
    got = learner.run(train_run, seed, xs, ys, steps, lr, stale_grads)
    expected = reference.run(train_run, seed, xs, ys, steps, lr, stale_grads)
    expect(got["type"] == "list", "type of the history train returns", "list", got["type"], inputs)
    history = got["losses"]
    expect_equal(len(history), steps, "len(history)", inputs, note="one loss per step")
    expect(got["floats"], "types in the history", "floats (loss.data)", got["types"], inputs)
    note, cause = None, ""
    if steps > 1 and _matches(history[:-1], expected["losses"][1:]):
        note = "history[k] is the loss after step k's update: record the loss computed before the update"
        cause = "loss-recorded-after-update"
    if steps > 1 and _matches(history, reference.run(train_without_zeroing, seed, xs, ys, steps, lr)):
        note = "this is the history of a loop that never zeroes the gradients: they pile up from step to step"
        cause = "gradients-never-zeroed"
    for k, (h, e) in enumerate(zip(history, expected["losses"], strict=True)):
        expect_close(h, e, f"history[{k}] (the loss of step {k})", inputs, rel=1e-9, note=note, cause=cause)
    for i, (p, q) in enumerate(zip(got["params"], expected["params"], strict=True)):
        expect_close(p, q, f"model.parameters()[{i}].data after training", inputs, rel=1e-9)
    return got


@pytest.mark.task(
    "11.3", points=3, hint="Each step: predictions, loss, zero_grad, backward, sgd_step; record loss.data."
)
def test_train_matches_reference_run(learner, reference):
    """the loss history of the lesson's run matches a correct run step by step"""
    _check_history(learner, reference, 1337, XS, YS, 20, 0.05, f"{LESSON_RUN}, steps = 20, learning_rate = 0.05")


@pytest.mark.task(
    "11.3", points=2, hint="Zero the gradients every step, before backward: otherwise they pile up from step to step."
)
def test_train_zeroes_gradients_every_step(learner, reference):
    """gradients are zeroed every step, even when the model starts with leftover gradients"""
    _check_history(learner, reference, 1337, XS, YS, 6, 0.05, f"{LESSON_RUN}, steps = 6, learning_rate = 0.05")
    _check_history(
        learner,
        reference,
        1337,
        XS,
        YS,
        6,
        0.05,
        "lesson_model(1337) holding gradients from an earlier backward, the lesson's xs and ys, "
        "steps = 6, learning_rate = 0.05",
        stale_grads=True,
    )


@pytest.mark.task("11.3", points=1, hint="Record the loss before each update; the loss must fall as the steps go on.")
def test_train_final_loss_is_small(learner):
    """40 steps on the lesson's data bring the loss from a few units to near zero"""
    got = learner.run(train_run, 1337, XS, YS, 40, 0.05)
    inputs = f"{LESSON_RUN}, steps = 40, learning_rate = 0.05"
    history = got["losses"]
    expect(
        got["type"] == "list" and len(history) == 40,
        "train(...) returns 40 losses",
        "a list of 40 floats",
        history if history is not None else got["type"],
        inputs,
    )
    first, last = history[0], history[-1]
    expect(
        isinstance(first, float) and first > 1.0,
        "history[0] (the loss before any update)",
        "a few units",
        first,
        inputs,
    )
    expect(isinstance(last, float) and last < 0.05, "history[-1] (the last loss)", "< 0.05", last, inputs)
    preds = got["predictions"]
    expect(
        all(abs(p - y) < 0.2 for p, y in zip(preds, YS, strict=True)),
        "the trained model's predictions",
        f"within 0.2 of the targets {YS}",
        preds,
        inputs,
    )


@pytest.mark.hidden
@pytest.mark.task(
    "11.3", points=2, hint="Use the steps and learning_rate you are given, and the model, xs and ys you are given."
)
def test_train_seeded_runs(learner, reference):
    """seeded models, data, learning rates and step counts match the reference"""
    rng = random.Random(1103)
    cases = [
        (rng.randrange(10**6), XS, YS, 12, 0.1),
        (rng.randrange(10**6), XS, YS, 1, 0.05),
        (rng.randrange(10**6), XS, YS, 0, 0.05),
    ]
    for _ in range(3):
        n = rng.randint(2, 6)
        xs = [[rng.uniform(-2, 2) for _ in range(3)] for _ in range(n)]
        ys = [rng.choice([-1.0, 1.0]) for _ in range(n)]
        cases.append((rng.randrange(10**6), xs, ys, rng.randint(5, 15), rng.choice([0.01, 0.03, 0.08])))
    for seed, xs, ys, steps, lr in cases:
        _check_history(
            learner,
            reference,
            seed,
            xs,
            ys,
            steps,
            lr,
            f"lesson_model({seed}), xs = {xs}, ys = {ys}, steps = {steps}, learning_rate = {lr}",
        )
