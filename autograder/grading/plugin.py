"""The pytest plugin that turns `pytest autograder` into a grader, on the trusted side of the boundary.

It adds the options of a grading run (`options.GradeOptions`: read once into
`config.stash[OPTIONS]`, unless a caller put them there: `runner.grade`) and
`--show-code` and `--draw`, checks that every test names exactly one task with
its points and a hint, and gives the grading tests two fixtures:

- `learner.run(scenario, *args)` runs a scenario in the task's worker, over
  the learner's code, and returns its plain-data answer (or raises
  `LearnerError` with what went wrong there);
- `reference.run(scenario, *args)` runs the same scenario here, over the
  reference, to compute what the answer should be; `reference.compute(fn,
  *args)` computes any other expected value here (PyTorch's), kept alike.

A check that fails is asked again of the reference (`Grader.machine_fault`), through the same kind of
worker, with the same options and inputs: when the reference cannot pass it either, the machine is at fault
(a broken torch, a fork that breaks autograd, a machine too busy to answer), and the check *could not be
graded here*: it counts neither as earned nor as lost. A student edition has no reference to ask.

This process never runs learner code: it reads the learner's files as text
and hands them to the workers (`pool.py`), which start before the tests
are collected and are sent ahead the calls each task's checks made in the
last run (its *call plan*). It sorts every outcome into passed / not started
/ failed / error / timed out, and writes the scorecard and the results file
only after every worker is gone.
"""

from __future__ import annotations

import argparse
import ast
import glob
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import random
import sys
from functools import cache
from pathlib import Path

import pytest

from autograder.course import registry
from autograder.course.regions import (
    REPO,
    SOLUTIONS,
    all_regions,
    for_task,
    has_sources,
    module_of,
    owners_of,
    waits_for,
)
from autograder.grading import caches, drawing, fresh_inputs, isolation, lastrun, options, pool, scorecard, verdicts
from autograder.grading.blame import blame_by_dependency
from autograder.grading.limits import KILL_GRACE, MAX_SOURCE
from autograder.grading.results import VOID, Results, TestResult
from autograder.grading.verdicts import LOST, Fault, LearnerError
from autograder.kit.checks import GraphsDiffer
from autograder.worker import wire
from autograder.worker.scenario import SCENARIO_FLAG
from autograder.worker.wire import ErrorKind, to_plain

GRADER = pytest.StashKey["Grader"]()
OPTIONS = pytest.StashKey[options.GradeOptions]()  # the run's options: set by a caller (`runner.grade`), or read once
ZYGOTES = pytest.StashKey[pool.Zygotes]()  # zygotes kept warm across runs by a caller that grades often
LESSONS = Path(__file__).resolve().parents[1] / "lessons"
LESSONS_PACKAGE = f"{__package__.rpartition('.')[0]}.lessons"  # what pytest names the test modules there
RECORDED = LESSONS / "reference_answers.json"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder", "course autograder")
    options.add(group.addoption)  # every option of a grading run (`GradeOptions`); what it shows, below
    group.addoption(
        "--show-code", action="store_true", help="show pytest's tracebacks, test code included (hidden by default)"
    )
    group.addoption(
        "--draw",
        metavar="DIR",
        help="when a check finds a wrong grad, draw your graph (wrong grads in red) above the "
        "reference's as DIR/<test name>.svg",
    )
    group.addoption("--record-reference", metavar="PATH", help=argparse.SUPPRESS)  # the student edition's export


