"""The one way to grade: `grade()` runs `pytest autograder` in this process and returns its `Results`.

The command line (`pytest autograder ...`) is the same run started by pytest
itself; batch grading, the Gradescope bundle, the notebooks and the site's
build call `grade()` (or `python -m autograder grade`, which calls it), so
every place that grades gets the same results object.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from autograder.course.regions import REPO
from autograder.grading.pool import Zygotes
from autograder.grading.results import Results


class _Catch:
    """A pytest plugin object that keeps the run's config, to read the results from it afterwards."""

    config: pytest.Config | None = None

    def __init__(self, workers_pool: Zygotes | None = None):
        self.workers_pool = workers_pool

    def pytest_configure(self, config: pytest.Config) -> None:
        self.config = config
        if self.workers_pool is not None:
            from autograder.grading.plugin import ZYGOTES

            config.stash[ZYGOTES] = self.workers_pool


def grade(
    impl: str | Path = "exercises",
    *,
    lessons: list[int] = (),
    tasks: list[str] = (),
    check_timeout: float | None = None,
    memory_mb: int | None = None,
    isolation: str = "auto",
    results_json: Path | None = None,
    results_file: Path | None = None,
    quiet: bool = True,
    extra: list[str] = (),
    workers_pool: Zygotes | None = None,
) -> Results:
    """Grade `impl` (`exercises`, `solutions` or a folder); raise RuntimeError if the grader could not run.

    `workers_pool`: zygotes to fork this run's workers from, kept by a caller that grades again and again
    (`pool.Zygotes`; the caller closes it). Without it the run starts its own and stops them at its end.
    """
    # paths as `--option=PATH`: pytest looks for its settings (pyproject.toml) above every bare argument that is
    # an existing path, so `--impl /tmp/x` would make it miss the project's and run without them
    args = [
        str(REPO / "autograder"),
        "--rootdir",
        str(REPO),
        "-p",
        "no:cacheprovider",
        f"--impl={impl}",
        "--isolation",
        isolation,
    ]
    args += [f"--lesson={n}" for n in lessons] + [f"--task={t}" for t in tasks]
    if check_timeout is not None:
        args += ["--check-timeout", str(check_timeout)]
    if memory_mb is not None:
        args += ["--memory-limit", str(memory_mb)]
    if results_json:
        args.append(f"--results-json={results_json}")
    if results_file:
        args.append(f"--results-file={results_file}")
    args += list(extra)
    args += ["-W", "ignore::pytest.PytestAssertRewriteWarning"]
    catch = _Catch(workers_pool)
    out = io.StringIO()
    with contextlib.redirect_stdout(out) if quiet else contextlib.nullcontext():
        code = pytest.main(args, plugins=[catch])
    from autograder.grading.plugin import GRADER

    if (
        catch.config is None
        or GRADER not in catch.config.stash
        or code in (pytest.ExitCode.INTERNAL_ERROR, pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERRUPTED)
    ):
        raise RuntimeError(f"the grader could not run (exit {int(code)}):\n{out.getvalue()[-3000:]}")
    return catch.config.stash[GRADER].results


def catalogue() -> Results:
    """Every grading test with its task, points and hint, as pytest collects them (nothing is run)."""
    return grade("solutions", extra=["--collect-only"])
