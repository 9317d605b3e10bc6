"""The check cells of the nbgrader notebooks (`Checks`): one grading run of a lesson per version of the code, in a
fresh process, then one test's result per cell; and nbgrader's own extensions, which a learner's Lab turns off."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import tempfile
from dataclasses import asdict
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import EXERCISES, REPO, SOLUTIONS
from autograder.grading.limits import lesson_budget as _budget
from autograder.grading.options import for_notebooks, grader_command
from autograder.grading.results import Results, Status, TestResult
from autograder.grading.scorecard import check_lines

# nbgrader enables these when it is installed (its `jupyter_server_config.d/nbgrader.json` and lab extension): they
# are the instructors' menus, and without an nbgrader course around them they only show errors to a learner.
NBGRADER_SERVER_EXTENSIONS = tuple(
    f"nbgrader.server_extensions.{name}"
    for name in ("formgrader", "assignment_list", "course_list", "validate_assignment")
)
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"


def set_nbgrader_extensions(enabled: bool, user: bool = False) -> list[Path]:
    """Turn nbgrader's server and Lab extensions on or off; return the config files written.

    It writes what `jupyter server extension enable|disable` and `jupyter labextension enable|disable` write
    (those commands refuse nbgrader's server extensions at a level where nbgrader did not enable them): by default in
    the environment's Jupyter config (`{sys.prefix}/etc/jupyter`, where nbgrader enabled them), with `user` in
    the user's (`~/.jupyter`, which comes first unless JUPYTER_PREFER_ENV_PATH is set).
    """
    from jupyter_core.paths import ENV_CONFIG_PATH, jupyter_config_dir
    from jupyter_server.config_manager import BaseJSONConfigManager

    config_dir = Path(jupyter_config_dir() if user else ENV_CONFIG_PATH[0])
    server = BaseJSONConfigManager(config_dir=str(config_dir))
    server.update(
        "jupyter_server_config",
        {"ServerApp": {"jpserver_extensions": dict.fromkeys(NBGRADER_SERVER_EXTENSIONS, enabled)}},
    )
    lab = BaseJSONConfigManager(config_dir=str(config_dir / "labconfig"))
    lab.update("page_config", {"disabledExtensions": {NBGRADER_LAB_EXTENSION: not enabled}})
    return [config_dir / "jupyter_server_config.json", config_dir / "labconfig" / "page_config.json"]


def check_timeout() -> float:
    return for_notebooks().check_timeout


def lesson_budget(tests: int, per_test: float | None = None) -> int:
    """Seconds one grading run of a lesson may take (the grader's own formula)."""
    return _budget(tests, per_test or check_timeout())


def run_grader(
    impl: Path,
    lessons: int | list[int],
    results_file: Path,
    timeout: float | None = None,
    per_test: float | None = None,
) -> Results:
    """Grade `impl` for `lessons` with the one runner, in a fresh process (the kernel stays free of pytest)."""
    folder = Path(impl).resolve()
    named = {EXERCISES.resolve(): "exercises", SOLUTIONS.resolve(): "solutions"}.get(folder, str(folder))
    lessons = [lessons] if isinstance(lessons, int) else lessons
    given = {"check_timeout": per_test} if per_test else {}
    command = grader_command(for_notebooks(impl=named, lessons=lessons, results_file=results_file, **given))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(command, check=False, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        return Results.from_json(json.loads(Path(results_file).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        raise RuntimeError(
            f"the grader wrote no results (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}"
        ) from None


class Checks:
    """The check cells of an nbgrader notebook: `check("test_name")` asserts that one of the grader's tests passed.

    The first check grades the whole lesson on the files in `folder` (what the
    answer cell saved) in one run of `pytest autograder`; the result is kept
    until those files change.
    """

    def __init__(self, lesson: int, folder: str | Path, tests: int):
        self.lesson = registry.lesson(lesson)
        self.folder = Path(folder)
        self.tests = tests  # how many tests the lesson has: the grading run's time budget follows from it
        self._cache: dict[str, dict[str, dict] | RuntimeError] = {}

    def _digest(self) -> str:
        files = sorted(self.folder.glob("*.py")) if self.folder.is_dir() else []
        digest = hashlib.sha256(f"{check_timeout()}".encode())
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    def results(self) -> dict[str, dict]:
        """Each test's result (status, points, message, hint...) by test name, graded once per version of the code."""
        if not self.folder.is_dir():
            raise RuntimeError(f"{self.folder}/ does not exist yet: run the answer cell (the one with %%answer) first")
        key = self._digest()
        if key not in self._cache:
            try:
                self._cache[key] = self._grade()
            except RuntimeError as exc:  # kept too: the next check cells fail at once instead of grading again
                self._cache[key] = exc
        if isinstance(self._cache[key], RuntimeError):
            raise self._cache[key]
        return self._cache[key]

    def _grade(self) -> dict[str, dict]:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                results = run_grader(
                    self.folder, self.lesson.number, Path(tmp) / "results.json", timeout=lesson_budget(self.tests)
                )
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(f"grading lesson {self.lesson.number} took longer than {exc.timeout:g} s") from None
        return {r.nodeid.rsplit("::", 1)[-1]: asdict(r) for r in results.tests}

    def __call__(self, test: str) -> None:
        __tracebackhide__ = True  # IPython shows the check's line, not this function
        result = self.results().get(test)
        if result is None:
            raise LookupError(f"the grader has no test {test!r} in lesson {self.lesson.number}")
        check = TestResult(**result)
        print("\n".join(check_lines(check)))
        if check.status in (Status.PASSED, Status.VOID):  # a check this machine could not grade costs nothing
            return
        raise AssertionError(f"task {check.task}: {check.status}")
