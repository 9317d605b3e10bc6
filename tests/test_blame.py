"""Blame follows the dependency graph: a check that only runs through a broken task waits for it, no check waits for a
task that passed, and `Next:` names the earliest task that fails on its own (`autograder/grading/blame.py`).

The results are made by hand, as a run would leave them; `test_edition.py` grades a real broken edition.
"""

from __future__ import annotations

from autograder.course import registry
from autograder.grading import scorecard
from autograder.grading.blame import Blame, blame_by_dependency, dependency_order
from autograder.grading.results import Results
from autograder.grading.results import TestResult as Check  # not a test class
from autograder.grading.verdicts import RUNS_THROUGH


def run_of(outcomes: dict[str, list[tuple[str, str]]], tasks=None) -> Results:
    """Results of a run over `tasks` (every graded task by default): each passes, unless `outcomes` gives its
    checks' (status, message)."""
    tasks = tasks or [t for t in registry.TASKS if not registry.task(t).bonus]
    tests = []
    for task_id in tasks:
        for n, (status, message) in enumerate(outcomes.get(task_id, [("passed", "")])):
            tests.append(
                Check(f"t{task_id}-{n}", f"check {n}", task_id, 1, f"hint {task_id}-{n}", False, status, message)
            )
    return Results("x/", "", "processes", tests=tests, selected=list(tasks))


# one `__mul__` backward without `* out.grad`, as a student edition sees it: every check of 5.3 fails, and the
# checks of other tasks that build a graph with a product fail too
MUL_BUG = {
    "5.3": [("failed", "a.grad: expected 6.0, got 3.0 (too little)")] * 4,
    "5.1": [("passed", ""), ("passed", ""), ("failed", "x1.grad: expected -1.5, got 0.5"), ("passed", "")],
    "5.2": [("passed", ""), ("passed", ""), ("failed", "w1.grad: expected 1.0, got 0.5"), ("passed", "")],
    "4.3": [("failed", "L after the step: expected -7.286496, got -7.9")],
    "7.1": [("passed", ""), ("failed", "a.grad: expected 2.0, got 1.0")],
    "10.4": [("failed", "the MLP's grads differ from PyTorch's")],
}


def statuses(results: Results) -> dict[str, str]:
    return {t.task.id: t.status for t in results.tasks}


def test_lesson_5_comes_before_the_tasks_that_need_it_and_the_rest_keeps_lesson_order():
    order = [t for group in dependency_order() for t in group]
    assert sorted(order, key=registry.sort_key) == sorted(registry.TASKS, key=registry.sort_key)
    assert order.index("5.3") < order.index("4.3") and order.index("5.3") < order.index("3.1")
    assert ("5.1", "5.2", "5.3") in dependency_order()  # they need each other: one group
    rest = [t for t in order if t not in ("3.1", "3.2", "4.3", "5.1", "5.2", "5.3")]
    assert rest == sorted(rest, key=registry.sort_key)


def test_in_an_edition_one_bug_is_one_red_task_and_the_tasks_that_run_through_it_wait():
    results = run_of(MUL_BUG)
    blame_by_dependency(results, edition=True)
    status = statuses(results)
    assert status["5.3"] == "failed"
    for task_id in ("5.1", "5.2", "7.1"):  # partly passed: in progress, waiting
        assert status[task_id] == "in progress", task_id
    assert status["4.3"] == status["10.4"] == "not started"
    waiting = [c for c in results.tests if c.waits_for]
    assert {c.waits_for for c in waiting} == {"5.3"} and len(waiting) == 5
    assert waiting[0].message.startswith(
        f"waits for task 5.3 ({registry.task('5.3').title}), which fails: a.grad: expected 6.0, got 3.0"
    )
    card = scorecard.text(results)
    assert f"Next: task 5.3 · {registry.task('5.3').title} (task 4.3 waits for it)" in card
    assert "a task's points come when the tasks it waits for pass" in card  # said in the edition only
    assert card.count("✗ task") == 4  # "What went wrong" lists 5.3's checks alone


