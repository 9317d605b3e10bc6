"""The grader's options are one `GradeOptions`, declared once: every command that grades takes them from it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from autograder.__main__ import make_parser
from autograder.grading import options, plugin
from autograder.grading.options import GradeOptions

REPO = Path(__file__).resolve().parents[1]

# every option away from its default, lists of two and a path with a space
CHANGED = GradeOptions(
    impl="/tmp/a submission",
    lessons=(2, 9),
    tasks=("5.3", "8.1"),
    check_timeout=2.5,
    memory_limit=512,
    isolation="processes",
    workers="spawn",
    hide=("/tmp/x", "/tmp/y z"),
    fresh_inputs=12345,
    platform="prairielearn",
    results_json="/tmp/out/results.json",
    results_file="/tmp/out/run.json",
)


@pytest.mark.filterwarnings("ignore::pytest.PytestDeprecationWarning")  # pytest's Parser, made here by hand
@pytest.mark.parametrize("given", [GradeOptions(), CHANGED], ids=["defaults", "changed"])
def test_options_survive_a_command_line(given):
    """options -> a child grader's arguments -> options, through `python -m autograder grade` and pytest."""
    args = options.command_line(given)
    assert options.from_namespace(make_parser().parse_args(["grade", *args])) == given
    from _pytest.config.argparsing import Parser

    parser = Parser()
    plugin.pytest_addoption(parser)
    assert options.from_namespace(parser.parse(args)) == given
    assert options.grader_command(given)[1:] == ["-m", "autograder", "grade", *args]


def test_every_field_is_an_option_of_grade_and_pytest():
    assert set(options.FLAGS.values()) == {f for f in GradeOptions.__dataclass_fields__}
    assert len(options.command_line(CHANGED)) == len(options.FLAGS) + 3  # the three lists hold two each


def test_runner_takes_grader_options_only_as_grade_options():
    from autograder.grading import runner

    with pytest.raises(ValueError, match="--check-timeout"):
        runner.grade("solutions", extra=["--check-timeout=3"])


def test_impl_names_a_course_folder_or_a_path(tmp_path):
    assert GradeOptions().folder() == REPO / "exercises"
    assert GradeOptions(impl="solutions").folder() == REPO / "solutions"
    assert GradeOptions(impl=tmp_path).folder() == tmp_path.resolve()


# what the pytest option, batch, Gradescope and the notebooks grade with, printed from a copy of the grader
SEEN = """
import json, subprocess, types, warnings
from pathlib import Path
from autograder.__main__ import make_parser
from autograder.grading import options, plugin
from autograder.grading.limits import lesson_budget

def graded(command):  # what a child grader started with `command` grades with
    return options.from_namespace(make_parser().parse_args(command[3:])).check_timeout

seen = {}
warnings.simplefilter("ignore")
from _pytest.config.argparsing import Parser
parser = Parser()
plugin.pytest_addoption(parser)
seen["pytest autograder"] = parser.parse([]).check_timeout
seen["batch"] = graded(options.grader_command(options.from_namespace(make_parser().parse_args(["batch", "x"]))))

from autograder.export import submissions
seen["gradescope"] = submissions.platform_options(Path("/autograder"), "gradescope").check_timeout

from autograder import jupyter
from autograder.export import nbgrader_course, notebooks
asked = []
run = subprocess.run
subprocess.run = lambda command, **kwargs: asked.append(command) or subprocess.CompletedProcess(command, 1, "", "")
try:
    jupyter.run_grader(Path("exercises"), 1, Path("nowhere.json"))
except RuntimeError:
    pass
finally:
    subprocess.run = run
seen["notebook check cells"] = graded(asked[0])
config = types.SimpleNamespace(
    CourseDirectory=types.SimpleNamespace(), ExecutePreprocessor=types.SimpleNamespace(),
    ClearSolutions=types.SimpleNamespace())
text = nbgrader_course.nbgrader_config()
exec(compile(text, "nbgrader_config.py", "exec"), {"get_config": lambda: config, "__file__": "nbgrader_config.py"})
most = max(len(nbgrader_course.lesson_tests(lesson.number)) for lesson in notebooks.graded_lessons())
seen["nbgrader's cell limit"] = config.ExecutePreprocessor.timeout == lesson_budget(most, 7.5)
print(json.dumps(seen))
"""


def test_the_default_time_limit_is_one_line(tmp_path):
    """Change `CHECK_TIMEOUT` in limits.py alone: the pytest option, batch, Gradescope and the notebooks follow."""
    for folder in ("autograder", "solutions", "exercises"):
        shutil.copytree(REPO / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__", "notebooks"))
    limits = tmp_path / "autograder" / "grading" / "limits.py"
    text = limits.read_text()
    assert text.count("\nCHECK_TIMEOUT = 10.0 ") == 1
    limits.write_text(text.replace("\nCHECK_TIMEOUT = 10.0 ", "\nCHECK_TIMEOUT = 7.5 "))
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(SEEN)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp_path), "HOME": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {
        "pytest autograder": 7.5,
        "batch": 7.5,
        "gradescope": 7.5,
        "notebook check cells": 7.5,
        "nbgrader's cell limit": True,
    }
