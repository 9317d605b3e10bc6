"""Graded runs ask every visible check again on numbers drawn for the submission (`grading/fresh_inputs.py`).

The attack they close: answers to the visible checks are known (the page
shows them, a student edition ships the reference's), so a submission can
answer the visible checks from a table with no code behind it: a worker's
requests are plain data, and code in the worker can answer them itself.
"""

from __future__ import annotations

import json
import math
import random
import textwrap
import time

import pytest

from autograder.export import stubs
from autograder.grading import fresh_inputs
from autograder.kit.checks import CheckFailed

from .conftest import grade

LESSON_1 = ("1.1", "1.2", "1.3")

# --- the pieces ------------------------------------------------------------------------------------------------------


def test_floats_and_sizes_are_drawn_afresh_each_within_its_scale():
    rng = random.Random(1)
    value = [3.0, 2, True, "h", {"h": 1e-6, "n": 4}, (0.0, -0.5), [[2.0, {}]], 0, 1, -100_000]
    drawn = fresh_inputs.afresh(value, rng)
    assert drawn[2:4] == [True, "h"] and drawn[5][0] == 0.0 and drawn[7:9] == [0, 1]  # flags, names, 0 and 1 stay
    for page, new in ((3.0, drawn[0]), (1e-6, drawn[4]["h"]), (-0.5, drawn[5][1]), (2.0, drawn[6][0][0])):
        assert page != new and 0.8 <= new / page <= 1.25
    for page, new in ((2, drawn[1]), (4, drawn[4]["n"]), (-100_000, drawn[9])):  # sizes, counts, seeds move
        assert type(new) is int and page != new and 0.5 <= new / page <= 1.5
    assert isinstance(drawn[5], tuple)


def test_a_graded_answer_has_exactly_the_references_shape_and_keeps_its_margin():
    def check(answer, on_page, drawn_answer, drawn_want, args=(2.0,)):
        def expect(fn, args, kwargs, page):
            return on_page if page else drawn_want

        fresh_inputs.ask_again(lambda *_: drawn_answer, expect, check, args, {}, answer, random.Random(1))

    check({"grad": 1.0}, {"grad": 1.0}, {"grad": 2.0}, {"grad": 2.0})  # honest code
    check({"n": 3}, {"n": 3.0}, {"n": 4}, {"n": 4.0})  # an int for a float: the same number
    check(14.0000001, 14.0, 9.0000001, 9.0)  # a rounder estimate than the reference's, accepted on the page
    for answer, on_page in (({"grad": 1.0, "extra": 0}, {"grad": 1.0}), ([1], [True]), ({"ok": 1}, {"ok": True})):
        with pytest.raises(CheckFailed, match="shape"):
            check(answer, on_page, answer, on_page, args=("no number",))
    with pytest.raises(CheckFailed, match="drawn afresh"):  # right on the page, wrong on the drawn inputs
        check({"grad": 1.0}, {"grad": 1.0}, {"grad": 1.0}, {"grad": 2.0})
    check([0.7], [-0.8], [0.2], [0.5])  # random weights: an answer of its own kind, of the reference's shape
    with pytest.raises(CheckFailed, match="drawn afresh"):  # of its own kind on the page, of another shape there
        check([0.7], [-0.8], [0.2, 0.1], [0.5])


def test_the_draws_depend_on_the_seed_and_the_check_alone():
    def draw(seed, check):
        return fresh_inputs.afresh([1.0, 2.0], fresh_inputs.rng_for(seed, check))

    assert draw(7, "a") == draw(7, "a")
    assert draw(7, "a") != draw(8, "a") and draw(7, "a") != draw(7, "b")