class Grader:
    """What one grading run needs to remember.

    `self_check_of`: this grader grades the reference, on demand, for the run of that grader (`machine_fault`).
    """

    def __init__(self, config: pytest.Config, self_check_of: Grader | None = None):
        self.config = config
        self.main = self_check_of
        self.options = config.stash[OPTIONS]
        if self_check_of:
            self.options = self.options.replace(impl="solutions")
        impl = self.options.impl
        self.root = self.options.folder()
        if not self.root.is_dir():
            raise pytest.UsageError(f"--impl {impl}: no such folder ({self.root})")
        self.impl_option = "" if impl == "exercises" else f" --impl {impl}"
        self.timeout = self.options.check_timeout
        self.memory_mb = self.options.memory_limit
        try:
            self.level = isolation.level_for(self.options.isolation)
            self.start_method = pool.start_method(self.options.workers)
        except RuntimeError as exc:
            raise pytest.UsageError(str(exc)) from None
        self.fresh_seed = self.options.fresh_inputs
        if self.fresh_seed is not None and not has_sources():
            raise pytest.UsageError("--fresh-inputs needs the reference, which a student edition does not ship")
        self.results = Results(self.graded_name(), self.impl_option, self.level, complete=False)
        self.results.fresh_inputs = self.fresh_seed
        self.results.self_checked = has_sources()
        self.checker: Grader | None = None  # the reference's grader, made at the first check that fails
        self.by_nodeid: dict[str, TestResult] = {}
        self.workers: pool.Pool | None = None
        self.hidden: list[str] = []  # what the workers must not see
        self.zygotes: pool.Zygotes | None = None  # what the workers fork from: this run's, or a caller's pool
        self.own_zygotes = False
        self.loaded: set[str] = set()  # tasks whose worker has loaded the learner's file
        self.file_failures: dict[str, tuple] = {}  # learner file -> why it does not load (a LearnerError's arguments)
        self.file_digests: dict[str, str | None] = {}  # learner file -> its digest as first read (None: unreadable)
        self.timed_out: set[str] = set()  # tasks a check of which timed out: their later checks are skipped
        self.asked: dict[str, list[dict]] = {}  # task -> the scenario calls its checks made, in order
        self.recording: dict[str, object] | None = {} if config.getoption("record_reference") else None
        self.new_answers = False
        self.cache = caches.GradingCache(self.level, graded=self.fresh_seed is not None)
        self.lesson_digest: str | None = None  # the grading tests as they were before any learner code ran

    def known_answers(self) -> dict:
        """The reference's answers computed so far, for this reference (read from disk where that is safe)."""
        return self.cache.load("answers")

    def save_answers(self) -> None:
        if self.new_answers:
            self.cache.save("answers")

    def graded_name(self) -> str:
        return str(self.root.relative_to(REPO)) + "/" if self.root.is_relative_to(REPO) else str(self.root)

    def selects(self, task_id: str) -> bool:
        lessons, tasks = self.options.lessons, self.options.tasks
        if not lessons and not tasks:
            return True
        return task_id in tasks or registry.task(task_id).lesson in lessons

    # --- what the workers are sent ----------------------------------------------------------------------------------

    def learner_sources(self, modules: list[str]) -> dict[str, list[str]]:
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

    def setup_for(self, task_id: str) -> dict:
        module = module_of(task_id)
        whole = not has_sources() or bool(registry.task(task_id).runs_whole)  # no reference underneath
        return wire.setup(
            task_id,
            module,
            sorted(owners_of(task_id)),
            sorted(prerequisite_owners(task_id)),
            learner=self.learner_sources(learner_files(task_id)),
            reference=None if whole else reference_for(task_id),
            scenarios={name: scenario_source(name) for name in lesson_modules(task_id)},
        )

    def start_workers(self) -> None:
        self.workers = self.new_pool()
        if self.main:  # the self-check starts a task's worker when a check of that task first fails
            return
        # a graded run asks its visible checks again on drawn inputs, which no plan holds: a worker that ran ahead
        # would only be replaced at the first of them
        plans = self.call_plans() if self.fresh_seed is None else {}
        # in the order their checks run (`pytest_collection_modifyitems`): torch's last
        tasks = sorted(filter(self.selects, registry.TASKS), key=lambda t: (bool(preload_for(t)), registry.sort_key(t)))
        if self.workers.start == "fork":  # the slowest to start first: importing torch takes seconds
            for preload in sorted({preload_for(t) for t in tasks}, key=len, reverse=True):
                self.zygotes.get(preload, self.workers.sandbox)
        try:
            for task_id in tasks:
                self.prepare(task_id, plans.get(task_id, []))
        except pool.StartFailed as exc:
            pytest.exit(verdicts.start_failed(exc), returncode=pytest.ExitCode.INTERNAL_ERROR)

    def new_pool(self) -> pool.Pool:
        """The run's workers: its self-check's have the same level, limits, hidden folders and way to start."""
        if self.main:
            main = self.main.workers
            return pool.Pool(
                self.level, self.memory_mb, self.main.hidden, main.start, self.zygotes, main.options["cgroup"]
            )
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
        if self.config.getoption("draw"):  # made now, so that it can be hidden from the learner's code like the rest
            Path(self.config.getoption("draw")).mkdir(parents=True, exist_ok=True)
            hidden.append(self.config.getoption("draw"))
        # as root, at any level: the workers' memory counts whole, and whatever they start dies with the run
        cgroup = isolation.memory_cgroup() if self.memory_mb else None
        limit = "cgroup" if cgroup else "address space (RLIMIT_AS)" if sys.platform == "linux" else "none"
        self.results.memory_limit = limit if self.memory_mb else "none"
        return pool.Pool(self.level, self.memory_mb, hidden, self.start_method, self.zygotes, cgroup)

    def prepare(self, task_id: str, plan: list[dict] = ()) -> None:
        """A worker for the task, sent ahead the calls of `plan` (what earlier runs asked of this task, in order)."""
        planned = [self.load_request()] if plan else []
        for call in plan:
            try:
                planned.append(self.run_request(task_id, call["file"], call["name"], call["args"], call["kwargs"]))
            except (KeyError, TypeError, OSError, SyntaxError):
                break  # a plan from other test files: what is left of it will not match anyway
        self.workers.prepare(task_id, self.setup_for(task_id), preload_for(task_id), planned)

    def load_request(self) -> dict:
        return wire.load(self.timeout)

    def run_request(self, task_id: str, file: str, name: str, args: list, kwargs: dict) -> dict:
        """Run scenario `name` of test file `file`; its source goes along unless the task's setup had it."""
        source = None if file in lesson_modules(task_id) else scenario_source(file)
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

    def start(self) -> None:
        """Start the workers before collection: they set up, and answer planned calls, while the tests load."""
        self.zygotes = self.config.stash.get(ZYGOTES, None)
        if self.zygotes is None:
            self.zygotes, self.own_zygotes = pool.Zygotes(), True
        if not self.config.option.collectonly:
            self.load_trusted_inputs()
            self.start_workers()

    def load_trusted_inputs(self) -> None:
        """Read what a verdict depends on before any learner code runs (which, at `processes`, could write it).

        The sources sent to workers are read once, here. The grading tests, the kit and the reference are
        imported later (by pytest as it collects, and by the judgements: importing torch for the reference's
        PyTorch bridge would cost every run a second), so their digest is taken now and compared when the run
        ends: a run during which they changed is void.
        """
        for task_id in filter(self.selects, registry.TASKS):
            if has_sources() and not registry.task(task_id).runs_whole:
                reference_for(task_id)
            for name in lesson_modules(task_id):
                scenario_source(name)
        self.lesson_digest = lessons_digest()

    def self_checker(self) -> Grader:
        """The grader that asks a check of the reference, with this run's workers, options and hidden folders."""
        if self.checker is None:
            self.checker = Grader(self.config, self_check_of=self)
            self.checker.zygotes = self.zygotes
            self.checker.start_workers()
        return self.checker

    def machine_fault(self, item: pytest.Item, exc: Exception) -> str:
        """Why the reference, too, fails the check that just failed with `exc` ("" if it passes: the failure stands).

        The check runs again, as it is, with its `learner` fixture over the reference: the same scenarios, inputs
        (a graded run's draws come from the same seed) and kind of worker. Failures that only the learner's
        files can cause (a stub, a file that does not parse, a check that waits) are not asked again.
        """
        learner = item.funcargs.get("learner")
        if self.main or not has_sources() or not isinstance(learner, Learner):
            return ""
        if not verdicts.may_be_the_machines(exc, verdicts.classify(exc, learner.task).status):
            return ""
        stopped = learner.task in self.timed_out  # its later checks are skipped, unless this check is void
        self.timed_out.discard(learner.task)
        fresh = fresh_inputs.rng_for(self.fresh_seed, item.nodeid) if learner.fresh is not None else None
        item.funcargs["learner"] = Learner(self.self_checker(), learner.task, fresh)
        try:
            item.runtest()
        except Exception as again:  # noqa: BLE001 - the reference fails it here too, whatever the way
            return verdicts.classify(again, learner.task).message
        finally:
            item.funcargs["learner"] = learner
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
        """Run scenario `fn` over the learner's code for `task_id`; `planned`: keep the call in the next run's plan."""
        if task_id in self.timed_out:
            raise LearnerError(Fault.SKIPPED)
        self.check_prerequisites(task_id)  # a capstone waiting for a broken file's tasks says so, before the file
        failure = next((self.file_failures[f] for f in learner_files(task_id) if f in self.file_failures), None)
        if failure:
            raise LearnerError(*failure)
        request = self.run_request(task_id, fn.__module__, fn.__name__, args, kwargs)
        if planned:
            self.asked.setdefault(task_id, []).append(
                {"file": fn.__module__, "name": fn.__name__, "args": request["args"], "kwargs": kwargs}
            )
        try:
            try:
                return self._run(task_id, request)
            except pool.Diverged:  # not the plan's call, or never started: a fresh worker runs just what is asked
                self.prepare(task_id)
                self.loaded.discard(task_id)
                try:
                    return self._run(task_id, request)
                except pool.Diverged as exc:  # the fresh one failed too, before it started: no answer
                    raise LearnerError(LOST[exc.how], {"detail": exc.detail}) from None
        except pool.StartFailed as exc:  # nothing to grade with: stop, rather than fail every check
            if self.main:
                raise  # the reference cannot be run here: its check is void
            pytest.exit(verdicts.start_failed(exc), returncode=pytest.ExitCode.INTERNAL_ERROR)

    def _run(self, task_id: str, request: dict) -> object:
        if task_id not in self.workers.workers or self.workers.ended(task_id):  # a fresh worker: the previous check
            # crashed it, or (the self-check) the task has none yet
            self.prepare(task_id)
            self.loaded.discard(task_id)
        limit = self.timeout + KILL_GRACE
        if task_id not in self.loaded:
            self.loaded.add(task_id)
            reply = self._call(self.load_request(), limit, task_id, load=True)
            if "error" in reply:
                failure = self._fault(task_id, reply, load=True)
                self.file_failures[module_of(task_id)] = (failure.fault, failure.info, failure.output)
                raise failure
        reply = self._call(request, limit, task_id)
        if "error" in reply:
            raise self._fault(task_id, reply)
        return reply["ok"]

    def _fault(self, task_id: str, reply: dict, load: bool = False) -> LearnerError:
        """What a worker's error answer means: its code timed out (the worker's alarm) or raised."""
        info = {**reply["error"], "load": True} if load else reply["error"]
        if info["kind"] == ErrorKind.TIMED_OUT:  # the worker's word, trusted only to cost its own task its checks
            self.timed_out.add(task_id)
            return LearnerError(Fault.TIMED_OUT, info)
        return LearnerError(Fault.RAISED, info, reply.get("output", ""))

    def where_in_stack(self, stack: list[tuple[str, int, str]], task_id: str) -> str:
        """The innermost frame of a stopped worker's stack that lies in the learner's files, as `file:line in f`."""
        files = {display(self.root / f"{module}.py") for module in learner_files(task_id)}
        return next((f"{file}:{line} in {name}" for file, line, name in stack if file in files), "")

    def stop_capstones_waiting_for(self, task_id: str) -> None:
        """A capstone that now can only wait for `task_id` stops running its planned calls (they may hang)."""
        for capstone in self.results.selected:
            if self.workers and registry.task(capstone).runs_whole and task_id in waits_for(capstone):
                self.workers.stop(capstone)

    def check_prerequisites(self, task_id: str) -> None:
        """A capstone runs once every task whose code it runs has passed in this same run."""
        needed = waits_for(task_id) if registry.task(task_id).runs_whole else []
        if not needed:
            return
        # a task this run does not grade (`--lesson 12`) is taken as done: the capstone then finds its bugs itself
        status = {t.task.id: t.status for t in self.results.tasks}
        missing = [t for t in needed if t in status and status[t] != "passed"]
        if missing:
            more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
            raise LearnerError(Fault.WAITS, {"task": missing[0], "more": more})

    def _call(self, request: dict, limit: float, task_id: str, load: bool = False) -> dict:
        try:
            return self.workers.call(task_id, request, limit)
        except pool.Diverged:
            raise
        except pool.WorkerGone as exc:
            info = {"detail": exc.detail, "where": self.where_in_stack(exc.stack, task_id)}
            if exc.timed_out and load:
                info["file"] = display(self.root / (module_of(task_id) + ".py"))
            if exc.backstop:
                info["backstop"] = True
            if exc.timed_out:
                self.timed_out.add(task_id)
            fault = LOST[exc.how]
            if load:
                self.file_failures[module_of(task_id)] = (fault, info)
            raise LearnerError(fault, info) from None


