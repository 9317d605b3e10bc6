"""The scorecard always says why: every check that did not run says so under its task's line, a task that partly
passed never reads "not started", a timeout's skipped checks take one line, and one failing check's hint comes first.

The graded cases are the reference broken as a learner would break it (issue 17's cases); the others build
results by hand and call the scorecard's helpers.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from autograder.course import registry
from autograder.grading import lastrun, scorecard
from autograder.grading.results import SKIPPED, Results
from autograder.grading.results import TestResult as Check  # not a test class
from autograder.grading.verdicts import shown

from .conftest import REPO, copy_of, grade

ASSIGNING = [  # the backward closures of +, * (task 7.1's region) with `=` for `+=`
    "            self.grad += out.grad\n",
    "            other.grad += out.grad\n",
    "            self.grad += other.data * out.grad\n",
    "            other.grad += self.data * out.grad\n",
]
TANH = ("self.grad += (1 - t**2) * out.grad", "self.grad += (1 - t) * out.grad")  # a wrong local rule (task 5.1)


def broken(tmp_path, file: str, *replacements: tuple[str, str]):
    submission = copy_of("solutions", tmp_path)
    path = submission / file
    text = path.read_text()
    for old, new in replacements:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)
    return submission


def task_lines(output: str, task_id: str) -> list[str]:
    """The task's line of the scorecard and the lines right under it (up to the next task or lesson)."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if re.match(rf"  \S {re.escape(task_id)}\s", line))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("         "))
    return lines[start:end]


def test_checks_that_wait_inside_a_failed_task_say_why(tmp_path):
    """`=` for `+=` and a wrong tanh: 7.1 fails, and its checks that wait for 5.1 say so in the same run."""
    submission = broken(tmp_path, "engine.py", *((line, line.replace("+=", "=")) for line in ASSIGNING), TANH)
    run = grade(submission, "--task", "7.1", tmp_path=tmp_path)
    assert run.status == {"7.1": "failed"}, run.output[-3000:]
    waiting = [r for r in run.results["extra_data"]["results"] if r["status"] == "not started"]
    assert waiting and {r["waits_for"] for r in waiting} == {"5.1"}
    lines = task_lines(run.output, "7.1")
    assert lines[0].split()[:6] == ["✗", "7.1", "a", "Value", "used", "twice"] and "failed" in lines[0]
    assert lines[1:] == [f"         {len(waiting)} checks wait for task 5.1 (Value.tanh)"], run.output[-3000:]


def test_a_task_that_partly_passed_is_in_progress_never_not_started(tmp_path):
    """`+=` fixed, tanh still wrong: 7.1's own checks pass, the rest wait for 5.1, and the next step is 5.1."""
    submission = broken(tmp_path, "engine.py", TANH)
    run = grade(submission, "--task", "7.1", tmp_path=tmp_path)
    assert run.status == {"7.1": "in progress"}, run.output[-3000:]
    earned, most = run.score_by_task["7.1"]
    assert 0 < earned < most
    waiting = sum(r["status"] == "not started" for r in run.results["extra_data"]["results"])
    lines = task_lines(run.output, "7.1")
    assert lines[0].split()[:2] == ["◐", "7.1"] and "in progress" in lines[0] and "not started" not in lines[0]
    assert lines[0].endswith(f"{earned}/{most}")
    assert lines[1:] == [f"         {waiting} checks wait for task 5.1 (Value.tanh)"]
    assert "Next: task 5.1 · Value.tanh (task 7.1 waits for it)" in run.output


def test_a_timeout_shows_one_line_for_the_checks_it_skipped(tmp_path):
    relu = '        out = Value(max(0.0, self.data), (self,), "ReLU")'
    submission = broken(tmp_path, "engine.py", (relu, "        while True:\n            pass\n" + relu))
    own = tmp_path / "results.json"  # the grader's own results: hidden checks' messages too
    run = grade(submission, "--task", "8.6", "--check-timeout", "1", "--results-file", str(own), tmp_path=tmp_path)
    assert run.status == {"8.6": "timed out"}, run.output[-3000:]
    results = json.loads(own.read_text())["tests"]
    skipped = [r for r in results if r["status"] == "skipped"]  # a status of its own, with its own message
    assert len(skipped) == len(results) - 1 > 1 and all(r["message"] == SKIPPED for r in skipped)
    assert task_lines(run.output, "8.6")[1:] == [
        f"         {len(skipped)} checks skipped: an earlier check of this task timed out"
    ]
    card = run.output[run.output.index("What went wrong") :]
    assert card.count("⏱ task 8.6") == 1 and SKIPPED not in card, card
    points = sum(r["points"] for r in skipped)
    (task,) = run.results["tests"]  # Gradescope's view of the task: one line for the skipped checks there too
    assert task["output"].count("skipped") == 1 and f"{len(skipped)} checks skipped" in task["output"]
    assert f"    then:     {len(skipped)} later checks of task 8.6 skipped ({points} pt)" in card.splitlines()