def test_answers_agree_within_rounding_in_any_order_and_otherwise_exactly():
    same = fresh_inputs.same
    assert same(1.0, 1.0 + 1e-12) and not same(1.0, 1.001)
    assert same({"a": [1, 2.0]}, {"a": [1, 2.0]}) and not same({"a": 1}, {"a": 1, "b": 2})
    assert same(["d", "c", "a", "b"], ["d", "c", "b", "a"])  # a set walked in another process's order
    assert not same([1.0, 2.0], [1.0]) and not same([1.0, 2.0], [1.0, 3.0])
    assert not same(True, 1) and not same("1", 1) and same(math.nan, math.nan)
    # a long list answered exactly is compared at once; a bool among numbers is still not a number
    assert same(list(range(100_000)), list(range(100_000))) and not same([1, True], [1, 1])
    assert same([1, [2, 3.0]], [1.0, [2, 3]]) and same([[math.nan]], [[math.nan]])
    # a long order of node indices walked another way: the same nodes, compared without a key per element
    walked = list(range(100_000))
    random.Random(1).shuffle(walked)
    start = time.process_time()
    assert same(walked, list(range(100_000))) and not same(walked[1:] + [100_000], list(range(100_000)))
    assert not same([1, 2], [2, 3]) and not same([1, 2], [2, True])
    print(f"two orders of 100,000 nodes compared in {time.process_time() - start:.3f} CPU s")


def test_an_answers_shape_is_its_kinds_and_sizes_in_any_order():
    shape = fresh_inputs.shape
    assert shape([1, "a", None]) == shape(["a", None, 2.5]) and shape({"x": [1]}) == shape({"y": [2.0]})
    assert shape([1, 1]) != shape([1]) and shape([1, "a"]) != shape([1, 1]) and shape([True]) != shape([1])
    assert shape([[1], [2, 3]]) == shape([[4, 5], [6]]) and shape([[1], [2, 3]]) != shape([[1, 2], [3, 4]])
    assert shape({"a": 1}) != shape([1]) and shape((1, 2)) == shape([3, 4])


# --- whole runs -------------------------------------------------------------------------------------------------------


def test_the_reference_passes_a_graded_run_and_the_results_record_the_seed(tmp_path):
    run = grade("solutions", "--fresh-inputs", "11", tmp_path=tmp_path)
    assert run.returncode == 0, run.output[-3000:]
    assert set(run.results["extra_data"]["status"].values()) == {"passed"}
    assert run.results["extra_data"]["fresh_inputs"] == 11
    assert "numbers drawn for this run (seed 11)" in run.output
    learners_run = grade("solutions", "--lesson", "1", tmp_path=tmp_path)
    assert learners_run.results["extra_data"]["fresh_inputs"] is None


# Recorded by a plugin while the reference answers the visible checks: what each request to a worker got back.
RECORDER = """
import json
import os

from autograder.grading import grader

TABLE = {}
_run = grader.Learner.run


def run(self, fn, *args, **kwargs):
    answer = _run(self, fn, *args, **kwargs)
    TABLE[json.dumps([fn.__module__, fn.__name__, list(args), kwargs], sort_keys=True)] = answer
    return answer


grader.Learner.run = run


def pytest_sessionfinish(session):
    with open(os.environ["TABLE_OUT"], "w") as f:
        json.dump(TABLE, f)
"""

# Appended to a stub file: answers the grader's requests from the table, before the learner's (stub) code runs.
REPLAYER = """

def _replay(table):
    import gc
    import json

    for worker in [o for o in gc.get_objects() if type(o).__name__ == "Worker" and hasattr(o, "handle")]:
        handle = worker.handle

        def answer(request, handle=handle):
            key = json.dumps(
                [request.get("file"), request.get("name"), request.get("args"), request.get("kwargs")], sort_keys=True
            )
            return {"ok": table[key], "output": ""} if key in table else handle(request)

        worker.handle = answer


_replay(TABLE)
"""


@pytest.mark.parametrize(
    "lesson, file, tasks",
    [("1", "derivatives.py", LESSON_1), ("10", "nn.py", ("10.1", "10.2", "10.3", "10.4"))],  # floats; sizes alone
)
def test_answers_replayed_from_a_table_are_worth_nothing_in_a_graded_run(lesson, file, tasks, tmp_path):
    (tmp_path / "recorder.py").write_text(RECORDER)
    table_file = tmp_path / "table.json"
    env = {"PYTHONPATH": str(tmp_path), "TABLE_OUT": str(table_file)}
    recorded = grade("solutions", "--lesson", lesson, "-m", "not hidden", "-p", "recorder", tmp_path=tmp_path, env=env)
    assert recorded.returncode == 0, recorded.output[-2000:]
    table = json.loads(table_file.read_text())
    assert len(table) >= 8

    submission = tmp_path / "submission"
    submission.mkdir()
    for name, text in stubs.expected_files().items():
        if name == file:  # the stubs, and the table
            text += f"\n\nTABLE = {table!r}\n" + textwrap.dedent(REPLAYER)
        (submission / name).write_text(text)

    def earned(run) -> dict[str, int]:
        checks = run.results["extra_data"]["results"]
        return {t: sum(c["points"] for c in checks if c["task"] == t and c["status"] == "passed") for t in tasks}

    learners_run = grade(submission, "--lesson", lesson, tmp_path=tmp_path)
    assert all(earned(learners_run).values()), learners_run.output[-2000:]  # on the page's inputs the table works
    graded_run = grade(submission, "--lesson", lesson, "--fresh-inputs", "5", tmp_path=tmp_path)
    passed = {
        c["nodeid"].rpartition("::")[2] for c in graded_run.results["extra_data"]["results"] if c["status"] == "passed"
    }
    assert passed <= NOTHING_TO_DRAW, graded_run.output[-3000:]


