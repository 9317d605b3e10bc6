"""PrairieLearn: build the external grader's bundle, and grade a submission the way PrairieLearn runs it.

PrairieLearn's external grading runs a container per submission with the
submitted files in `/grade/student/` and reads `/grade/results/results.json`:
`gradable`, `score` from 0 to 1, a `message`, and `tests` with their `points`,
`max_points`, `message` and `output`. `python -m autograder prairielearn --out
DIR` writes the course's grader under `DIR/serverFilesCourse/backprop/` with its
entrypoint `run.sh` (`python -m autograder prairielearn-run --root /grade`),
to name in a question's `externalGradingOptions`. The grader that cannot run
still writes results: `gradable: false`, so PrairieLearn does not count it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from autograder.course.regions import REPO
from autograder.export import submissions
from autograder.export.gradescope import SOURCE_PARTS
from autograder.grading.results import Results

RUN_SH = """#!/usr/bin/env bash
# PrairieLearn's entrypoint for every submission (externalGradingOptions.entrypoint). GRADE_ROOT lets a test run it
# on a fake /grade tree. It always leaves a results.json: PrairieLearn counts none from a grader that could not run.
ROOT="${GRADE_ROOT:-/grade}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
mkdir -p "$ROOT/results"
cd "$HERE/source" && "$PYTHON" -m autograder prairielearn-run --root "$ROOT"
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"gradable": false, "message": "The autograder could not run; please tell your instructor."}\\n' \\
        > "$ROOT/results/results.json"
fi
exit 0
"""


def build_bundle(out: Path) -> Path:
    """Write the course's grader for PrairieLearn's `serverFilesCourse`: `run.sh` and the grader under `source/`."""
    bundle = out / "serverFilesCourse" / "backprop"
    if bundle.exists():
        shutil.rmtree(bundle)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.bak")
    for part in SOURCE_PARTS:
        src = REPO / part
        if src.is_dir():
            shutil.copytree(src, bundle / "source" / part, ignore=ignore)
        else:
            (bundle / "source").mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, bundle / "source" / part)
    run = bundle / "run.sh"
    run.write_text(RUN_SH)
    run.chmod(0o755)
    return bundle


def results_json(results: Results, notes: list[str] = ()) -> dict:
    """PrairieLearn's results.json: the graded tasks' share of full marks, one test per task (bonus ones at 0)."""
    from autograder.grading import scorecard

    tests = []
    for t in results.tasks:
        tests.append(
            {
                "name": f"{t.task.id} {t.task.title}" + (" (bonus)" if t.task.bonus else ""),
                "points": 0 if t.task.bonus else t.earned,
                "max_points": 0 if t.task.bonus else t.points,
                "message": t.status,
                "output": "\n".join(scorecard.task_report(t)),
            }
        )
    score = results.score / results.max_score if results.max_score else 0.0
    return {
        "gradable": True,
        "score": score,
        "message": "\n".join(notes),
        "output": scorecard.text(results, hide_hidden=True),
        "tests": tests,
    }


def grade_submission(root: Path) -> dict:
    """Grade `root/student` and write `root/results/results.json`; return what was written."""
    from autograder.grading import scorecard

    path = root / "results" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    graded, notes = submissions.grade_staged(root / "student", root)
    if isinstance(graded, BaseException):
        results = {
            "gradable": False,
            "message": f"The grader could not grade this submission ({type(graded).__name__}); "
            "please tell your instructor.",
        }
    else:
        results = results_json(graded, notes)
    scorecard.write_json(path, results)
    return results
