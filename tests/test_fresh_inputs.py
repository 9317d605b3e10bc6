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

import pytest

from autograder.export import stubs
from autograder.grading import fresh_inputs
from autograder.kit import checks
from autograder.kit.checks import CheckFailed, expect, expect_close, expect_equal

from .conftest import grade

# --- the pieces ------------------------------------------------------------------------------------------------------


def test_the_second_look_at_the_100k_chain_asks_a_smaller_one_still_far_past_the_recursion_limit():
    """Both sides compute a graded run's drawn chain: at 100,000 nodes, a second of CPU for what 10,000 proves."""
    from autograder.lessons import test_06_backward as lesson

    class Asked(Exception):
        pass

    class Look:
        def __init__(self, afresh):
            self.afresh, self.asked = afresh, []

        def run(self, fn, *args, **kwargs):
            self.asked.append(args)
            raise Asked

    for afresh, length in ((False, lesson.CHAIN), (True, lesson.DRAWN_CHAIN)):
        look = Look(afresh)
        with pytest.raises(Asked):
            lesson.test_chain_100k(look)
        assert look.asked == [(["chain", length], lesson.DEFAULT_RECURSION_LIMIT)]
    assert lesson.DRAWN_CHAIN * fresh_inputs.SCALE[0] >= 8 * lesson.DEFAULT_RECURSION_LIMIT
    assert lesson.DRAWN_CHAIN <= lesson.CHAIN // 10


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


def _records(judgement, answer) -> tuple[list, fresh_inputs.Ending]:
    """What the helpers of `judgement(answer)` were given, as a graded run's second look records them."""
    with checks.judged() as records:
        checks.judged_call("scenario")
        try:
            judgement(answer)
            ending = fresh_inputs.Ending(None)
        except Exception as exc:  # noqa: BLE001
            ending = fresh_inputs.Ending(exc)
    return records, ending


DRAWN = [fresh_inputs.Draw("scenario", [2.0], {}, [2.2], {}, True)]


def _judge_afresh(judgement, reference_answer, learner_answer) -> None:
    want, want_end = _records(judgement, reference_answer)
    got, got_end = _records(judgement, learner_answer)
    fresh_inputs.compare(want, want_end, got, got_end, DRAWN)
    fresh_inputs.compare_answers([reference_answer], [learner_answer], DRAWN, want)


def test_a_drawn_answer_is_judged_by_the_page_checks_own_rule_against_the_references():
    """Whatever the page's answer was: each helper's record of the learner's drawn answer must agree with the
    reference's by that helper's rule (its tolerance, equality, a condition's truth), and the numbers with the
    reference's."""

    def judgement(got):  # as a check written for the page's inputs: its expected values are the page's
        expect_close(got["grad"], 12.0, "a.grad", rel=0, abs_tol=1e-4)
        expect_equal(got["label"], "a", "a.label")
        expect(got["grad"] > 0, "a.grad is positive", True, got["grad"])

    honest = {"grad": 13.2, "label": "a"}
    _judge_afresh(judgement, honest, {"grad": 13.2 + 5e-5, "label": "a"})  # within the check's own 1e-4
    with pytest.raises(CheckFailed, match="a.grad, on inputs drawn afresh"):  # the page's answer, moved a little
        _judge_afresh(judgement, honest, {"grad": 12.0 + 5e-6, "label": "a"})
    with pytest.raises(CheckFailed, match="a.label, on inputs drawn afresh"):
        _judge_afresh(judgement, honest, {"grad": 13.2, "label": "b"})

    def walks(got):  # a judgement that walks an answer in its own order: any order the helpers agree in
        for name in got["order"]:
            expect(name in "abc", f"node {name} is known", True, name)

    _judge_afresh(walks, {"order": ["a", "b", "c"]}, {"order": ["b", "a", "c"]})
    with pytest.raises(CheckFailed, match="how often the check looked"):
        _judge_afresh(walks, {"order": ["a", "b", "c"]}, {"order": ["a", "b"]})

    def only_a_property(got):  # a property of the answer alone: its numbers must still be the reference's
        expect(got["loss"][-1] < got["loss"][0], "the loss goes down", True, got["loss"])

    _judge_afresh(only_a_property, {"loss": [4.0, 1.0], "why": "the reference's"}, {"loss": [4.0, 1.0], "why": "x"})
    with pytest.raises(CheckFailed, match="numbers"):
        _judge_afresh(only_a_property, {"loss": [4.0, 1.0]}, {"loss": [3.0, 2.0]})