class LearnerFileError(Exception):
    """A learner file the grader will not read (a symlink, not a regular file, too large, not UTF-8)."""


def read_learner_file(root: Path, module: str) -> str | None:
    """The text of `root/module.py`, read as a regular file inside `root` (no symlinks); None if it is missing."""
    path = root / f"{module}.py"
    try:
        data = caches.read_regular(path, MAX_SOURCE)
    except FileNotFoundError:
        return None
    except caches.NotRegular as exc:
        raise LearnerFileError(f"{display(path)} {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise LearnerFileError(f"{display(path)} is not UTF-8 text (byte {exc.start})") from None


def display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


# Where any Python of this machine keeps installed packages (one that does not grade may still hold a copy)
SITE_FOLDERS = ("/usr/lib/python3*/*-packages", "/usr/local/lib/python3*/*-packages", "/opt/*/lib/python3*/*-packages")


def installed_packages() -> list[str]:
    """Every folder the grader or the reference is installed in, outside the repository too: found by what it is.

    The one `import` would find first, any copy on `sys.path`, where an
    editable install's finder points, and every package an installed
    distribution of this course put in any Python's site folders (its
    RECORD): a worker must find none of them.
    """
    folders = set()
    sites = {entry for entry in sys.path if entry} | {p for pattern in SITE_FOLDERS for p in glob.glob(pattern)}
    for name in ("autograder", "solutions"):
        spec = importlib.util.find_spec(name)
        folders.update(spec.submodule_search_locations or []) if spec else None
        folders.update(str(Path(entry) / name) for entry in sites if (Path(entry) / name).is_dir())
    for record in (r for site in sites for r in glob.glob(os.path.join(site, "backprop_course-*.dist-info/RECORD"))):
        try:
            lines = Path(record).read_text().splitlines()
        except OSError:
            continue
        tops = {line.split("/", 1)[0] for line in lines if "/" in line.split(",", 1)[0]}
        site = Path(record).parent.parent
        folders.update(str(site / top) for top in tops if top.isidentifier() and top != "__pycache__")  # packages
    for module in list(sys.modules.values()):
        mapping = getattr(module, "MAPPING", None)  # setuptools' editable finders map package names to folders
        if getattr(module, "__name__", "").startswith("__editable__") and isinstance(mapping, dict):
            folders.update(str(mapping[name]) for name in ("autograder", "solutions") if name in mapping)
    return sorted(str(Path(folder).resolve()) for folder in folders if Path(folder).is_dir())


def learner_files(task_id: str) -> list[str]:
    """The learner's files a task's worker loads: its own file, a capstone's files, or (student edition) all."""
    if not has_sources():
        return sorted({r.module for r in all_regions()} | {"engine"})
    return list(registry.task(task_id).runs_whole) or [module_of(task_id)]


def prerequisite_owners(task_id: str) -> set[str]:
    """The functions and methods of the task's own file that hold a prerequisite's code: the worker takes the
    reference's for these, and the learner's for the rest of the file."""
    module, needed = module_of(task_id), registry.prerequisites(task_id)
    under = {r.owner for r in all_regions() if r.module == module and needed & set(r.tasks)}
    return under - owners_of(task_id)


@cache
def reference_for(task_id: str) -> dict[str, str]:
    """The reference's sources as a task's worker holds them: solved only where a prerequisite of the task is.

    Every other region is turned back into its stub, the task's own among them: a delegation to the reference
    finds nothing that solves the task, and calling the code of a task that is not a prerequisite raises.
    """
    needed = registry.prerequisites(task_id)
    return {
        path.stem: for_task(path.read_text(), path.stem, task_id, needed, str(path))
        for path in sorted(SOLUTIONS.glob("*.py"))
        if path.stem != "__init__"
    }


@cache
def scenario_source(module_name: str) -> str:
    """The source of a test file's `@scenario` functions, and nothing else of it.

    Read from the file, so that a run can send planned calls before pytest imports the test files.
    """
    module = sys.modules.get(module_name)
    if module is not None:
        path = Path(module.__file__)
    elif module_name.startswith(f"{LESSONS_PACKAGE}."):
        path = LESSONS / f"{module_name.rpartition('.')[2]}.py"
    else:
        raise OSError(f"no file known for {module_name}")
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    parts = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and any(_is_scenario(d) for d in node.decorator_list):
            first = min(d.lineno for d in node.decorator_list)
            parts.append("".join(lines[first - 1 : node.end_lineno]))
    return "\n\n".join(parts)


def _is_scenario(decorator: ast.expr) -> bool:
    return (isinstance(decorator, ast.Name) and decorator.id == "scenario") or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "scenario"
    )


