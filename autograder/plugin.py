"""The pytest plugin that turns `pytest autograder` into a grader.

It adds the options (`--impl`, `--lesson`, `--task`, `--results-json`,
`--show-code`), checks that every test names exactly one task with its points
and a hint, gives each test a time limit, sorts every outcome into passed /
not started / failed / error / timed out, and prints the scorecard.
"""

from __future__ import annotations

import re
import signal
import sys
from functools import partial
from pathlib import Path

import pytest

from _pytest.reports import TestReport
from _pytest.runner import runtestprotocol

from . import isolation, loading, registry, report
from .checks import CheckFailed
from .loading import LearnerCodeError, where_in
from .regions import REPO, module_of

TEST_TIMEOUT = 10  # seconds per test (pytest-timeout's --timeout overrides); an endless loop costs only its test
# SIGALRM interrupts only the test; Windows has no SIGALRM, and the thread method ends the whole run.
TIMEOUT_METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
GRADER = pytest.StashKey["Grader"]()
MEMORY_LIMIT_MB = 4096  # the grader with torch loaded uses under 1 GB of address space


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autograder", "course autograder")
    group.addoption("--impl", default="exercises", metavar="FOLDER",
                    help="what to grade: 'exercises' (default), 'solutions', or a folder laid out like exercises/")
    group.addoption("--lesson", action="append", type=int, default=[], metavar="N",
                    help="grade only lesson N (repeatable)")
    group.addoption("--task", action="append", default=[], metavar="L.N", help="grade only task L.N (repeatable)")
    group.addoption("--results-json", metavar="PATH", help="also write the result in Gradescope's results.json format")
    group.addoption("--show-code", action="store_true",
                    help="show pytest's tracebacks, test code included (hidden by default)")
    group.addoption("--memory-limit", type=int, default=MEMORY_LIMIT_MB, metavar="MB",
                    help=f"memory cap of each test's process (default {MEMORY_LIMIT_MB} MB; 0: none)")
    group.addoption("--in-process", action="store_true",
                    help="run the tests in the grader's own process (faster, but learner code can stop the grader)")


class Grader:
    """What one grading run needs to remember."""

    def __init__(self, config: pytest.Config):
        self.config = config
        impl = config.getoption("impl")
        self.root = (REPO / impl) if impl in ("exercises", "solutions") else Path(impl).resolve()
        if not self.root.is_dir():
            raise pytest.UsageError(f"--impl {impl}: no such folder ({self.root})")
        self.impl_option = "" if impl == "exercises" else f" --impl {impl}"
        self.timeout = config.getoption("timeout", None) or TEST_TIMEOUT
        self.memory_mb = config.getoption("memory_limit")
        self.isolated = isolation.CAN_FORK and not config.getoption("in_process")
        self.pristine: dict = {}  # the grader's own objects before any learner code ran (isolation.snapshot)
        self.results: dict[str, report.TestResult] = {}
        self.selected: list[str] = []

    def selects(self, task_id: str) -> bool:
        lessons, tasks = self.config.getoption("lesson"), self.config.getoption("task")
        if not lessons and not tasks:
            return True
        return task_id in tasks or registry.task(task_id).lesson in lessons


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "task(id, points, hint): the task a grading test belongs to")
    config.addinivalue_line("markers", "hidden: a seeded check whose inputs the pages never show")
    for task_id in config.getoption("task"):
        if task_id not in registry.TASKS:
            raise pytest.UsageError(f"--task {task_id}: there is no such task (they look like 2.3; python -m autograder tasks)")
    for number in config.getoption("lesson"):
        if not any(lesson.number == number and lesson.tasks for lesson in registry.LESSONS):
            raise pytest.UsageError(f"--lesson {number}: lesson {number} has no graded tasks")
    config.stash[GRADER] = Grader(config)
    if not config.getoption("show_code"):
        config.option.tbstyle = "no"
        config.option.reportchars = ""
        if config.option.verbose == 0:
            config.option.verbose = -1  # no pytest header: the scorecard is the report


