"""The maintainers' commands: `dev build`, `dev check`, `dev sync` and `dev notebooks`, which regenerate what is
made from the single source, or say where the course's data and its files disagree.

Each command's handler (`_build`) and the function that declares its arguments (`_build_args`), which
`autograder.__main__.READERS` names. A handler imports what it runs inside itself, so that the command line
starts fast.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import EXERCISES


def _build(args: argparse.Namespace) -> int:
    from autograder.export.build import build

    try:
        changed, refused = build(check=args.check)
    except RuntimeError as exc:  # the site does not build: its log says why
        print(exc, file=sys.stderr)
        return 1
    for name in changed:
        print(f"{'out of date' if args.check else 'wrote'}: {name}")
    for name in refused:
        print(
            f"kept exercises/{name}: it differs from what build last wrote (your work?); "
            "use `python -m autograder dev sync --force` to replace it (a .bak copy is kept)",
            file=sys.stderr,
        )
    if args.check and changed:
        print("generated files are out of date; run: python -m autograder dev build", file=sys.stderr)
        return 1
    if not changed:
        print("every generated file is up to date")
    return 1 if refused else 0


def _check_course(args: argparse.Namespace) -> int:
    from autograder.course.check import check_course
    from autograder.course.regions import has_sources

    if not has_sources():
        print("dev check checks the course's sources: run it in the full repository", file=sys.stderr)
        return 2
    problems = check_course()
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) between the course's data and its files", file=sys.stderr)
        return 1
    print(f"the course's data and its files agree ({len(registry.TASKS)} tasks)")
    return 0


def _sync(args: argparse.Namespace) -> int:
    from autograder.export import stubs as sync

    if args.check:
        diffs = sync.check(args.into)
        for diff in diffs:
            print(diff)
        if diffs:
            print(
                f"exercises/ is out of date with solutions/ ({len(diffs)} file(s)); run: python -m autograder dev sync",
                file=sys.stderr,
            )
            return 1
        print("exercises/ matches solutions/")
        return 0
    written, refused = sync.sync(args.into, force=args.force)
    for name in written:
        print(f"wrote {args.into / name}")
    for name in refused:
        path = args.into / name
        if path.is_symlink() or not path.is_file():
            print(f"kept {path}: not a regular file (a link?); sync writes only the folder's own", file=sys.stderr)
            continue
        print(
            f"kept {path}: it differs from what sync last wrote (your work?); "
            "use --force to replace it (a .bak copy is kept)",
            file=sys.stderr,
        )
    if not written and not refused:
        print("exercises/ is up to date")
    return 1 if refused else 0


def _notebooks(args: argparse.Namespace) -> int:
    from autograder.export import notebooks

    if args.check:
        stale = notebooks.stale_learner_notebooks(args.into)
        for name in stale:
            print(f"{args.into / name} is out of date", file=sys.stderr)
        if stale:
            print("run: python -m autograder dev notebooks", file=sys.stderr)
            return 1
        print(f"{args.into}/ is up to date")
        return 0
    written = notebooks.write_learner_notebooks(args.into)
    for name in written:
        print(f"wrote {args.into / name}")
    if not written:
        print(f"{args.into}/ is up to date")
    return 0


# ------------------------------------------------------------------ each command's arguments


def _build_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 listing what is out of date")


def _sync_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 with a diff if they disagree")
    p.add_argument("--force", action="store_true", help="also replace exercise files you changed (keeps a .bak)")
    p.add_argument(
        "--into", type=Path, default=EXERCISES, metavar="DIR", help="the folder to write (default: exercises/)"
    )


def _notebooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if a notebook is out of date")
    p.add_argument(
        "--into",
        type=Path,
        default=EXERCISES / "notebooks",
        metavar="DIR",
        help="the folder to write (default: exercises/notebooks/)",
    )