def test_one_failing_check_shows_its_own_hint_first(tmp_path):
    """Task 1.1 with no ValueError for a bad h: the Next lines give that check's hint, not the task's first level."""
    submission = broken(tmp_path, "derivatives.py", ("    ### BEGIN SOLUTION (task 1.1)\n    _check_step(h)\n", ""))
    run = grade(submission, "--task", "1.1", tmp_path=tmp_path)
    assert run.status == {"1.1": "failed"}, run.output[-3000:]
    (failed,) = [r for r in run.results["extra_data"]["results"] if r["status"] == "failed"]
    assert "ValueError" in failed["hint"] and failed["hint"] != registry.task("1.1").hints[0]
    nexts = run.output[run.output.index("Next: task 1.1") :].splitlines()
    stuck = next(i for i, line in enumerate(nexts) if line.startswith("      stuck? python -m autograder hint 1.1"))
    hint = nexts[2:stuck]  # wrapped to the scorecard's 72 columns, under its first word
    assert hint[0].startswith("      hint: ") and all(line.startswith(" " * 12) for line in hint[1:]), nexts[:6]
    assert " ".join(line.strip() for line in hint) == f"hint: {failed['hint']}" and max(map(len, hint)) <= 72


# --- the scorecard's rules on results built by hand ------------------------------------------------------------------


def _results(*tests: tuple[str, str, str, str]) -> Results:
    """Results of checks given as (task, status, waits_for, message)."""
    made = [
        Check(f"t{i}", f"check {i}", task, 1, f"hint {i}", status=status, message=message, waits_for=waits)
        for i, (task, status, waits, message) in enumerate(tests)
    ]
    return Results("x/", "", "", made, sorted({t[0] for t in tests}, key=registry.sort_key))


def test_a_fresh_task_says_nothing_more_than_not_started():
    task = _results(("1.1", "not started", "", "the stub"), ("1.1", "not started", "", "the stub")).tasks[0]
    assert task.status == "not started" and scorecard.not_run(task) == []


def test_every_reason_a_check_did_not_run_is_counted_on_its_own_line():
    task = _results(
        ("7.1", "passed", "", ""),
        ("7.1", "not started", "2.3", "waits"),
        ("7.1", "not started", "2.3", "waits"),
        ("7.1", "not started", "5.1", "waits"),
        ("7.1", "not started", "", "the stub"),
    ).tasks[0]
    assert task.status == "in progress" and task.waits_for == "2.3"
    assert scorecard.not_run(task) == [
        "2 checks wait for task 2.3 (Value.__add__ forward)",
        "1 check waits for task 5.1 (Value.tanh)",
        "1 check not started: the stub still raises NotImplementedError",
    ]
    whole = _results(("5.2", "not started", "2.3", "waits"), ("5.2", "not started", "2.3", "waits")).tasks[0]
    assert scorecard.not_run(whole) == ["waits for task 2.3 (Value.__add__ forward)"]


def test_the_hint_comes_first_only_when_one_check_fails():
    one = _results(("1.1", "passed", "", ""), ("1.1", "failed", "", "wrong"))
    assert "      hint: hint 1" in scorecard.text(one).splitlines()
    assert "      hint: hint 1" in scorecard.progress(one).splitlines()  # watch mode's view says it too
    two = _results(("1.1", "failed", "", "wrong"), ("1.1", "failed", "", "wrong"))
    assert not any(line.startswith("      hint:") for line in scorecard.text(two).splitlines())
    timed_out = _results(("8.6", "timed out", "", "stopped"), ("8.6", "skipped", "", SKIPPED))
    assert "      hint: hint 0" in scorecard.text(timed_out).splitlines()  # a skipped check is not a second failure


