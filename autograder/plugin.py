"""The pytest plugin that turns `pytest autograder` into a grader.

It adds the options (`--impl`, `--lesson`, `--task`, `--results-json`,
`--show-code`), checks that every test names exactly one task with its points
and a hint, gives each test a time limit, sorts every outcome into passed /
not started / failed / error / timed out, and prints the scorecard.
"""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from . import registry, report
from .checks import CheckFailed
from .loading import LearnerCodeError, where_in
from .regions import REPO

TEST_TIMEOUT = 10  # seconds per test (pytest-timeout's --timeout overrides); an endless loop costs only its test
# SIGALRM interrupts only the test; Windows has no SIGALRM, and the thread method ends the whole run.
TIMEOUT_METHOD = "signal" if hasattr(signal, "SIGALRM") else "thread"
GRADER = pytest.StashKey["Grader"]()


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
            item.add_marker(pytest.mark.timeout(grader.timeout, method=TIMEOUT_METHOD))
        grader.results[item.nodeid] = report.TestResult(
            item.nodeid, describe(item), task_id, points, hint, hidden=item.get_closest_marker("hidden") is not None)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    grader.selected = sorted({r.task for r in grader.results.values()}, key=registry.sort_key)


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
    if result is None or call.excinfo is None or result.status != "passed":
        return rep
    result.status, result.message = classify(call.excinfo, result.task, grader.root, grader.timeout)
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