def task_marker(item: pytest.Item) -> tuple[str, int, str]:
    """The task id, points and hint of a test; a missing or malformed marker is an error."""
    marks = list(item.iter_markers("task"))
    if len(marks) != 1:
        raise pytest.UsageError(f"{item.nodeid}: a grading test needs exactly one @pytest.mark.task, found {len(marks)}")
    mark = marks[0]
    task_id = mark.args[0] if mark.args else None
    points, hint = mark.kwargs.get("points"), mark.kwargs.get("hint")
    if task_id not in registry.TASKS:
        raise pytest.UsageError(f"{item.nodeid}: unknown task {task_id!r}")
    if not isinstance(points, int) or points <= 0 or not hint:
        raise pytest.UsageError(f"{item.nodeid}: the task marker needs points=<positive int> and hint='...'")
    return task_id, points, hint


def describe(item: pytest.Item) -> str:
    doc = getattr(item, "function", None).__doc__ if hasattr(item, "function") else None
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
        if not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(grader.timeout, method=TIMEOUT_METHOD, func_only=True))
        grader.results[item.nodeid] = report.TestResult(
            item.nodeid, describe(item), task_id, points, hint, hidden=item.get_closest_marker("hidden") is not None)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    grader.selected = sorted({r.task for r in grader.results.values()}, key=registry.sort_key)
    if grader.isolated:
        _warm_up_torch()
        _probe_learner_files(grader)


def _warm_up_torch() -> None:
    """Pay PyTorch's first-use costs once here, not again in every test's child process."""
    torch = sys.modules.get("torch")
    if torch is None:
        return
    torch.set_num_threads(1)  # tiny tensors: threads only cost, and they do not survive fork
    x = torch.ones(2, dtype=torch.double, requires_grad=True)
    torch.autograd.gradcheck(torch.tanh, (x,))


def _probe_learner_files(grader: Grader) -> None:
    """Import each learner file the selected tasks need once, in a child; remember the ones that fail."""
    for module in sorted({module_of(t) for t in grader.selected}):
        path = grader.root / f"{module}.py"
        if not path.is_file():
            continue  # load_module says so in each test
        failure = isolation.probe(grader.root, module, grader.timeout, grader.memory_mb)
        if failure:
            loading._load_failures[(path, path.stat().st_mtime_ns)] = failure


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session):
    """With isolation, run each test file's tests in a child process and log the reports it sends back."""
    grader = session.config.stash[GRADER]
    if not grader.isolated or session.config.option.collectonly:
        return None
    if session.testsfailed and not session.config.option.continue_on_collection_errors:
        raise session.Interrupted(f"{session.testsfailed} error(s) during collection")
    grader.pristine = isolation.snapshot()
    by_file: dict[str, list[pytest.Item]] = {}
    for item in session.items:
        by_file.setdefault(item.nodeid.split("::")[0], []).append(item)
    for items in by_file.values():
        works = [partial(_run_in_child, grader, item, items[i + 1] if i + 1 < len(items) else None)
                 for i, item in enumerate(items)]
        for index, payload, problem in isolation.run_in_children(
                works, grader.timeout + isolation.KILL_GRACE, grader.memory_mb):
            _log(grader, items[index], payload, problem)
    return True


def _run_in_child(grader: Grader, item: pytest.Item, nextitem: pytest.Item | None) -> dict:
    """Inside the child: run one test; return its status and its reports as JSON-able data."""
    config, result = item.config, grader.results[item.nodeid]
    reports = runtestprotocol(item, nextitem=nextitem, log=False)
    changed = isolation.tampered(grader.pristine)
    if changed:
        result.status = "error"
        result.message = ("the submission changed the grader's own objects, so this check cannot be trusted: "
                          + ", ".join(changed[:5]))
    for rep in reports:
        rep.sections = [(key, text[: isolation.MAX_SECTION]) for key, text in rep.sections]
    return {"status": result.status, "message": result.message,
            "reports": [config.hook.pytest_report_to_serializable(config=config, report=r) for r in reports]}


