"""The grader gives each kind of submission exactly the score it deserves."""

from __future__ import annotations

import os
import re

import jsonschema
import pytest

from autograder.course import registry
from autograder.export.stubs import expected_files
from autograder.grading import isolation

from .conftest import REPO, copy_of, grade, level_here

ALL_TASKS = sorted(registry.TASKS, key=registry.sort_key)
CAPSTONES = [t for t in ALL_TASKS if registry.task(t).runs_whole]

# The parts of Gradescope's results.json format that the grader writes.
# Gradescope's results.json, as its specification lists the fields (gradescope-autograders' "Autograder
# Specifications"): nothing else at the top or in a test; ours put the rest in extra_data.
FORMATS = {"enum": ["text", "html", "simple_format", "md", "ansi"]}
VISIBILITY = {"enum": ["hidden", "after_due_date", "after_published", "visible"]}
RESULTS_SCHEMA = {
    "type": "object",
    "required": ["score", "tests", "output", "output_format"],
    "additionalProperties": False,
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number"},
        "output": {"type": "string"},
        "output_format": FORMATS,
        "test_output_format": FORMATS,
        "test_name_format": FORMATS,
        "visibility": VISIBILITY,
        "stdout_visibility": VISIBILITY,
        "extra_data": {"type": "object"},
        "leaderboard": {"type": "array"},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "score", "max_score", "status", "output", "number"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "name_format": FORMATS,
                    "number": {"type": "string"},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "output_format": FORMATS,
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "visibility": VISIBILITY,
                    "extra_data": {"type": "object"},
                },
            },
        },
    },
}


def scorecard_total(output: str) -> tuple[int, int]:
    match = re.search(r"^Total\s+(\d+)/(\d+)", output, re.MULTILINE)
    assert match, f"no Total line in the scorecard:\n{output[-2000:]}"
    return int(match[1]), int(match[2])


def test_reference_scores_full_marks(reference_run):
    results = reference_run.results
    bonus = results["extra_data"]["bonus_max"]  # on top of full marks, as extra credit
    assert results["score"] == results["extra_data"]["max_score"] + bonus > results["extra_data"]["max_score"] > 0, (
        reference_run.output[-4000:]
    )
    assert results["extra_data"]["bonus"] == bonus
    assert set(reference_run.status.values()) == {"passed"}
    assert reference_run.returncode == 0
    assert "Every graded task passes" in reference_run.output


def test_every_task_is_graded(reference_run):
    assert sorted(reference_run.status, key=registry.sort_key) == ALL_TASKS


def test_fresh_exercises_score_zero_with_every_task_not_started(fresh_run):
    assert fresh_run.results["score"] == 0
    assert fresh_run.status == {t: "not started" for t in ALL_TASKS}
    assert not re.search(r"Traceback|Error:|\berror\s+\d+/", fresh_run.output), fresh_run.output[-4000:]
    assert "Next: task 1.1" in fresh_run.output


def test_results_json_is_valid_and_agrees_with_the_scorecard(reference_run, fresh_run):
    for run in (reference_run, fresh_run):
        jsonschema.validate(run.results, RESULTS_SCHEMA)
        bonus = run.results["extra_data"]["bonus"]
        assert scorecard_total(run.output) == (run.results["score"] - bonus, run.results["extra_data"]["max_score"])
        assert f"Bonus{' ' * 57}{bonus:>4}/{run.results['extra_data']['bonus_max']}" in run.output
        assert sum(t["score"] for t in run.results["tests"]) == run.results["score"]
        assert sum(t["max_score"] for t in run.results["tests"]) == run.results["extra_data"]["max_score"]
    assert fresh_run.results["extra_data"]["max_score"] == reference_run.results["extra_data"]["max_score"]


def test_partial_solution_scores_exactly_the_tasks_done(tmp_path, reference_run):
    done = frozenset({"1.1", "1.3", "2.1", "2.2", "2.3", "3.1", "6.1", "6.2", "8.5", "10.1", "10.2", "12.3"})
    submission = tmp_path / "partial"
    submission.mkdir()
    for name, text in expected_files(keep=done).items():
        (submission / name).write_text(text)
    run = grade(submission, tmp_path=tmp_path)
    full = reference_run.score_by_task
    assert run.results["score"] == sum(full[t][0] for t in done), run.output[-4000:]
    for task_id, status in run.status.items():
        assert status == ("passed" if task_id in done else "not started"), (task_id, status)


