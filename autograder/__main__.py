"""The course's command line: `python -m autograder COMMAND`.

The commands are grouped by who types them (`READERS`, which `--help` lists section by section):

- learners: `hint`, `watch`, `reset`, `tasks`, `doctor`, `grade` (the one runner, which batch runs for each
  submission) and `nbgrader-extensions off|on`;
- instructors: `export gradescope|prairielearn|nbgrader|student-edition|classroom`, `batch`, `class-report`,
  and `run gradescope|prairielearn`, what an exported bundle runs in the platform's container;
- maintainers: `dev build|sync|notebooks`, which regenerate what is made from the single source, and `dev check`,
  which says where the course's data (`autograder/course/data/`) and the markers, checks, pages and docstrings it
  names disagree, or what they leave out.

The flat names the commands had before (`build`, `check-course`, `gradescope`, `gradescope-run`,
`student-edition`...) still work, so that nothing written with them breaks (a bundle already on Gradescope, a
script, an old page), but `--help` no longer lists them (`Command.old`).
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import EXERCISES
from autograder.grading import lastrun, options
from autograder.grading.results import Status
from autograder.grading.scorecard import grade_command, page_link


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


INSTRUCTOR_EXTRA = 'pip install -e ".[instructor]"'


def _missing_instructor_packages(command: str, *modules: str) -> bool:
    """Say so when a package of the instructors' extra is not installed (a learner's install has none of them)."""
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"`python -m autograder {command}` needs {' and '.join(missing)}, which the learner's install leaves out; "
            f"install the instructors' extra: {INSTRUCTOR_EXTRA}",
            file=sys.stderr,
        )
    return bool(missing)


def _nbgrader_extensions(args: argparse.Namespace) -> int:
    from autograder.jupyter import set_nbgrader_extensions

    enabled = args.state == "on"
    if enabled and _missing_instructor_packages("nbgrader-extensions on", "nbgrader"):
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


def _tasks(args: argparse.Namespace) -> int:
    for lesson in registry.LESSONS:
        if lesson.tasks:
            print(f"Lesson {lesson.number} · {lesson.title}  ({lesson.page})")
            for task in lesson.tasks:
                print(f"  {task.id:<5} {task.title:<42} {grade_command(task.id)}")
    return 0


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


def _nbgrader(args: argparse.Namespace) -> int:
    from autograder.export import notebooks

    if _missing_instructor_packages("export nbgrader", "nbgrader"):
        return 1
    written, kept = notebooks.write_nbgrader_course(args.out, args.lesson or None, force=args.force)
    for path in written:
        print(f"wrote {path}")
    for path in kept:
        print(
            f"kept {path}: it differs from the generated one (your settings?); use --force to replace it",
            file=sys.stderr,
        )
    print(f"next: cd {args.out} && nbgrader generate_assignment lesson01   (run nbgrader from the course root)")
    return 0


def _batch(args: argparse.Namespace) -> int:
    from autograder.grading import batch

    if _missing_instructor_packages("batch", "tqdm"):
        return 1
    try:
        outcomes = batch.batch(
            args.submissions, args.out, args.jobs, args.timeout, options.from_namespace(args), progress=not args.quiet
        )
    except FileNotFoundError as exc:
        print(exc, file=sys.stderr)
        return 2
    counts = {s: sum(o.status == s for o in outcomes) for s in ("graded", "timed out", "crashed")}
    print(
        f"{len(outcomes)} submission(s) graded now ({', '.join(f'{n} {s}' for s, n in counts.items())}); "
        f"gradebook: {args.out}, results and logs: {args.out.with_suffix('.results')}/"
    )
    return 0


def _class_report(args: argparse.Namespace) -> int:
    from autograder.export import class_report

    try:
        tally = class_report.report(args.results, args.out, args.csv, names=args.names, site=args.site)
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    csv_path = args.csv or args.out.with_suffix(".csv")
    print(f"{tally.submissions} submission(s); report: {args.out}, table: {csv_path}")
    return 0 if tally.submissions else 1


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


def _watch(args: argparse.Namespace) -> int:
    from autograder.grading import watch

    return watch.watch(options.from_namespace(args), poll=args.poll)


def _doctor(args: argparse.Namespace) -> int:
    from autograder.grading import doctor

    return doctor.main()


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.export import gradescope

    print(f"wrote {gradescope.build_bundle(args.out)}: upload it as the assignment's autograder")
    return 0


def _gradescope_run(args: argparse.Namespace) -> int:
    from autograder.export import gradescope

    results = gradescope.grade_submission(args.root, args.deadline or gradescope.DEADLINE)
    full = results.get("extra_data", {}).get("max_score", "?")
    print(f"score {results.get('score')} of {full} -> {args.root / 'results/results.json'}")
    return 0


def _prairielearn(args: argparse.Namespace) -> int:
    from autograder.export import prairielearn

    bundle = prairielearn.build_bundle(args.out)
    print(f"wrote {bundle}, {args.out / 'grading-image'} and {args.out / 'questions' / prairielearn.FOLDER}:")
    print(
        "build and push the grading image, then copy the two course folders into your course "
        "(how: the site's Guides, For instructors, PrairieLearn; course/guides/instructors/prairielearn.md)"
    )
    return 0


def _prairielearn_run(args: argparse.Namespace) -> int:
    from autograder.export import prairielearn

    results = prairielearn.grade_submission(args.root, args.deadline or prairielearn.DEADLINE)
    print(f"score {results.get('score')} (gradable: {results.get('gradable')}) -> {args.root / 'results/results.json'}")
    return 0


def _classroom(args: argparse.Namespace) -> int:
    from autograder.export import classroom

    text = classroom.workflow(classroom.points_per_lesson())
    current = classroom.TEMPLATE.read_text() if classroom.TEMPLATE.exists() else ""
    if args.check:
        if current != text:
            print(f"{classroom.TEMPLATE} is out of date; run: python -m autograder dev build", file=sys.stderr)
            return 1
        print(f"{classroom.TEMPLATE} is up to date")
        return 0
    classroom.TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
    classroom.TEMPLATE.write_text(text)
    print(f"wrote {classroom.TEMPLATE}")
    return 0


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


def _student_edition(args: argparse.Namespace) -> int:
    from autograder.export import edition

    try:
        print(f"wrote the student edition to {edition.export(args.out)}")
    except FileExistsError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


def _add_lesson_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lesson",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="only lesson N (repeatable; default: every lesson)",
    )


# ------------------------------------------------------------------ each command's arguments


def _build_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 listing what is out of date")


def _sync_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 with a diff if they disagree")
    p.add_argument("--force", action="store_true", help="also replace exercise files you changed (keeps a .bak)")
    p.add_argument(
        "--into", type=Path, default=EXERCISES, metavar="DIR", help="the folder to write (default: exercises/)"
    )


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


def _reset_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", nargs="*", metavar="L.N", help="the task(s) to start over")
    p.add_argument("--lesson", action="append", type=int, default=[], metavar="N", help="every task of lesson N")
    p.add_argument(
        "--impl", type=Path, default=EXERCISES, metavar="DIR", help="the folder you work in (default: exercises/)"
    )


def _nbgrader_extensions_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("state", choices=["off", "on"])
    p.add_argument("--user", action="store_true", help="in your user's Jupyter config, not the environment's")


def _notebooks_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if a notebook is out of date")
    p.add_argument(
        "--into",
        type=Path,
        default=EXERCISES / "notebooks",
        metavar="DIR",
        help="the folder to write (default: exercises/notebooks/)",
    )


def _nbgrader_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the course directory to write")
    _add_lesson_option(p)
    p.add_argument("--force", action="store_true", help="also replace an nbgrader_config.py you changed")


def _batch_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR", help="one sub-folder per submission")
    p.add_argument("--out", type=Path, default=Path("grades.csv"), help="the CSV gradebook (default grades.csv)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once (default: cores)")
    p.add_argument("--timeout", type=float, default=600, help="wall-time cap per submission, seconds (default 600)")
    options.add(p.add_argument, "memory_limit", "check_timeout", "isolation")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _class_report_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results",
        type=Path,
        nargs="+",
        metavar="RESULTS",
        help="results.json files or folders of them: batch's grades.results/, Gradescope's export, PrairieLearn's",
    )
    p.add_argument("--out", type=Path, default=Path("report.html"), help="the page (default report.html)")
    p.add_argument("--csv", type=Path, default=None, help="the table as CSV (default: the page's name, .csv)")
    p.add_argument("--names", action="store_true", help="list who made each mistake (default: anonymous)")
    p.add_argument("--site", default="", metavar="URL", help="the course site's address, to link each section")


def _grade_args(p: argparse.ArgumentParser) -> None:
    options.add(p.add_argument)  # every option of a grading run: what a child grader is given (`command_line`)


def _watch_args(p: argparse.ArgumentParser) -> None:
    options.add(p.add_argument, "impl", "lessons", "check_timeout")
    p.add_argument(
        "--poll", action="store_true", help="look at the files every half second (for drives that raise no file events)"
    )


def _gradescope_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write (default autograder.zip)")


def _gradescope_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (default /autograder)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 540, below Gradescope's default timeout, 600)",
    )


def _prairielearn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("."), help="the course folder to write into (default .)")


def _prairielearn_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path("/grade"), help="PrairieLearn's folder (default /grade)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 100, below the example question's timeout, "
        "120; keep it below the question's)",
    )


def _classroom_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if the committed template is stale")


def _student_edition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="an empty folder to write")


def _no_args(p: argparse.ArgumentParser) -> None:
    pass


# ------------------------------------------------------------------ the commands, grouped by who types them


@dataclass(frozen=True)
class Command:
    """One command as its reader types it (`hint`, `export gradescope`, `dev build`), and what it does.

    `old` is the flat name it had before the commands were grouped by reader: still accepted, never listed."""

    name: str
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    old: str = ""


READERS: dict[str, tuple[Command, ...]] = {
    "learners": (
        Command("hint", "print a task's hints, one more level on each call", _hint_args, _hint),
        Command("watch", "grade, then re-grade each file you save (Ctrl-C to stop)", _watch_args, _watch),
        Command("reset", "start a task over: put its stub back (your version is saved beside it)", _reset_args, _reset),
        Command("tasks", "list every task, its page and the command that grades it", _no_args, _tasks),
        Command(
            "doctor", "check what grading needs on this machine, and say how to fix what is not", _no_args, _doctor
        ),
        Command("grade", "grade a folder and print the scorecard (what batch runs)", _grade_args, _grade),
        Command(
            "nbgrader-extensions",
            "nbgrader's Jupyter menus: off (learners), on (instructors)",
            _nbgrader_extensions_args,
            _nbgrader_extensions,
        ),
    ),
    "instructors": (
        Command(
            "export gradescope",
            "build the Gradescope autograder bundle (a zip)",
            _gradescope_args,
            _gradescope,
            old="gradescope",
        ),
        Command(
            "export prairielearn",
            "write PrairieLearn's grader, grading image and example question",
            _prairielearn_args,
            _prairielearn,
            old="prairielearn",
        ),
        Command(
            "export nbgrader",
            "write an nbgrader course: one master notebook per lesson",
            _nbgrader_args,
            _nbgrader,
            old="nbgrader",
        ),
        Command(
            "export student-edition",
            "copy the course for a class: no solution sources, no hidden checks",
            _student_edition_args,
            _student_edition,
            old="student-edition",
        ),
        Command(
            "export classroom",
            "write the learners' GitHub Classroom workflow (.github/classroom/)",
            _classroom_args,
            _classroom,
            old="classroom",
        ),
        Command("batch", "grade a folder of submissions into a CSV gradebook", _batch_args, _batch),
        Command(
            "class-report",
            "what the class got wrong: an HTML page and a CSV from results files",
            _class_report_args,
            _class_report,
        ),
        Command(
            "run gradescope",
            "grade the submission in Gradescope's container (its bundle runs this)",
            _gradescope_run_args,
            _gradescope_run,
            old="gradescope-run",
        ),
        Command(
            "run prairielearn",
            "grade the submission in PrairieLearn's container (its grader runs this)",
            _prairielearn_run_args,
            _prairielearn_run,
            old="prairielearn-run",
        ),
    ),
    "maintainers": (
        Command(
            "dev build",
            "regenerate every generated file (`--check`: only compare, as CI does)",
            _build_args,
            _build,
            old="build",
        ),
        Command(
            "dev check",
            "check the course's data against its markers, checks, pages and docstrings",
            _no_args,
            _check_course,
            old="check-course",
        ),
        Command("dev sync", "regenerate exercises/ from solutions/ (part of dev build)", _sync_args, _sync, old="sync"),
        Command(
            "dev notebooks",
            "regenerate exercises/notebooks/ (part of dev build)",
            _notebooks_args,
            _notebooks,
            old="notebooks",
        ),
    ),
}

GROUPS = {  # a command of two words is a verb of its group: (what the group's --help says, what its verb names)
    "export": (
        "write what a class runs elsewhere (Gradescope, PrairieLearn, nbgrader, an edition, Classroom)",
        "TARGET",
    ),
    "run": ("grade one submission inside a platform's container: what an exported bundle runs", "PLATFORM"),
    "dev": (
        "the maintainers' commands: regenerate what is made from the single source, check the course's data",
        "COMMAND",
    ),
}


def commands() -> list[Command]:
    """Every command, learners' first, then instructors', then maintainers'."""
    return [command for group in READERS.values() for command in group]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that a mistyped command is answered with the commands --help lists only."""

    def _check_value(self, action, value):
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            shown = [name for name in action.choices if name in getattr(action, "listed", action.choices)]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {', '.join(shown)})")
        super()._check_value(action, value)


def _listing() -> str:
    """The commands as --help lists them, one section per reader (the old flat names are accepted, not listed)."""
    width = max(len(c.name) for c in commands()) + 2
    sections = ["Grading itself is `pytest autograder` (--lesson N, --task L.N). The course's other commands:"]
    for reader, group in READERS.items():
        lines = [f"for {reader}:"] + [f"  {c.name:<{width}}{c.summary}" for c in group]
        sections.append("\n".join(lines))
    sections.append("`python -m autograder COMMAND --help` shows a command's options.")
    return "\n\n".join(sections)


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m autograder",
        usage="%(prog)s COMMAND [options]",
        description=__doc__.splitlines()[0] + "\n\n" + _listing(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS, prog=parser.prog
    )
    top.listed = []
    groups: dict[str, argparse._SubParsersAction] = {}
    for command in commands():
        group, _, verb = command.name.rpartition(" ")
        if group and group not in groups:
            about, metavar = GROUPS[group]
            sub = top.add_parser(group, description=about)
            groups[group] = sub.add_subparsers(dest="verb", required=True, metavar=metavar, prog=sub.prog)
            groups[group].listed = []
            top.listed.append(group)
        into = groups[group] if group else top
        p = into.add_parser(verb, help=command.summary, description=command.summary)
        into.listed.append(verb)
        command.arguments(p)
        p.set_defaults(run=command.run)
        if command.old:  # the name it had before: works as ever, listed nowhere
            p = top.add_parser(command.old, description=f"{command.summary} (now: `{command.name}`)")
            command.arguments(p)
            p.set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
