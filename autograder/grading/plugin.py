"""The pytest plugin that turns `pytest autograder` into a grader: options, markers, fixtures, and the hooks that
drive one run's `Grader` (`grader.py`, which holds the run's state).

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

The hooks start the workers before collection, sort every outcome into a
status (`verdicts.classify`), ask a failed check of the reference
(`Grader.machine_fault`: a check the reference fails here too *could not be
graded*), settle each check's label as soon as it has run (`settle.py`: a
check that waits for another task is skipped in pytest's terms, so an editor
and the closing line tell what the scorecard tells), give each judgement its
CPU time (`judging.limit`), and write the scorecard and the results file only
after every worker is gone.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import time
from pathlib import Path

import pytest

from autograder.course import registry
from autograder.course.regions import has_sources
from autograder.grading import fresh_inputs, judging, lastrun, options, pool, scorecard, verdicts
from autograder.grading.blame import apply, check_key
from autograder.grading.fixtures import Learner
from autograder.grading.grader import BadOptions, Grader
from autograder.grading.reference import Reference, lessons_digest
from autograder.grading.results import Status, TestResult
from autograder.grading.settle import Settler
from autograder.grading.settle import describe as describe_function
from autograder.grading.tasks import LESSONS, graded

GRADER = pytest.StashKey[Grader]()
SETTLER = pytest.StashKey[Settler]()  # each check's own verdict, and its label (`settle.py`)
OPTIONS = pytest.StashKey[options.GradeOptions]()  # the run's options: set by a caller (`runner.grade`), or read once
ZYGOTES = pytest.StashKey[pool.Zygotes]()  # zygotes kept warm across runs by a caller that grades often
DONE = (Status.PASSED, Status.VOID)  # a check that could not be graded here counts neither way


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder", "course autograder")
    options.add(group.addoption)  # every option of a grading run (`GradeOptions`); what it shows, below
    group.addoption(
        "--show-code", action="store_true", help="show pytest's tracebacks, test code included (hidden by default)"
    )
    group.addoption(
        "--draw",
        metavar="DIR",
        help="when a check finds a wrong grad, draw your graph (wrong grads in red) above a "
        "correct one as DIR/<test name>.svg",
    )
    group.addoption("--record-reference", metavar="PATH", help=argparse.SUPPRESS)  # the student edition's export
    group.addoption("--ship-answers", metavar="PATH", help=argparse.SUPPRESS)  # `build`: build.ship_answers


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "task(id, points, hint): the task a grading test belongs to")
    config.addinivalue_line("markers", "hidden: a seeded check whose inputs the pages never show")
    run = config.stash[OPTIONS] = config.stash.get(OPTIONS, None) or options.from_namespace(config.option)
    try:
        config.stash[GRADER] = Grader(
            run,
            draw=config.getoption("draw"),
            record=bool(config.getoption("record_reference")),
            zygotes=config.stash.get(ZYGOTES, None),
            ship=bool(config.getoption("ship_answers")),
        )
    except BadOptions as exc:
        raise pytest.UsageError(str(exc)) from None
    config.stash[SETTLER] = Settler(config.stash[GRADER])
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
    if hasattr(item, "function"):
        return describe_function(item.function)
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
        hidden = item.get_closest_marker("hidden") is not None
        grader.add_check(TestResult(item.nodeid, describe(item), task_id, points, hint, hidden=hidden))
        config.stash[SETTLER].collected(item.nodeid)
    if drop:
        config.hook.pytest_deselected(items=drop)
    # a graded run asks every visible check before any hidden one: whatever learner code sees in a hidden check and
    # passes on to another worker (through what no wall divides: the machine's CPU, its files' caches, at `user`
    # the host's /proc), no visible check is left to show. Then the checks whose workers wait for torch to import
    # (seconds) run last: the others need not wait behind them
    graded_run = grader.fresh_seed is not None
    items[:] = sorted(
        keep,
        key=lambda item: (
            graded_run and item.get_closest_marker("hidden") is not None,
            bool(graded(task_marker(item)[0]).preload),
        ),
    )
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


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """A check graded already, quietly, for a check that runs through its task (`settle.py`) is not run again."""
    settler = pyfuncitem.config.stash.get(SETTLER, None)
    if settler is not None and pyfuncitem.nodeid in settler.grader.by_nodeid:
        if check_key(pyfuncitem.nodeid) in settler.raw:
            return True
    return None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item):
    """The check's own verdict (in a graded run, a visible check that passes is looked at again on inputs drawn
    afresh: `Learner.judge_afresh`; a failure is asked of the reference too: void if the reference fails it here as
    well), then its label (`Settler.settle`), which decides pytest's outcome: a check that passed passes, one that
    waits for another task or could not be graded is skipped (an editor draws it grey, not red), and only a check
    that went wrong on its own fails."""
    settler = item.config.stash[SETTLER]
    grader = settler.grader
    result = grader.by_nodeid.get(item.nodeid)
    if result is not None and result.hidden and not settler.hidden_open:  # a graded run's first hidden check
        try:
            settler.visible_done()  # quiet grading may run hidden checks now (`settle.py`)
        except pool.StartFailed as failed:
            pytest.exit(verdicts.start_failed(failed), returncode=pytest.ExitCode.INTERNAL_ERROR)
    if result is None or result.settled:
        return (yield)
    key = check_key(item.nodeid)
    ran = key not in settler.raw  # else graded quietly already: `pytest_pyfunc_call` did not run it again
    learner = item.funcargs.get("learner")
    start = time.perf_counter()
    try:
        try:
            with judging.limit(grader.timeout):  # the judgement's own CPU time, here
                yield
            if ran and isinstance(learner, Learner):
                learner.judge_afresh(lambda other: _run_with(item, other))
            exc = None
        except (pool.StartFailed, pytest.exit.Exception):
            raise
        except Exception as raised:  # noqa: BLE001 - what a check raises is its verdict
            exc = raised
        if ran:
            again = lambda other: _check(item, other)  # noqa: E731
            settler.conclude(result, exc, learner, again, item.name, time.perf_counter() - start)
        label = settler.settle(key)
    except pool.StartFailed as failed:  # nothing to grade with: stop, rather than fail every check
        pytest.exit(verdicts.start_failed(failed), returncode=pytest.ExitCode.INTERNAL_ERROR)
    apply(result, label)
    result.seconds, result.settled = settler.raw[key].seconds, True
    if label.status == Status.PASSED:
        return None
    grader.stop_capstones_waiting_for(result.task)
    if label.status == Status.VOID or label.waits:
        raise pytest.skip.Exception(label.message, _use_item_location=True) from None
    raise settler.raised[key] or AssertionError(label.message)


def _check(item: pytest.Item, learner: Learner) -> None:
    """The check `item` with `learner` as its `learner` fixture, and in a graded run its second look on drawn inputs
    (what the reference is asked again: `Grader.machine_fault`)."""
    _run_with(item, learner)
    learner.judge_afresh(lambda other: _run_with(item, other))


def _run_with(item: pytest.Item, learner: Learner) -> None:
    """Run the test `item` again with `learner` as its `learner` fixture."""
    mine = item.funcargs["learner"]
    item.funcargs["learner"] = learner
    try:
        with judging.limit(learner.grader.timeout):
            item.runtest()
    finally:
        item.funcargs["learner"] = mine


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    rep = yield
    grader = item.config.stash[GRADER]
    result = grader.by_nodeid.get(item.nodeid)
    if result is None:
        return rep
    if call.excinfo is not None and not result.settled:  # a fixture's setup or teardown failed: the grader's
        result.status, result.message, result.waits_for, result.cause = verdicts.classify(
            call.excinfo.value, result.task
        )
        result.message = grader.without_paths(result.message)
        result.settled = True
    if call.when == "teardown":
        _save_progress(grader, final=False)
    return rep


SAVE_EVERY = 1.0  # seconds between two saves of the results while checks run


def _save_progress(grader: Grader, final: bool = True) -> None:
    """The grader's own results file as checks finish, so that a run stopped from outside keeps what it found.

    While checks run, at most once every `SAVE_EVERY` seconds: writing it after each of 200 checks cost a graded
    run more CPU than its 90 workers' learner code (the file grows with each check). Asked to stop (SIGTERM: batch,
    at the grader's deadline) it writes the file at once (`_stop_with_results`); killed outright, it loses at most
    that last second of checks, which are then charged as unfinished.
    """
    path = grader.options.results_file
    now = time.monotonic()
    if path and (final or now - grader.saved_at >= SAVE_EVERY):
        scorecard.write_json(Path(path), grader.results.to_json(), indent=2 if final else None)
        grader.saved_at = time.monotonic()


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    grader = config.stash.get(GRADER, None)
    result = grader.by_nodeid.get(report.nodeid) if grader else None
    if result is None or (report.when != "call" and report.passed) or not result.settled:
        return None
    status = Status(result.status)
    if report.skipped and result.waits_for:  # skipped, in pytest's terms, as waiting: the scorecard's word
        return "waiting", "w", f"WAITS FOR TASK {result.waits_for}"
    # pytest's own "skipped" category expects a skip's report (its summary unpacks the reason): not this one
    category = "skipped_after_timeout" if status == Status.SKIPPED else status.value.replace(" ", "_")
    return category, status.letter, status.value.upper()


def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.option.collectonly:
        return
    grader = session.config.stash[GRADER]
    if grader.options.results_file and os.name == "posix":  # batch, and the platforms' runs through it
        signal.signal(signal.SIGTERM, lambda signum, frame: _stop_with_results(grader))
    try:
        grader.start()
    except pool.StartFailed as exc:
        pytest.exit(verdicts.start_failed(exc), returncode=pytest.ExitCode.INTERNAL_ERROR)


def _stop_with_results(grader: Grader) -> None:
    """Asked to stop (batch, at a grader's deadline): the results file as it stands, then the end, at once (the
    workers and zygotes die with this process)."""
    _save_progress(grader, final=True)
    os._exit(128 + signal.SIGTERM)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Every worker is killed, and gone, before anything is written. Discovery (`--collect-only`, an editor's
    Testing panel on every save) graded nothing: it writes nothing, so `hint` still reads the last real run."""
    if session.config.option.collectonly:
        return
    grader, settler = session.config.stash[GRADER], session.config.stash[SETTLER]
    if exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):  # a graded run that asked no hidden check
        try:
            settler.visible_done()  # the hidden checks that quiet grading held back, while the workers live
        except pool.StartFailed:
            pass  # not graded: the tasks they belong to are judged by their visible checks
    grader.stop_workers()
    if grader.lesson_digest and lessons_digest() != grader.lesson_digest:  # learner code (`processes`) wrote them
        for result in grader.results.tests:
            result.status, result.settled, result.cause = Status.ERROR, True, ""
            result.message = "the grader's own files changed while your code ran: this run's results are void"
        grader.new_answers = False
        grader.asked.clear()
        settler.void()
    grader.results.edition = not has_sources()
    settler.finish()  # the labels left to the end, before anything reads or writes the results
    grader.save_answers()
    grader.save_plans()
    grader.cache.forget_if_workers_could_write()
    grader.results.complete = True
    if grader.recording is not None:
        Path(session.config.getoption("record_reference")).write_text(
            json.dumps(grader.recording, indent=1, sort_keys=True) + "\n"
        )
    if grader.shipping is not None:
        Path(session.config.getoption("ship_answers")).write_text(json.dumps(grader.shipping, sort_keys=True))
    _save_progress(grader, final=True)
    graded_checks = [t for t in grader.results.tests if not registry.task(t.task).bonus]
    if graded_checks and all(t.status == Status.PASSED for t in graded_checks):
        session.exitstatus = pytest.ExitCode.OK  # a bonus task is never needed: it does not fail the run
    elif session.exitstatus == pytest.ExitCode.OK and any(t.status not in DONE for t in graded_checks):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED  # checks that wait are skipped: the run still fails
    # last, and never in the way of the results: the run as `python -m autograder hint` reads it
    task_files = {t: list(graded(t).learner_files) for t in {r.task for r in grader.results.tests}}
    lastrun.save(grader.results, grader.root, grader.file_digests, task_files)


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    if config.option.collectonly:  # nothing was graded: no scorecard
        return
    terminalreporter.write_line("")
    for line in scorecard.text(config.stash[GRADER].results).splitlines():
        terminalreporter.write_line(line)
