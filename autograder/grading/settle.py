"""Each check's label, settled as it runs: what blame makes of it, grading quietly first what it runs through.

A check's pytest outcome is reported as soon as it has run (an editor's Testing panel draws it then), so blame
(`blame.py`) cannot wait for the end of the run: a check that went wrong, or that waits for another task, is
settled at once. `Settler.settle` asks `blame.Blame` what the check needs; where that is a task the run has not
graded yet (a later task of the run, or one it does not select: `--task 5.1` runs through 5.3's `*`), it grades
that task's checks first, *quietly*: the check functions are called here, with the same fixtures, workers and
re-asks of the reference as pytest's items, and nothing is reported of them. A quietly graded check of a task the
run selects is not run again when pytest reaches it (`plugin.pytest_pyfunc_call`): its item reports what it gave.
Tasks are graded a lesson at a time, the earliest in dependency order first, and only while the check is not
settled: a run in which nothing goes wrong grades nothing more, and a bug costs the lessons up to the task that
fails on its own.

Each check's own verdict (before blame) is kept as it first ran (`raw`); blame is computed from those only, so the
label of a check does not depend on which run asked: `--task`, `--lesson` and a full run settle it alike.

A graded run (`--fresh-inputs`) asks every visible check before any hidden one (`plugin.py`), and grading quietly
keeps that order: until pytest has asked every visible check (`Settler.visible_done`: its first hidden item, or
the end of the run), it runs a task's visible checks only, and blame takes a task whose visible checks have all
run as known. Then the hidden checks it held back of tasks the run does not select are graded (pytest reaches
the others), and the checks labelled meanwhile are settled again. Their labels, and one more, wait for the end of
the run (`Settler.finish`): a capstone's check that passed may wait after all for a task it runs that then
failed a hidden check, and a check labelled from a task's visible checks alone gets the label the whole task
gives (its pytest outcome, reported as it ran, stays).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import time
from collections.abc import Callable

from autograder.course import registry
from autograder.course.regions import REPO, has_sources
from autograder.grading import blame, drawing, fresh_inputs, judging, pool, scorecard, verdicts
from autograder.grading.fixtures import Learner
from autograder.grading.grader import Grader
from autograder.grading.reference import Reference
from autograder.grading.results import Status, TestResult
from autograder.grading.tasks import LESSONS, graded, node_label
from autograder.kit.graph_checks import GraphsDiffer


def describe(fn: Callable) -> str:
    """A check's description: the first line of its docstring, else its name in words."""
    doc = fn.__doc__
    if doc:
        return doc.strip().splitlines()[0].rstrip(".")
    return fn.__name__.removeprefix("test_").replace("_", " ")


