"""The grading checks as an editor's Testing panel shows them: lesson file, then one node per task, then its checks.

VS Code's and PyCharm's panels run pytest's own discovery from the repository
root (`testpaths` in `pyproject.toml` points it at `autograder/`) and draw the
tree pytest collects. pytest's tree of a lesson's file is flat (its test
functions), so this plugin collects each lesson file as one `pytest.Class` per
task (named `task 8.2 · Value.__pow__`, the scorecard's words) holding that
task's checks: the panels draw a class as a node of its own.

Running a node from the panel is `pytest <node id>`: the node ids name the
lesson file and the task, so the run selects that lesson or task as
`--lesson`/`--task` would (only its workers start), and a check that does not
pass reports the scorecard's verdict, hint and page as its failure text, which
the panel shows next to the check.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from autograder.course import registry
from autograder.grading import scorecard
from autograder.grading.plugin import GRADER
from autograder.grading.tasks import LESSONS, node_label

GROUP = re.compile(r"task (\d+\.\d+) ")  # how a task's node begins (`label`)


def label(task_id: str) -> str:
    """The name of a task's node: its id and title, as the scorecard writes them."""
    return node_label(task_id)


class TaskChecks(pytest.Class):
    """One task's checks in a lesson's file: a class made here, holding the module's test functions of that task."""

    def __init__(self, *, checks: list, **kwargs):
        super().__init__(**kwargs)
        self.checks = checks

    def _getobj(self):
        return type(self.name, (), {fn.__name__: staticmethod(fn) for fn in self.checks})


class LessonModule(pytest.Module):
    """A lesson's grading test file, collected task by task, in the order of the file."""

    def collect(self):
        by_task: dict[str, list] = {}
        others = []
        for node in super().collect():
            marker = node.get_closest_marker("task") if isinstance(node, pytest.Function) else None
            if marker and marker.args and marker.args[0] in registry.TASKS:
                by_task.setdefault(marker.args[0], []).append(node.obj)
            else:
                others.append(node)  # the grader's own checks of the markers report it
        return [TaskChecks.from_parent(self, name=label(t), checks=fns) for t, fns in by_task.items()] + others


def pytest_pycollect_makemodule(module_path: Path, parent):
    if module_path.parent.resolve() == LESSONS:
        return LessonModule.from_parent(parent, path=module_path)
    return None


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Node ids given on the command line (a panel's run) select their lessons and tasks, as the options would."""
    lessons, tasks = set(), set()
    for arg in config.args:
        path, _, rest = arg.partition("::")
        file = (Path(config.invocation_params.dir) / path).resolve()
        number = file.name.removeprefix("test_").partition("_")[0]
        if file.parent != LESSONS or not number.isdigit():
            return  # a folder or another file: everything its options select
        group = GROUP.match(rest)
        if group:
            tasks.add(group[1])
        else:
            lessons.add(int(number))
    if lessons or tasks:
        config.option.lessons = sorted(set(config.option.lessons) | lessons)
        config.option.tasks = sorted(set(config.option.tasks) | tasks)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A check that did not pass reports what the scorecard says of it: the panel shows it as the failure."""
    report = yield
    grader = item.config.stash.get(GRADER, None)
    result = grader.by_nodeid.get(item.nodeid) if grader else None
    if report.failed and result is not None and result.settled and not item.config.getoption("show_code"):
        report.longrepr = "\n".join(
            [
                *scorecard.heading(result),
                *scorecard.failure(result),
                f"again:    {scorecard.grade_command(result.task, grader.impl_option)}",
            ]
        )
    return report