def preload_for(task_id: str) -> tuple[str, ...]:
    """What the task's worker should find imported: torch where the learner's code uses it."""
    return ("torch",) if module_of(task_id) == "torch_bridge" else ()


@cache
def lesson_modules(task_id: str) -> tuple[str, ...]:
    """The test modules of the task's lesson (`autograder.lessons.test_06_backward`): where its scenarios are."""
    number = registry.task(task_id).lesson
    return tuple(f"{LESSONS_PACKAGE}.{p.stem}" for p in sorted(LESSONS.glob(f"test_{number:02d}_*.py")))


class Learner:
    """The `learner` fixture: runs scenarios over the learner's code for this test's task.

    `fresh`: in a graded run, a visible check's draws (`fresh_inputs`): each call is asked again on them.
    """

    def __init__(self, grader: Grader, task_id: str, fresh: random.Random | None = None):
        self.grader, self.task, self.fresh = grader, task_id, fresh

    def run(self, fn, *args, **kwargs):
        if not getattr(fn, SCENARIO_FLAG, False):
            raise TypeError(f"{fn.__name__} is not marked @scenario")
        answer = self.grader.run(self.task, fn, args, kwargs)
        if self.fresh is not None:
            fresh_inputs.ask_again(self._ask, self._expect, fn, args, kwargs, answer, self.fresh)
        return answer

    def _ask(self, fn, args: list, kwargs: dict):
        return self.grader.run(self.task, fn, tuple(args), kwargs, planned=False)

    def _expect(self, fn, args: list, kwargs: dict, page: bool):
        try:
            if page:  # kept with the reference's answers, like a judgement's
                return Reference(self.grader).run(fn, *args, **kwargs)
            return to_plain(fn(ReferenceCode(), *args, **kwargs))  # drawn for this submission: not worth keeping
        except Exception:  # noqa: BLE001 - the reference fails on these inputs too: they prove nothing
            return None