def test_the_scorecard_and_watch_mode_name_the_same_next_step():
    """One writer of the next step: a task this machine could not grade never comes next, in either view."""
    void = _results(("1.1", "could not be graded", "", "the reference fails it too"), ("1.2", "failed", "", "wrong"))
    for view in (scorecard.text(void), scorecard.progress(void)):
        nexts = [line for line in view.splitlines() if line.startswith("Next:")]
        assert nexts == ["Next: task 1.2 · central_difference (failed)"], view
    waits = _results(("5.1", "failed", "", "wrong"), ("7.1", "not started", "5.1", "waits for task 5.1"))
    for view in (scorecard.text(waits), scorecard.progress(waits)):
        assert "Next: task 5.1 · Value.tanh (failed)" in view.splitlines(), view
    card, watch = scorecard.text(void).splitlines(), scorecard.progress(void).splitlines()
    assert "      read course/01-derivatives.md#task-1-2, then run: pytest autograder --task 1.2" in card
    assert "      read course/01-derivatives.md#task-1-2" in watch  # watch grades on every save: no command to run


def test_a_notebook_check_cell_says_what_the_scorecard_says():
    """A check cell shows the scorecard's lines for a check: its own hint (not the marker's) and its page; a check
    the machine could not grade gives no hint about the code and is not counted against anyone."""
    wrong = _results(("1.1", "failed", "", "expected 2\nhint:     divide by h"))
    lines = scorecard.check_lines(wrong.tests[0])
    assert lines[0] == "✗ task 1.1 · forward_difference: check 0: failed (0 of 1 point)"
    assert "    hint:     divide by h" in lines and "    page:     course/01-derivatives.md#task-1-1" in lines
    void = _results(("1.1", "could not be graded", "", "the reference fails it too"))
    lines = scorecard.check_lines(void.tests[0])
    assert lines[0].endswith(": could not be graded (not counted)") and not any("hint:" in x for x in lines)


# --- `python -m autograder hint L.N` opens with the last run's failing check ----------------------------------------


