"""The Gradescope bundle: run_autograder grades /autograder/submission into a valid results.json.

Its attacks: code that outlives the grader to rewrite the results, or edits
the bundle's own script while it runs, must change nothing; hidden checks show
their name and status only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import jsonschema
import pytest

from autograder.course import registry
from autograder.export import gradescope
from autograder.grading import scorecard
from autograder.grading.results import Results

from .conftest import REPO, autograder_command, pip_environment, pyenv_python
from .test_grading import RESULTS_SCHEMA


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    out = tmp_path_factory.mktemp("bundle") / "autograder.zip"
    autograder_command("export", "gradescope", "--out", str(out))
    return out


def lay_out(bundle: Path, tmp_path: Path) -> Path:
    """The bundle as Gradescope lays it out: the zip unpacked into /autograder/source, and its run_autograder
    copied to /autograder and made executable (an unpacked zip keeps no modes)."""
    root = tmp_path / "autograder"
    with zipfile.ZipFile(bundle) as zf:
        zf.extractall(root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "run_autograder").chmod(0o755)
    return root


def run_autograder(bundle, tmp_path, files: dict[str, str], python: str | None = sys.executable, root=None) -> dict:
    """Lay the bundle out as Gradescope does (or use `root`, an image setup.sh built), add the submission, run
    run_autograder with `python` (None: the image's own), and check the results against Gradescope's spec."""
    root = root or lay_out(bundle, tmp_path)
    shutil.rmtree(root / "submission", ignore_errors=True)
    shutil.rmtree(root / "results", ignore_errors=True)
    for name, text in files.items():
        path = root / "submission" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "submission").mkdir(exist_ok=True)
    shared = [tmp_path / "shared-tmp", tmp_path / "shared-lock"]  # stand-ins for /tmp and /run/lock
    for folder in shared:
        folder.mkdir(exist_ok=True)
        folder.chmod(0o1777)
    env = {
        **os.environ,
        "AUTOGRADER_ROOT": str(root),
        **({"AUTOGRADER_PYTHON": python} if python else {}),
        "AUTOGRADER_SHARED_FOLDERS": " ".join(map(str, shared)),
    }
    proc = subprocess.run(["bash", str(root / "run_autograder")], env=env, capture_output=True, text=True, timeout=600)
    results = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(results, RESULTS_SCHEMA)
    assert proc.returncode == 0, proc.stderr
    assert all(folder.stat().st_mode & 0o7777 == 0o1775 for folder in shared)  # nobody but root writes there now
    assert "/tmp" not in json.dumps({k: v for k, v in results.items() if k != "extra_data"}), "a path reached students"
    return results


def test_the_bundle_has_gradescope_s_layout(bundle):
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        modes = {info.filename: info.external_attr >> 16 for info in zf.infolist()}
    # Gradescope unpacks the zip into /autograder/source and runs setup.sh there: the grader is at the top
    assert {
        "setup.sh",
        "run_autograder",
        "autograder/grading/plugin.py",
        "solutions/engine.py",
        "pyproject.toml",
        "requirements-grading.txt",
    } <= names
    assert modes["run_autograder"] & 0o111 and modes["setup.sh"] & 0o111


def test_a_correct_submission_gets_full_marks(bundle, tmp_path):
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    results = run_autograder(bundle, tmp_path, files)
    # full marks, and every bonus point on top as extra credit
    assert (
        results["score"]
        == results["extra_data"]["max_score"] + results["extra_data"]["bonus_max"]
        > results["extra_data"]["max_score"]
        > 0
    )
    assert isinstance(results["extra_data"]["fresh_inputs"], int)  # a graded run: its visible checks asked afresh


def test_the_unmodified_stubs_get_zero_in_a_nested_folder(bundle, tmp_path):
    files = {f"my-repo/exercises/{p.name}": p.read_text() for p in (REPO / "exercises").glob("*.py")}
    results = run_autograder(bundle, tmp_path, files)
    assert results["score"] == 0 and results["extra_data"]["max_score"] > 0
    assert set(results["extra_data"]["status"].values()) == {"not started"}


def test_a_crashing_submission_still_gets_valid_results(bundle, tmp_path):
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    files["engine.py"] = "import os\nos._exit(1)\n"
    files["nn.py"] = "this is not python"
    results = run_autograder(bundle, tmp_path, files)
    status = results["extra_data"]["status"]
    assert status["2.1"] == "error" and status["10.1"] == "error" and status["1.1"] == "passed"
    assert 0 < results["score"] < results["extra_data"]["max_score"]


def test_an_empty_submission_is_explained(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, {"notes.txt": "I forgot"})
    assert results["score"] == 0
    assert results["output"].startswith("    Not in your submission")


def test_a_grader_that_cannot_start_still_leaves_valid_results(bundle, tmp_path):
    root = lay_out(bundle, tmp_path)
    (root / "submission").mkdir()
    # A broken image: setup.sh never made the virtual environment.
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "AUTOGRADER_PYTHON": str(root / "venv" / "bin" / "python")}
    subprocess.run(["bash", str(root / "run_autograder")], env=env, cwd=tmp_path, capture_output=True, timeout=120)
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0 and "could not run" in results["output"]
    # on a fake tree the script leaves this machine's shared folders alone (it once took /tmp from everyone)
    assert all(os.stat(folder).st_mode & 0o002 for folder in ("/tmp", "/var/tmp") if os.path.isdir(folder))


def _solutions_with(engine_edit: tuple[str, str]) -> dict[str, str]:
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    old, new = engine_edit
    assert old in files["engine.py"]
    files["engine.py"] = files["engine.py"].replace(old, new)
    return files


REPR = '        return f"Value(data={self.data})"'
FORGE = """        import glob, os, time
        forged = '{"score": 251, "max_score": 251, "output": "forged", "tests": []}'
        for path in glob.glob("/**/run_autograder", recursive=True):
            try:
                open(path, "a").write(f"\\necho '{forged}' > \\"$ROOT/results/results.json\\"\\n")
            except OSError:
                pass
        try:
            if os.fork() == 0:
                os.setsid()
                time.sleep(2)
                for path in glob.glob("/**/results/results.json", recursive=True):
                    open(path, "w").write(forged)
                os._exit(0)
        except OSError:
            pass
        return 'nope'"""


def test_code_that_outlives_the_grader_or_edits_its_script_changes_nothing(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, _solutions_with((REPR, FORGE)))
    time.sleep(3)  # longer than the forger would wait
    again = json.loads((tmp_path / "autograder" / "results" / "results.json").read_text())
    assert again == results
    assert results["extra_data"]["status"]["2.2"] in ("failed", "timed out")  # its search of the disk is slow
    capstones = sum(t["max_score"] for t in results["tests"] if registry.task(t["number"]).runs_whole)
    # 2.2's two points, and the capstone, which waits for 2.2; the bonus counts as extra credit
    assert results["score"] == results["extra_data"]["max_score"] + results["extra_data"]["bonus_max"] - 2 - capstones
    script = (tmp_path / "autograder" / "run_autograder").read_text()
    assert "forged" not in script


def test_hidden_checks_show_only_their_name_and_status(bundle, tmp_path):
    results = run_autograder(bundle, tmp_path, _solutions_with((REPR, "        return 'nope'")))
    (entry,) = [t for t in results["tests"] if t["number"] == "2.2"]
    hidden_lines = [line for line in entry["output"].splitlines() if "repr of seeded random Values" in line]
    assert hidden_lines, entry["output"]
    assert "x = " not in entry["output"].split("repr of seeded random Values", 1)[1]
    assert "repr of seeded random Values" not in results["output"] or "x = " not in results["output"]


def test_learner_text_reaches_gradescope_as_text_in_aligned_columns(bundle, tmp_path):
    """The scorecard is a Markdown code block: fixed-width (its columns align) and never read as HTML or Markdown,
    so a repr such as <engine.Value object at 0x...> or a learner's **text** shows as written; no temporary path."""
    files = _solutions_with((REPR, "        return '<b>**bold**</b> <engine.Value object>'"))
    files["nn.py"] = "this is not python"
    results = run_autograder(bundle, tmp_path, files)
    assert results["output_format"] == "md"
    lines = results["output"].splitlines()
    assert all(line.startswith("    ") or not line.strip() for line in lines)  # one indented code block
    assert any("Scorecard: your submission" in line for line in lines)
    totals = [line for line in lines if line.lstrip().startswith("Lesson ")]
    assert len({line.rindex("/") for line in totals}) == 1, totals  # the points column lines up
    assert "<b>**bold**</b>" in results["output"] or "<b>**bold**</b>" in json.dumps(results["tests"])
    assert all(t["output_format"] == "text" and t["name_format"] == "text" for t in results["tests"])
    assert "where:    nn.py:1 in <module>" in json.dumps(results)  # the learner's file by its name, not a staged path
    assert "This is feedback" not in json.dumps(results) and "does not count" not in json.dumps(results)
    assert results["extra_data"]["platform_note"].startswith(f"Isolation level: {results['extra_data']['isolation']}")


@pytest.mark.parametrize("level", ["sandbox", "user", "processes"])
def test_the_instructor_reads_what_the_level_means_in_the_container(level):
    note = scorecard.platform_note(Results("your submission", "", level, platform="gradescope"))
    # at `user`, the platform's own level, the container is the sandbox and the grade counts; at `processes`
    # (a container not run as root) the learner's code could have written the grader's files
    assert ("The grade counts" in note) == (level == "user")
    assert ("could have changed the grader's files" in note) == (level == "processes")


# --- The image as Gradescope builds it: setup.sh on the default base image (Ubuntu 22.04, whose python3 is 3.10) ---


def setup_environment(root: Path, tools: Path, python3: Path) -> dict:
    """setup.sh's environment: `python3` is the base image's; apt-get a stand-in that logs what it was asked
    (this machine is Debian, and root: a real apt-get would change it); uv finds pyenv's 3.11 where on Gradescope
    it downloads a CPython build (this machine reaches no such download)."""
    tools.mkdir(exist_ok=True)
    apt = tools / "apt-get"
    apt.write_text('#!/bin/sh\necho "$@" >> "$APT_LOG"\n[ -z "$APT_FAILS" ]\n')
    apt.chmod(0o755)
    # uv's download lands where every user may read it (ROOT/python): Debian's own 3.11 stands in for it where the
    # machine has one, as pyenv's, under a /root other users may not enter, could not grade at `user`
    downloaded = Path("/usr/bin/python3.11") if Path("/usr/bin/python3.11").exists() else pyenv_python(11)
    for name, target in (("python3", python3), ("python3.11", downloaded)):
        (tools / name).unlink(missing_ok=True)
        (tools / name).symlink_to(target)
    return {
        **pip_environment(),
        "PATH": f"{tools}:/usr/bin:/bin",
        "AUTOGRADER_ROOT": str(root),
        "APT_LOG": str(tools / "apt.log"),
        "UV_PYTHON_DOWNLOADS": "never",
    }


@pytest.fixture(scope="module")
def image(bundle, tmp_path_factory):
    """The /autograder tree after Gradescope's image build: the zip laid out, then setup.sh run in source/."""
    tmp = tmp_path_factory.mktemp("image")
    root = lay_out(bundle, tmp)
    env = setup_environment(root, tmp / "tools", pyenv_python(10))
    start = time.monotonic()
    proc = subprocess.run(
        ["bash", "setup.sh"], cwd=root / "source", env=env, capture_output=True, text=True, timeout=1500
    )
    seconds = time.monotonic() - start
    for folder in reversed(root.parents[: len(root.parents) - 2]):  # /autograder sits in /: the workers reach it
        folder.chmod(folder.stat().st_mode | 0o011)
    return root, proc, seconds


def test_setup_sh_builds_the_grader_on_the_default_image_s_python_3_10(image):
    root, proc, seconds = image
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    python = root / "venv" / "bin" / "python"
    probe = "import sys, torch; print(sys.version_info >= (3, 11), torch.version.cuda)"
    said = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert said == ["True", "None"]  # a Python the course supports, and torch's CPU build
    installed = subprocess.run([python, "-m", "pip", "list"], capture_output=True, text=True, check=True).stdout
    # only what grading needs: none of the learner's Jupyter, site or watch packages
    for package in ("jupyterlab", "notebook", "mkdocs", "matplotlib", "watchfiles"):
        assert package not in installed.lower()
    assert "bubblewrap" in (root.parent / "tools" / "apt.log").read_text()
    size = sum(f.stat().st_size for f in root.rglob("*") if f.is_file() and not f.is_symlink()) / 2**20
    print(f"setup.sh: {seconds:.0f} s, {size:.0f} MiB under /autograder")


@pytest.mark.parametrize(
    ("case", "expected"),
    [("reference", "full"), ("stubs", "zero"), ("syntax error", "partial"), ("missing file", "partial")],
)
def test_the_built_image_grades_as_gradescope_runs_it(image, tmp_path, case, expected):
    root, proc, _ = image
    assert proc.returncode == 0, proc.stderr[-3000:]
    files = {p.name: p.read_text() for p in (REPO / "solutions").glob("*.py") if p.name != "__init__.py"}
    if case == "stubs":
        files = {p.name: p.read_text() for p in (REPO / "exercises").glob("*.py") if p.name != "__init__.py"}
    elif case == "syntax error":
        files["engine.py"] += "\ndef broken(:\n"
    elif case == "missing file":
        del files["nn.py"]
    results = run_autograder(None, tmp_path, files, python=None, root=root)
    full = results["extra_data"]["max_score"]
    if expected == "full":
        assert results["score"] == full + results["extra_data"]["bonus_max"] > full > 0
    elif expected == "zero":
        assert results["score"] == 0 and set(results["extra_data"]["status"].values()) == {"not started"}
    else:
        assert 0 < results["score"] - results["extra_data"]["bonus"] < full
    if case == "syntax error":
        assert "engine.py:" in results["output"] and "SyntaxError" in results["output"]
        assert results["extra_data"]["status"]["2.1"] == "error" and results["extra_data"]["status"]["1.1"] == "passed"
    if case == "missing file":
        assert "Not in your submission (graded as the empty stubs): nn.py." in results["output"]
        assert results["extra_data"]["status"]["10.1"] == "not started"


def test_setup_sh_that_cannot_install_stops_with_a_clear_message(bundle, tmp_path):
    root = lay_out(bundle, tmp_path)
    env = {**setup_environment(root, tmp_path / "tools", pyenv_python(10)), "APT_FAILS": "1"}
    proc = subprocess.run(["bash", "setup.sh"], cwd=root / "source", env=env, capture_output=True, text=True)
    assert proc.returncode != 0
    assert "setup.sh: failed while installing the system's packages (apt-get)" in proc.stderr
    assert not (root / "venv").exists()


def _void_run(platform):
    from autograder.grading.results import Results, TestResult

    tests = [
        TestResult("a", "check a", "1.1", 4, "h", status="passed"),
        TestResult("b", "check b", "1.1", 2, "h", status="could not be graded", message="could not be graded here"),
        TestResult("c", "check c", "1.2", 5, "h", status="failed", message="wrong"),
    ]
    return Results("your submission", "", "user", tests=tests, selected=["1.1", "1.2"], platform=platform)


def test_a_void_check_counts_against_the_full_maximum_in_a_grade_and_is_named_to_the_instructor():
    graded = gradescope.results_json(_void_run("gradescope"))
    assert graded["score"] == 4 and graded["extra_data"]["max_score"] == 11  # 4 of 11, never 4 of 9
    assert sum(t["max_score"] for t in graded["tests"]) == 11
    assert graded["extra_data"]["void_checks"] == ["1.1 check b"] and graded["extra_data"]["could_not_be_graded"] == 2
    own = gradescope.results_json(_void_run(None))  # a learner's own run leaves the void check out
    assert own["extra_data"]["max_score"] == 9


def test_a_batch_row_keeps_the_full_maximum_and_names_the_void_points():
    from autograder.grading.batch import Outcome

    row = Outcome("alice", "graded", 1.0, _void_run(None)).row(11)
    assert (row["total"], row["max"]) == (4, 11)
    assert row["status"] == "graded, 2 pt could not be graded here (grade it again)"