class ReferenceCode:
    """What a scenario's `impl` is on the trusted side: the whole reference."""

    Value = property(lambda self: importlib.import_module("solutions.engine").Value)

    def module(self, name: str):
        return importlib.import_module(f"solutions.{name}")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.module(name)


class Reference:
    """The `reference` fixture: the expected answer of a scenario, computed here and never sent to a worker.

    Answers are kept by the reference's fingerprint, the scenario's source and
    its arguments: in memory for a warm process (watch mode), and on disk for the
    next run at the same level (`caches.GradingCache`), so a batch or a second
    run computes each answer once. A student edition ships no reference
    code; there the answers of the visible checks ship as data (recorded by
    `python -m autograder student-edition`).
    """

    def __init__(self, grader: Grader):
        self.grader = grader

    def run(self, fn, *args, **kwargs):
        key = answer_key(fn, args, kwargs)
        if not has_sources():
            answers = recorded_answers()
            if key not in answers:
                raise RuntimeError("this check needs the reference, which a student edition does not ship")
            return answers[key]
        known = self.grader.known_answers()
        cached = f"{hashlib.sha256(scenario_source(fn.__module__).encode()).hexdigest()[:16]}:{key}"
        if cached not in known:
            known[cached] = to_plain(fn(ReferenceCode(), *args, **kwargs))
            self.grader.new_answers = True
        if self.grader.recording is not None:
            self.grader.recording[key] = known[cached]
        return known[cached]

    def compute(self, fn, *args):
        """`fn(*args)` as plain data, computed here once and kept with the reference's answers.

        For expected values that need a heavy library (`kit.torch_values`): once
        they are known, a run never imports it.
        """
        known = self.grader.known_answers()
        cached = f"{hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]}:{answer_key(fn, args, {})}"
        if cached not in known:
            known[cached] = to_plain(fn(*args))
            self.grader.new_answers = True
        return known[cached]


