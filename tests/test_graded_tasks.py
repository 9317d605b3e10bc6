"""A task resolved once per run (`grading/tasks.py`): the learner file, owners, prerequisites, files and preload its
worker gets; and the one status model (`results.Status`), `skipped` a member of its own."""

from __future__ import annotations

import dataclasses
import json

from autograder.course import registry
from autograder.grading.results import SKIPPED, Results, Status
from autograder.grading.results import TestResult as Check  # not a test class
from autograder.grading.tasks import graded


def test_a_task_is_resolved_to_its_file_owners_and_prerequisites():
    add = graded("2.3")
    assert (add.module, add.owners, add.learner_files) == ("engine", ("Value.__add__",), ("engine",))
    assert add.prerequisite_owners == ("Value.__init__",)  # 2.1's constructor: the reference's, under 2.3's code
    assert add.lesson_modules == ("autograder.lessons.test_02_value",)
    assert (add.preload, add.waits_for, add.runs_whole) == ((), (), False)
    assert graded("2.3") is add  # resolved once: every later call hands back the same object


def test_torch_tasks_preload_torch_and_a_capstone_waits_for_what_it_runs():
    assert graded("9.1").preload == ("torch",) and graded("9.1").module == "torch_bridge"
    capstone = next(t for t in registry.TASKS if registry.task(t).runs_whole)
    whole = graded(capstone)
    assert whole.runs_whole and whole.learner_files == tuple(registry.task(capstone).runs_whole)
    assert "2.3" in whole.waits_for and capstone not in whole.waits_for
    assert all(not registry.task(t).bonus for t in whole.waits_for)


def test_skipped_is_a_status_of_its_own_and_worst_comes_last():
    assert Status("skipped") is Status.SKIPPED and Status.SKIPPED.went_wrong
    assert not Status.VOID.went_wrong and not Status.NOT_STARTED.went_wrong
    order = list(Status)
    assert order[0] is Status.PASSED and order[-1] is Status.TIMED_OUT
    check = Check("n", "d", "8.6", 2, "h", status="skipped", message=SKIPPED)
    assert check.skipped and check.status is Status.SKIPPED and check.earned == 0


def test_results_written_before_skipped_was_a_status_read_as_skipped():
    """An older results file said "timed out" with the skipped message: it reads as `Status.SKIPPED` now."""
    old = {"graded": "x/", "impl_option": "", "isolation": "", "selected": ["8.6"], "tests": []}
    old["tests"] = [
        {"nodeid": "a", "description": "a", "task": "8.6", "points": 1, "hint": "h", "status": "timed out"},
        {"nodeid": "b", "description": "b", "task": "8.6", "points": 1, "hint": "h", "status": "timed out"},
    ]
    old["tests"][1]["message"] = SKIPPED
    results = Results.from_json(json.loads(json.dumps(old)))
    assert [t.status for t in results.tests] == [Status.TIMED_OUT, Status.SKIPPED]
    assert json.loads(json.dumps(results.to_json()))["tests"][1]["status"] == "skipped"  # written as its value


def test_results_as_json_hold_every_field_of_the_run_and_of_each_check():
    """`to_json` writes each record one level deep (no deep copy): the same data as the dataclasses hold."""
    results = Results("x/", "", "user", selected=["8.6"], fresh_inputs=3, platform="prairielearn")
    results.tests = [Check("a", "d", "8.6", 2, "h", status="failed", message="m", cause="c", waits_for="8.5")]
    results.quiet = [Check("b", "d", "8.5", 1, "h", status="passed")]
    assert json.loads(json.dumps(results.to_json())) == json.loads(json.dumps(dataclasses.asdict(results)))
    assert Results.from_json(json.loads(json.dumps(results.to_json()))) == results
