"""An editor's Testing panel: what pytest's discovery from the root lists, and what running one of its nodes shows.

VS Code and PyCharm run `pytest --collect-only` from the repository root with no
arguments (`.vscode/settings.json` adds only `autograder`, as `testpaths` does),
then `pytest <node id>` for the node a learner runs. These tests do the same.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest

from autograder.course import registry
from autograder.grading import lastrun, tasknodes
from tests.conftest import REPO, copy_of


def pytest_run(*args: str, cwd=REPO, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, **(env or {})},
    )


def test_discovery_from_the_root_lists_the_courses_checks_task_by_task_and_no_maintainers_test():
    done = pytest_run("--collect-only", "-q")
    ids = re.findall(r"^(\S.*::.*)$", done.stdout, re.MULTILINE)
    assert ids, done.stdout[-2000:] + done.stderr[-2000:]
    assert not [i for i in ids if i.startswith("tests/")]
    groups = {}
    for node_id in ids:
        file, group, check = node_id.split("::")
        assert re.fullmatch(r"autograder/lessons/test_\d\d_\w+\.py", file), node_id
        assert check.startswith("test_"), node_id
        groups.setdefault(group, set()).add(file)
    # every task of every lesson is one node, named as the scorecard names it, inside its lesson's file
    assert set(groups) == {tasknodes.label(t) for t in registry.TASKS}
    for task_id in registry.TASKS:
        (file,) = groups[tasknodes.label(task_id)]
        assert file.startswith(f"autograder/lessons/test_{registry.task(task_id).lesson:02d}_")


# what VS Code's own pytest plugin does at discovery, in the part that matters here: it builds the tree of what pytest
# collected when the session finishes, and sends it to the editor (here: writes it to a file)
VSCODE_STAND_IN = """
import json, os


def pytest_sessionfinish(session, exitstatus):
    with open(os.environ["STAND_IN_TREE"], "w") as f:
        json.dump([item.nodeid for item in session.items], f)
"""


@pytest.mark.parametrize("editor", ["pytest alone", "with an editor's plugin"])
def test_discovery_grades_nothing_so_it_writes_nothing_and_prints_no_scorecard(editor, tmp_path):
    """An editor runs discovery on every save: it must leave the last run (what `hint` reads) as it was."""
    last_run = lastrun.PATH
    before = last_run.read_bytes() if last_run.exists() else None
    results, tree = tmp_path / "results.json", tmp_path / "tree.json"
    plugin = []
    if editor != "pytest alone":
        (tmp_path / "stand_in_vscode.py").write_text(VSCODE_STAND_IN)
        plugin = ["-p", "stand_in_vscode"]
    env = {"PYTHONPATH": str(tmp_path), "STAND_IN_TREE": str(tree)}
    done = pytest_run(*plugin, "autograder", "--collect-only", "-q", "--results-json", str(results), env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Scorecard" not in done.stdout and "Total" not in done.stdout and "Next:" not in done.stdout
    assert not results.exists()
    assert (last_run.read_bytes() if last_run.exists() else None) == before
    if plugin:
        assert len(json.loads(tree.read_text())) > 100  # the editor got its tree


def test_the_editors_settings_run_pytest_on_the_courses_checks():
    settings = json.loads((REPO / ".vscode" / "settings.json").read_text())
    assert settings["python.testing.pytestEnabled"] is True
    assert settings["python.testing.pytestArgs"] == ["autograder"]


def test_running_one_node_grades_that_task_and_reports_the_scorecards_verdict(tmp_path):
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace("self.data + other.data,", "self.data + other.data + 1,", 1))
    node = f"autograder/lessons/test_02_value.py::{tasknodes.label('2.3')}::test_add_forward"
    report = tmp_path / "report.xml"
    done = pytest_run(node, "--impl", str(submission), "--junitxml", str(report))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    # the scorecard, of that task alone
    assert "2.3  Value.__add__ forward" in output and "Lesson  1" not in output and "2.4 " not in output
    (case,) = ET.parse(report).getroot().iter("testcase")
    (failure,) = case.iter("failure")
    text = failure.get("message")
    scorecard_block = output[output.index("What went wrong") :]
    for line in text.splitlines()[:-1]:  # the verdict, what was checked, expected, got, hint, page
        assert line.strip() in scorecard_block, (line, output[-3000:])
    assert "expected: -1.0" in text and "page:     course/02-value.md#task-2-3" in text
    assert text.splitlines()[-1].split() == [
        "again:",
        "pytest",
        "autograder",
        "--task",
        "2.3",
        "--impl",
        str(submission),
    ]


def test_a_panels_node_ids_select_their_tasks_and_lessons_so_that_only_their_workers_start():
    def selected(*args: str) -> tuple[list, list]:
        config = SimpleNamespace(
            args=list(args), invocation_params=SimpleNamespace(dir=REPO), option=SimpleNamespace(lessons=[], tasks=[])
        )
        tasknodes.pytest_configure(config)
        return config.option.lessons, config.option.tasks

    lesson_2 = REPO / "autograder" / "lessons" / "test_02_value.py"
    assert selected(f"{lesson_2}::{tasknodes.label('2.3')}::test_add_forward") == ([], ["2.3"])
    assert selected(f"{lesson_2}::{tasknodes.label('2.3')}", "autograder/lessons/test_08_operations.py") == (
        [8],
        ["2.3"],
    )
    assert selected("autograder") == ([], [])  # a folder: everything
    assert selected(str(lesson_2), "tests") == ([], [])


def test_a_check_that_waits_is_skipped_with_its_reason_and_pytest_counts_what_the_scorecard_shows(tmp_path):
    """`__mul__`'s backward without `* out.grad`, and a run of task 7.1 alone: its checks of `*` wait for task 5.3,
    which the run grades quietly to know it fails on its own. In pytest's terms a check that waits is skipped (an
    editor's panel draws it grey, not red), with the scorecard's reason; the closing line counts it as waiting, and
    the run still fails (the lesson's points are not earned)."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    text = engine.read_text()
    for line in ("self.grad += other.data * out.grad", "other.grad += self.data * out.grad"):
        text = text.replace(line, line.removesuffix(" * out.grad"))
    engine.write_text(text)
    report, results = tmp_path / "report.xml", tmp_path / "results.json"
    args = ["--task", "7.1", "-v", "--junitxml", str(report), "--results-json", str(results)]
    done = pytest_run("autograder", "--impl", str(submission), *args)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output[-3000:]
    checks = json.loads(results.read_text())["extra_data"]["results"]
    waiting = [r for r in checks if r["waits_for"]]
    assert waiting and {r["waits_for"] for r in waiting} == {"5.3"}
    assert {r["status"] for r in checks} == {"passed", "not started"}
    cases = list(ET.parse(report).getroot().iter("testcase"))
    assert not [c for c in cases if c.find("failure") is not None or c.find("error") is not None]
    skipped = [c.find("skipped").get("message") for c in cases if c.find("skipped") is not None]
    assert len(skipped) == len(waiting)
    assert all(m.startswith("waits for task 5.3 (Value.__mul__ backward)") for m in skipped), skipped
    assert output.count("WAITS FOR TASK 5.3") == len(waiting)  # pytest -v's word for each
    passed = len(checks) - len(waiting)
    assert re.search(rf"^=* ?{passed} passed, {len(waiting)} waiting in ", output, re.MULTILINE), output[-500:]
    assert f"{len(waiting)} checks wait for task 5.3 (Value.__mul__ backward)" in output
    assert "Next: task 5.3 · Value.__mul__ backward (task 7.1 waits for it)" in output