def answer_key(fn, args: tuple, kwargs: dict) -> str:
    """How a reference answer is filed: the scenario's file and name, and its arguments (hashed when long)."""
    key = f"{fn.__module__.rpartition('.')[2]}:{fn.__name__}:{json.dumps([args, kwargs], sort_keys=True)}"
    return key if len(key) <= 4000 else hashlib.sha256(key.encode()).hexdigest()[:32]


def lessons_digest() -> str:
    """A digest of the grading tests, the judgement kit and the reference, to tell whether they changed in a run."""
    return caches.sources_digest((LESSONS, LESSONS.parent / "kit", SOLUTIONS))


@cache
def recorded_answers() -> dict:
    try:
        return json.loads(RECORDED.read_text())
    except FileNotFoundError:
        return {}


# --- pytest hooks ---------------------------------------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "task(id, points, hint): the task a grading test belongs to")
    config.addinivalue_line("markers", "hidden: a seeded check whose inputs the pages never show")
    run = config.stash[OPTIONS] = config.stash.get(OPTIONS, None) or options.from_namespace(config.option)
    for task_id in run.tasks:
        if task_id not in registry.TASKS:
            raise pytest.UsageError(
                f"--task {task_id}: there is no such task (they look like 2.3; python -m autograder tasks)"
            )
    for number in run.lessons:
        if not any(lesson.number == number and lesson.tasks for lesson in registry.LESSONS):
            raise pytest.UsageError(f"--lesson {number}: lesson {number} has no graded tasks")
    config.stash[GRADER] = Grader(config)
    if not config.getoption("show_code"):
        config.option.tbstyle = "no"
        config.option.reportchars = ""
        if config.option.verbose == 0:
            config.option.verbose = -1  # no pytest header: the scorecard is the report


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With --lesson or --task, the other lessons' test files are not even collected: one lesson grades sooner.

    Lesson N's grading tests live in `lessons/test_NN_*.py` (tests/test_watch.py checks it).
    """
    run = config.stash[OPTIONS]
    wanted = set(run.lessons) | {registry.task(t).lesson for t in run.tasks}
    number = collection_path.name.removeprefix("test_").partition("_")[0]
    if wanted and number.isdigit() and int(number) not in wanted and collection_path.parent.resolve() == LESSONS:
        return True
    return None


def task_marker(item: pytest.Item) -> tuple[str, int, str]:
    """The task id, points and hint of a test; a missing or malformed marker is an error."""
    marks = list(item.iter_markers("task"))
    if len(marks) != 1:
        raise pytest.UsageError(
            f"{item.nodeid}: a grading test needs exactly one @pytest.mark.task, found {len(marks)}"
        )
    mark = marks[0]
    task_id = mark.args[0] if mark.args else None
    points, hint = mark.kwargs.get("points"), mark.kwargs.get("hint")
    if task_id not in registry.TASKS:
        raise pytest.UsageError(f"{item.nodeid}: unknown task {task_id!r}")
    if not isinstance(points, int) or points <= 0 or not hint:
        raise pytest.UsageError(f"{item.nodeid}: the task marker needs points=<positive int> and hint='...'")
    return task_id, points, hint


def describe(item: pytest.Item) -> str:
    doc = item.function.__doc__ if hasattr(item, "function") else None
    if doc:
        return doc.strip().splitlines()[0].rstrip(".")
    return item.name.removeprefix("test_").replace("_", " ")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    grader = config.stash[GRADER]
    keep, drop = [], []
    for item in items:
        task_id, points, hint = task_marker(item)
        if not grader.selects(task_id):
            drop.append(item)
            continue
        keep.append(item)
        result = TestResult(
            item.nodeid, describe(item), task_id, points, hint, hidden=item.get_closest_marker("hidden") is not None
        )
        grader.results.tests.append(result)
        grader.by_nodeid[item.nodeid] = result
    if drop:
        config.hook.pytest_deselected(items=drop)
    # the checks whose workers wait for torch to import (seconds) run last: the others need not wait behind them
    items[:] = sorted(keep, key=lambda item: bool(preload_for(task_marker(item)[0])))
    grader.results.selected = sorted({r.task for r in grader.results.tests}, key=registry.sort_key)


@pytest.fixture
def learner(request: pytest.FixtureRequest) -> Learner:
    """Runs scenarios over the graded code for this test's task (over the reference of its prerequisites)."""
    grader = request.config.stash[GRADER]
    fresh = None
    if grader.fresh_seed is not None and request.node.get_closest_marker("hidden") is None:
        fresh = fresh_inputs.rng_for(grader.fresh_seed, request.node.nodeid)
    return Learner(grader, request.node.get_closest_marker("task").args[0], fresh)