def test_in_the_full_course_the_reference_isolates_and_nothing_moves():
    results = run_of(MUL_BUG)
    blame_by_dependency(results, edition=False)
    assert not any(c.waits_for for c in results.tests)
    assert all(statuses(results)[t] == "failed" for t in ("4.3", "5.1", "5.3", "10.4"))
    assert "tasks it waits for pass" not in scorecard.text(results)


def test_a_wait_on_a_task_that_passed_is_charged_where_the_check_is():
    """11.3's loop raised inside 11.1's function, and 11.1 passed: 11.3's own code is to blame."""
    title = registry.task("11.1").title
    raised = f"waits for task 11.1 ({title}){RUNS_THROUGH}TypeError: unsupported operand\nwhere:    exercises/nn.py:9"
    results = run_of({"11.3": [("not started", raised)]})
    results.tests[-1].waits_for = "11.1"
    next(c for c in results.tests if c.task == "11.3").waits_for = "11.1"
    blame_by_dependency(results, edition=True)
    check = next(c for c in results.tests if c.task == "11.3")
    assert (check.status, check.waits_for) == ("error", "")
    assert check.message.startswith(
        f"task 11.1's code ({title}), which passes its own checks, raised TypeError when this check ran it: unsupported"
    )
    assert "waits for task 11.1" not in scorecard.text(results)
    assert f"Next: task 11.3 · {registry.task('11.3').title} (error)" in scorecard.text(results)


def test_a_wait_is_pointed_at_the_task_that_fails_on_its_own():
    """A capstone waiting for 10.4, which itself waits for 5.3 in an edition, waits for 5.3."""
    capstone = next(t for t in registry.TASKS if registry.task(t).runs_whole)
    results = run_of({**MUL_BUG, capstone: [("not started", "waits for task 10.4 (...): it runs your engine")]})
    next(c for c in results.tests if c.task == capstone).waits_for = "10.4"
    blame_by_dependency(results, edition=True)
    check = next(c for c in results.tests if c.task == capstone)
    assert check.waits_for == "5.3" and check.message.startswith("waits for task 5.3 (")
    assert "which task 10.4 waits for: a.grad: expected 6.0" in check.message


def test_a_file_that_does_not_load_is_not_blamed_on_the_first_task():
    """Every task fails with the same message: each keeps it (the file is the cause, not the earliest task)."""
    broken = [("error", "exercises/nn.py:3: SyntaxError: invalid syntax")]
    results = run_of({t: broken for t in ("10.1", "10.2", "10.3")})
    blame_by_dependency(results, edition=True)
    assert [statuses(results)[t] for t in ("10.1", "10.2", "10.3")] == ["error"] * 3


def test_a_later_bug_does_not_make_an_earlier_task_wait():
    """In an edition 6.1 runs through lesson 5, not lesson 7: its own failure stays its own."""
    results = run_of({"6.1": [("failed", "order")], "7.1": [("failed", "a.grad")]})
    blame_by_dependency(results, edition=True)
    assert statuses(results)["6.1"] == "failed"
    assert statuses(results)["7.1"] == "not started"
    assert next(c for c in results.tests if c.task == "7.1").waits_for == "6.1"


def test_a_task_never_waits_for_itself():
    """A wrong power rule (8.2): 8.2's headline divides, and division (8.4) runs 8.2's `**`. 8.4 waits for 8.2;
    8.2's headline, which found itself waiting for 8.4, is 8.2's own failure, not a wait for 8.2."""
    title = registry.task("8.4").title
    results = run_of(
        {
            "8.2": [
                ("failed", "(x**3).grad: expected 12.0, got 8.0"),
                ("not started", f"waits for task 8.4 ({title})"),
            ],
            "8.4": [("not started", f"waits for task 8.2 ({registry.task('8.2').title})")],
        }
    )
    for check in results.tests:
        check.waits_for = {"8.2": "8.4", "8.4": "8.2"}[check.task] if check.status == "not started" else ""
    blame_by_dependency(results, edition=False)
    headline = [c for c in results.tests if c.task == "8.2"][1]
    assert (headline.status, headline.waits_for) == ("failed", "")
    assert headline.message.startswith("this check runs task 8.4's code, which runs this task's own")
    assert not any(c.waits_for == c.task for c in results.tests)
    assert statuses(results)["8.4"] == "not started"
    card = scorecard.text(results)
    assert "waits for task 8.2 (" not in "\n".join(line for line in card.splitlines() if "8.2 " in line[:12])
    assert "Next: task 8.2 ·" in card


