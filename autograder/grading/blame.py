"""Blame by dependency: when a run ends, a check that went wrong because a task it runs through is broken waits for
that task, and no check waits for a task that passed.

`blame_by_dependency(results, edition)` relabels a finished run's `Results` in place, before anything is written (the
plugin calls it when the session finishes); the scorecard, watch mode, results.json and the batch gradebook all
read the relabelled checks.

Which tasks' code a task's checks run through, as the learner's code:

- in the full course, only a capstone's (`regions.waits_for`): every other task runs over the reference of its
  prerequisites, so a bug there is already charged once, where it is;
- in a student edition, which ships no reference, every prerequisite (`registry.prerequisites`: the earlier
  lessons and `NEEDS`).

A task *fails on its own* when a check of it went wrong and no task it runs through fails on its own. Tasks are
taken in dependency order (`dependency_order`); tasks that need each other (5.1, 5.2 and 5.3 build one neuron)
are taken most broken first, since a bug in one of them breaks every check of its own but only the shared checks
of the others. Each wrong check of a task that runs through one that fails on its own then waits for the earliest
such task, by name and with its failure. The waits the checks themselves found (a stub reached, another task's
code raised, a capstone waiting) are kept, pointed at the task that fails on its own, or, where the task they
name passed, charged to the check's own task.
"""

from __future__ import annotations

from functools import cache

from autograder.course import registry
from autograder.course.regions import waits_for
from autograder.grading import verdicts
from autograder.grading.results import Results, Status, TaskResult, TestResult


@cache
def runs_through(task_id: str, edition: bool) -> frozenset[str]:
    """The other tasks whose code, the learner's, a task's checks may run: in an edition, its prerequisites and
    theirs (3.1's checks run 5.1's `tanh` backward, which runs 5.3's `*` backward)."""
    if not edition:
        return frozenset(waits_for(task_id))
    found, todo = set(), [task_id]
    while todo:
        for other in registry.prerequisites(todo.pop()) - found:
            found.add(other)
            todo.append(other)
    return frozenset(found - {task_id})


@cache
def dependency_order() -> tuple[tuple[str, ...], ...]:
    """Every task, in groups that need each other, each group after the groups it needs (`NEEDS`), else in lesson
    order: 4.3 needs lesson 5's backward rules, so lesson 5 comes before it."""
    needs = {t: set(registry.NEEDS.get(t, ())) | set(waits_for(t)) for t in registry.TASKS}
    reach = {t: _reachable(t, needs) for t in registry.TASKS}
    groups: list[tuple[str, ...]] = []
    placed: set[str] = set()
    left = sorted(registry.TASKS, key=registry.sort_key)
    while left:
        ready = next(t for t in left if all(u in placed or t in reach[u] for u in reach[t]))
        group = tuple(u for u in left if u == ready or (u in reach[ready] and ready in reach[u]))
        groups.append(group)
        placed.update(group)
        left = [u for u in left if u not in placed]
    return tuple(groups)


def _reachable(start: str, needs: dict[str, set[str]]) -> set[str]:
    seen, todo = set(), list(needs[start])
    while todo:
        t = todo.pop()
        if t not in seen:
            seen.add(t)
            todo.extend(needs.get(t, ()))
    return seen


def position(task_id: str) -> int:
    return next(i for i, group in enumerate(dependency_order()) if task_id in group)


def blame_by_dependency(results: Results, edition: bool) -> None:
    """Relabel the run's checks so that each bug is charged where it is, and say which task to fix first."""
    results.edition = edition
    tasks = {t.task.id: t for t in results.tasks}
    for check in results.tests:  # a wait on a task that passed: the check's own task is to blame
        other = tasks.get(check.waits_for)
        if check.status == Status.NOT_STARTED and other is not None and other.status == Status.PASSED:
            check.status, check.message = Status.ERROR, verdicts.charged_here(check.message, check.waits_for)
            check.waits_for = ""
    own: dict[str, TestResult] = {}  # task -> its first wrong check, for the tasks that fail on their own
    for group in dependency_order():
        members = sorted((tasks[t] for t in group if t in tasks), key=lambda t: (-_lost_share(t), t.task.id))
        for task in members:
            wrong = [c for c in task.tests if c.status.went_wrong]  # a void check is no one's fault
            if not wrong:
                continue
            blocker = min((u for u in runs_through(task.task.id, edition) if u in own), key=position, default=None)
            if blocker is None or all(c.message == own[blocker].message for c in wrong):  # one cause everywhere
                own[task.task.id] = next((c for c in wrong if not c.hidden), wrong[0])  # one to quote, if any
                continue
            for check in wrong:
                _wait(check, blocker, own[blocker])
    for check in results.tests:  # the checks' own waits, pointed at the task that fails on its own
        root = _root(check.waits_for, tasks, own)
        if check.status == Status.NOT_STARTED and check.waits_for and root == check.task:  # never a wait for itself
            check.status, check.message = Status.FAILED, verdicts.comes_back(check.message, check.waits_for)
            check.waits_for = ""
        elif check.status == Status.NOT_STARTED and root != check.waits_for:
            check.message = f"waits for task {root} ({registry.task(root).title}), which task {check.waits_for} " + (
                f"waits for: {_quoted(own[root])}" if root in own else "waits for"
            )
            check.waits_for = root


def _wait(check: TestResult, blocker: str, failure: TestResult) -> None:
    check.status, check.waits_for = Status.NOT_STARTED, blocker
    check.cause = ""  # the mistake is the blocker's, counted there
    check.message = f"waits for task {blocker} ({registry.task(blocker).title}), which fails: " + _quoted(failure)


def _root(task_id: str, tasks: dict[str, TaskResult], own: dict[str, TestResult]) -> str:
    """The task a wait on `task_id` comes down to: itself, unless it only waits for another one."""
    seen = set()
    while task_id in tasks and task_id not in own and tasks[task_id].waits_for and task_id not in seen:
        seen.add(task_id)
        task_id = tasks[task_id].waits_for
    return task_id


def _lost_share(task: TaskResult) -> float:
    lost = sum(c.points for c in task.tests if c.status.went_wrong)
    return lost / task.points if task.points else 0.0


def _quoted(failure: TestResult) -> str:
    """What a waiting check says of why the task it waits for fails: the failure's first line, but no word of a hidden
    check's (learner code may have put what it saw there into its own message, which the waiting check would show)."""
    return "one of its hidden checks" if failure.hidden else _first_line(failure.message)


def _first_line(message: str) -> str:
    line = message.splitlines()[0] if message else "it fails"
    return line if len(line) <= 160 else line[:160] + "…"
