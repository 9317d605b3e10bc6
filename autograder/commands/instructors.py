"""The instructors' commands: `export gradescope|prairielearn|nbgrader|student-edition|classroom`, `batch`,
`class-report`, and `run gradescope|prairielearn`, what an exported bundle runs in the platform's container.

Each command's handler (`_gradescope`) and the function that declares its arguments (`_gradescope_args`), which
`autograder.__main__.READERS` names. A handler imports what it runs inside itself, so that the command line
starts fast.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from autograder.commands import missing_instructor_packages
from autograder.grading import options


def _gradescope(args: argparse.Namespace) -> int:
    from autograder.export import gradescope

    print(f"wrote {gradescope.build_bundle(args.out)}: upload it as the assignment's autograder")
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


def _nbgrader(args: argparse.Namespace) -> int:
    from autograder.export import nbgrader_course

    if missing_instructor_packages("export nbgrader", "nbgrader"):
        return 1
    written, kept = nbgrader_course.write_nbgrader_course(args.out, args.lesson or None, force=args.force)
    for path in written:
        print(f"wrote {path}")
    for path in kept:
        print(
            f"kept {path}: it differs from the generated one (your settings?); use --force to replace it",
            file=sys.stderr,
        )
    print(f"next: cd {args.out} && nbgrader generate_assignment lesson01   (run nbgrader from the course root)")
    return 0


def _student_edition(args: argparse.Namespace) -> int:
    from autograder.export import edition

    try:
        print(f"wrote the student edition to {edition.export(args.out)}")
    except FileExistsError as exc:
        print(exc, file=sys.stderr)
        return 2
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


def _batch(args: argparse.Namespace) -> int:
    from autograder.grading import batch

    if missing_instructor_packages("batch", "tqdm"):
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


def _gradescope_run(args: argparse.Namespace) -> int:
    from autograder.export import gradescope

    results = gradescope.grade_submission(args.root, args.deadline or gradescope.DEADLINE)
    full = results.get("extra_data", {}).get("max_score", "?")
    print(f"score {results.get('score')} of {full} -> {args.root / 'results/results.json'}")
    return 0


def _prairielearn_run(args: argparse.Namespace) -> int:
    from autograder.export import prairielearn

    results = prairielearn.grade_submission(args.root, args.deadline or prairielearn.DEADLINE)
    print(f"score {results.get('score')} (gradable: {results.get('gradable')}) -> {args.root / 'results/results.json'}")
    return 0


# ------------------------------------------------------------------ each command's arguments


def _gradescope_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("autograder.zip"), help="the zip to write (default autograder.zip)")


def _prairielearn_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("."), help="the course folder to write into (default .)")


def _add_lesson_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lesson",
        action="append",
        type=int,
        default=[],
        metavar="N",
        help="only lesson N (repeatable; default: every lesson)",
    )


def _nbgrader_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="the course directory to write")
    _add_lesson_option(p)
    p.add_argument("--force", action="store_true", help="also replace an nbgrader_config.py you changed")


def _student_edition_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, required=True, help="an empty folder to write")


def _classroom_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--check", action="store_true", help="only compare; exit 1 if the committed template is stale")


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


def _gradescope_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path("/autograder"), help="Gradescope's folder (default /autograder)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 540, below Gradescope's default timeout, 600)",
    )


def _prairielearn_run_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--root", type=Path, default=Path("/grade"), help="PrairieLearn's folder (default /grade)")
    p.add_argument(
        "--deadline",
        type=float,
        help="seconds: stop then, and score what finished (default: 100, below the example question's timeout, "
        "120; keep it below the question's)",
    )