def test_a_wrong_backward_loses_that_task_and_only_that_task(tmp_path, reference_run):
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    wrong = source.replace(
        "self.grad += other * self.data ** (other - 1) * out.grad", "self.grad += other * self.data ** other * out.grad"
    )
    assert wrong != source
    engine.write_text(wrong)
    run = grade(submission, tmp_path=tmp_path)
    lost = {t for t, (score, most) in run.score_by_task.items() if score < most}
    assert lost == {"8.2", *CAPSTONES}, run.output[-4000:]
    assert run.status["8.2"] == "failed"
    for capstone in CAPSTONES:  # it runs the whole engine only once every task of it passes
        assert run.status[capstone] == "not started"
        assert any(
            r["message"].startswith("waits for task 8.2")
            for r in run.results["extra_data"]["results"]
            if r["task"] == capstone
        )


def test_hard_coding_the_headline_numbers_does_not_pass(tmp_path):
    """A submission with a wrong __pow__ backward that patches the page's numbers in backward()."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    source = source.replace("self.grad += other * self.data ** (other - 1) * out.grad", "self.grad += out.grad")
    source = source.replace(
        "        self.grad = 1.0\n",
        "        self.grad = 1.0\n"
        "        if round(self.data, 4) == 24.7041:\n"
        "            for v in topo:\n"
        "                v.grad = {-4.0: 138.8338, 2.0: 645.5773}.get(v.data, v.grad) if not v._prev else v.grad\n"
        "            return\n",
    )
    engine.write_text(source)
    run = grade(submission, "--lesson", "8", tmp_path=tmp_path)
    assert run.status["8.2"] == "failed", run.output[-4000:]
    assert all(run.status[t] == "passed" for t in run.status if t != "8.2")


def test_a_syntax_error_costs_only_the_tasks_of_its_file(tmp_path, reference_run):
    submission = copy_of("solutions", tmp_path)
    nn = submission / "nn.py"
    lines = nn.read_text().splitlines()
    broken_line = next(i for i, line in enumerate(lines) if "return []" in line)
    lines[broken_line] = lines[broken_line].replace("return []", "return [")
    nn.write_text("\n".join(lines) + "\n")
    run = grade(submission, tmp_path=tmp_path)
    for task_id, status in run.status.items():
        expected = "error" if task_id.startswith("10.") else "not started" if task_id in CAPSTONES else "passed"
        assert status == expected, (task_id, status)  # a capstone waits for the tasks of nn.py
    assert f"nn.py:{broken_line + 1}" in run.output
    assert "SyntaxError" in run.output


def test_an_endless_loop_costs_only_its_own_test(tmp_path, reference_run):
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    engine.write_text(
        source.replace('        return f"Value(data={self.data})"', "        while True:\n            pass")
    )
    run = grade(submission, "--lesson", "2", "--check-timeout", "2", tmp_path=tmp_path)
    assert run.status["2.2"] == "timed out", run.output[-3000:]
    assert {t: s for t, s in run.status.items() if t != "2.2"} == {"2.1": "passed", "2.3": "passed", "2.4": "passed"}
    assert "endless loop" in run.output


def test_a_loop_inside_c_code_is_stopped_and_still_located(tmp_path, reference_run):
    """`sum(itertools.count())` never returns to Python, so only a kill stops it; the message still says where."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    relu = '        out = Value(max(0.0, self.data), (self,), "ReLU")'
    looping = source.replace(relu, "        import itertools\n        sum(itertools.count())\n" + relu)
    assert looping != source
    engine.write_text(looping)
    line = looping.splitlines().index("        sum(itertools.count())") + 1
    run = grade(submission, "--task", "8.6", "--check-timeout", "1", tmp_path=tmp_path)
    assert run.status == {"8.6": "timed out"}, run.output[-3000:]
    assert f"engine.py:{line} in relu" in run.output, run.output[-3000:]
    results = run.results["extra_data"]["results"]
    assert {r["status"] for r in results} == {"timed out", "skipped"}  # one stopped, the task's later ones not run
    assert sum("stopped after the time limit" in r["message"] for r in results) == 1  # one limit for the whole task


