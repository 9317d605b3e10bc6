"""What each check runs through, recorded from the reference (`export/runs_through.py`): blame reads it
(`grading/blame.py`), so it must say what the checks really run, and be as fresh as the sources it comes from."""

from __future__ import annotations

import json

import pytest

from autograder.export import runs_through
from autograder.grading.blame import RUNS_THROUGH, through
from autograder.grading.results import TestResult as Check  # not a test class
from autograder.grading.tasks import node_label


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # the lessons' marks are the grader's own
def test_the_record_is_what_the_checks_run_and_is_up_to_date():
    """Recorded again for lessons 7 and 8: what `build` committed. 8.2's power rule runs `**` alone (and `Value`);
    division runs `**` and `*` and its backward; 7.1's checks run the backward closures of `+` and `*` that it
    shares with 5.2 and 5.3, recorded with every task they hold (blame decides which it runs through)."""
    assert not runs_through.stale(), "run: python -m autograder dev build"
    committed = json.loads(RUNS_THROUGH.read_text())["checks"]
    again = runs_through.record(lessons=(7, 8))
    assert again == {key: committed[key] for key in again} and len(again) > 30
    assert again["test_08_operations::test_pow_backward"] == [["engine", "Value.__init__", "2.1"]]
    assert ["engine", "Value.__pow__", "8.2"] in again["test_08_operations::test_div_backward"]
    assert ["engine", "Value.__mul__", "5.3", "7.1"] in again["test_08_operations::test_div_backward"]
    assert "8.4" in tasks(again["test_08_operations::test_headline_with_pow"])  # 8.2's headline divides
    assert ["engine", "Value.__add__", "5.2", "7.1"] in again["test_07_accumulation::test_add_reuse"]


def check(key: str, task: str) -> Check:
    """A check of `task` by its record's key (`test_07_accumulation::test_add_reuse`), as a run reports it."""
    file, function = key.split("::")
    return Check(f"autograder/lessons/{file}.py::{node_label(task)}::{function}", "", task, 1, "hint")


def tasks(ran: list[list[str]]) -> set[str]:
    return {t for region in ran for t in region[2:]}


def test_of_what_a_check_runs_the_learners_code_is_all_in_an_edition_and_what_the_tasks_worker_takes_from_the_learner():
    """In the full course a task's worker holds the reference of its prerequisites and of every other file: 3.2's
    drawing of a graph's grads runs the backward of `+` (5.2's, and 7.1's), the reference's there; 7.1's checks run
    their own `__add__` whole, the learner's forward (2.3) with it, over the reference's `Value.__init__` (2.1). In an
    edition every region is the learner's."""

    drawing = check("test_03_graph::test_draw_dot_reads_current_values", "3.2")
    assert {"5.2", "7.1"} <= through(drawing, edition=True) and through(drawing, edition=False) == set()
    reuse = check("test_07_accumulation::test_add_reuse", "7.1")
    assert through(reuse, edition=False) == {"2.3", "5.2"} and through(reuse, edition=True) == {"2.1", "2.3", "5.2"}
    division = check("test_08_operations::test_div_backward", "8.4")
    assert "8.2" in through(division, edition=True) and through(division, edition=False) == set()


def test_a_region_shared_with_an_earlier_task_is_run_through_and_one_shared_with_a_later_task_is_not():
    """6.1 and 6.2 share `Value.backward`, 5.2 and 7.1 `__add__`'s closure: 6.2's and 7.1's checks run through the
    earlier task's code (a run of 6.2 alone learns whether 6.1 is right, as a full run does), 6.1's and 5.2's do
    not run through the later one's (no cycle: the earlier task's failure stays its own), in both editions."""

    for edition in (True, False):
        assert "6.1" in through(check("test_06_backward::test_chain_100k", "6.2"), edition)
        assert "6.2" not in through(check("test_06_backward::test_chain_order", "6.1"), edition)
        assert "5.2" in through(check("test_07_accumulation::test_add_reuse", "7.1"), edition)
        assert "7.1" not in through(check("test_05_chain_rule::test_add_backward", "5.2"), edition)