def test_answers_agree_in_their_numbers_within_rounding_in_any_order_and_their_words_may_differ():
    alike = fresh_inputs.numbers_alike
    assert alike(1.0, 1.0 + 1e-12) and not alike(1.0, 1.001) and alike(1.0, 1.001, rel=1e-2)
    assert alike({"a": [1, 2.0]}, {"a": [1, 2.0]}) and not alike({"a": 1}, {"a": 1, "b": 2})
    assert alike([3.0, 1.0, 2.0], [1.0, 2.0, 3.0])  # a set walked in another process's order
    assert not alike([1.0, 2.0], [1.0]) and not alike([1.0, 2.0], [1.0, 3.0])
    assert not alike(True, 1) and not alike("1", 1) and alike(math.nan, math.nan)
    assert alike({"raised": "ValueError", "message": "h must be > 0"}, {"raised": "ValueError", "message": "bad h"})
    assert alike({"140021": "a"}, {"139877": "a"})  # keys naming a process's own objects
    assert alike(list(range(100_000)), list(range(100_000))) and not alike([1, True], [1, 1])


def test_the_draws_depend_on_the_seed_and_the_check_alone():
    def draw(seed, check):
        return fresh_inputs.afresh([1.0, 2.0], fresh_inputs.rng_for(seed, check))

    assert draw(7, "a") == draw(7, "a")
    assert draw(7, "a") != draw(8, "a") and draw(7, "a") != draw(7, "b")


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

from autograder.grading import fixtures

TABLE = {}
_run = fixtures.Learner.run


def run(self, fn, *args, **kwargs):
    answer = _run(self, fn, *args, **kwargs)
    TABLE[json.dumps([fn.__module__, fn.__name__, list(args), kwargs], sort_keys=True)] = answer
    return answer


fixtures.Learner.run = run


def pytest_sessionfinish(session):
    with open(os.environ["TABLE_OUT"], "w") as f:
        json.dump(TABLE, f)
"""

# Appended to a stub file: answers the grader's requests from the table, before the learner's (stub) code runs. A
# request the table does not hold (drawn afresh) gets the answer of its twin on the page: the same call, numbers aside.
REPLAYER = """

def _replay(table):
    import gc
    import json

    def blank(value):  # a request's arguments with every number blanked
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return 0
        if isinstance(value, list):
            return [blank(v) for v in value]
        if isinstance(value, dict):
            return {k: blank(v) for k, v in value.items()}
        return value

    twins = {}
    for key, answer in table.items():
        file, name, args, kwargs = json.loads(key)
        twins.setdefault(json.dumps([file, name, blank(args), blank(kwargs)], sort_keys=True), answer)

    for worker in [o for o in gc.get_objects() if type(o).__name__ == "Worker" and hasattr(o, "handle")]:
        handle = worker.handle

        def answer(request, handle=handle):
            call = [request.get("file"), request.get("name"), request.get("args"), request.get("kwargs")]
            key = json.dumps(call, sort_keys=True)
            twin = json.dumps([*call[:2], blank(call[2]), blank(call[3])], sort_keys=True)
            if key in table or twin in twins:
                return {"ok": table[key] if key in table else twins[twin], "output": ""}
            return handle(request)

        worker.handle = answer