def hint(folder, task_id: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "hint", task_id, "--impl", str(folder)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and not proc.stderr, proc.stdout + proc.stderr
    return proc.stdout


def test_hint_shows_the_hint_of_the_check_that_failed_in_the_last_run_first(tmp_path):
    """The run the scorecard reported, then `hint 1.1`: that check's hint first, then level 1 as always; from
    another folder, once the file changed, or for a task that passed, the hints are what they always were."""
    submission = broken(tmp_path, "derivatives.py", ("    ### BEGIN SOLUTION (task 1.1)\n    _check_step(h)\n", ""))
    run = grade(submission, "--lesson", "1", tmp_path=tmp_path)
    assert run.status == {"1.1": "failed", "1.2": "passed", "1.3": "passed"}, run.output[-3000:]
    (failed,) = [r for r in run.results["extra_data"]["results"] if r["status"] == "failed"]
    levels = registry.task("1.1").hints
    as_always = [
        f"Task 1.1 · forward_difference: hint 1 of {len(levels)}",
        f"  1. {levels[0]}",
    ]
    assert hint(submission, "1.1").splitlines()[:5] == [
        "Task 1.1 · forward_difference: the check that failed in your last run",
        f"  check: {failed['description']}",
        f"  hint:  {failed['hint']}",
        *as_always,
    ]
    assert hint(submission, "1.2").splitlines()[0] == "Task 1.2 · central_difference: hint 1 of 3"  # it passed
    other = copy_of("solutions", tmp_path, "other")  # another folder: not its run
    assert hint(other, "1.1").splitlines()[:2] == as_always
    (other / ".hints-seen.json").unlink()
    (other / "derivatives.py").write_bytes((submission / "derivatives.py").read_bytes())
    assert hint(other, "1.1").splitlines()[:2] == as_always, "same code, but not the folder that was graded"
    with (submission / "derivatives.py").open("a") as f:
        f.write("# changed since the run\n")
    (submission / ".hints-seen.json").unlink()
    assert hint(submission, "1.1").splitlines()[:2] == as_always, "the file changed: that run is stale"


def _last_run(tmp_path, *tests: tuple[str, str, str, str], **changes) -> tuple:
    """A last-run file of a folder holding derivatives.py, for checks given as `_results` takes them."""
    folder = tmp_path / "work"
    folder.mkdir(exist_ok=True)
    (folder / "derivatives.py").write_text("def forward_difference(fn, x, h=1e-6):\n    return 0\n")
    files = {"derivatives": lastrun.digest((folder / "derivatives.py").read_bytes())}
    task_files = {task: ["derivatives"] for task in ("1.1", "1.2", "1.3")}
    path = tmp_path / "last-run.json"
    lastrun.save(_results(*tests), folder, files, task_files, path)
    if changes:
        data = json.loads(path.read_text())
        for key, value in changes.items():
            data[key] = value(data[key]) if callable(value) else value
        path.write_text(json.dumps(data))
    return folder, path


def test_hint_takes_every_check_that_went_wrong(tmp_path):
    """Each check of the task that went wrong, one per hint (a check a timeout skipped is no second one), in the same
    folder, in the last complete run of the files as they are."""
    one = [("1.1", "passed", "", ""), ("1.1", "failed", "", "wrong"), ("1.2", "passed", "", "")]
    folder, path = _last_run(tmp_path, *one)
    assert lastrun.failed_checks("1.1", folder, path) == [("check 1", "hint 1")]
    assert lastrun.failed_checks("1.2", folder, path) == []  # it passed
    assert lastrun.failed_checks("1.3", folder, path) == []  # not graded in that run
    other = tmp_path / "other"
    other.mkdir()
    (other / "derivatives.py").write_bytes((folder / "derivatives.py").read_bytes())
    assert lastrun.failed_checks("1.1", other, path) == []  # another folder's run, even with the same file
    folder, path = _last_run(tmp_path, ("1.1", "failed", "", "wrong"), ("1.1", "error", "", "raised"))
    assert lastrun.failed_checks("1.1", folder, path) == [("check 0", "hint 0"), ("check 1", "hint 1")]
    folder, path = _last_run(tmp_path, ("1.1", "timed out", "", "stopped"), ("1.1", "skipped", "", SKIPPED))
    assert lastrun.failed_checks("1.1", folder, path) == [("check 0", "hint 0")]
    # a last run written before "skipped" was a status of its own: a skipped check was "timed out"
    folder, path = _last_run(tmp_path, ("1.1", "timed out", "", "stopped"), ("1.1", "timed out", "", SKIPPED))
    assert lastrun.failed_checks("1.1", folder, path) == [("check 0", "hint 0")]
    folder, path = _last_run(tmp_path, ("1.1", "not started", "", "the stub"))
    assert lastrun.failed_checks("1.1", folder, path) == []
    folder, path = _last_run(tmp_path, *one, results=lambda r: {**r, "complete": False})
    assert lastrun.failed_checks("1.1", folder, path) == []  # a run still going, or stopped before its end
    general = registry.task("1.1").hints[0]
    folder, path = _last_run(
        tmp_path, *one, results=lambda r: {**r, "tests": [{**t, "hint": general} for t in r["tests"]]}
    )
    assert lastrun.failed_checks("1.1", folder, path) == []  # already one of the task's levels


HOSTILE = [  # what a learner's code at the `processes` level could leave in the last-run file, or a broken disk
    b"",
    b"\x00\xff not json",
    b"[1, 2]",
    b'{"root": 1}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"root": "ROOT", "files": [], "task_files": {}, "results": {}}',
    b'{"root": "ROOT", "files": {"derivatives": "DIGEST"}, "task_files": {"1.1": "derivatives"}, "results": {}}',
    b'{"root": "ROOT", "files": {"derivatives": "DIGEST"}, "task_files": {"1.1": [["derivatives"]]}, "results": {}}',
    b'{"root": "ROOT", "files": {"derivatives": "DIGEST"}, "task_files": {"1.1": ["derivatives"]}, "results": []}',
    b'{"root": "ROOT", "files": {"derivatives": "DIGEST"}, "task_files": {"1.1": ["derivatives"]}, '
    b'"results": {"complete": true, "tests": {"1.1": 1}}}',
]


def test_hint_survives_any_last_run_file_and_escapes_what_it_shows(tmp_path, monkeypatch, capsys):
    """A missing, corrupt, malformed or hostile file: the task's hints as always, never a traceback; the strings of
    a well-formed one reach the terminal escaped, as every learner string does (`verdicts.shown`)."""
    from autograder.__main__ import main

    folder, path = _last_run(tmp_path, ("1.1", "failed", "", "wrong"))
    data = json.loads(path.read_text())
    monkeypatch.setattr(lastrun, "PATH", tmp_path / "absent.json")
    level_1 = f"  1. {registry.task('1.1').hints[0]}"

    def first_lines() -> list[str]:
        assert main(["hint", "1.1", "--reset", "--impl", str(folder)]) == 0
        return capsys.readouterr().out.splitlines()[:2]

    assert first_lines()[1] == level_1
    monkeypatch.setattr(lastrun, "PATH", path)
    for text in HOSTILE:
        text = text.replace(b"ROOT", json.dumps(str(folder))[1:-1].encode())
        path.write_bytes(text.replace(b"DIGEST", data["files"]["derivatives"].encode()))
        assert first_lines()[1] == level_1, text[:200]
    for bad in ({"points": "1"}, {"status": "in progress"}, {"hint": 3}, {"hidden": "no"}, {"task": None}):
        tests = [{**t, **bad} for t in data["results"]["tests"]]
        path.write_text(json.dumps({**data, "results": {**data["results"], "tests": tests}}))
        assert first_lines()[1] == level_1, bad
    monkeypatch.setattr(lastrun, "MAX_FILE", 1000)
    path.write_text(json.dumps({**data, "padding": "x" * 1000}))
    assert first_lines()[1] == level_1, "a file over the cap is not read"
    if hasattr(os, "mkfifo"):  # a pipe where a file should be: reading it would wait forever (here: 30 s, a failure)
        ask = (
            "from pathlib import Path; from autograder.grading import lastrun; "
            f"print(lastrun.failed_checks('1.1', Path({str(folder)!r}), Path({str(path)!r})))"
        )

        def asked() -> str:
            return subprocess.run(
                [sys.executable, "-c", ask], cwd=REPO, capture_output=True, text=True, timeout=30
            ).stdout

        path.write_text(json.dumps(data))
        assert asked().strip() == "[('check 0', 'hint 0')]"
        path.unlink()
        os.mkfifo(path)
        assert asked().strip() == "[]"
        path.unlink()
        path.write_text(json.dumps(data))
        (folder / "derivatives.py").rename(tmp_path / "derivatives.py")
        os.mkfifo(folder / "derivatives.py")
        assert asked().strip() == "[]"
        (folder / "derivatives.py").unlink()
        (tmp_path / "derivatives.py").rename(folder / "derivatives.py")
    monkeypatch.undo()
    monkeypatch.setattr(lastrun, "PATH", path)
    forged = "ok\n\x1b[2J\x1b[31m✓ 1.1 passed\r"
    tests = [{**t, "description": forged, "hint": forged * 100} for t in data["results"]["tests"]]
    path.write_text(json.dumps({**data, "results": {**data["results"], "tests": tests}}))
    assert main(["hint", "1.1", "--impl", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "ok\\x0a\\x1b[2J\\x1b[31m✓ 1.1 passed\\x0d" in out
    assert out.splitlines()[1] == "  check: " + shown(forged, lastrun.MAX_DESCRIPTION, lines=False)
    assert len(out) < 6000, "the hint is capped"


def test_the_results_file_is_saved_as_checks_finish_at_most_once_a_second(tmp_path, monkeypatch):
    """A run stopped from outside keeps what it found (its results file is written while checks run), but the file,
    which grows with each check, is not rewritten after every one of them: at most once per `SAVE_EVERY`."""
    from types import SimpleNamespace

    from autograder.grading import plugin

    path = tmp_path / "results.json"
    results = Results("x", "", "user", tests=[Check("t1", "t", "1.1", 1, "", status="passed")])
    grader = SimpleNamespace(options=SimpleNamespace(results_file=str(path)), results=results, saved_at=float("-inf"))
    clock = iter([100.0, 100.0, 100.5, 101.2, 101.2, 101.3, 101.3])
    monkeypatch.setattr(plugin.time, "monotonic", lambda: next(clock))
    plugin._save_progress(grader, final=False)  # the first check: written
    assert json.loads(path.read_text())["tests"][0]["status"] == "passed"
    results.tests.append(Check("t2", "t", "1.2", 1, "", status="failed"))
    plugin._save_progress(grader, final=False)  # half a second later: not yet
    assert len(json.loads(path.read_text())["tests"]) == 1
    plugin._save_progress(grader, final=False)  # a second later: written
    assert len(json.loads(path.read_text())["tests"]) == 2
    results.tests.append(Check("t3", "t", "1.3", 1, "", status="failed"))
    plugin._save_progress(grader, final=True)  # the end of the run: always
    assert len(json.loads(path.read_text())["tests"]) == 3