def test_one_lesson_or_one_task_can_be_graded_alone(tmp_path):
    run = grade("solutions", "--lesson", "3", tmp_path=tmp_path)
    assert sorted(run.status) == ["3.1", "3.2"]
    run = grade("exercises", "--task", "8.2", tmp_path=tmp_path)
    assert list(run.status) == ["8.2"]
    assert "pytest autograder --task 8.2" in run.output


def test_a_later_task_waits_for_the_task_it_runs_through(tmp_path):
    """__add__ holds both 2.3 (forward) and 5.2 (backward): 5.2 is 'not started' and says it waits for 2.3."""
    run = grade("exercises", "--task", "5.2", "--show-code", tmp_path=tmp_path)
    assert run.status == {"5.2": "not started"}
    assert any("waits for task 2.3" in r["message"] for r in run.results["extra_data"]["results"])


def test_unknown_task_is_a_clear_usage_error(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "autograder", "--task", "99.1"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 4
    assert "--task 99.1: there is no such task" in proc.stderr


def test_the_readme_shows_what_a_fresh_clone_prints(fresh_run):
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```text\n(.*?)```", readme, re.DOTALL)
    assert blocks
    printed = {line.rstrip() for line in fresh_run.output.splitlines()}
    for block in blocks:
        for line in block.splitlines():
            assert line in printed, f"README line not in the grader's output: {line!r}"


def test_a_worker_that_cannot_start_stops_the_run_with_its_error(monkeypatch):
    """The grader's fault (here: a worker interpreter that dies at once) is one clear error, not a failed check."""
    import sys

    from autograder.grading import launchers, runner

    broken = [sys.executable, "-c", "import sys; sys.exit('ModuleNotFoundError: no module named autograder')"]
    monkeypatch.setattr(launchers, "python", lambda: broken)
    for start in ("fork", "spawn"):
        with pytest.raises(RuntimeError) as caught:
            runner.grade("solutions", lessons=[2], workers=start)
        assert "the grader could not start a worker process" in str(caught.value), start
        assert "no module named autograder" in str(caught.value), start
        assert "python -m autograder doctor" in str(caught.value), start


def test_workers_import_the_grader_that_runs_them_whatever_the_install_says():
    """A checkout moved after `pip install -e` must not leave the workers importing another (or no) `autograder`."""
    import os

    from autograder.grading import launchers

    assert launchers.worker_env()["PYTHONPATH"].split(os.pathsep)[0] == str(REPO)


def test_calls_sent_ahead_never_stand_in_for_calls_the_run_did_not_make(tmp_path, reference_run):
    """Workers answer planned calls before they are asked; a plan that is not this run's changes no verdict.

    The plan on disk is replaced by one in which a scenario called again gets its previous call's arguments:
    were answers matched by anything less than the whole request, a check would get the answer to another
    check's question, and the scores would change.
    """
    import json

    from autograder.grading import caches

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    engine.write_text(source.replace("out = Value(self.data * other.data", "out = Value(self.data + other.data"))
    assert engine.read_text() != source
    grade("solutions", tmp_path=tmp_path)  # a plan for every task (a run at `processes` as root forgets them all)
    honest = grade(submission, tmp_path=tmp_path)
    cache = caches.GradingCache(isolation.best_level())
    path = cache.folder / "plans.json"
    plans = json.loads(path.read_text())
    assert len(plans) == len(registry.TASKS), "the runs before this one left a plan for every task"
    poisoned, changed = {}, 0
    for task, calls in plans.items():
        previous, poisoned[task] = {}, []
        for call in calls:
            key = (call["file"], call["name"])
            if previous.get(key, call["args"]) != call["args"]:
                poisoned[task].append({**call, "args": previous[key]})
                changed += 1
            else:
                poisoned[task].append(call)
            previous[key] = call["args"]
    assert changed > 20
    try:
        cache.store("plans", poisoned)
        planned = grade(submission, tmp_path=tmp_path)
    finally:
        cache.store("plans", plans)
    assert planned.status == honest.status, planned.output[-3000:]
    assert planned.score_by_task == honest.score_by_task
    assert {"passed", "failed"} <= set(honest.status.values())


def test_a_change_to_the_kit_recomputes_the_reference_answers(tmp_path, reference_run):
    """Expected values are kept under one fingerprint of everything that decides them: the kit is part of it, of the
    cache's and of the answers the course ships."""
    import json

    from autograder.grading import caches, reference

    cache = caches.GradingCache(isolation.best_level())
    answers = cache.folder / "answers.json"
    known = json.loads(answers.read_text()) if answers.exists() else {}  # a run computes only what is not shipped
    cache.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache.store("answers", {key: "stale" for key in {**reference.shipped_answers(), **known}})
    kit = REPO / "autograder" / "kit" / "checks.py"
    original = kit.read_text()
    try:
        stale = grade("solutions", "--lesson", "8", tmp_path=tmp_path)
        assert set(stale.status.values()) != {"passed"}, "the poisoned answers were not read: this proves nothing"
        kit.write_text(original + "\n# a change to the kit\n")
        fresh = grade("solutions", "--lesson", "8", tmp_path=tmp_path)
    finally:
        kit.write_text(original)
        cache.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        cache.store("answers", known)
    assert set(fresh.status.values()) == {"passed"}, fresh.output[-3000:]


def test_cache_files_that_others_could_write_are_not_read(tmp_path, reference_run):
    """A worker of another user could have written such a file: its answers are never used."""
    import json

    from autograder.grading import caches, reference

    cache = caches.GradingCache(isolation.best_level())
    answers = cache.folder / "answers.json"
    known = json.loads(answers.read_text()) if answers.exists() else {}  # a run computes only what is not shipped
    cache.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    cache.store("answers", {key: "stale" for key in {**reference.shipped_answers(), **known}})  # the cache's come first
    try:
        answers.chmod(0o644)
        cache.seal("answers")
        assert set(grade("solutions", "--task", "8.1", tmp_path=tmp_path).status.values()) != {"passed"}
        answers.chmod(0o666)
        cache.seal("answers")  # sealed: only the mode is wrong
        run = grade("solutions", "--task", "8.1", tmp_path=tmp_path)
    finally:
        cache.store("answers", known)
    assert set(run.status.values()) == {"passed"}, run.output[-3000:]


def test_a_run_whose_grading_tests_changed_under_it_is_void(tmp_path):
    """At `processes` a submission may write the grader's own files: a run that finds them changed counts nothing."""
    import json

    submission = copy_of("solutions", tmp_path)
    target = REPO / "autograder" / "lessons" / "test_02_value.py"
    original = target.read_text()
    derivatives = submission / "derivatives.py"
    code = f"open({str(target)!r}, 'a').write('# changed by a submission\\n')"
    derivatives.write_text(derivatives.read_text() + "\n" + code + "\n")  # when the file loads
    try:
        run = grade(submission, "--lesson", "1", "--isolation", level_here("processes"), tmp_path=tmp_path)
        written = target.read_text() != original
    finally:
        target.write_text(original)
    if hasattr(os, "geteuid") and os.geteuid() == 0:  # its workers are users of their own: the files are root's
        assert not written and "results are void" not in json.dumps(run.results), run.output[-3000:]
        return
    assert set(run.status.values()) == {"error"}, run.output[-3000:]
    assert "results are void" in json.dumps(run.results), run.output[-3000:]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # the lesson's marks are the grader's own
def test_judgements_check_the_shape_of_an_answer_before_pairing_it_up():
    """An empty list once passed a check that paired answers with `zip`: every answer's length is checked."""
    from autograder.kit.checks import CheckFailed, expect_list
    from autograder.lessons.test_12_classifier import _scores_from

    assert expect_list([1, 2], 2, "answers") == [1, 2]
    for wrong in ([], [1], [1, 2, 3], "12", None, {"0": 1}):
        with pytest.raises(CheckFailed, match="a list of 2"):
            expect_list(wrong, 2, "answers")
    sizes = [2, 1]  # one linear neuron: w0, w1, b
    assert _scores_from([1.0, 2.0, 0.5], [[1.0, 1.0], [0.0, -1.0]], sizes, "") == [3.5, -1.5]
    for wrong in ([], [1.0, 2.0], [1.0, 2.0, float("nan")], "scores"):
        with pytest.raises(CheckFailed, match="3 finite numbers"):
            _scores_from(wrong, [[1.0, 1.0]], sizes, "")


def test_a_learner_file_is_read_only_as_a_regular_file_of_bounded_size(tmp_path):
    """A link, a pipe (reading it would block) or a huge file is refused with the reason; a missing one is None."""
    import os

    from autograder.grading.learner_files import LearnerFileError, read_learner_file
    from autograder.grading.limits import MAX_SOURCE

    (tmp_path / "engine.py").write_text("x = 1\n")
    assert read_learner_file(tmp_path, "engine") == "x = 1\n"
    assert read_learner_file(tmp_path, "nn") is None
    (tmp_path / "graph.py").symlink_to(tmp_path / "engine.py")
    (tmp_path / "train.py").write_bytes(b"#" * (MAX_SOURCE + 1))
    (tmp_path / "further.py").write_bytes(b"\xff\xfe")
    refused = {"graph": "symbolic link", "train": "the limit is", "further": "not UTF-8"}
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "classifier.py")
        refused["classifier"] = "not a regular file"
    for module, why in refused.items():
        with pytest.raises(LearnerFileError, match=why):
            read_learner_file(tmp_path, module)


