"""The grader's options: one name, one default and one help text each, for every command that grades.

`pytest autograder` (the plugin), `python -m autograder grade`, `batch` and
`watch` add the ones they take from here, so `--check-timeout` means the same
thing, with the same default, wherever it is typed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from autograder.grading.limits import CHECK_TIMEOUT, MEMORY_LIMIT_MB
from autograder.worker.wire import LEVELS


class Option(NamedTuple):
    flag: str
    settings: dict


CHECK_TIMEOUT_OPTION = Option(
    "--check-timeout",
    dict(
        type=float,
        default=CHECK_TIMEOUT,
        metavar="S",
        help=f"time limit of each call into the graded code, seconds (default {CHECK_TIMEOUT:g})",
    ),
)
MEMORY_LIMIT = Option(
    "--memory-limit",
    dict(
        type=int,
        default=MEMORY_LIMIT_MB,
        metavar="MB",
        help=f"memory cap of each process that runs the graded code (default {MEMORY_LIMIT_MB} MB; 0: none)",
    ),
)
ISOLATION = Option(
    "--isolation",
    dict(
        choices=("auto", *map(str, LEVELS)),
        default="auto",
        help="how the graded code is shut in (default: the best this system allows; see the README)",
    ),
)
WORKERS = Option(
    "--workers",
    dict(
        choices=("auto", "fork", "spawn"),
        default="auto",
        help="how workers start: fork from a warm process (Linux's default), or spawn fresh ones "
        "(macOS' and Windows' default)",
    ),
)
HIDE = Option(
    "--hide",
    dict(
        action="append",
        default=[],
        metavar="PATH",
        help="a folder the graded code must not see (repeatable; the grader's own are always hidden)",
    ),
)

FRESH_INPUTS = Option(
    "--fresh-inputs",
    dict(
        type=int,
        default=None,
        metavar="SEED",
        help="a graded run: ask each visible check again on numbers drawn afresh from SEED, against the reference "
        "(batch and Gradescope draw a seed per submission; the results record it)",
    ),
)


def add(adder: Callable, *options: Option) -> None:
    """Add `options` with `adder`: argparse's `add_argument` or pytest's `addoption` (they take the same settings)."""
    for option in options:
        adder(option.flag, **option.settings)
