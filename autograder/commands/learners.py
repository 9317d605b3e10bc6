"""The learners' commands: `hint`, `watch`, `reset`, `tasks`, `doctor`, `grade` and `nbgrader-extensions`.

Each command's handler (`_hint`) and the function that declares its arguments (`_hint_args`), which
`autograder.__main__.READERS` names; `hint` also keeps, in the folder graded, which hint levels were opened
(`HINTS_SEEN`). A handler imports what it runs inside itself, so that the command line starts fast.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
from pathlib import Path

from autograder.commands import missing_instructor_packages
from autograder.course import registry
from autograder.course.regions import EXERCISES
from autograder.grading import lastrun, options
from autograder.grading.results import Status
from autograder.grading.scorecard import grade_command, page_link

HINTS_SEEN = ".hints-seen.json"  # in the graded folder: which hint levels the learner has opened, per task


def _hints_seen(folder: Path) -> dict[str, int]:
    """The hint levels opened so far, from a regular file of the folder's (a link there is not followed)."""
    from autograder.grading import caches

    try:
        seen = json.loads(caches.read_regular(folder / HINTS_SEEN, 100_000).decode("utf-8"))
    except (OSError, ValueError, caches.NotRegular):
        return {}  # no file yet, or one we will not read: start from level 1
    if not isinstance(seen, dict):
        return {}
    return {task: level for task, level in seen.items() if isinstance(level, int)}


def _hint(args: argparse.Namespace) -> int:
    try:
        task = registry.task(args.task)
    except KeyError as exc:
        print(exc.args[0], file=sys.stderr)
        return 2
    folder = Path(args.impl)
    if not folder.is_dir():
        print(f"{folder} is not a folder: --impl names the folder you work in (default exercises/)", file=sys.stderr)
        return 2
    seen = _hints_seen(folder)
    if args.reset:
        seen.pop(task.id, None)
    levels = len(task.hints)
    shown = levels if args.all else min(seen.get(task.id, 0) + 1, levels)
    seen[task.id] = max(shown, seen.get(task.id, 0))
    try:  # never through a link someone left in a handed-in folder: a file of its own replaces it
        from autograder.grading.scorecard import write_json

        write_json(folder / HINTS_SEEN, seen)
    except OSError as exc:  # a read-only folder still gets its hint; the next call shows the same level
        print(f"(could not remember the hints you saw: {exc})", file=sys.stderr)
    failed = lastrun.failed_checks(task.id, folder)
    if failed:  # the hint of every check that went wrong, one line each, then the task's levels as always
        checks = "the check that failed" if len(failed) == 1 else f"the {len(failed)} checks that failed"
        print(f"Task {task.id} · {task.title}: {checks} in your last run")
        for description, hint in failed:
            print(f"  check: {description}")
            print(f"  hint:  {hint}")
    print(f"Task {task.id} · {task.title}: hint {shown} of {levels}")
    for number, hint in enumerate(task.hints[:shown], start=1):
        print(f"  {number}. {hint}")
    left = levels - shown
    if left:
        print(f"  {left} more level{'s' * (left != 1)}: run the same command again (--all shows them all)")
    else:
        print("  that was the last level (--reset starts over)")
    print(f"  → {page_link(task.id)}   grade it: {grade_command(task.id)}")
    return 0


def _watch(args: argparse.Namespace) -> int:
    from autograder.grading import watch

    return watch.watch(options.from_namespace(args), poll=args.poll)


