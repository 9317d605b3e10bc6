"""Every task has tests, points, hints and a solution region; every test belongs to exactly one task."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap

from autograder.course import regions, registry

from .conftest import REPO


def test_every_task_has_hints_and_a_solution_region():
    region_tasks = {t for r in regions.all_regions() for t in r.tasks}
    for task in registry.TASKS.values():
        assert task.hints and all(h.strip() for h in task.hints), task.id
        if task.runs_whole:  # a capstone writes nothing: it runs files whose every other task has a region
            assert set(task.runs_whole) <= {r.module for r in regions.all_regions()}, task
            continue
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


def test_the_grading_tests_judge_with_the_kit_never_a_bare_assert():
    """A graded run loads them without pytest's assertion rewriting (`runner.grade`): a bare `assert` there would
    fail with no inputs, expected or actual value to show."""
    folder = REPO / "autograder"
    plugins = [
        folder / "grading" / "plugin.py",
        folder / "grading" / "tasknodes.py",
        folder / "export" / "gradescope.py",
    ]
    for path in [*sorted((folder / "lessons").glob("*.py")), folder / "conftest.py", *plugins]:
        asserts = [n.lineno for n in ast.walk(ast.parse(path.read_text())) if isinstance(n, ast.Assert)]
        assert not asserts, f"{path.relative_to(REPO)}: assert on line {asserts[0]}: use the kit's expect()"


def test_a_test_without_a_task_marker_is_refused(tmp_path):
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["autograder.grading.plugin"]\n')
    (tmp_path / "test_x.py").write_text(
        textwrap.dedent("""
        def test_unmarked(learner):
            pass
    """)
    )
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", str(tmp_path), "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},  # bubblewrap: as root, no learner code runs as root
    )
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "needs exactly one @pytest.mark.task" in proc.stderr


def hint(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "hint", *args], cwd=REPO, capture_output=True, text=True)


def numbered(stdout: str) -> list[str]:
    """The hint lines a call printed ("  1. ...")."""
    return [line.strip() for line in stdout.splitlines() if line.strip()[:2] in {f"{n}." for n in range(1, 10)}]


def test_hint_command_shows_one_more_level_on_each_call(tmp_path):
    levels = registry.task("8.2").hints
    for shown in range(1, len(levels) + 1):
        proc = hint("8.2", "--impl", str(tmp_path))
        assert proc.returncode == 0, proc.stderr
        assert numbered(proc.stdout) == [f"{n}. {h}" for n, h in enumerate(levels[:shown], start=1)]
        assert f"hint {shown} of {len(levels)}" in proc.stdout
        assert "course/08-operations.md#task-8-2" in proc.stdout
        left = len(levels) - shown
        assert (f"{left} more level" in proc.stdout) if left else ("last level" in proc.stdout)
    again = hint("8.2", "--impl", str(tmp_path))
    assert len(numbered(again.stdout)) == len(levels), "past the last level, every level stays shown"
    assert len(numbered(hint("2.3", "--impl", str(tmp_path)).stdout)) == 1, "each task has its own levels"
    assert json.loads((tmp_path / ".hints-seen.json").read_text()) == {"8.2": len(levels), "2.3": 1}


def test_hint_all_shows_every_level_and_reset_starts_over(tmp_path):
    levels = registry.task("8.2").hints
    assert len(numbered(hint("8.2", "--impl", str(tmp_path), "--all").stdout)) == len(levels)
    assert len(numbered(hint("8.2", "--impl", str(tmp_path), "--reset").stdout)) == 1
    assert len(numbered(hint("8.2", "--impl", str(tmp_path)).stdout)) == 2


def test_hint_command_refuses_an_unknown_task_or_folder(tmp_path):
    proc = hint("8.9", "--impl", str(tmp_path))
    assert proc.returncode == 2 and "no task '8.9'" in proc.stderr
    proc = hint("8.2", "--impl", str(tmp_path / "missing"))
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_the_hints_seen_are_never_committed():
    ignored = subprocess.run(["git", "check-ignore", "exercises/.hints-seen.json"], cwd=REPO, capture_output=True)
    assert ignored.returncode == 0, "add exercises/.hints-seen.json to .gitignore"