def task_mark(fn: Callable):
    """The `@pytest.mark.task` of a check function, if it has exactly one."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "task"]
    return marks[0] if len(marks) == 1 else None


class Settler:
    """One run's checks as blame sees them: each one's own verdict, and the tasks it graded quietly."""

    def __init__(self, grader: Grader):
        self.grader = grader
        self.edition = not has_sources()
        self.raw: dict[str, TestResult] = {}  # check key -> its own verdict, as it first ran
        self.raised: dict[str, BaseException | None] = {}  # check key -> what it raised, for its pytest item
        self.nodeids: dict[str, str] = {}  # check key -> pytest's node id, for the checks pytest collected
        self._checks: dict[str, list[tuple[TestResult, Callable]]] = {}
        self._blame: tuple[int, blame.Blame] | None = None
        # a graded run asks hidden checks, quietly too, only once pytest has asked every visible one
        self.hidden_open = grader.fresh_seed is None
        self.held: set[str] = set()  # tasks whose hidden checks quiet grading held back
        self.provisional: dict[str, None] = {}  # checks labelled before that: labelled again at the end (`finish`)

    def collected(self, nodeid: str) -> None:
        self.nodeids[blame.check_key(nodeid)] = nodeid

    # --- a check's own verdict --------------------------------------------------------------------------------------

    def conclude(
        self, result: TestResult, exc: BaseException | None, learner, again: Callable, name: str, seconds: float
    ) -> None:
        """Keep a check's own verdict from what it raised (`None`: it passed): a failure is asked of the reference
        too (`Grader.machine_fault`: void where the reference fails it here as well), and classified."""
        grader = self.grader
        raw = dataclasses.replace(result, status=Status.PASSED, message="", settled=True, seconds=round(seconds, 4))
        if isinstance(exc, fresh_inputs.NothingDrawn):  # a graded run's visible check whose answers are all known
            raw.status, raw.message = Status.VOID, verdicts.NOTHING_DRAWN  # counts for nothing
        elif exc is not None:
            fault = None
            if isinstance(learner, Learner) and isinstance(exc, Exception):
                fault = grader.machine_fault(learner, result.nodeid, exc, again)
                if fault == "" and verdicts.judgement_raised(exc):  # the reference's answer passes: the learner's
                    exc = verdicts.Unjudgeable(exc)  # is wrong in a way the check did not foresee
            if fault:
                raw.status, raw.message = Status.VOID, verdicts.could_not_grade(fault)
            else:
                if isinstance(exc, GraphsDiffer):
                    command = scorecard.grade_command(result.task, grader.impl_option)
                    drawing.draw_or_offer(exc, grader.draw, name, command)
                raw.status, raw.message, raw.waits_for, raw.cause = verdicts.classify(exc, result.task)
                raw.message = grader.without_paths(raw.message)
        key = blame.check_key(result.nodeid)
        self.raw[key], self.raised[key] = raw, exc

    # --- its label ----------------------------------------------------------------------------------------------------

    def settle(self, key: str) -> blame.Label:
        """What blame makes of a check that has run: the tasks it needs are graded (quietly) first."""
        raw = self.raw[key]
        if not raw.status.went_wrong and not raw.waits_for:
            return blame.own_label(raw)  # passed, void or not started: nothing to blame
        if not self.hidden_open:  # the tasks it needs are known by their visible checks alone, so far
            self.provisional[key] = None
        tried: set[str] = set()
        while True:
            verdict = self.blame()
            wanted = verdict.needs(raw.nodeid) - tried
            if not wanted:  # settled (or nothing more to grade: what is known decides)
                return verdict.label(raw.nodeid)
            first = registry.task(min(wanted, key=blame.order)).lesson
            for task_id in sorted((t for t in wanted if registry.task(t).lesson == first), key=registry.sort_key):
                self.grade_quietly(task_id)
                tried.add(task_id)

    def blame(self) -> blame.Blame:
        """Blame from the checks that have run (kept while no other check runs)."""
        if self._blame is None or self._blame[0] != len(self.raw):
            self._blame = (len(self.raw), blame.Blame(self.raw.values(), self.edition, self.known()))
        return self._blame[1]

    def known(self) -> set[str]:
        """The tasks all of whose checks have run (before a graded run's hidden checks, all of its visible ones)."""
        tasks = {r.task for r in self.raw.values()}
        return {
            t
            for t in tasks
            if all(blame.check_key(r.nodeid) in self.raw or self.holds(r) for r, _ in self.checks_of(t))
        }

    def holds(self, check: TestResult) -> bool:
        """`check` is hidden and may not run yet: a graded run has visible checks left to ask."""
        return check.hidden and not self.hidden_open

    # --- grading quietly ----------------------------------------------------------------------------------------------

    def checks_of(self, task_id: str) -> list[tuple[TestResult, Callable]]:
        """Every check of a task, as its lesson's test files define them (imported here when pytest did not), with
        pytest's node id where pytest collected it."""
        if task_id not in self._checks:
            found = []
            for name in graded(task_id).lesson_modules:
                module = importlib.import_module(name)
                path = (LESSONS / f"{name.rpartition('.')[2]}.py").relative_to(REPO).as_posix()
                for fn in vars(module).values():
                    mark = task_mark(fn) if inspect.isfunction(fn) and fn.__name__.startswith("test_") else None
                    if mark is None or not mark.args or mark.args[0] != task_id:
                        continue
                    key = blame.check_key_of(module.__name__.rpartition(".")[2], fn.__name__)
                    nodeid = self.nodeids.get(key) or f"{path}::{node_label(task_id)}::{fn.__name__}"
                    hidden = any(m.name == "hidden" for m in getattr(fn, "pytestmark", []))
                    points, hint = mark.kwargs.get("points", 0), mark.kwargs.get("hint", "")
                    found.append((TestResult(nodeid, describe(fn), task_id, points, hint, hidden=hidden), fn))
            self._checks[task_id] = found
        return self._checks[task_id]

    def grade_quietly(self, task_id: str) -> None:
        """Run every check of a task that has not run yet, here, reporting nothing: its verdicts are kept (`raw`),
        and a task the run does not select has its checks kept apart in the results (`Results.quiet`). A graded
        run's hidden checks are held back while it has visible checks left to ask (`visible_done`)."""
        grader = self.grader
        for result, fn in self.checks_of(task_id):
            key = blame.check_key(result.nodeid)
            if key in self.raw:
                continue
            if self.holds(result):
                self.held.add(task_id)
                continue
            fresh = None
            if grader.fresh_seed is not None and not result.hidden:
                fresh = fresh_inputs.rng_for(grader.fresh_seed, result.nodeid)
            learner = Learner(grader, task_id, fresh)
            wanted = inspect.signature(fn).parameters

            def check(other: Learner, fn=fn, wanted=wanted) -> None:
                fixtures = {"learner": other, "reference": Reference(grader)}
                with judging.limit(grader.timeout):  # the judgement's own CPU time, as in a check pytest runs
                    fn(**{name: fixtures[name] for name in wanted})

            def again(other: Learner, check=check) -> None:  # and, in a graded run, its second look on drawn inputs
                check(other)
                other.judge_afresh(check)

            start = time.perf_counter()
            try:
                again(learner)
                exc = None
            except pool.StartFailed:
                raise
            except Exception as raised:  # noqa: BLE001 - what a check raises is its verdict
                exc = raised
            self.conclude(result, exc, learner, again, fn.__name__, time.perf_counter() - start)
            if result.nodeid not in grader.by_nodeid:
                grader.results.quiet.append(dataclasses.replace(self.raw[key]))

    def visible_done(self) -> None:
        """A graded run has asked every visible check (pytest's first hidden item starts, or the run ends): quiet
        grading may run hidden checks now. Those it held back of the tasks the run does not select run here (pytest
        reaches the others), and each check labelled so far from what it needs is settled again, grading quietly
        what the tasks it needs, whole, now call for; its label is given at the end (`finish`)."""
        if self.hidden_open:
            return
        self.hidden_open, self._blame = True, None  # `known` changes: blame is computed again
        for task_id in sorted(self.held, key=registry.sort_key):
            if not self.grader.selects(task_id):
                self.grade_quietly(task_id)
        for key in list(self.provisional):
            self.settle(key)

    def void(self) -> None:
        """The run's results are void (its grading tests changed under it): no check is labelled again."""
        self.provisional.clear()

    def finish(self) -> None:
        """Once every check has run, label what could not be labelled as it ran, from everything the run graded.

        - A capstone runs the learner's files whole once the tasks it runs have passed the checks asked so far
          (`Grader.check_prerequisites`). A graded run asks every hidden check last, so a capstone's check may pass
          before one of those tasks fails a hidden check: it then waits for that task after all, as it would have
          had the task failed first (a bug is charged once, where it is; its pytest outcome, reported as it ran,
          stays a pass).
        - A graded run's checks labelled before it asked any hidden check, from the tasks they need known by their
          visible checks alone (`visible_done`): they are labelled from those tasks whole.
        - The quietly graded checks of the tasks the run did not select.
        """
        grader = self.grader
        late = []
        for check in grader.results.tests:  # by its label: a run whose grading tests changed under it passed none
            wait = grader.waiting(graded(check.task)) if check.status == Status.PASSED else None
            if wait is not None:
                raw = self.raw[blame.check_key(check.nodeid)]  # a check passes only once concluded here
                raw.status, raw.message, raw.waits_for, raw.cause = verdicts.classify(wait, check.task)
                late.append(check)
        late += [grader.by_nodeid[self.nodeids[key]] for key in self.provisional]
        if late or grader.results.quiet:
            verdict = blame.Blame(self.raw.values(), self.edition, done=True)  # a task the run did not grade passes
            for check in [*late, *grader.results.quiet]:
                blame.apply(check, verdict.label(check.nodeid))
