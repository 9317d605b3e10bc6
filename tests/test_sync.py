"""exercises/ is generated from solutions/, agrees with it, and sync never destroys a learner's work."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys

import pytest

from autograder.course import regions, registry
from autograder.export import stubs as sync

from .conftest import REPO


def run_sync(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", "dev", "sync", *args], cwd=REPO, capture_output=True, text=True
    )


def test_sync_check_passes_on_the_committed_exercises():
    proc = run_sync("--check")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_sync_check_fails_with_a_diff_when_they_disagree(tmp_path):
    exercises = tmp_path / "exercises"
    shutil.copytree(REPO / "exercises", exercises)
    (exercises / "nn.py").write_text((exercises / "nn.py").read_text().replace("class Layer", "class Layr"))
    diffs = sync.check(exercises)
    assert len(diffs) == 1 and "-class Layr" in diffs[0] and "+class Layer" in diffs[0]


def test_sync_keeps_a_changed_exercise_unless_forced(tmp_path):
    exercises = tmp_path / "exercises"
    shutil.copytree(REPO / "exercises", exercises)
    engine = exercises / "engine.py"
    learner_work = engine.read_text().replace(
        'raise NotImplementedError("task 2.2: Value.__repr__")', 'return f"Value(data={self.data})"'
    )
    engine.write_text(learner_work)
    # A maintainer changed every file since the last sync: sync wants to rewrite them all.
    manifest = exercises / sync.MANIFEST
    manifest.write_text(manifest.read_text().replace('"engine.py": "', '"engine.py": "0'))
    (exercises / "nn.py").write_text("# an out-of-date stub nobody touched\n")
    manifest.write_text(
        manifest.read_text().replace(
            sync._digest(sync.expected_files()["nn.py"]), sync._digest("# an out-of-date stub nobody touched\n")
        )
    )

    written, refused = sync.sync(exercises)
    assert refused == ["engine.py"] and written == ["nn.py"]
    assert engine.read_text() == learner_work

    written, refused = sync.sync(exercises, force=True)
    assert written == ["engine.py"] and refused == []
    backups = list(exercises.glob("engine.py.*.bak"))
    assert len(backups) == 1 and backups[0].read_text() == learner_work
    assert sync.check(exercises) == []


def test_sync_refusal_is_reported_with_a_nonzero_exit(tmp_path):
    exercises = tmp_path / "exercises"
    shutil.copytree(REPO / "exercises", exercises)
    (exercises / "train.py").write_text("# my own work\n")
    proc = run_sync("--into", str(exercises))
    assert proc.returncode == 1
    assert "train.py: it differs from what sync last wrote" in proc.stderr
    assert (exercises / "train.py").read_text() == "# my own work\n"
    assert run_sync("--check", "--into", str(exercises)).returncode == 1


def test_exercises_mirror_solutions_file_for_file():
    names = lambda folder: sorted(p.name for p in (REPO / folder).glob("*.py"))  # noqa: E731
    assert names("exercises") == names("solutions")


def test_every_stub_keeps_its_signature_and_docstring_and_raises_its_task():
    for path in regions.solution_files():
        solution = ast.parse(path.read_text())
        exercise = ast.parse((REPO / "exercises" / path.name).read_text())
        signatures = lambda tree: {  # noqa: E731
            node.name: (ast.unparse(node.args), ast.get_docstring(node))
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
        }
        assert (
            signatures(exercise).items() >= {k: v for k, v in signatures(solution).items() if k != "_backward"}.items()
        ), path.name
    for region in regions.all_regions():
        text = (REPO / "exercises" / f"{region.module}.py").read_text()
        assert f'raise NotImplementedError("task {region.task}: {registry.task(region.task).title}")' in text
        assert f"# TODO(task {region.task}):" in text


@pytest.mark.parametrize("module", sorted({r.module for r in regions.all_regions()}))
def test_every_exercise_module_imports_in_a_fresh_clone(module):
    importlib.import_module(f"exercises.{module}")


def test_a_region_outside_a_function_is_refused():
    with pytest.raises(regions.RegionError, match="inside a function body"):
        regions.parse("### BEGIN SOLUTION (task 1.1)\nx = 1\n### END SOLUTION\n", "m")
    with pytest.raises(regions.RegionError, match="never closed"):
        regions.parse("def f():\n    ### BEGIN SOLUTION (task 1.1)\n    return 1\n", "m")
