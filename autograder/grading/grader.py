"""The state of one grading run, on the trusted side of the boundary: `Grader`, and the check of a run's options.

A `Grader` is made once per run from its `GradeOptions` (the pytest hooks in
`plugin.py` make it and call it; nothing here knows pytest). It owns the
run's workers (`pool.py`), which start before the tests are collected and are
sent ahead the calls each task's checks made in the last run (its *call
plan*); the learner's files, read once as text and handed to them
(`learner_files.py`); the reference's answers (`reference.py`) and the call
plans kept between runs (`caches.py`); and the `Results` the hooks fill in.
The fixtures' objects over it are `Learner` (`fixtures.py`), which runs a
scenario in the task's worker, and `Reference` (`reference.py`), which
computes here what the answer should be.

A check that fails is asked again of the reference (`Grader.machine_fault`), through the same kind of worker,
with the same options and inputs: when the reference cannot pass it either, the machine is at fault (a broken
torch, a fork that breaks autograd, a machine too busy to answer), and the check *could not be graded here*.

Longer than the other files of `grading/`: `Grader` is one object, a run's state, whose methods the hooks, the
settler and the self-check all call; split, it would be one idea across several files.

This process never runs learner code.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import REPO, SOLUTIONS, has_sources
from autograder.grading import blame, caches, fresh_inputs, isolation, judging, lastrun, pool, verdicts
from autograder.grading.fixtures import Learner
from autograder.grading.learner_files import LearnerFileError, display, installed_packages, read_learner_file
from autograder.grading.limits import KILL_GRACE
from autograder.grading.options import GradeOptions
from autograder.grading.reference import lessons_digest, shipped_answers
from autograder.grading.results import Results, Status, TestResult
from autograder.grading.tasks import GradedTask, graded, reference_for, scenario_source
from autograder.grading.verdicts import LOST, Fault, LearnerError, shown
from autograder.worker import wire
from autograder.worker.wire import ErrorKind, to_plain


class BadOptions(ValueError):
    """Options a run cannot grade with: an unknown task or lesson, a missing folder, a level this machine lacks."""


class Grader:
    """What one grading run needs to remember.

    `draw`: a folder for drawings of wrong graphs (hidden from the workers); `record`: keep every reference answer
    a visible check asked for (the student edition's export); `zygotes`: a caller's, kept warm across runs.
    `self_check_of`: this grader grades the reference, on demand, for the run of that grader (`machine_fault`).
    `ship`: compute every reference answer here, using neither the shipped answers nor the cache's, and keep them
    for `shipped_answers.json` (`build.ship_answers`).
    """

    def __init__(
        self,
        options: GradeOptions,
        *,
        draw: str | None = None,
        record: bool = False,
        zygotes: pool.Zygotes | None = None,
        self_check_of: Grader | None = None,
        ship: bool = False,
    ):
        self.main = self_check_of
        self.options = options.replace(impl="solutions") if self_check_of else options
        check_selection(self.options)
        impl = self.options.impl
        self.root = self.options.folder()
        if not self.root.is_dir():
            raise BadOptions(f"--impl {shown(impl, lines=False)}: no such folder ({shown(self.root, lines=False)})")
        # a platform's learner grades their own clone's exercises/: no --impl in the commands the results suggest;
        # the folder's name is a submission's, in a batch: shown escaped wherever it is written (a log, a terminal)
        self.impl_option = "" if impl == "exercises" or self.options.platform else f" --impl {shown(impl, lines=False)}"
        self.timeout = self.options.check_timeout
        self.memory_mb = self.options.memory_limit
        try:
            self.level = isolation.level_for(self.options.isolation)
            self.start_method = pool.start_method(self.options.workers)
        except RuntimeError as exc:
            raise BadOptions(str(exc)) from None
        self.fresh_seed = self.options.fresh_inputs
        if self.fresh_seed is not None and not has_sources():
            raise BadOptions("--fresh-inputs needs the reference, which a student edition does not ship")
        self.draw = draw
        self.results = Results(self.graded_name(), self.impl_option, self.level, complete=False)
        self.results.fresh_inputs = self.fresh_seed
        self.results.platform = self.options.platform
        self.results.self_checked = has_sources()
        self.checker: Grader | None = None  # the reference's grader, made at the first check that fails
        self.by_nodeid: dict[str, TestResult] = {}
        self.workers: pool.Pool | None = None
        self.hidden: list[str] = []  # what the workers must not see
        self.zygotes = zygotes  # what the workers fork from: a caller's pool, or (`start`) this run's own
        self.own_zygotes = False
        self.loaded: set[str] = set()  # tasks whose worker has loaded the learner's file
        self.file_failures: dict[str, tuple] = {}  # learner file -> why it does not load (a LearnerError's arguments)
        self.file_digests: dict[str, str | None] = {}  # learner file -> its digest as first read (None: unreadable)
        self.timed_out: set[str] = set()  # tasks a check of which timed out: their later checks are skipped
        self.asked: dict[str, list[dict]] = {}  # task -> the scenario calls its checks made, in order
        self.recording: dict[str, object] | None = {} if record else None
        self.new_answers = False
        self.cache = caches.GradingCache(self.level, graded=self.fresh_seed is not None)
        self.shipping: dict | None = {} if ship else None  # `ship`: every answer this run computes
        self.drawing = False  # a graded run's second look at a check: answers on drawn inputs are not worth keeping
        self.lesson_digest: str | None = None  # the grading tests as they were before any learner code ran
        self.saved_at = float("-inf")  # when the results file was last written (`plugin._save_progress`)

    def known_answers(self) -> dict:
        """The reference's answers computed so far, for this reference (read from disk where that is safe)."""
        return self.cache.load("answers") if self.shipping is None else self.shipping

    def answer(self, key: str, compute: Callable[[], object]) -> object:
        """The reference's answer filed under `key`: computed so far, shipped with the course, or `compute()`d now
        (as plain data) and kept with the others."""
        known = self.known_answers()
        if key not in known:
            shipped = shipped_answers() if self.shipping is None else {}
            if key in shipped:
                return shipped[key]
            if self.drawing:  # drawn for this submission alone
                return to_plain(compute())
            known[key] = to_plain(compute())
            self.new_answers = True
        return known[key]

    def save_answers(self) -> None:
        if self.new_answers and self.shipping is None:
            self.cache.save("answers")

    def graded_name(self) -> str:
        if self.options.platform:
            return "your submission"
        name = str(self.root.relative_to(REPO)) + "/" if self.root.is_relative_to(REPO) else str(self.root)
        return shown(name, lines=False)

    def without_paths(self, text: str) -> str:
        """`text` as a platform's learner reads it: their files by name ("engine.py:250"), never the temporary
        folder the platform's copy of them was graded in."""
        if not self.options.platform:
            return text
        for folder in {str(self.root), str(Path(self.options.impl).absolute())}:
            text = text.replace(folder + os.sep, "").replace(folder, ".")
        return text

    def selects(self, task_id: str) -> bool:
        lessons, tasks = self.options.lessons, self.options.tasks
        if not lessons and not tasks:
            return True
        return task_id in tasks or registry.task(task_id).lesson in lessons

    def add_check(self, result: TestResult) -> None:
        """A check of this run, as collected: its result is filled in as it runs."""
        self.results.tests.append(result)
        self.by_nodeid[result.nodeid] = result

    # --- what the workers are sent ----------------------------------------------------------------------------------

    def learner_sources(self, modules: tuple[str, ...]) -> dict[str, list[str]]:
        sources = {}
        for module in modules:
            try:
                text = read_learner_file(self.root, module)
                self.file_digests.setdefault(module, None if text is None else lastrun.digest(text.encode("utf-8")))
            except LearnerFileError as exc:
                self.file_digests.setdefault(module, None)
                self.file_failures[module] = (Fault.BAD_FILE, {"message": str(exc)})
                continue
            if text is not None:
                sources[module] = [text, display(self.root / f"{module}.py")]
        return sources

    def setup_for(self, task: GradedTask, learner: dict[str, list[str]] | None = None) -> dict:
        """A task's worker's setup: the learner's files (or `learner`, as they are), the reference underneath."""
        whole = not has_sources() or task.runs_whole  # no reference underneath
        return wire.setup(
            task.id,
            task.module,
            list(task.owners),
            list(task.prerequisite_owners),
            learner=self.learner_sources(task.learner_files) if learner is None else learner,
            reference=None if whole else reference_for(task.id),
            scenarios={name: scenario_source(name) for name in task.lesson_modules},
            sibling_owners=list(task.sibling_owners),
        )

    def start(self) -> None:
        """Start the workers before collection: they set up, and answer planned calls, while the tests load.

        Raises `pool.StartFailed` if they cannot start: there is nothing to grade with.
        """
        if self.zygotes is None:
            self.zygotes, self.own_zygotes = pool.Zygotes(), True
        self.load_trusted_inputs()
        self.start_workers()

    def start_workers(self) -> None:
        self.workers = self.new_pool()
        if self.main:  # the self-check starts a task's worker when a check of that task first fails
            return
        # a graded run asks its visible checks again on drawn inputs, which no plan holds: a worker that ran ahead
        # would only be replaced at the first of them
        plans = self.call_plans() if self.fresh_seed is None else {}
        # in the order their checks run (`pytest_collection_modifyitems`): torch's last
        tasks = sorted(
            (graded(t) for t in registry.TASKS if self.selects(t)),
            key=lambda t: (bool(t.preload), registry.sort_key(t.id)),
        )
        if self.workers.start == "fork":  # the slowest to start first: importing torch takes seconds
            for preload in sorted({t.preload for t in tasks}, key=len, reverse=True):
                self.zygotes.get(preload, self.workers.sandbox)
        for task in tasks:
            self.prepare(task, plans.get(task.id, []))

    def new_pool(self) -> pool.Pool:
        """The run's workers: its self-check's have the same level, limits, hidden folders and way to start."""
        if self.main:
            main = self.main.workers
            cgroup = isolation.memory_cgroup("reference") if main.options["cgroup"] else None
            return pool.Pool(self.level, self.memory_mb, self.main.hidden, main.start, self.zygotes, cgroup)
        hidden = self.hidden = [
            str(REPO),
            str(self.root.parent),
            "/autograder",
            *installed_packages(),
            *self.options.hide,
        ]
        for path in (self.options.results_json, self.options.results_file):
            if path:
                hidden.append(str(Path(path).resolve().parent))
        if self.draw:  # made now, so that it can be hidden from the learner's code like the rest
            Path(self.draw).mkdir(parents=True, exist_ok=True)
            hidden.append(self.draw)
        # as root, at any level: the workers' memory counts whole, and whatever they start dies with the run
        cgroup = isolation.memory_cgroup() if self.memory_mb else None
        limit = "cgroup" if cgroup else "address space (RLIMIT_AS)" if sys.platform == "linux" else "none"
        self.results.memory_limit = limit if self.memory_mb else "none"
        return pool.Pool(self.level, self.memory_mb, hidden, self.start_method, self.zygotes, cgroup)

    def prepare(self, task: GradedTask, plan: list[dict] = ()) -> None:
        """A worker for the task, sent ahead the calls of `plan` (what earlier runs asked of this task, in order)."""
        planned = [wire.load(self.timeout)] if plan else []
        for call in plan:
            try:
                planned.append(self.run_request(task, call["file"], call["name"], call["args"], call["kwargs"]))
            except (KeyError, TypeError, OSError, SyntaxError):
                break  # a plan from other test files: what is left of it will not match anyway
        self.workers.prepare(task.id, self.setup_for(task), task.preload, planned)
        self.loaded.discard(task.id)

    def run_request(self, task: GradedTask, file: str, name: str, args: list, kwargs: dict) -> dict:
        """Run scenario `name` of test file `file`; its source goes along unless the task's setup had it."""
        source = None if file in task.lesson_modules else scenario_source(file)
        return wire.run(file, name, args, kwargs, self.timeout, source)

    def call_plans(self) -> dict[str, list[dict]]:
        """The calls each task's checks made in earlier runs of these test files (read from disk where safe)."""
        return self.cache.load("plans")

    def save_plans(self) -> None:
        """Keep this run's calls for the next run: a task's calls replace its plan unless they are its beginning."""
        plans = self.call_plans()
        changed = False
        for task_id, calls in self.asked.items():
            if plans.get(task_id, [])[: len(calls)] != calls:
                plans[task_id], changed = calls, True
        if changed:
            self.cache.save("plans")

    def load_trusted_inputs(self) -> None:
        """Read what a verdict depends on before any learner code runs (which, at `processes`, could write it).

        The sources sent to workers are read once, here. The grading tests, the kit and the reference are
        imported later (by pytest as it collects, and by the judgements: importing torch for the reference's
        PyTorch bridge would cost every run a second), so their digest is taken now and compared when the run
        ends: a run during which they changed is void.
        """
        for task in (graded(t) for t in registry.TASKS if self.selects(t)):
            if has_sources() and not task.runs_whole:
                reference_for(task.id)
            for name in task.lesson_modules:
                scenario_source(name)
        self.lesson_digest = lessons_digest()
        shipped_answers()
        blame.recorded()  # what each check runs through: read now, as trusted as the grading tests beside it

    def self_checker(self) -> Grader:
        """The grader that asks a check of the reference, with this run's options, level and hidden folders.

        Its workers fork from zygotes of its own, each in a session (so a scheduling group) of its own, under a
        memory cgroup of its own: nothing a learner's worker can reach (its zygote's session, which it may renice;
        its run's cgroup, which it may fill) slows or stops the reference's re-ask, which would make a failed check
        "could not be graded" (void) instead of failed.
        """
        if self.checker is None:
            self.checker = Grader(self.options, zygotes=pool.Zygotes(), self_check_of=self)
            self.checker.own_zygotes = True
            self.checker.start_workers()
        return self.checker

    def machine_fault(
        self, learner: Learner, nodeid: str, exc: Exception, again: Callable[[Learner], None]
    ) -> str | None:
        """Why the reference, too, fails the check that just failed with `exc`: "" if it passes (the failure stands,
        the learner's), None if it was not asked.

        `again(other)` runs the check once more, as it is, with `other` as its `learner` fixture: here one over the
        reference, with the same scenarios, inputs (a graded run's draws come from the same seed) and kind of
        worker. Failures that only the learner's files can cause (a stub, a file that does not parse, a check that
        waits) are not asked again.
        """
        if self.main or not has_sources():
            return None
        if not verdicts.may_be_the_machines(exc, verdicts.classify(exc, learner.task).status):
            return None
        stopped = learner.task in self.timed_out  # its later checks are skipped, unless this check is void
        self.timed_out.discard(learner.task)
        fresh = fresh_inputs.rng_for(self.fresh_seed, nodeid) if learner.fresh is not None else None
        try:
            again(Learner(self.self_checker(), learner.task, fresh))
        except Exception as failed:  # noqa: BLE001 - the reference fails it here too, whatever the way
            return verdicts.classify(failed, learner.task).message
        if stopped:
            self.timed_out.add(learner.task)
        return ""

    def stop_workers(self) -> None:
        if self.checker is not None:
            self.checker.stop_workers()
        if self.workers:
            self.results.spawned_because = self.workers.spawned_because
            self.workers.close()
            self.workers = None
        if self.own_zygotes:
            self.zygotes.close()
            self.own_zygotes = False

    # --- one call into the learner's code ---------------------------------------------------------------------------

    def run(self, task_id: str, fn, args: tuple, kwargs: dict, planned: bool = True) -> object:
        """Run scenario `fn` over the learner's code for `task_id`; `planned`: keep the call in the next run's plan.

        Raises `LearnerError` with what went wrong in the learner's code, or `pool.StartFailed` if no worker can
        start here (nothing to grade with; the self-check's: the reference cannot be run here).
        """
        with judging.paused():  # the judgement's time stops while the worker answers (its code has its own limit)
            return self._run_task(graded(task_id), fn, args, kwargs, planned)

    def _run_task(self, task: GradedTask, fn, args: tuple, kwargs: dict, planned: bool) -> object:
        if task.id in self.timed_out:
            raise LearnerError(Fault.SKIPPED)
        self.check_prerequisites(task)  # a capstone waiting for a broken file's tasks says so, before the file
        failure = next((self.file_failures[f] for f in task.learner_files if f in self.file_failures), None)
        if failure:
            raise LearnerError(*failure)
        request = self.run_request(task, fn.__module__, fn.__name__, args, kwargs)
        if planned:
            self.asked.setdefault(task.id, []).append(
                {"file": fn.__module__, "name": fn.__name__, "args": request["args"], "kwargs": kwargs}
            )
        try:
            return self._run(task, request)
        except pool.Diverged:  # not the plan's call, or never started: a fresh worker runs just what is asked
            self.prepare(task)
            try:
                return self._run(task, request)
            except pool.Diverged as exc:  # the fresh one failed too, before it started: no answer
                raise LearnerError(LOST[exc.how], {"detail": exc.detail}) from None

    def _run(self, task: GradedTask, request: dict) -> object:
        if task.id not in self.workers.workers or self.workers.ended(task.id):  # a fresh worker: the previous check
            # crashed it, or (the self-check) the task has none yet
            self.prepare(task)
        limit = self.timeout + KILL_GRACE
        if task.id not in self.loaded:
            self.loaded.add(task.id)
            reply = self._call(wire.load(self.timeout), limit, task, load=True)
            if "error" in reply:
                failure = self._fault(task, reply, load=True)
                self.file_failures[task.module] = (failure.fault, failure.info, failure.output)
                raise failure
        reply = self._call(request, limit, task)
        if "error" in reply:
            raise self._fault(task, reply)
        return reply["ok"]

    def _fault(self, task: GradedTask, reply: dict, load: bool = False) -> LearnerError:
        """What a worker's error answer means: its code timed out (the worker's alarm) or raised."""
        info = {**reply["error"], "load": True} if load else reply["error"]
        if info["kind"] == ErrorKind.TIMED_OUT:  # the worker's word, trusted only to cost its own task its checks
            self.timed_out.add(task.id)
            return LearnerError(Fault.TIMED_OUT, info)
        return LearnerError(Fault.RAISED, info, reply.get("output", ""))

    def drawn_by_worker(self, task: GradedTask, fn, args: list, kwargs: dict) -> tuple[bool, object]:
        """(True, the reference's answer) on inputs drawn for this graded run, asked of a worker that runs the
        reference, forked from the zygote that preloads what the task's scenarios need (torch, for lesson 9), so
        that the grader never imports it; (False, None) where it gave no answer (the caller computes it here).

        Only an answer is taken from it: whatever else it says (it raised, ran out of time, was lost) is asked
        again here, so nothing a learner's worker does to it (it shares their zygote) changes a verdict.
        """
        if not task.preload or self.workers is None or self.workers.start != "fork":
            return False, None  # nothing here to save: the grader imports it once, or a spawned worker would too
        key = f"{task.id} (reference, drawn inputs)"
        try:
            if key not in self.workers.workers or self.workers.ended(key):
                sources = {m: [read_learner_file(SOLUTIONS, m), f"{m}.py"] for m in task.learner_files}
                self.workers.prepare(key, self.setup_for(task, sources), task.preload)
            request = self.run_request(task, fn.__module__, fn.__name__, args, kwargs)
            reply = self.workers.call(key, request, self.timeout + KILL_GRACE)
        except (pool.WorkerGone, pool.StartFailed, OSError):  # no answer: never "the reference fails there"
            return False, None
        return ("ok" in reply and "error" not in reply), reply.get("ok")

    def where_in_stack(self, stack: list[tuple[str, int, str]], task: GradedTask) -> str:
        """The innermost frame of a stopped worker's stack that lies in the learner's files, as `file:line in f`."""
        files = {display(self.root / f"{module}.py") for module in task.learner_files}
        return next((f"{file}:{line} in {name}" for file, line, name in stack if file in files), "")

    def stop_capstones_waiting_for(self, task_id: str) -> None:
        """A capstone that now can only wait for `task_id` stops running its planned calls (they may hang)."""
        for capstone in self.results.selected:
            if self.workers and task_id in graded(capstone).waits_for:
                self.workers.stop(capstone)

    def check_prerequisites(self, task: GradedTask) -> None:
        """A capstone runs once every task whose code it runs has passed in this same run, as far as it has run (a
        graded run asks every hidden check last: `Settler.finish` then takes back what a capstone passed if one of
        those tasks fails after all)."""
        wait = self.waiting(task, so_far=True)
        if wait is not None:
            raise wait

    def waiting(self, task: GradedTask, so_far: bool = False) -> LearnerError | None:
        """What a capstone waits for: those of the tasks whose code it runs that this run grades and that have not
        passed (`so_far`: in the checks of theirs that have run), as the error its calls raise; None if none."""
        # a task this run does not grade (`--lesson 12`) is taken as done: the capstone then finds its bugs itself
        ran: dict[str, list[Status]] = {t: [] for t in self.results.selected}
        for r in self.results.tests:
            if r.task in ran and (r.settled or not so_far):
                ran[r.task].append(r.status)
        missing = [t for t in task.waits_for if t in ran and (not ran[t] or any(s != Status.PASSED for s in ran[t]))]
        if not missing:
            return None
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        return LearnerError(Fault.WAITS, {"task": missing[0], "more": more})

    def _call(self, request: dict, limit: float, task: GradedTask, load: bool = False) -> dict:
        try:
            return self.workers.call(task.id, request, limit)
        except pool.Diverged:
            raise
        except pool.WorkerGone as exc:
            info = {"detail": exc.detail, "where": self.where_in_stack(exc.stack, task)}
            if exc.timed_out and load:
                info["file"] = display(self.root / (task.module + ".py"))
            if exc.backstop:
                info["backstop"] = True
            if exc.timed_out:
                self.timed_out.add(task.id)
            fault = LOST[exc.how]
            if load:
                self.file_failures[task.module] = (fault, info)
            raise LearnerError(fault, info) from None


def check_selection(options: GradeOptions) -> None:
    """The run's `--task` and `--lesson` name graded tasks and lessons of this course."""
    for task_id in options.tasks:
        if task_id not in registry.TASKS:
            raise BadOptions(
                f"--task {task_id}: there is no such task (they look like 2.3; python -m autograder tasks)"
            )
    for number in options.lessons:
        if not any(lesson.number == number and lesson.tasks for lesson in registry.LESSONS):
            raise BadOptions(f"--lesson {number}: lesson {number} has no graded tasks")