@pytest.fixture
def reference(request: pytest.FixtureRequest) -> Reference:
    """Computes expected answers with the reference, on the trusted side."""
    return Reference(request.config.stash[GRADER])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """A check that fails is asked of the reference too: if the reference fails it here as well, it is void."""
    try:
        return (yield)
    except pytest.exit.Exception:
        raise  # the grader cannot go on (a worker that cannot start): nothing to ask of the reference
    except Exception as exc:
        grader = item.config.stash[GRADER]
        result = grader.by_nodeid.get(item.nodeid)
        fault = grader.machine_fault(item, exc) if result is not None and not result.settled else ""
        if not fault:
            raise
        result.status, result.message, result.settled = VOID, verdicts.could_not_grade(fault), True
        raise pytest.skip.Exception(result.message, _use_item_location=True) from None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    rep = yield
    grader = item.config.stash[GRADER]
    result = grader.by_nodeid.get(item.nodeid)
    if result is None:
        return rep
    if call.when == "call":
        result.seconds = round(call.duration, 4)
    if call.excinfo is None:
        if call.when == "call" and not result.settled:
            result.status, result.message, result.settled = "passed", "", True
    elif not result.settled:
        if isinstance(call.excinfo.value, GraphsDiffer):
            drawing.draw_or_offer(
                call.excinfo.value,
                item.config.getoption("draw"),
                item.name,
                scorecard.grade_command(result.task, grader.impl_option),
            )
        result.status, result.message, result.waits_for = verdicts.classify(call.excinfo.value, result.task)
        result.settled = True
        grader.stop_capstones_waiting_for(result.task)
    if call.when == "teardown":
        _save_progress(grader)
    return rep


