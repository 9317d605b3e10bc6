"""The course's command line: `python -m autograder COMMAND`.

- `build [--check]` regenerates (or checks) every generated file: stubs, notebooks, task lists, workflow template;
- `check-course` says where the course's data (`autograder/course/data/`) and the markers, checks, pages and
  docstrings it names disagree, or what they leave out;
- `grade [--impl DIR]` grades with the one runner and prints the scorecard (what batch and Gradescope run);
- `watch [--lesson N]` re-grades the tasks of each file you save and shows your progress;
- `sync [--check] [--force]` regenerates `exercises/` from `solutions/` (part of `build`);
- `hint L.N` prints a task's hints, one more level on each call (`--all`: every level; `--reset`: from level 1),
  after the hint of the check that failed in the last run of that task's code, if one did (`grading/lastrun.py`);
  `tasks` lists every task with its page and grading command;
- `reset L.N` (or `--lesson N`) puts a task's stub back in your file, and saves your version beside it first;
- `nbgrader-extensions off|on` hides nbgrader's Jupyter menus from learners (or shows them);
- `notebooks [--check]` regenerates the learner notebooks of `exercises/notebooks/` (part of `build`);
- `nbgrader --out DIR` writes an nbgrader course (master notebooks, nbgrader_config.py);
- `batch SUBMISSIONS_DIR --out grades.csv` grades a whole class into a CSV gradebook;
- `class-report RESULTS... --out report.html` writes what the class got wrong (and a CSV of the same table);
- `gradescope --out autograder.zip` builds the Gradescope bundle (`gradescope-run` is what it runs);
- `prairielearn --out COURSE` writes PrairieLearn's external grader (`prairielearn-run` is what it runs);
- `classroom [--check]` writes the learners' GitHub Classroom workflow template (part of `build`);
- `student-edition --out DIR` copies the course without solution sources and hidden checks.
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import os
import signal
import sys
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
                f"exercises/ is out of date with solutions/ ({len(diffs)} file(s)); run: python -m autograder sync",
                file=sys.stderr,
            )
            return 1
        print("exercises/ matches solutions/")
        return 0
    written, refused = sync.sync(args.into, force=args.force)
    for name in written:
        print(f"wrote {args.into / name}")
    for name in refused:
        print(
            f"kept {args.into / name}: it differs from what sync last wrote (your work?); "
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
            print("run: python -m autograder notebooks", file=sys.stderr)
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

    if _missing_instructor_packages("nbgrader", "nbgrader"):
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
    print("build and push the grading image, then copy the two course folders into your course (README: PrairieLearn)")
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
            print(f"{classroom.TEMPLATE} is out of date; run: python -m autograder build", file=sys.stderr)
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
        print("check-course checks the course's sources: run it in the full repository", file=sys.stderr)
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
            "use `python -m autograder sync --force` to replace it (a .bak copy is kept)",
            file=sys.stderr,
        )
    if args.check and changed:
        print("generated files are out of date; run: python -m autograder build", file=sys.stderr)
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


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("build", help="regenerate every generated file (stubs, notebooks, task lists, templates)")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 listing what is out of date")
    p.set_defaults(run=_build)
    p = commands.add_parser("check-course", help="check the course's data against its markers, checks and pages")
    p.set_defaults(run=_check_course)
    p = commands.add_parser("sync", help="regenerate exercises/ from solutions/")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 with a diff if they disagree")
    p.add_argument("--force", action="store_true", help="also replace exercise files you changed (keeps a .bak)")
    p.add_argument(
        "--into", type=Path, default=EXERCISES, metavar="DIR", help="the folder to write (default: exercises/)"
    )
    p.set_defaults(run=_sync)
    p = commands.add_parser("hint", help="print a task's hints, one more level on each call")
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
    p.set_defaults(run=_hint)
    p = commands.add_parser("reset", help="start a task over: put its stub back (your version is saved beside it)")
    p.add_argument("task", nargs="*", metavar="L.N", help="the task(s) to start over")
    p.add_argument("--lesson", action="append", type=int, default=[], metavar="N", help="every task of lesson N")
    p.add_argument(
        "--impl", type=Path, default=EXERCISES, metavar="DIR", help="the folder you work in (default: exercises/)"
    )
    p.set_defaults(run=_reset)
    p = commands.add_parser("nbgrader-extensions", help="nbgrader's Jupyter menus: off (learners), on (instructors)")
    p.add_argument("state", choices=["off", "on"])
    p.add_argument("--user", action="store_true", help="in your user's Jupyter config, not the environment's")
    p.set_defaults(run=_nbgrader_extensions)
    p = commands.add_parser("tasks", help="list every task")
    p.set_defaults(run=_tasks)
    p = commands.add_parser("notebooks", help="regenerate the learner notebooks of exercises/notebooks/")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if a notebook is out of date")
    p.add_argument(
        "--into",
        type=Path,
        default=EXERCISES / "notebooks",
        metavar="DIR",
        help="the folder to write (default: exercises/notebooks/)",
    )
    p.set_defaults(run=_notebooks)
    p = commands.add_parser("nbgrader", help="write an nbgrader course: one master notebook per lesson")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the course directory to write")
    _add_lesson_option(p)
    p.add_argument("--force", action="store_true", help="also replace an nbgrader_config.py you changed")
    p.set_defaults(run=_nbgrader)
    p = commands.add_parser("batch", help="grade a folder of submissions into a CSV gradebook")
    p.add_argument("submissions", type=Path, metavar="SUBMISSIONS_DIR", help="one sub-folder per submission")
    p.add_argument("--out", type=Path, default=Path("grades.csv"), help="the CSV gradebook (default grades.csv)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="submissions graded at once (default: cores)")
    p.add_argument("--timeout", type=float, default=600, help="wall-time cap per submission, seconds (default 600)")
    options.add(p.add_argument, "memory_limit", "check_timeout", "isolation")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(run=_batch)
    p = commands.add_parser("class-report", help="what the class got wrong: an HTML page and a CSV from results files")
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
    p.set_defaults(run=_class_report)
    p = commands.add_parser("grade", help="grade a folder with the one runner (what batch and Gradescope run)")
    options.add(p.add_argument)  # every option of a grading run: what a child grader is given (`command_line`)
    p.set_defaults(run=_grade)
    p = commands.add_parser("watch", help="grade, then re-grade each file you save (Ctrl-C to stop)")
    options.add(p.add_argument, "impl", "lessons", "check_timeout")
    p.add_argument(
        "--poll", action="store_true", help="look at the files every half second (for drives that raise no file events)"
    )
    p.set_defaults(run=_watch)
    p = commands.add_parser("doctor", help="check what grading needs on this machine, and say how to fix what is not")
    p.set_defaults(run=_doctor)
    p = commands.add_parser("gradescope", help="build the Gradescope autograder bundle (a zip)")
    p.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write (default autograder.zip)")
    p.set_defaults(run=_gradescope)
    p = commands.add_parser("gradescope-run", help="grade ROOT/submission into ROOT/results/results.json (the bundle)")
    p.add_argument("--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (default /autograder)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 540, below Gradescope's default timeout, 600)",
    )
    p.set_defaults(run=_gradescope_run)
    p = commands.add_parser("prairielearn", help="write PrairieLearn's grader, grading image and example question")
    p.add_argument("--out", type=Path, default=Path("."), help="the course folder to write into (default .)")
    p.set_defaults(run=_prairielearn)
    p = commands.add_parser("prairielearn-run", help="grade ROOT/student into ROOT/results/results.json (the bundle)")
    p.add_argument("--root", type=Path, default=Path("/grade"), help="PrairieLearn's folder (default /grade)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 100, below the example question's timeout, "
        "120; keep it below the question's)",
    )
    p.set_defaults(run=_prairielearn_run)
    p = commands.add_parser("classroom", help="write the learners' Classroom workflow template (.github/classroom/)")
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if the committed template is stale")
    p.set_defaults(run=_classroom)
    p = commands.add_parser("student-edition", help="copy the course for a class: no solution sources, no hidden tests")
    p.add_argument("--out", type=Path, required=True, help="an empty folder to write")
    p.set_defaults(run=_student_edition)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
