"""Every task has tests, points, hints and a solution region; every test belongs to exactly one task."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from autograder.course import regions, registry

from .conftest import REPO


def test_every_task_has_hints_and_a_solution_region():
    region_tasks = {t for r in regions.all_regions() for t in r.tasks}
    for task in registry.TASKS.values():
        assert task.hints and all(h.strip() for h in task.hints), task.id
        assert task.id in region_tasks, f"task {task.id} has no solution region"
    assert region_tasks <= set(registry.TASKS), region_tasks - set(registry.TASKS)


def test_every_task_lives_in_exactly_one_file():
    for task_id in registry.TASKS:
        assert regions.module_of(task_id)


def test_every_task_has_tests_with_points_and_hints(reference_run):
    results = reference_run.results["extra_data"]["results"]
    for task_id in registry.TASKS:
        mine = [r for r in results if r["task"] == task_id]
        assert mine, f"task {task_id} has no test"
        assert all(r["points"] > 0 and r["hint"] for r in mine)
        assert any(r["hidden"] for r in mine), f"task {task_id} has no hidden (seeded) check"


def test_a_test_without_a_task_marker_is_refused(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["autograder.grading.plugin"]\n')
    (tmp_path / "test_x.py").write_text(textwrap.dedent("""
        def test_unmarked(learner):
            pass
    """))
    proc = subprocess.run([sys.executable, "-m", "pytest", str(tmp_path), "-p", "no:cacheprovider"],
                          cwd=REPO, capture_output=True, text=True, env={"PYTHONPATH": str(REPO), "PATH": ""})
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "needs exactly one @pytest.mark.task" in proc.stderr


def test_hint_command_prints_numbered_hints_and_the_page():
    proc = subprocess.run([sys.executable, "-m", "autograder", "hint", "8.2"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0
    assert "1. " in proc.stdout and "course/08-operations.md#task-8-2" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "autograder", "hint", "8.9"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 2 and "no task '8.9'" in proc.stderr
