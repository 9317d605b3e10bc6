"""Feedback that matches the failure: watch mode keeps the lines that explain, direction words come from the values,
a check's hint follows how it failed, a wrong type is named, a run of one task never congratulates on the lesson,
and watch says which total counts the bonus.

The results are made by hand; the learner's real mistakes are graded at the end of the file.
"""

from __future__ import annotations

import pytest

from autograder.course import registry
from autograder.grading import scorecard
from autograder.grading.results import Results
from autograder.grading.results import TestResult as Check  # not a test class
from autograder.grading.watch import this_run
from autograder.kit.checks import CheckFailed

from .conftest import grade
from .test_scorecard import broken


def run_of(*checks: tuple[str, str, str]) -> Results:
    """Results of checks given as (task, status, message), each worth a point, with the hint "marker hint N"."""
    made = [
        Check(f"t{i}", f"check {i}", task, 1, f"marker hint {i}", status=status, message=message)
        for i, (task, status, message) in enumerate(checks)
    ]
    return Results("x/", "", "", made, sorted({c[0] for c in checks}, key=registry.sort_key))


def test_direction_words_come_from_the_values():
    assert "got:      22.0 (1 more than expected)" in CheckFailed("a.grad", 21.0, 22.0).explain()
    assert "got:      -0.5 (1.5 less than expected)" in CheckFailed("a.grad", 1.0, -0.5).explain()
    assert "than expected" not in CheckFailed("a.grad", 1.0, "a str").explain()


def test_watch_keeps_the_note_and_the_hint_and_cuts_the_long_values():
    failure = CheckFailed("w1.grad", 1.0, [0.5] * 200, "w1 = Value(-3.0)", note="w1 feeds x1*w1: the rule is wrong")
    shown = scorecard.progress(run_of(("5.3", "failed", failure.explain())))
    assert "      note:     w1 feeds x1*w1: the rule is wrong" in shown.splitlines()
    assert "      hint:     marker hint 0" in shown.splitlines()
    got = next(line for line in shown.splitlines() if "got:" in line)
    assert len(got) <= 110 and got.endswith("…")


def test_a_failures_own_hint_replaces_the_markers_everywhere_once():
    """A check that can tell how it failed gives its own hint: the scorecard, watch and the hint command show it."""
    failure = CheckFailed("calls of a._backward", 1, 2, note="called twice", hint="Mark nodes as visited.")
    results = run_of(("6.1", "failed", failure.explain()))
    card = scorecard.text(results)
    assert "      hint: Mark nodes as visited." in card.splitlines()  # Next:'s hint
    assert "    hint:     Mark nodes as visited." in card.splitlines() and "marker hint" not in card
    assert card.count("Mark nodes as visited.") == 2  # once under Next:, once under the failure
    assert scorecard.progress(results).count("Mark nodes as visited.") == 2


def test_a_run_of_one_task_never_congratulates_on_the_lesson():
    results = run_of(("1.1", "passed", ""))
    for text in (scorecard.text(results), scorecard.progress(results)):
        assert "Well done" not in text and "Next: lesson" not in text
        assert f"Next: task 1.2 · {registry.task('1.2').title} (not graded in this run)" in text
    whole = run_of(("1.1", "passed", ""), ("1.2", "passed", ""), ("1.3", "passed", ""))
    assert "Every graded task passes. Well done!" in scorecard.text(whole)


def test_watch_says_which_total_counts_the_bonus():
    results = run_of(("1.1", "passed", ""), ("1.2", "failed", "x"), ("13.1", "passed", ""))
    assert this_run(results) == "1/2 graded tasks pass, 1/2 points; bonus tasks, counted apart: 1/1 pass, 1/1 points"
    assert "1/2 graded tasks · " in scorecard.progress(results)


# --- the learner's mistakes, graded: the first failure on the scorecard, and in watch mode's report, names the cause

MISTAKES = {  # (file, [(the reference's text, the mistake)], task, words that name the cause)
    "= for +=": (
        "engine.py",
        [("            self.grad += out.grad\n", "            self.grad = out.grad\n")]
        + [("            other.grad += out.grad\n", "            other.grad = out.grad\n")],
        "7.1",
        "sets the grad (=) where it must add to it (+=)",
    ),
    "a sort without a visited set": (
        "engine.py",
        [("elif v not in visited:", "else:")],
        "6.1",
        "Mark nodes as visited",
    ),
    "__radd__ as other + self": (
        "engine.py",
        [
            (
                "return self + other\n        ### END SOLUTION\n\n    def __rmul__",
                "return other + self\n        ### END SOLUTION\n\n    def __rmul__",
            )
        ],
        "8.1",
        "write `self + other`",
    ),
    "a training loop without zero_grad": ("train.py", [("        model.zero_grad()\n", "")], "11.3", "never zeroes"),
    "tanh's derivative from the input": (
        "engine.py",
        [("self.grad += (1 - t**2) * out.grad", "self.grad += (1 - self.data**2) * out.grad")],
        "5.1",
        "from the input x",
    ),
}


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_each_mistake_is_named_by_its_first_failure(mistake, tmp_path):
    file, replacements, task_id, cause = MISTAKES[mistake]
    run = grade(broken(tmp_path, file, *replacements), "--task", task_id, tmp_path=tmp_path)
    card = run.output.split("What went wrong")[1].splitlines()
    first = card[1 : next(i for i, line in enumerate(card[2:], 2) if line[:1] in "✗!⏱")]
    assert any(cause in line for line in first), run.output[-3000:]
    results = Results("x/", "", "", [Check(**r) for r in run.results["extra_data"]["results"]], [task_id])
    watch = scorecard.progress(results).split("What failed")[1].splitlines()
    first = watch[
        1 : next((i for i, line in enumerate(watch[2:], 2) if line.startswith("  ") and line[2] in "✗!⏱"), None)
    ]
    assert any(cause in line for line in first), "\n".join(watch)


def test_an_answer_the_check_cannot_judge_is_the_learners_and_says_so(tmp_path):
    """`forward_difference` returning an int too large for a float: the judgement raises on it. The reference's
    answer passes the same check, so the answer is wrong: a failed check that says so, never the grader's fault."""
    submission = broken(tmp_path, "derivatives.py", ("    return (fn(x + h) - fn(x)) / h\n", "    return 10**400\n"))
    run = grade(submission, "--task", "1.1", tmp_path=tmp_path)
    assert run.status == {"1.1": "failed"}, run.output[-3000:]
    assert "please report it" not in run.output and "could not be graded" not in run.output
    assert "your code's answer could not be compared with the expected one" in run.output
    assert "the check raised OverflowError: int too large to convert to float" in run.output