_replay(TABLE)
"""


def _nudged(answer, by: float = 5e-6):
    """`answer` with its last float moved by `by` (of itself, if more than 1): no longer the reference's own, still
    within a loose page check."""
    if isinstance(answer, list):
        for i in range(len(answer) - 1, -1, -1):
            moved = _nudged(answer[i], by)
            if moved != answer[i]:
                return [*answer[:i], moved, *answer[i + 1 :]]
        return answer
    if isinstance(answer, dict):
        for key in reversed(list(answer)):
            moved = _nudged(answer[key], by)
            if moved != answer[key]:
                return {**answer, key: moved}
        return answer
    return answer + by * max(1.0, abs(answer)) if type(answer) is float and math.isfinite(answer) else answer


@pytest.fixture(scope="module")
def page_answers(tmp_path_factory) -> dict:
    """What the reference answered to every call the visible checks make, recorded as it answered."""
    folder = tmp_path_factory.mktemp("table")
    (folder / "recorder.py").write_text(RECORDER)
    table_file = folder / "table.json"
    env = {"PYTHONPATH": str(folder), "TABLE_OUT": str(table_file)}
    recorded = grade("solutions", "-m", "not hidden", "-p", "recorder", tmp_path=folder, env=env)
    assert recorded.returncode == 0, recorded.output[-2000:]
    table = json.loads(table_file.read_text())
    assert len(table) >= 150
    return table


@pytest.mark.parametrize("nudge", [False, True], ids=["as recorded", "last float moved by 5e-6"])
def test_answers_replayed_from_a_table_are_worth_nothing_in_a_graded_run(page_answers, nudge, tmp_path):
    """A table of the page's answers earns nothing in a graded run, in any lesson: every visible check's answers on
    drawn inputs differ from its answers on the page's, and are judged against the reference's there by the page
    check's own rule. Neither as recorded, nor with a float moved a little (an answer that is not the reference's
    own, which once held the drawn answer to a shape alone), nor a page answer given for the drawn call that is its
    twin (the same call, numbers aside)."""
    table = {key: _nudged(answer) for key, answer in page_answers.items()} if nudge else page_answers
    table = {key: answer for key, answer in table.items() if len(json.dumps(answer)) < 20_000}  # a 100,000-node order
    submission = tmp_path / "submission"
    submission.mkdir()
    for name, text in stubs.expected_files().items():  # every file: each task's worker loads its own
        loaded = f"\n\nimport json as _json\n\nTABLE = _json.loads({json.dumps(table)!r})\n"
        (submission / name).write_text(text + loaded + textwrap.dedent(REPLAYER))

    if not nudge:  # on the page's inputs, the table works
        learners_run = grade(submission, tmp_path=tmp_path)
        checks = learners_run.results["extra_data"]["results"]
        visible = sum(c["points"] for c in checks if not c["hidden"])
        assert sum(c["points"] for c in checks if c["status"] == "passed") > visible // 2, learners_run.output[-2000:]
    graded_run = grade(submission, "--fresh-inputs", "5", tmp_path=tmp_path)
    passed = {
        c["nodeid"].rpartition("::")[2] for c in graded_run.results["extra_data"]["results"] if c["status"] == "passed"
    }
    assert not passed, graded_run.output[-3000:]


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
    from autograder.grading.grader import Grader
    from autograder.grading.options import GradeOptions
    from autograder.grading.reference import ReferenceCode
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
        assert answered and fresh_inputs.numbers_alike(answer, to_plain(neuron(ReferenceCode(), drawn)))
        assert grader.drawn_by_worker(task, neuron, [{"x1": 1.0}], {}) == (False, None)  # it raised there

        def lost(*args, **kwargs):
            raise pool.WorkerGone(pool.Lost.ENDED)

        monkeypatch.setattr(grader.workers, "call", lost)
        assert grader.drawn_by_worker(task, neuron, [drawn], {}) == (False, None)

        def cannot_start(*args, **kwargs):
            raise OSError("no process")

        monkeypatch.setattr(grader.workers, "prepare", cannot_start)  # 9.2's worker is not there yet
        assert grader.drawn_by_worker(graded("9.2"), neuron, [drawn], {}) == (False, None)
        assert grader.drawn_by_worker(graded("1.1"), neuron, [drawn], {}) == (False, None)  # nothing preloaded
    finally:
        grader.stop_workers()