def _log(grader: Grader, item: pytest.Item, payload: dict | None, problem: str) -> None:
    """In the parent: record a test's outcome as the child reported it, or as the parent saw the child end."""
    config, result = item.config, grader.results[item.nodeid]
    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    if payload is None:
        result.status = "timed out" if "finish within" in problem else "error"
        result.message = f"the check's process {problem}"
        reports = [TestReport(item.nodeid, item.location, {}, "failed", result.message, "call")]
    else:
        result.status, result.message = payload["status"], payload["message"]
        reports = [config.hook.pytest_report_from_serializable(config=config, data=d) for d in payload["reports"]]
    for rep in reports:
        item.ihook.pytest_runtest_logreport(report=rep)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)


def classify(excinfo: pytest.ExceptionInfo, task_id: str, root: Path, timeout: float) -> tuple[str, str]:
    """Sort a test's exception into a status and a message for the learner."""
    exc = excinfo.value
    where = where_in(exc, root)
    at = f"\nwhere:    {where}" if where else ""
    if isinstance(exc, NotImplementedError):
        match = re.match(r"task (\d+\.\d+)", str(exc))
        if match and match[1] != task_id and match[1] in registry.TASKS:
            other = registry.task(match[1])
            return "not started", f"waits for task {other.id} ({other.title}), which this check runs through"
        return "not started", "the stub still raises NotImplementedError"
    if isinstance(exc, LearnerCodeError):
        return ("timed out" if exc.timed_out else "error"), str(exc)
    if type(exc).__name__ == "Failed" and str(exc).startswith("Timeout"):
        return "timed out", f"stopped after {timeout:g} s: is there an endless loop?{at}"
    if isinstance(exc, CheckFailed):
        return "failed", exc.explain() + at
    if isinstance(exc, AssertionError):
        return "failed", (str(exc).split("\nassert ")[0] or "a check did not hold") + at
    if excinfo.errisinstance(pytest.skip.Exception):
        return "error", f"skipped: {exc}"
    if isinstance(exc, RecursionError):
        return "error", f"RecursionError: the code recursed too deep{at}"
    text = str(exc)
    text = text if len(text) <= 300 else text[:300] + "…"
    who = "your code" if where else "the check"
    return "error", f"{who} raised {type(exc).__name__}: {text}{at}"


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    rep = yield
    grader = item.config.stash[GRADER]
    result = grader.results.get(item.nodeid)
    if result is None or result.settled and call.excinfo is None:
        return rep
    if call.excinfo is None:
        if call.when == "call":
            result.status, result.message = "passed", ""
        return rep
    if result.settled and result.status != "passed":
        return rep  # the first failing phase says what happened
    result.status, result.message = classify(call.excinfo, result.task, grader.root, grader.timeout)
    result.settled = True
    if call.when == "teardown" and result.status == "not started":
        result.status = "error"
    return rep


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config):
    grader = config.stash.get(GRADER, None)
    result = grader.results.get(report.nodeid) if grader else None
    if result is None or (report.when != "call" and report.passed):
        return None
    letter = {"passed": ".", "not started": "N", "failed": "F", "error": "E", "timed out": "T"}[result.status]
    return result.status.replace(" ", "_"), letter, result.status.upper()


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    grader = config.stash[GRADER]
    tasks = report.group(list(grader.results.values()), grader.selected)
    graded = str(grader.root.relative_to(REPO)) + "/" if grader.root.is_relative_to(REPO) else str(grader.root)
    card = report.scorecard(tasks, graded, grader.impl_option)
    terminalreporter.write_line("")
    for line in card.splitlines():
        terminalreporter.write_line(line)
    path = config.getoption("results_json")
    if path:
        report.write_json(Path(path), report.gradescope_results(tasks, card))
