"""PrairieLearn's external grader (`autograder/export/prairielearn.py`), run as PrairieLearn runs it: its
entrypoint `run.sh` on a /grade tree (the grader under serverFilesCourse/, the submitted files in student/, the
results in results/results.json), with a Python that holds only what the grading image's Dockerfile installs."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from autograder.export import prairielearn, submissions

from .conftest import REPO, autograder_command, pip_environment, pyenv_python

MAX_RESULTS = 1_000_000  # bytes: PrairieLearn does not take a larger results.json


@pytest.fixture(scope="module")
def course(tmp_path_factory) -> Path:
    """What `python -m autograder export prairielearn --out DIR` writes."""
    out = tmp_path_factory.mktemp("course")
    autograder_command("export", "prairielearn", "--out", str(out))
    return out


@pytest.fixture(scope="module")
def image_python(course, tmp_path_factory) -> Path:
    """The grading image's Python as this machine can make it: the Python its Dockerfile starts FROM (pyenv's, for
    the official image), in a fresh environment holding only the requirements the Dockerfile installs."""
    dockerfile = (course / "grading-image" / "Dockerfile").read_text()
    minor = re.search(r"^FROM python:3\.(\d+)-slim$", dockerfile, re.MULTILINE)
    copied = re.search(r"^COPY (\S+) ", dockerfile, re.MULTILINE)
    assert minor and copied, dockerfile
    venv = tmp_path_factory.mktemp("image") / "python"
    subprocess.run([pyenv_python(int(minor[1])), "-m", "venv", venv], check=True)
    requirements = course / "grading-image" / copied[1]
    subprocess.run(
        [venv / "bin" / "python", "-m", "pip", "install", "--quiet", "-r", requirements],
        env=pip_environment(),
        check=True,
        capture_output=True,
    )
    return venv / "bin" / "python"


def run(course: Path, tmp_path: Path, files: dict[str, str], python, deadline: float | None = None) -> dict:
    """One grading job: a /grade tree as PrairieLearn lays it out, its entrypoint run, the results checked against
    PrairieLearn's rules (under 1 MB; `gradable`; a score from 0 to 1 where gradable)."""
    root = tmp_path / "grade"
    shutil.copytree(course / "serverFilesCourse", root / "serverFilesCourse", symlinks=True)
    (root / "student").mkdir(parents=True)
    for name, text in files.items():
        (root / "student" / name).write_text(text)
    info = prairielearn.question_info()["externalGradingOptions"]
    entrypoint = root / Path(shlex.split(info["entrypoint"])[0]).relative_to("/grade")
    shared = tmp_path / "shared-tmp"  # a stand-in for the container's /tmp
    shared.mkdir()
    shared.chmod(0o1777)
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
        "PATH": f"{Path(python).parent}:/usr/bin:/bin",
        "GRADE_ROOT": str(root),
        "AUTOGRADER_SHARED_FOLDERS": str(shared),
    }
    arguments = shlex.split(info["entrypoint"])[1:] if deadline is None else ["--deadline", str(deadline)]
    subprocess.run(["bash", entrypoint, *arguments], env=env, capture_output=True, text=True, timeout=900)
    path = root / "results" / "results.json"
    assert path.stat().st_size < MAX_RESULTS
    results = json.loads(path.read_text())
    assert isinstance(results["gradable"], bool)
    if results["gradable"]:
        assert 0 <= results["score"] <= 1
        assert all(0 <= t["points"] <= t["max_points"] for t in results["tests"])
        assert shared.stat().st_mode & 0o7777 == 0o1775  # nobody but root writes there while the job runs
    text = json.dumps(results)
    assert str(tmp_path) not in text and "/tmp/" not in text, "a path reached the student"
    assert "does not count" not in text and "This is feedback" not in text
    return results


def course_files(folder: str) -> dict[str, str]:
    return {p.name: p.read_text() for p in (REPO / folder).glob("*.py") if p.name != "__init__.py"}


def test_the_course_folder_holds_the_grader_the_image_and_a_question(course):
    bundle = course / "serverFilesCourse" / prairielearn.FOLDER
    assert os.access(bundle / "run.sh", os.X_OK)
    assert (bundle / "source" / "autograder" / "export" / "prairielearn.py").is_file()
    info = json.loads((course / "questions" / prairielearn.FOLDER / "info.json").read_text())
    options = info["externalGradingOptions"]
    assert info["gradingMethod"] == "External" and options["serverFilesCourse"] == [f"{prairielearn.FOLDER}/"]
    command, flag, deadline = shlex.split(options["entrypoint"])
    assert (command, flag) == (f"/grade/serverFilesCourse/{prairielearn.FOLDER}/run.sh", "--deadline")
    assert 30 < options["timeout"] <= 600  # PrairieLearn's default (30 s) is too short; 600 s is its most
    assert float(deadline) < options["timeout"]  # the grader stops itself, with results, before PrairieLearn does
    html = (course / "questions" / prairielearn.FOLDER / "question.html").read_text()
    uploads = re.search(r'<pl-file-upload optional-file-names="([^"]+)"', html)
    assert uploads and uploads[1].split(", ") == submissions.expected_files()  # an upload for each graded file
    assert "<pl-external-grader-results>" in html
    requirements = (course / "grading-image" / submissions.REQUIREMENTS).read_text().split()
    assert "torch==2.13.0" in requirements and not any("jupyter" in r or "mkdocs" in r for r in requirements)


