"""The student edition has no solution sources and no hidden checks, and still grades itself and builds the site."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from .conftest import REPO


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "course"
    subprocess.run([sys.executable, "-m", "autograder", "student-edition", "--out", str(out)], cwd=REPO, check=True,
                   capture_output=True)
    return out


def in_edition(edition, *command: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a command inside the edition, importing its own autograder/ and solutions/, not this checkout's."""
    env = {**os.environ, "PYTHONPATH": str(edition), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(command, cwd=edition, env=env, capture_output=True, text=True, timeout=900, **kwargs)


def test_no_solution_source_and_no_hidden_check(edition):
    assert not list((edition / "solutions").glob("*.py"))
    assert (edition / "solutions" / "engine.pyc").is_file()
    for test_file in (edition / "autograder").glob("test_*.py"):
        assert "pytest.mark.hidden" not in test_file.read_text(), test_file.name
    assert not (edition / "tests").exists()
    assert (edition / "exercises" / "engine.py").read_text() == (REPO / "exercises" / "engine.py").read_text()


def test_the_edition_grades_itself(edition, reference_run, tmp_path):
    visible = [r for r in reference_run.results["extra_data"]["results"] if not r["hidden"]]
    fresh = tmp_path / "fresh.json"
    in_edition(edition, sys.executable, "-m", "pytest", "autograder", "--results-json", str(fresh))
    data = json.loads(fresh.read_text())
    assert data["score"] == 0 and len(data["extra_data"]["results"]) == len(visible)
    assert set(data["extra_data"]["status"].values()) == {"not started"}
    solved = tmp_path / "solved.json"
    in_edition(edition, sys.executable, "-m", "pytest", "autograder", "--impl", str(REPO / "solutions"),
               "--results-json", str(solved))
    data = json.loads(solved.read_text())
    assert data["score"] == data["max_score"] == sum(r["points"] for r in visible)


def test_the_edition_builds_the_site(edition, tmp_path):
    proc = in_edition(edition, sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "site" / "08-operations" / "index.html").is_file()