def _save_progress(grader: Grader) -> None:
    """The grader's own results file after each check, so that a run stopped from outside keeps what it found."""
    path = grader.options.results_file
    if path:
        scorecard.write_json(Path(path), grader.results.to_json())


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    grader = config.stash.get(GRADER, None)
    result = grader.by_nodeid.get(report.nodeid) if grader else None
    if result is None or (report.when != "call" and report.passed) or not result.settled:
        return None
    letters = {"passed": ".", "not started": "N", "failed": "F", "error": "E", "timed out": "T", VOID: "?"}
    letter = letters[result.status]
    return result.status.replace(" ", "_"), letter, result.status.upper()


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[GRADER].start()


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every worker is killed, and gone, before anything is written."""
    grader = session.config.stash[GRADER]
    grader.stop_workers()
    if grader.lesson_digest and lessons_digest() != grader.lesson_digest:  # learner code (`processes`) wrote them
        for result in grader.results.tests:
            result.status, result.settled = "error", True
            result.message = "the grader's own files changed while your code ran: this run's results are void"
        grader.new_answers = False
        grader.asked.clear()
    blame_by_dependency(grader.results, edition=not has_sources())  # before anything reads or writes the results
    grader.save_answers()
    grader.save_plans()
    grader.cache.forget_if_workers_could_write()
    grader.results.complete = True
    if grader.recording is not None:
        Path(session.config.getoption("record_reference")).write_text(
            json.dumps(grader.recording, indent=1, sort_keys=True) + "\n"
        )
    _save_progress(grader)
    graded = [t for t in grader.results.tests if not registry.task(t.task).bonus]
    if graded and all(t.status == "passed" for t in graded):
        session.exitstatus = pytest.ExitCode.OK  # a bonus task is never needed: it does not fail the run
    path = grader.options.results_json
    if path:
        scorecard.write_json(Path(path), scorecard.gradescope_results(grader.results))
    # last, and never in the way of the results: the run as `python -m autograder hint` reads it
    task_files = {task_id: learner_files(task_id) for task_id in {t.task for t in grader.results.tests}}
    lastrun.save(grader.results, grader.root, grader.file_digests, task_files)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    terminalreporter.write_line("")
    for line in scorecard.text(config.stash[GRADER].results).splitlines():
        terminalreporter.write_line(line)
