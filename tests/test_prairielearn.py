"""PrairieLearn's external grader (`autograder/export/prairielearn.py`), run as PrairieLearn runs it: its
entrypoint on a fake /grade tree, the submitted files in `student/`, the results in `results/results.json`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.export import prairielearn

from .conftest import REPO


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return prairielearn.build_bundle(tmp_path_factory.mktemp("course"))


def run(bundle: Path, tmp_path: Path, files_from: Path, python: str = sys.executable) -> dict:
    root = tmp_path / "grade"
    (root / "student").mkdir(parents=True)
    for path in files_from.glob("*.py"):
        shutil.copy(path, root / "student" / path.name)
    env = {**os.environ, "GRADE_ROOT": str(root), "AUTOGRADER_PYTHON": python, "PYTHONPATH": str(bundle / "source")}
    subprocess.run(["bash", str(bundle / "run.sh")], env=env, capture_output=True, text=True, timeout=900)
    return json.loads((root / "results" / "results.json").read_text())


def test_the_bundle_holds_its_entrypoint_and_the_grader(bundle):
    assert os.access(bundle / "run.sh", os.X_OK)
    assert (bundle / "source" / "autograder" / "export" / "prairielearn.py").is_file()


def test_the_reference_scores_one_and_the_stubs_zero(bundle, tmp_path):
    full = run(bundle, tmp_path / "a", REPO / "solutions")
    assert full["gradable"] is True and full["score"] == 1.0, full.get("output", "")[-2000:]
    assert all(t["points"] == t["max_points"] for t in full["tests"])
    stubs = run(bundle, tmp_path / "b", REPO / "exercises")
    assert stubs["gradable"] is True and stubs["score"] == 0.0
    assert {t["message"] for t in stubs["tests"]} == {"not started"}


def test_a_grader_that_cannot_start_is_not_gradable(bundle, tmp_path):
    broken = tmp_path / "python"
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    said = run(bundle, tmp_path, REPO / "solutions", python=str(broken))
    assert said["gradable"] is False and "could not run" in said["message"]