def _reset(args: argparse.Namespace) -> int:
    from autograder.export import reset

    tasks = list(args.task)
    for task_id in tasks:
        if task_id not in registry.TASKS:
            print(
                f"reset: there is no task {task_id} (they look like 2.3; python -m autograder tasks)", file=sys.stderr
            )
            return 2
    for number in args.lesson:
        if not any(lesson.number == number and lesson.tasks for lesson in registry.LESSONS):
            print(f"reset: lesson {number} has no tasks", file=sys.stderr)
            return 2
        tasks += reset.tasks_of_lesson(number)
    if not tasks:
        print("reset: name a task (reset 2.3) or a lesson (reset --lesson 2)", file=sys.stderr)
        return 2
    try:
        done = reset.reset(tasks, args.impl)
    except reset.CannotReset as exc:
        print(f"reset: {exc}. Nothing was changed.", file=sys.stderr)
        return 1
    for path, copy in done:
        print(f"{path}: the stub is back for task(s) {', '.join(tasks)}; your version is saved as {copy}")
    if not done:
        print(f"task(s) {', '.join(tasks)}: the stub is there already; nothing to do")
    return 0


def _tasks(args: argparse.Namespace) -> int:
    for lesson in registry.LESSONS:
        if lesson.tasks:
            print(f"Lesson {lesson.number} · {lesson.title}  ({lesson.page})")
            for task in lesson.tasks:
                print(f"  {task.id:<5} {task.title:<42} {grade_command(task.id)}")
    return 0


def _doctor(args: argparse.Namespace) -> int:
    from autograder.grading import doctor

    return doctor.main()


def _grade(args: argparse.Namespace) -> int:
    from autograder.grading import runner, scorecard

    if hasattr(signal, "SIGUSR1"):  # batch asks a grader past its wall time where it is stuck, for the log
        # a copy of stderr as it is now: pytest points descriptor 2 at its capture file while it runs
        faulthandler.register(signal.SIGUSR1, file=os.fdopen(os.dup(2), "w"), all_threads=True)
    try:
        results = runner.grade(options.from_namespace(args))
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 2
    print(scorecard.text(results))
    return 0 if all(t.status == Status.PASSED for t in results.tests) else 1


def _nbgrader_extensions(args: argparse.Namespace) -> int:
    from autograder.jupyter import set_nbgrader_extensions

    enabled = args.state == "on"
    if enabled and missing_instructor_packages("nbgrader-extensions on", "nbgrader"):
        return 1
    try:
        written = set_nbgrader_extensions(enabled, user=args.user)
    except OSError as exc:
        print(f"could not write Jupyter's config ({exc}); try --user", file=sys.stderr)
        return 1
    print(
        f"nbgrader's Jupyter extensions are {'on' if enabled else 'off'} "
        f"({'the formgrader and nbgrader menus show' if enabled else 'no nbgrader menus'} in a Lab started now): "
        + ", ".join(str(path) for path in written)
    )
    return 0


# ------------------------------------------------------------------ each command's arguments


def _hint_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", metavar="L.N")
    p.add_argument("--all", action="store_true", help="show every level at once")
    p.add_argument("--reset", action="store_true", help="forget the levels seen: start again from level 1")
    p.add_argument(
        "--impl",
        type=Path,
        default=EXERCISES,
        metavar="DIR",
        help=f"the folder you work in; it keeps {HINTS_SEEN} (default: exercises/)",
    )


def _watch_args(p: argparse.ArgumentParser) -> None:
    options.add(p.add_argument, "impl", "lessons", "check_timeout")
    p.add_argument(
        "--poll", action="store_true", help="look at the files every half second (for drives that raise no file events)"
    )


def _reset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", nargs="*", metavar="L.N", help="the task(s) to start over")
    p.add_argument("--lesson", action="append", type=int, default=[], metavar="N", help="every task of lesson N")
    p.add_argument(
        "--impl", type=Path, default=EXERCISES, metavar="DIR", help="the folder you work in (default: exercises/)"
    )


def _grade_args(p: argparse.ArgumentParser) -> None:
    options.add(p.add_argument)  # every option of a grading run: what a child grader is given (`command_line`)


def _nbgrader_extensions_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("state", choices=["off", "on"])
    p.add_argument("--user", action="store_true", help="in your user's Jupyter config, not the environment's")