# what some checks of lesson 8 run through (as `runs_through.json` records them): 8.2's power rule runs `**` alone,
# its headline divides, and division runs `**` and `*`
THROUGH = {
    "t8.2-0": {"2.1"},
    "t8.2-1": {"2.1", "5.3", "8.4"},
    "t8.4-0": {"2.1", "5.3", "8.2"},
    "t8.4-1": {"2.1", "5.3", "8.1", "8.2"},
}
LESSON_8 = ["2.1", "5.3", "8.1", "8.2", "8.4"]


def ran(check: Check) -> frozenset[str]:
    return frozenset(THROUGH.get(check.nodeid, {"2.1"}))


def wrong(n: int) -> tuple[str, str]:
    return ("failed", f"a.grad: expected 12.0, got {n}.0")


def test_a_check_is_charged_to_what_it_runs_through_not_to_what_its_task_needs():
    """A wrong power rule, in an edition: 8.4 loses every point (division runs `**`) and 8.2 half of them, yet 8.2's
    power-rule check runs nothing but `**`: 8.2 fails on its own, its headline (which divides) is its own failure
    too, and 8.4 waits for it. With the tasks' graph alone (8.2 and 8.4 need each other), 8.4 was red."""
    results = run_of({"8.2": [wrong(1), wrong(2), ("passed", "")], "8.4": [wrong(3), wrong(4)]}, tasks=LESSON_8)
    blame = Blame(results.tests, edition=True, ran=ran)
    assert set(blame.broken) == {"8.2"} and "8.4" in blame.clean
    assert [blame.label(f"t8.2-{n}").status for n in range(3)] == ["failed", "failed", "passed"]
    assert {blame.label(f"t8.4-{n}").waits_for for n in range(2)} == {"8.2"}
    assert (
        blame.label("t8.4-0").message
        == "waits for task 8.2 (Value.__pow__), which fails: a.grad: expected 12.0, got 1.0"
    )


def test_a_partial_run_needs_the_tasks_a_wrong_check_runs_through_and_then_settles_it():
    """`--task 8.4`: its wrong check runs through 2.1, 5.3 and 8.2, which the run did not grade; `needs` names them
    (to be graded quietly), and once they are known the check waits for the one that fails on its own."""
    partial = run_of({"8.4": [wrong(3), ("passed", "")]}, tasks=["8.4"])
    assert Blame(partial.tests, edition=True, ran=ran).needs("t8.4-0") == {"2.1", "5.3", "8.2"}
    assert Blame(partial.tests, edition=True, ran=ran).needs("t8.4-1") == set()  # it passed: nothing to settle
    # 8.2 known and failing, 2.1 not known yet: whether 8.2 fails on its own depends on 2.1 (and 5.3, before it)
    half = run_of({"8.2": [wrong(1), wrong(2)], "8.4": [wrong(3), ("passed", "")]}, tasks=["8.2", "8.4"])
    assert Blame(half.tests, edition=True, ran=ran).needs("t8.4-0") == {"2.1", "5.3"}
    everything = run_of({"8.2": [wrong(1), wrong(2)], "8.4": [wrong(3), ("passed", "")]}, tasks=LESSON_8)
    blame = Blame(everything.tests, edition=True, ran=ran)
    assert blame.needs("t8.4-0") == set() and blame.label("t8.4-0").waits_for == "8.2"


def test_tasks_that_explain_only_each_other_blame_the_most_broken():
    """8.2 and 8.4 each fail only checks that run through the other: nothing else decides, so the one that lost the
    larger share of its points fails on its own and the other waits for it."""
    results = run_of({"8.2": [("passed", ""), wrong(2), ("passed", "")], "8.4": [wrong(3), wrong(4)]}, tasks=LESSON_8)
    blame = Blame(results.tests, edition=True, ran=ran)
    assert set(blame.broken) == {"8.4"}
    assert blame.label("t8.2-1").waits_for == "8.4" and blame.label("t8.4-0").status == "failed"
