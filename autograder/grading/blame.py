"""Blame by dependency, check by check: a check that went wrong because a task it runs through fails on its own waits
for that task, no check waits for a task that passed, and no task waits for itself.

What a check runs through is a property of the check: 8.2's power-rule check runs `**` alone, its headline
divides, and division runs `**` and `*`. `python -m autograder dev build` records it from the reference, check by check
(`export/runs_through.py`, into `RUNS_THROUGH`); of those tasks, a check runs the *learner's* code (`through`):

- in a student edition, which ships no reference, for every one of them;
- in the full course, for those whose code the check's task's worker takes from the learner: in the task's own
  file, its own functions and methods and those that hold no prerequisite's code (`tasks.GradedTask`: the worker
  holds the reference of its prerequisites, the reference of every other file); in a capstone's checks, which run
  the learner's files whole, all of them.

A region the check's own task shares with earlier tasks is theirs too: 6.2's backward is 6.1's, 7.1's closures
are lesson 5's rules, so a check of 6.2 that goes wrong where 6.1 fails on its own waits for 6.1, in a run that
grades 6.2 alone as in a full one. The later task of a shared region is not run through: 6.1's checks do not wait
for 6.2.

A task *fails on its own* when one of its checks went wrong that no task it runs through explains; a task explains
a check when it fails on its own (for another reason than the check gives: a file that does not load fails every
task with one message, and each keeps it). Tasks are decided from the checks up: one with a wrong check whose
tasks all pass (or are explained otherwise) fails on its own; one whose wrong checks are all explained does not.
Where tasks explain each other's checks and nothing else decides (a cycle), the one that lost the largest share of
its points fails on its own, the earliest first. Each wrong check then waits for the earliest task (in dependency
order, `order`) that explains it; the waits the checks found themselves (a stub reached, another task's code
raised, a capstone waiting) are kept, pointed at the task that fails on its own, or charged to the check's own task
where the task they name passed.

`Blame` decides from the checks known so far, and says which tasks it still needs graded to settle a check
(`needs`), so that a run that grades only some tasks can grade those first and name the culprit that a full run
names. `blame_by_dependency` relabels a finished run's `Results`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import NamedTuple

from autograder.course import registry
from autograder.course.regions import waits_for
from autograder.grading import caches, verdicts
from autograder.grading.results import Results, Status, TaskResult, TestResult
from autograder.grading.tasks import LESSONS, graded

# which other tasks' code each check runs, as the reference runs it: written by `python -m autograder dev build`
RUNS_THROUGH = LESSONS / "runs_through.json"


def check_key_of(module: str, function: str) -> str:
    """How a check is named in `RUNS_THROUGH`: its file's and its function's names, `test_08_operations::test_x`."""
    return f"{module}::{function}"


def check_key(nodeid: str) -> str:
    """A check's key (`check_key_of`) from its pytest node id (`autograder/lessons/test_08_….py::task …::test_x`)."""
    path, _, rest = nodeid.partition("::")
    return check_key_of(Path(path).stem, rest.rpartition("::")[2])


class Ran(NamedTuple):
    """A region of another task's code that a check runs: its file, its owner (`Value.__add__`), its tasks."""

    module: str
    owner: str
    tasks: tuple[str, ...]