def test_files_that_cannot_make_the_task_say_what_is_missing(tmp_path):
    """A worker names the problem (`LearnerCodeError`); the grader words it: no class Value, a method missing."""
    import json

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    engine.write_text(source.replace("class Value:", "class Number:", 1))
    run = grade(submission, "--task", "2.1", tmp_path=tmp_path)
    said = json.dumps(run.results)
    assert run.status["2.1"] == "error" and "engine.py defines no class Value" in said, run.output[-2000:]
    engine.write_text(source.replace("    def __repr__(self) -> str:", "    def shown(self) -> str:", 1))
    run = grade(submission, "--task", "2.2", tmp_path=tmp_path)
    said = json.dumps(run.results)
    assert run.status["2.2"] == "error" and "class Value has no method __repr__" in said, run.output[-2000:]


@pytest.mark.skipif(os.name != "posix", reason="batch asks a grader to stop with SIGTERM on POSIX only")
def test_a_grader_asked_to_stop_writes_every_check_it_finished(tmp_path):
    """Past its deadline batch (and a platform's run through it) asks the grader to stop: it writes its results
    file as it stands at once, then ends, so the checks it finished since its last save (at most once a second
    while checks run) are scored too."""
    import json
    import signal
    import subprocess
    import sys
    import time

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    repr_line = '        return f"Value(data={self.data})"'
    engine.write_text(engine.read_text().replace(repr_line, "        import time\n        time.sleep(3600)"))
    results = tmp_path / "results.json"
    grader = subprocess.Popen(
        [sys.executable, "-m", "autograder", "grade", f"--impl={submission}", f"--results-file={results}"]
        + ["--task", "1.1", "--task", "2.2"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not results.exists():  # the first check's save
            assert time.monotonic() < deadline and grader.poll() is None, "the grader saved nothing"
            time.sleep(0.1)
        time.sleep(10)  # task 1.1's checks take milliseconds: by now the run waits in 2.2's sleeping __repr__
        grader.send_signal(signal.SIGTERM)
        assert grader.wait(timeout=30) == 128 + signal.SIGTERM  # it stopped itself, not killed by the signal
    finally:
        os.killpg(grader.pid, signal.SIGKILL) if grader.poll() is None else None
    saved = json.loads(results.read_text())
    first = [t for t in saved["tests"] if t["task"] == "1.1"]
    assert first and all(t["status"] == "passed" for t in first), first
    assert saved["complete"] is False