def test_the_grader_ships_its_bytecode_checked_by_its_sources_hash(course):
    """Each job's container gets the grader afresh: without bytecode, each of its processes compiles it again."""
    source = course / "serverFilesCourse" / prairielearn.FOLDER / "source"
    modules = sorted((source / "autograder").rglob("*.py")) + sorted((source / "solutions").glob("*.py"))
    assert len(modules) > 50
    for module in modules:
        pyc = Path(importlib.util.cache_from_source(str(module)))
        header = pyc.read_bytes()[:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER, module  # this Python's own
        assert int.from_bytes(header[4:8], "little") == 0b11, module  # hash-based and checked: any copy's times
        assert header[8:16] == importlib.util.source_hash(module.read_bytes()), module


@pytest.mark.parametrize(
    ("case", "expected"),
    [("reference", 1.0), ("stubs", 0.0), ("syntax error", "partial"), ("missing file", "partial")],
)
def test_the_image_grades_as_prairielearn_runs_it(course, image_python, tmp_path, case, expected):
    files = course_files("exercises" if case == "stubs" else "solutions")
    if case == "syntax error":
        files["engine.py"] += "\ndef broken(:\n"
    elif case == "missing file":
        del files["nn.py"]
    results = run(course, tmp_path, files, image_python)
    assert results["gradable"] is True, results.get("message")
    if expected == "partial":
        assert 0 < results["score"] < 1
    else:
        assert results["score"] == expected
    messages = {t["name"].split()[0]: t["message"] for t in results["tests"]}
    if case == "stubs":
        assert set(messages.values()) == {"not started"}
    if case == "syntax error":
        assert messages["2.1"] == "error" and messages["1.1"] == "passed"
        assert re.search(r"^    engine\.py:\d+: SyntaxError", results["output"], re.MULTILINE)
    if case == "missing file":
        assert results["message"] == "Not in your submission (graded as the empty stubs): nn.py."
        assert messages["10.1"] == "not started"
    assert "Scorecard: your submission" in results["output"]


def test_a_grader_that_cannot_start_is_not_gradable(course, tmp_path):
    broken = tmp_path / "bin" / "python3"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\nexit 3\n")
    broken.chmod(0o755)
    said = run(course, tmp_path, course_files("solutions"), broken)
    assert said["gradable"] is False and "could not run" in said["message"]


def test_an_attempt_with_a_check_that_could_not_be_graded_is_not_gradable():
    """A machine fault must not raise the share of what could be graded: PrairieLearn charges no attempt instead."""
    from autograder.grading.results import Results, Status, TestResult

    tests = [
        TestResult("a", "check a", "1.1", 4, "h", status="passed"),
        TestResult("b", "check b", "1.2", 2, "h", status="could not be graded", message="could not be graded here"),
        TestResult("c", "check c", "1.3", 5, "h", status="failed", message="wrong"),
    ]
    said = prairielearn.results_json(
        Results("your submission", "", "user", tests=tests, selected=["1.1", "1.2", "1.3"])
    )
    assert said["gradable"] is False and "score" not in said
    assert "(tasks 1.2)" in said["message"] and "submit again" in said["message"]
    tests[1].status = Status.PASSED
    assert prairielearn.results_json(Results("x", "", "user", tests=tests, selected=["1.1", "1.2", "1.3"]))["gradable"]


def test_a_run_that_reaches_its_deadline_is_scored_as_far_as_it_got(course, tmp_path):
    """Code that waits without using CPU stops no time limit of its own until the clock's backstop: the run's
    deadline, below PrairieLearn's timeout, ends it, and what it finished is scored."""
    files = course_files("solutions")
    repr_line = '        return f"Value(data={self.data})"'
    assert repr_line in files["engine.py"]
    files["engine.py"] = files["engine.py"].replace(repr_line, "        import time\n        time.sleep(3600)")
    start = time.monotonic()
    results = run(course, tmp_path, files, sys.executable, deadline=20)
    assert time.monotonic() - start < 120
    assert results["gradable"] is True and 0 < results["score"] < 1
    assert "The grader stopped at its time limit (20 s) before it finished" in results["message"]
    tests = {t["name"].split()[0]: t for t in results["tests"]}
    # what finished before the deadline is scored: 1.1's visible checks (a graded run asks hidden checks last, after
    # 2.2's visible check that waits)
    assert 0 < tests["1.1"]["points"] <= tests["1.1"]["max_points"], tests["1.1"]
    assert tests["1.1"]["message"] in ("passed", "in progress"), tests["1.1"]
