"""The Gradescope bundle: run_autograder grades /autograder/submission into a valid results.json."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile

import jsonschema
import pytest

from .conftest import REPO
from .test_grading import RESULTS_SCHEMA


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    subprocess.run([sys.executable, "-m", "autograder", "gradescope", "--out", str(out)], cwd=REPO, check=True,
                   capture_output=True)
    return out


def run_autograder(bundle, tmp_path, files: dict[str, str]) -> dict:
    """Unpack the bundle into a fake /autograder tree, add the submission, run run_autograder."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root)
    for name, text in files.items():
        path = root / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "submission").mkdir(exist_ok=True)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": sys.executable}
    proc = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True,
                          timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert proc.returncode == 0, proc.stderr
    return results


def test_the_bundle_has_gradescope_s_layout(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist()}
    assert {"setup.sh", "run_autograder", "source/autograder/plugin.py", "source/solutions/engine.py",
            "source/pyproject.toml"} <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


def test_a_correct_submission_gets_full_marks(bundle, tmp_path):
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    results = run_autograder(bundle, tmp_path, files)
    assert results["score"] == results["max_score"] > 0


def test_the_unmodified_stubs_get_zero_in_a_nested_folder(bundle, tmp_path):
    files = {f"my-repo/exercises/{p.name}": p.read_text() for p in (REPO / "exercises").glob("*.py")}
    results = run_autograder(bundle, tmp_path, files)
    assert results["score"] == 0 and results["max_score"] > 0
    assert set(results["extra_data"]["status"].values()) == {"not started"}


def test_a_crashing_submission_still_gets_valid_results(bundle, tmp_path):
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    files["engine.py"] = "import os\nos._exit(1)\n"
    files["nn.py"] = "this is not python"
    results = run_autograder(bundle, tmp_path, files)
    status = results["extra_data"]["status"]
    assert status["2.1"] == "error" and status["10.1"] == "error" and status["1.1"] == "passed"
    assert 0 < results["score"] < results["max_score"]


def test_an_empty_submission_is_explained(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"notes.txt": "I forgot"})
    assert results["score"] == 0
    assert results["output"].startswith("Not in your submission")


def test_a_grader_that_cannot_start_still_leaves_valid_results(bundle, tmp_path):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root)
    (root / "submission").mkdir()
    # A broken image: setup.sh never made the virtual environment.
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": str(root / "venv" / "bin" / "python")}
    subprocess.run(["bash", str(root / "run_autograder")], env=env, cwd=tmp_path, capture_output=True, timeout=120)
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "could not run" in results["output"]
