"""The student edition ships no reference code in any form and no hidden checks, and still grades itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autograder.course.regions import parse

from .conftest import REPO


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "course"
    subprocess.run(
        [sys.executable, "-m", "autograder", "student-edition", "--out", str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
    )
    return out


def in_edition(edition, *command: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a command inside the edition, importing its own autograder/ and solutions/, not this checkout's."""
    env = {**os.environ, "PYTHONPATH": str(edition), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(command, cwd=edition, env=env, capture_output=True, text=True, timeout=900, **kwargs)


def test_no_reference_code_in_any_form_and_no_hidden_check(edition):
    assert not [p for p in (edition / "solutions").rglob("*") if p.is_file()]
    assert not list(edition.rglob("*.pyc")) and not list(edition.rglob("*.pickle"))
    answers = set()  # the lines of code a learner writes, as the reference has them
    for path in (REPO / "solutions").glob("*.py"):
        lines = path.read_text().splitlines()
        for region in parse(path.read_text(), path.stem):
            answers |= {line.strip() for line in lines[region.begin : region.end - 1] if len(line.strip()) > 30}
    given = "\n".join(p.read_text() for p in (REPO / "exercises").glob("*.py"))
    answers = {line for line in answers if line not in given}  # a docstring may state a line the stub shows anyway
    # the learner's files and the data the edition ships (the grading tests may call the API a solution uses)
    shipped = [
        *(edition / "exercises").rglob("*"),
        *(edition / "solutions").rglob("*"),
        *(edition / "autograder").rglob("*.json"),
        *(edition / "course").rglob("*.json"),  # what the pages' blocks printed: the recap prints the engine
    ]
    for path in shipped:
        if path.is_file() and path.suffix in (".py", ".json", ".ipynb"):
            text = path.read_text(errors="replace")
            assert not [line for line in answers if line in text], path
    for test_file in (edition / "autograder" / "lessons").glob("test_*.py"):
        assert "pytest.mark.hidden" not in test_file.read_text(), test_file.name
    assert not (edition / "tests").exists()
    assert (edition / "exercises" / "engine.py").read_text() == (REPO / "exercises" / "engine.py").read_text()
    # the recap page, which shows the reference engine in the full course, says it is not there
    recap = (edition / "site" / "recap" / "index.html").read_text()
    assert "Not in this edition" in recap and "self.grad +=" not in recap


def test_the_edition_grades_itself(edition, reference_run, tmp_path):
    visible = [r for r in reference_run.results["extra_data"]["results"] if not r["hidden"]]
    fresh = tmp_path / "fresh.json"
    in_edition(edition, sys.executable, "-m", "pytest", "autograder", "--results-json", str(fresh))
    data = json.loads(fresh.read_text())
    assert data["score"] == 0 and len(data["extra_data"]["results"]) == len(visible)
    assert set(data["extra_data"]["status"].values()) == {"not started"}
    solved = tmp_path / "solved.json"
    in_edition(
        edition,
        sys.executable,
        "-m",
        "pytest",
        "autograder",
        "--impl",
        str(REPO / "solutions"),
        "--results-json",
        str(solved),
    )
    data = json.loads(solved.read_text())
    full = data["max_score"] + data["extra_data"]["bonus_max"]  # full marks, and the bonus as extra credit
    assert data["score"] == full == sum(r["points"] for r in visible), data["output"][-3000:]


def test_the_edition_ships_its_site_built_and_the_learners_workflow(edition):
    assert (edition / "site" / "08-operations" / "index.html").is_file()
    assert (edition / ".github" / "workflows" / "classroom.yml").is_file()
    assert not (edition / ".github" / "workflows" / "ci.yml").exists()