# Checks whose one call takes no input at all: nothing can be drawn afresh (an answer of 1 point: [] for a bare
# Module's parameters). Every other visible check's calls have numbers or sizes to draw.
NOTHING_TO_DRAW = {"test_bare_module_has_no_parameters"}


# --- who computes the reference's answers on drawn inputs ----------------------------------------------------------

# Run in the grader's process at the end of a graded run: whether the grader itself imported PyTorch.
TORCH_WATCH = """
import os
import sys


def pytest_sessionfinish(session):
    with open(os.environ["TORCH_OUT"], "w") as f:
        f.write(str("torch" in sys.modules))
"""


def test_a_graded_run_of_lesson_9_leaves_torch_to_the_workers_and_still_grades_the_drawn_calls(tmp_path):
    """Lesson 9's scenarios run PyTorch; on drawn inputs the reference's answers come from a worker forked from
    the zygote that has imported it, so the grader (which never needs it otherwise) does not import it again."""
    from autograder.grading import launchers

    if launchers.start_method() != "fork":
        pytest.skip("workers are spawned here: a reference worker would import torch as the grader would")
    (tmp_path / "torchwatch.py").write_text(TORCH_WATCH)
    env = {"PYTHONPATH": str(tmp_path), "TORCH_OUT": str(tmp_path / "torch.txt")}
    run = grade("solutions", "--lesson", "9", "--fresh-inputs", "7", "-p", "torchwatch", tmp_path=tmp_path, env=env)
    assert run.returncode == 0, run.output[-3000:]
    assert set(run.results["extra_data"]["status"].values()) == {"passed"}
    assert (tmp_path / "torch.txt").read_text() == "False", "the grader imported torch"


def test_only_an_answer_is_taken_from_the_reference_worker_anything_else_is_computed_by_the_grader(monkeypatch):
    """It shares the learner's zygote: whatever stops it from answering (it raised, it was lost, it timed out)
    leaves the answer to the grader's own computation, so a learner's worker that disturbs it changes no verdict."""
    from autograder.grading import pool
    from autograder.grading.grader import Grader, ReferenceCode
    from autograder.grading.options import GradeOptions
    from autograder.grading.tasks import graded
    from autograder.lessons.test_09_pytorch import LESSON_NEURON, neuron
    from autograder.worker.wire import to_plain

    grader = Grader(GradeOptions(impl="solutions", tasks=("9.1",), fresh_inputs=3))
    grader.start()
    try:
        if grader.workers.start != "fork":
            pytest.skip(f"this run's workers are not forked: {grader.workers.spawned_because}")
        task, drawn = graded("9.1"), {k: v * 1.1 for k, v in LESSON_NEURON.items()}
        answered, answer = grader.drawn_by_worker(task, neuron, [drawn], {})
        assert answered and fresh_inputs.same(answer, to_plain(neuron(ReferenceCode(), drawn)))
        assert grader.drawn_by_worker(task, neuron, [{"x1": 1.0}], {}) == (False, None)  # it raised there

        def lost(*args, **kwargs):
            raise pool.WorkerGone(pool.Lost.ENDED)

        monkeypatch.setattr(grader.workers, "call", lost)
        assert grader.drawn_by_worker(task, neuron, [drawn], {}) == (False, None)
        assert grader.drawn_by_worker(graded("1.1"), neuron, [drawn], {}) == (False, None)  # nothing preloaded
    finally:
        grader.stop_workers()
