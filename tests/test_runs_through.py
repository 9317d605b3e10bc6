"""What each check runs through, recorded from the reference (`export/runs_through.py`): blame reads it
(`grading/blame.py`), so it must say what the checks really run, and be as fresh as the sources it comes from."""

from __future__ import annotations

import json

import pytest

from autograder.export import runs_through
from autograder.grading.blame import RUNS_THROUGH


@pytest.mark.filterwarnings("ignore::pytest.PytestUnknownMarkWarning")  # the lessons' marks are the grader's own
def test_the_record_is_what_the_checks_run_and_is_up_to_date():
    """Recorded again for lessons 7 and 8: what `build` committed. 8.2's power rule runs `**` alone (and `Value`);
    division runs `**` and `*` and its backward; 7.1's checks run the backward closures of `+` and `*` that it
    shares with 5.2 and 5.3, which are its own code, not theirs."""
    assert not runs_through.stale(), "run: python -m autograder build"
    committed = json.loads(RUNS_THROUGH.read_text())["checks"]
    again = runs_through.record(lessons=(7, 8))
    assert again == {key: committed[key] for key in again} and len(again) > 30
    assert again["test_08_operations::test_pow_backward"] == ["2.1"]
    assert {"5.3", "8.2"} <= set(again["test_08_operations::test_div_backward"])
    assert "8.4" in again["test_08_operations::test_headline_with_pow"]  # 8.2's headline divides
    assert not {t for key, tasks in again.items() if key.startswith("test_07_") for t in tasks} & {"5.2", "5.3"}
