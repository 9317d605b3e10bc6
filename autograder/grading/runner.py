"""The one way to grade: `grade()` runs `pytest autograder` in this process and returns its `Results`.

The command line (`pytest autograder ...`) is the same run started by pytest
itself; batch grading, the Gradescope bundle, the notebooks and the site's
build call `grade()` (or `python -m autograder grade`, which calls it), so
every place that grades gets the same results object. Its options are one
`GradeOptions`, handed to the run as they are (never as text).
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from autograder.course.regions import REPO
from autograder.grading.options import GradeOptions, grader_flags
from autograder.grading.pool import Zygotes
from autograder.grading.results import Results


class _Catch:
    """A pytest plugin object that hands the run its options and keeps its config, to read the results from."""

    config: pytest.Config | None = None

    def __init__(self, options: GradeOptions, workers_pool: Zygotes | None = None):
        self.options, self.workers_pool = options, workers_pool

    @pytest.hookimpl(tryfirst=True)  # before the grader's own pytest_configure, which reads them
    def pytest_configure(self, config: pytest.Config) -> None:
        from autograder.grading.plugin import OPTIONS, ZYGOTES

        self.config = config
        config.stash[OPTIONS] = self.options
        if self.workers_pool is not None:
            config.stash[ZYGOTES] = self.workers_pool


def grade(
    impl: GradeOptions | str | Path = "exercises",
    *,
    quiet: bool = True,
    extra: list[str] = (),
    workers_pool: Zygotes | None = None,
    **given,
) -> Results:
    """Grade with `impl`'s options (or those of a folder, `exercises`, `solutions`, and `given`: `GradeOptions`'
    fields); raise RuntimeError if the grader could not run.

    The options go to the run as they are (pytest's `config.stash`); `extra` is pytest's own arguments only.
    `workers_pool`: zygotes to fork this run's workers from, kept by a caller that grades again and again
    (`pool.Zygotes`; the caller closes it). Without it the run starts its own and stops them at its end.
    """
    options = impl.replace(**given) if isinstance(impl, GradeOptions) else GradeOptions(impl=impl, **given)
    if grader_flags(extra):
        raise ValueError(f"grader options go in GradeOptions, not in pytest's arguments: {grader_flags(extra)}")
    args = [str(REPO / "autograder"), "--rootdir", str(REPO), "-p", "no:cacheprovider", *extra]
    # the grading tests judge with the kit's helpers, never a bare `assert` (tests/test_registry.py): rewriting
    # their asserts would only cost a cold run (a platform's) the parsing of every test file
    args += ["--assert=plain", "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    catch = _Catch(options, workers_pool)
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