@cache
def recorded() -> dict[str, tuple[Ran, ...]]:
    """The checks' record of what they run through (`RUNS_THROUGH`); nothing if it is missing or unreadable."""
    try:
        data = json.loads(caches.read_regular(RUNS_THROUGH, caches.MAX_FILE))
        return {
            str(key): tuple(Ran(str(r[0]), str(r[1]), tuple(map(str, r[2:]))) for r in regions)
            for key, regions in data["checks"].items()
        }
    except (OSError, caches.NotRegular, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return {}


@cache
def runs_through(task_id: str, edition: bool) -> frozenset[str]:
    """What a check with no record runs through, task by task: in an edition, the task's prerequisites and theirs;
    in the full course, a capstone's tasks."""
    if not edition:
        return frozenset(waits_for(task_id))
    found, todo = set(), [task_id]
    while todo:
        for other in registry.prerequisites(todo.pop()) - found:
            found.add(other)
            todo.append(other)
    return frozenset(found - {task_id})


def through(check: TestResult, edition: bool) -> frozenset[str]:
    """The other tasks whose code, the learner's, `check` runs (see the module's docstring)."""
    own = check.task
    ran = recorded().get(check_key(check.nodeid))
    if ran is None:
        return runs_through(own, edition)
    if not edition and not registry.task(own).runs_whole:  # the regions the task's worker takes from the learner
        task = graded(own)
        ran = [r for r in ran if r.module == task.module and r.owner not in task.prerequisite_owners]
    return frozenset(t for r in ran for t in r.tasks if t != own and (own not in r.tasks or order(t) < order(own)))


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


def order(task_id: str) -> tuple[int, int, int]:
    """Which task comes first when several could be named: dependency order, then lesson order."""
    return (position(task_id), *registry.sort_key(task_id))


@dataclass(frozen=True)
class Label:
    """What blame makes of a check: its status, message, the task it waits for, the cause it names."""

    status: Status
    message: str
    waits_for: str = ""
    cause: str = ""

    @property
    def waits(self) -> bool:
        return self.status == Status.NOT_STARTED and bool(self.waits_for)


def own_label(check: TestResult) -> Label:
    return Label(Status(check.status), check.message, check.waits_for, check.cause)


class Blame:
    """What the checks known so far say: which tasks fail on their own, and each check's label.

    `checks`: every check graded so far, each with its own verdict (before blame); `known`: the tasks all of whose
    checks are among them (by default, every task they come from); `ran`: what a check runs through, the learner's
    code (by default `through`). A task that is not known is taken as passing where `done` (a finished run that did
    not grade it), else as not decided yet (`needs` names it).
    """

    def __init__(
        self,
        checks: Iterable[TestResult],
        edition: bool,
        known: Iterable[str] | None = None,
        ran: Callable[[TestResult], frozenset[str]] | None = None,
        done: bool = False,
    ):
        self.checks = {c.nodeid: c for c in checks}
        self.by_task: dict[str, list[TestResult]] = {}
        for check in self.checks.values():
            self.by_task.setdefault(check.task, []).append(check)
        self.known = set(self.by_task) if known is None else set(known) & set(self.by_task)
        ran = ran or (lambda c: through(c, edition))
        self.ran = {n: ran(c) for n, c in self.checks.items() if c.status.went_wrong}
        passed = {t for t in self.known if TaskResult(registry.task(t), self.by_task[t]).status == Status.PASSED}
        self.raw = {n: self._charged(c, passed) for n, c in self.checks.items()}
        for n, label in self.raw.items():  # a wait charged to its own check runs through what the check runs
            if label.status.went_wrong and n not in self.ran:
                self.ran[n] = ran(self.checks[n])
        self.broken: dict[str, TestResult] = {}  # task -> its first check that fails on its own
        self.clean: set[str] = (
            set(registry.TASKS) - self.known if done else set()
        )  # tasks that do not fail on their own
        self.pending: set[str] = set(self.known)
        self._decide()
        self.labels = self._labels()

    # --- the checks' own verdicts ---------------------------------------------------------------------------------

    @staticmethod
    def _charged(check: TestResult, passed: set[str]) -> Label:
        """A check's own verdict; a wait on a task that passed is charged to the check's own task."""
        label = own_label(check)
        if label.waits and label.waits_for in passed:
            return Label(Status.ERROR, verdicts.charged_here(check.message, check.waits_for), "", check.cause)
        return label

    def _wrong(self, task_id: str) -> list[TestResult]:
        return [c for c in self.by_task.get(task_id, []) if self.raw[c.nodeid].status.went_wrong]

    def _open_waits(self, task_id: str) -> list[str]:
        """The tasks not known yet that checks of `task_id` wait for (if one passes, the check is charged here)."""
        waits = (self.raw[c.nodeid] for c in self.by_task.get(task_id, []))
        return [w.waits_for for w in waits if w.waits and w.waits_for not in self.known]

    # --- which tasks fail on their own ----------------------------------------------------------------------------

    def explains(self, task_id: str, check: TestResult) -> bool:
        """`task_id` fails on its own, for another reason than `check` gives."""
        own = self.broken.get(task_id)
        return own is not None and self.raw[own.nodeid].message != self.raw[check.nodeid].message

    def explainer(self, check: TestResult) -> str | None:
        """The earliest task that `check` runs through and that explains it, if one does."""
        return min((u for u in self.ran[check.nodeid] if self.explains(u, check)), key=order, default=None)

    def _alone(self, check: TestResult) -> bool:
        """`check` went wrong, and every task it runs through is decided and none of them explains it."""
        return all(
            (u in self.clean or u in self.broken) and not self.explains(u, check) for u in self.ran[check.nodeid]
        )

    def _decide(self) -> None:
        while self.pending:
            moved = False
            for task_id in sorted(self.pending, key=order):
                wrong = self._wrong(task_id)
                alone = next((c for c in wrong if self._alone(c)), None)
                if alone is not None:
                    self.broken[task_id] = alone
                elif all(self.explainer(c) for c in wrong) and not self._open_waits(task_id):
                    self.clean.add(task_id)
                else:
                    continue
                self.pending.discard(task_id)
                moved = True
            if not moved and not self._break_a_cycle():
                return

    def _break_a_cycle(self) -> bool:
        """Tasks that explain each other's checks and wait for nothing else: the most broken of them fails on its
        own (the largest share of its points lost, the earliest first). False if no such cycle is closed yet."""
        edges: dict[str, set[str]] = {}
        blocked = set()
        for task_id in self.pending:
            edges[task_id] = set()
            for check in self._wrong(task_id):
                if self.explainer(check) is None:
                    for other in self.ran[check.nodeid]:
                        if other in self.pending:
                            edges[task_id].add(other)
                        elif other not in self.known:
                            blocked.add(task_id)
            if self._open_waits(task_id):
                blocked.add(task_id)
        closed = [g for g in _components(edges) if not g & blocked and all(edges[t] <= g for t in g)]
        if not closed:
            return False
        group = min(closed, key=lambda g: min(map(order, g)))
        chosen = min(group, key=lambda t: (-self._lost_share(t), order(t)))
        self.broken[chosen] = next(c for c in self._wrong(chosen) if self.explainer(c) is None)
        self.pending.discard(chosen)
        return True

    def _lost_share(self, task_id: str) -> float:
        checks = self.by_task[task_id]
        points = sum(c.points for c in checks if c.counted)
        return sum(c.points for c in self._wrong(task_id)) / points if points else 0.0

    # --- each check's label ---------------------------------------------------------------------------------------

    def _labels(self) -> dict[str, Label]:
        first = {n: self._first_label(c) for n, c in self.checks.items()}
        waiting = {}  # task -> the task it waits for, where it has nothing wrong of its own (`TaskResult.waits_for`)
        for task_id, checks in self.by_task.items():
            statuses = [first[c.nodeid] for c in checks]
            if not any(s.status.went_wrong for s in statuses):
                waiting[task_id] = next((s.waits_for for s in statuses if s.waits), "")
        self.waiting = waiting
        return {n: self._pointed(self.checks[n], label) for n, label in first.items()}

    def _first_label(self, check: TestResult) -> Label:
        label = self.raw[check.nodeid]
        if not label.status.went_wrong:
            return label
        blocker = self.explainer(check)
        if blocker is None:
            return label
        why = self._why(blocker)
        return Label(
            Status.NOT_STARTED,
            f"waits for task {blocker} ({registry.task(blocker).title}), which fails: {why}",
            blocker,
        )

    def _why(self, task_id: str) -> str:
        """What a waiting check says of why the task it waits for fails: the failure's first line, but no word of a
        hidden check's (learner code may have put what it saw there into its own message, which the waiting check
        would show)."""
        check = self.broken[task_id]
        return "one of its hidden checks" if check.hidden else _first_line(self.raw[check.nodeid].message)

    def _pointed(self, check: TestResult, label: Label) -> Label:
        """A wait the check found itself, pointed at the task it comes down to; never a wait for itself."""
        if not label.waits:
            return label
        root = self.root(label.waits_for)
        if root == check.task:
            return Label(Status.FAILED, verdicts.comes_back(check.message, label.waits_for), "", label.cause)
        if root == label.waits_for:
            return label
        said = f"waits for: {self._why(root)}" if root in self.broken else "waits for"
        title = registry.task(root).title
        return Label(label.status, f"waits for task {root} ({title}), which task {label.waits_for} {said}", root)

    def root(self, task_id: str) -> str:
        """The task a wait on `task_id` comes down to: itself, unless it only waits for another one."""
        seen = set()
        while task_id not in self.broken and self.waiting.get(task_id) and task_id not in seen:
            seen.add(task_id)
            task_id = self.waiting[task_id]
        return task_id

    def label(self, nodeid: str) -> Label:
        return self.labels[nodeid]

    # --- what a check still needs ---------------------------------------------------------------------------------

    def needs(self, nodeid: str) -> set[str]:
        """The tasks not graded yet whose checks could change this check's label (nothing: it is settled)."""
        check, label = self.checks[nodeid], self.raw[nodeid]
        if label.status.went_wrong:
            blocker = self.explainer(check)
            undecided = [u for u in self.ran[nodeid] if u not in self.clean and u not in self.broken]
            return self._unknown_behind(u for u in undecided if blocker is None or order(u) < order(blocker))
        if label.waits:
            chain, task_id = [], label.waits_for
            while task_id not in chain:
                chain.append(task_id)
                if task_id not in self.known or task_id in self.pending:
                    return self._unknown_behind([task_id])
                if task_id in self.broken or not self.waiting.get(task_id):
                    break
                task_id = self.waiting[task_id]
        return set()

    def _unknown_behind(self, tasks: Iterable[str]) -> set[str]:
        """The tasks not known yet among `tasks`, and behind the undecided ones: what deciding them needs."""
        found, seen, todo = set(), set(), list(tasks)
        while todo:
            task_id = todo.pop()
            if task_id in seen:
                continue
            seen.add(task_id)
            if task_id not in self.known:
                found.add(task_id)
            elif task_id in self.pending:
                todo.extend(self._open_waits(task_id))
                for check in self._wrong(task_id):
                    if self.explainer(check) is None:
                        todo.extend(u for u in self.ran[check.nodeid] if u not in self.clean and u not in self.broken)
        return found


def _components(edges: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of a small graph (every node a key of `edges`)."""
    reach = {t: _reachable(t, edges) | {t} for t in edges}
    groups: list[set[str]] = []
    for t in sorted(edges, key=order):
        if not any(t in g for g in groups):
            groups.append({u for u in reach[t] if t in reach[u]})
    return groups


def blame_by_dependency(results: Results, edition: bool) -> None:
    """Relabel a finished run's checks (its quiet ones too) so that each bug is charged where it is."""
    results.edition = edition
    checks = [*results.tests, *results.quiet]
    blame = Blame(checks, edition, done=True)
    for check in checks:
        apply(check, blame.label(check.nodeid))


def apply(check: TestResult, label: Label) -> None:
    check.status, check.message, check.waits_for = label.status, label.message, label.waits_for
    check.cause = "" if label.waits else label.cause  # a wait's mistake is the task it waits for, counted there


def _first_line(message: str) -> str:
    line = message.splitlines()[0] if message else "it fails"
    return line if len(line) <= 160 else line[:160] + "…"
