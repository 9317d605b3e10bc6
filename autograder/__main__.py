"""The course's command line: `python -m autograder sync | hint | tasks`.

- `sync [--check] [--force]` regenerates `exercises/` from `solutions/`;
- `hint L.N [--all]` prints a task's hints, one more each time it is asked;
- `tasks` lists every task with its page and the command that grades it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import registry
from .regions import EXERCISES
from .report import grade_command, page_link


def _sync(args: argparse.Namespace) -> int:
    from . import sync

    if args.check:
        diffs = sync.check(args.into)
        for diff in diffs:
            print(diff)
        if diffs:
            print(f"exercises/ is out of date with solutions/ ({len(diffs)} file(s)); run: python -m autograder sync",
                  file=sys.stderr)
            return 1
        print("exercises/ matches solutions/")
        return 0
    written, refused = sync.sync(args.into, force=args.force)
    for name in written:
        print(f"wrote {args.into / name}")
    for name in refused:
        print(f"kept {args.into / name}: it differs from what sync last wrote (your work?); "
              "use --force to replace it (a .bak copy is kept)", file=sys.stderr)
    if not written and not refused:
        print("exercises/ is up to date")
    return 1 if refused else 0


def _hint(args: argparse.Namespace) -> int:
    try:
        task = registry.task(args.task)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    print(f"Task {task.id} · {task.title}")
    for number, hint in enumerate(task.hints, start=1):
        print(f"  {number}. {hint}")
    print(f"  → {page_link(task.id)}   grade it: {grade_command(task.id)}")
    return 0


def _tasks(args: argparse.Namespace) -> int:
    for lesson in registry.LESSONS:
        if lesson.tasks:
            print(f"Lesson {lesson.number} · {lesson.title}  ({lesson.page})")
            for task in lesson.tasks:
                print(f"  {task.id:<5} {task.title:<42} {grade_command(task.id)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("sync", help="regenerate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 with a diff if they disagree")
    p.add_argument("--force", action="store_true", help="also replace exercise files you changed (keeps a .bak)")
    p.add_argument("--into", type=Path, default=EXERCISES, metavar="DIR", help="the folder to write (default: exercises/)")
    p.set_defaults(run=_sync)
    p = commands.add_parser("hint", help="print the hints of a task")
    p.add_argument("task", metavar="L.N")
    p.set_defaults(run=_hint)
    p = commands.add_parser("tasks", help="list every task")
    p.set_defaults(run=_tasks)
    args = parser.parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
