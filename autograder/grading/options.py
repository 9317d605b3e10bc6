"""The grader's options: one typed object, `GradeOptions`, with one declaration per option.

Each field of `GradeOptions` is an option: its name, type and default are the field's, its flag, metavar and
help are the field's metadata (`_option`). From these declarations come pytest's options (`plugin.py`), the
subcommands' arguments (`commands/`: grade, batch, watch: `add`) and the notebooks' settings
(`for_notebooks`). A run builds the object once and hands it down (pytest's `config.stash`, `plugin.OPTIONS`);
`command_line` is the one way to turn it into the arguments of a child grader (`python -m autograder grade`),
which parses them back into an equal object (`tests/test_options.py`).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path

from autograder.course.regions import REPO
from autograder.grading import limits
from autograder.worker.wire import LEVELS

NAMED_FOLDERS = ("exercises", "solutions")  # what --impl names without a path: folders of the course
PLATFORMS = ("gradescope", "prairielearn")  # where a class's submissions are graded, one container each
NOTEBOOK_TIMEOUT = "AUTOGRADER_TIMEOUT"  # a notebook's grading runs: the time limit of each check, seconds


def _option(flag: str, help: str, default=None, metavar: str | None = None, **settings):
    """A field of `GradeOptions`: its default, and how a command line spells it (argparse's settings)."""
    settings = {"help": help, **({"metavar": metavar} if metavar else {}), **settings}
    if isinstance(default, tuple):
        return field(default=default, metadata={"flag": flag, "settings": {"action": "append", **settings}})
    return field(default=default, metadata={"flag": flag, "settings": settings})


@dataclass(frozen=True)
class GradeOptions:
    """What one grading run is asked: which code, which tasks, under which limits, and where its results go."""

    impl: str = _option(
        "--impl",
        "what to grade: 'exercises' (default), or any folder laid out like it",
        "exercises",
        "FOLDER",
    )
    lessons: tuple[int, ...] = _option("--lesson", "grade only lesson N (repeatable)", (), "N", type=int)
    tasks: tuple[str, ...] = _option("--task", "grade only task L.N (repeatable)", (), "L.N")
    check_timeout: float = _option(
        "--check-timeout",
        "time limit of each call into the graded code, seconds of CPU time (default %(default)g)",
        limits.CHECK_TIMEOUT,
        "S",
        type=float,
    )
    memory_limit: int = _option(
        "--memory-limit",
        "memory cap of each process that runs the graded code (default %(default)s MB; 0: none)",
        limits.MEMORY_LIMIT_MB,
        "MB",
        type=int,
    )
    isolation: str = _option(
        "--isolation",
        "how the graded code is shut in (default: the best this system allows, which `doctor` names)",
        "auto",
        choices=("auto", *map(str, LEVELS)),
    )
    workers: str = _option(
        "--workers",
        "how workers start: fork from a warm process (Linux's default), or spawn fresh ones "
        "(macOS' and Windows' default)",
        "auto",
        choices=("auto", "fork", "spawn"),
    )
    hide: tuple[str, ...] = _option(
        "--hide", "a folder the graded code must not see (repeatable; the grader's own are always hidden)", (), "PATH"
    )
    fresh_inputs: int | None = _option(
        "--fresh-inputs",
        "a graded run (the full course's): ask each visible check again on numbers drawn afresh from SEED, "
        "as the course's solutions answer them (batch and Gradescope draw a seed per submission; the results "
        "record it)",
        None,
        "SEED",
        type=int,
    )
    platform: str | None = _option(
        "--platform",
        "grade a submission as this platform's grader does: the results call it 'your submission', show no "
        "path of its folder and suggest commands for the learner's own clone; the container is the sandbox",
        None,
        choices=PLATFORMS,
    )
    results_json: str | None = _option(
        "--results-json", "also write the result in Gradescope's results.json format", None, "PATH"
    )
    results_file: str | None = _option(
        "--results-file", "also write the results in the grader's own format, updated after every check", None, "PATH"
    )

    def __post_init__(self):
        # a command line gives lists and numbers as text; paths may be Path objects: one type per field
        object.__setattr__(self, "lessons", tuple(int(n) for n in self.lessons))
        object.__setattr__(self, "tasks", tuple(self.tasks))
        object.__setattr__(self, "hide", tuple(str(p) for p in self.hide))
        for name in ("impl", "results_json", "results_file"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, str(getattr(self, name)))

    def folder(self) -> Path:
        return impl_folder(self.impl)

    def replace(self, **changes) -> GradeOptions:
        return dataclasses.replace(self, **changes)


def impl_folder(impl: str | Path) -> Path:
    """The folder `--impl` names: a folder of the course by its name, or any folder by its path."""
    return REPO / str(impl) if str(impl) in NAMED_FOLDERS else Path(impl).resolve()


FLAGS = {f.metadata["flag"]: f.name for f in fields(GradeOptions)}


def add(adder: Callable, *names: str) -> None:
    """Add the options `names` (every one when none is named) with `adder`: argparse's `add_argument` or pytest's
    `addoption`, which take the same settings. Each is stored under its field's name."""
    for f in fields(GradeOptions):
        if not names or f.name in names:
            default = list(f.default) if isinstance(f.default, tuple) else f.default
            adder(f.metadata["flag"], dest=f.name, default=default, **f.metadata["settings"])


def from_namespace(namespace, **given) -> GradeOptions:
    """The options a parsed command line (argparse's namespace, pytest's `config.option`) holds; `given` wins."""
    found = {f.name: getattr(namespace, f.name) for f in fields(GradeOptions) if hasattr(namespace, f.name)}
    return GradeOptions(**{**found, **given})


def command_line(options: GradeOptions) -> list[str]:
    """The arguments that make a child grader (`python -m autograder grade ARGS`, `pytest autograder ARGS`) grade
    with `options`: every option that is set, so that a log shows the limits it graded under.

    Paths go as `--flag=PATH`: pytest looks for its settings (pyproject.toml) above every bare argument that is
    an existing path, so `--impl /tmp/x` would make it miss the project's.
    """
    args = []
    for f in fields(GradeOptions):
        value, flag = getattr(options, f.name), f.metadata["flag"]
        for item in value if isinstance(value, tuple) else () if value is None else (value,):
            args.append(f"{flag}={item}")
    return args


def grader_command(options: GradeOptions) -> list[str]:
    """The command of a child grader process that grades with `options` (batch, the notebooks' check cells)."""
    return [sys.executable, "-m", "autograder", "grade", *command_line(options)]


def for_notebooks(**given) -> GradeOptions:
    """A notebook's grading options: the course's defaults, with the time limit of `AUTOGRADER_TIMEOUT` if set
    (a kernel, and nbgrader's own process, have no command line to take it from)."""
    timeout = os.environ.get(NOTEBOOK_TIMEOUT)
    return GradeOptions(**{**({"check_timeout": float(timeout)} if timeout else {}), **given})


def grader_flags(args: Iterable[str]) -> list[str]:
    """Those of `args` that are the grader's options (which `runner.grade` takes as `GradeOptions` only)."""
    return [a for a in args if a.partition("=")[0] in FLAGS]
