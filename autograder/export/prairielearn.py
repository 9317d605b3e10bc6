"""PrairieLearn: write what a course needs to grade the exercises there, and grade a submission as PrairieLearn does.

PrairieLearn's external grading runs a container of the question's image per
submission, with the question's `serverFilesCourse` folders under
`/grade/serverFilesCourse/`, the submitted files in `/grade/student/`, and reads
`/grade/results/results.json`: `gradable`, `score` from 0 to 1, a `message`, and
`tests` with their `points`, `max_points`, `message` and `output` (under 1 MB). Each test also carries
`causes` (the mistakes its checks named, ids of `course/causes.py`) and `waits_for`, which PrairieLearn keeps
and does not show, for the class report (`export/class_report.py`).

`python -m autograder export prairielearn --out DIR` writes, for an instructor to copy
into their course repository:

- `DIR/serverFilesCourse/backprop/`: the grader and its bytecode, with its entrypoint `run.sh`
  (`python3 -m autograder run prairielearn --root /grade`);
- `DIR/grading-image/`: the `Dockerfile` of the grading image (a slim Python
  with torch's CPU build, pytest, numpy and graphviz: the `grading` extra) and
  the requirements it installs;
- `DIR/questions/backprop/`: an example question, `info.json` (its
  `externalGradingOptions`) and `question.html` (an upload for each graded file).

A grader that cannot run still writes results: `gradable: false`, so
PrairieLearn does not count the attempt.
"""

from __future__ import annotations

import compileall
import json
import py_compile
import shutil
import uuid
from pathlib import Path

from autograder.course import registry
from autograder.export import submissions
from autograder.grading import scorecard
from autograder.grading.results import Results

FOLDER = "backprop"  # the grader's folder under serverFilesCourse/, and the example question's
IMAGE = "YOUR-DOCKER-HUB-NAME/backprop-grader"  # the instructor's image, built from grading-image/Dockerfile
TIMEOUT = 120  # seconds: the question's externalGradingOptions.timeout (the PrairieLearn guide page; default 30)
DEADLINE = TIMEOUT - 20  # seconds: a run still going then is stopped and scored as far as it got
PYTHON_IMAGE = "python:3.11-slim"  # the Python CI grades with; torch's CPU wheels exist for it

RUN_SH = """#!/usr/bin/env bash
# PrairieLearn's entrypoint for every submission (externalGradingOptions.entrypoint), run as root in the
# question's image. GRADE_ROOT lets a test run it on a fake /grade tree. It always leaves a results.json:
# PrairieLearn counts none from a grader that could not run.
ROOT="${GRADE_ROOT:-/grade}"
HERE="$(cd "$(dirname "$0")" && pwd)"
PYTHON="${AUTOGRADER_PYTHON:-python3}"
mkdir -p "$ROOT/results"
# The learner's code runs as users of their own: the reference and the hidden checks must be out of their reach.
chmod -R o-rwx "$HERE/source"
cd "$HERE/source" && "$PYTHON" -m autograder run prairielearn --root "$ROOT" "$@"
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"gradable": false, "message": "The autograder could not run; please tell your instructor."}\\n' \\
        > "$ROOT/results/results.json"
fi
exit 0
"""

DOCKERFILE = f"""# The grading image of the course's PrairieLearn questions: a slim Python with what grading needs.
# Build and push it (docker build -t {IMAGE} . && docker push {IMAGE}), then name it in each question's
# externalGradingOptions.image. The grader itself comes with each job, from serverFilesCourse/{FOLDER}/.
FROM {PYTHON_IMAGE}
COPY {submissions.REQUIREMENTS} /tmp/{submissions.REQUIREMENTS}
# torch from PyTorch's CPU index: the default index has the CUDA build on Linux (3 GB the grader never uses)
RUN python3 -m pip install --no-cache-dir -r /tmp/{submissions.REQUIREMENTS} \\
        --extra-index-url https://download.pytorch.org/whl/cpu \\
    && rm /tmp/{submissions.REQUIREMENTS} \\
    && python3 -c "import torch, pytest, numpy, graphviz"
# PrairieLearn runs the container as this image's user: root, which the grader needs to run each check as a user
# of its own (the `user` isolation level: PrairieLearn's containers allow no user namespaces).
"""


def build_bundle(out: Path) -> Path:
    """Write the grader (`serverFilesCourse/backprop/`), the grading image and the example question under `out`."""
    bundle = out / "serverFilesCourse" / FOLDER
    for folder in (bundle, out / "grading-image", out / "questions" / FOLDER):
        if folder.exists():
            shutil.rmtree(folder)
    submissions.copy_grader(bundle / "source")
    compile_bytecode(bundle / "source")
    run = bundle / "run.sh"
    run.write_text(RUN_SH)
    run.chmod(0o755)
    image = out / "grading-image"
    image.mkdir(parents=True)
    (image / "Dockerfile").write_text(DOCKERFILE)
    shutil.copy2(bundle / "source" / submissions.REQUIREMENTS, image / submissions.REQUIREMENTS)
    question = out / "questions" / FOLDER
    question.mkdir(parents=True)
    (question / "info.json").write_text(json.dumps(question_info(), indent=2) + "\n")
    (question / "question.html").write_text(question_html())
    return bundle


def compile_bytecode(source: Path) -> None:
    """The grader's bytecode, shipped beside its sources: `serverFilesCourse` comes afresh with every job (and may be
    read-only), so without it each job's processes compile the whole grader again, a second or so of CPU.

    Hash-checked (`CHECKED_HASH`): a copy whose times change (a git checkout) still uses it, and an edited source
    is compiled anew. Compiled by this Python; the image's own, if another version, ignores it (Dockerfile: 3.11).
    """
    mode = py_compile.PycInvalidationMode.CHECKED_HASH
    compileall.compile_dir(source, quiet=1, invalidation_mode=mode, workers=1)


def question_info() -> dict:
    """The example question's info.json: graded externally, in the course's image, by `run.sh`."""
    return {
        "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, "backprop-course/prairielearn/exercises")),
        "title": "Backpropagation from scratch: the course's exercises",
        "topic": "Backpropagation",
        "tags": ["code", "autograder"],
        "type": "v3",
        "singleVariant": True,
        "gradingMethod": "External",
        "externalGradingOptions": {
            "enabled": True,
            "image": IMAGE,
            "serverFilesCourse": [f"{FOLDER}/"],
            # the grader's own deadline, below the timeout: a run that reaches it is scored as far as it got
            "entrypoint": f"/grade/serverFilesCourse/{FOLDER}/run.sh --deadline {DEADLINE}",
            "timeout": TIMEOUT,
        },
    }


def question_html() -> str:
    """The example question's page: what to submit, an upload for each graded file (any may be left out: it is
    graded as its stub), and PrairieLearn's own elements for the results."""
    names = ", ".join(submissions.expected_files())
    return f"""<pl-question-panel>
  <p>
    Upload the files of <code>exercises/</code> that you have worked on. A file you leave out is graded as its
    empty stub, so you can hand in one lesson at a time.
  </p>
  <p>
    Before you submit, grade your work on your own machine with <code>pytest autograder</code>: this question
    runs the same checks, also on numbers drawn for your submission alone.
  </p>
  <pl-file-upload optional-file-names="{names}"></pl-file-upload>
</pl-question-panel>

<pl-submission-panel>
  <pl-external-grader-results></pl-external-grader-results>
  <pl-file-preview></pl-file-preview>
</pl-submission-panel>
"""


def results_json(results: Results, notes: list[str] = ()) -> dict:
    """PrairieLearn's results.json: the graded tasks' share of full marks, one test per task (bonus ones at 0)."""
    tests = []
    for t in results.tasks:
        tests.append(
            {
                "name": f"{t.task.id} {t.task.title}" + (" (bonus)" if t.task.bonus else ""),
                "points": 0 if t.task.bonus else t.earned,
                "max_points": 0 if t.task.bonus else t.points,
                "message": t.status,
                "output": "\n".join(scorecard.task_report(t)),
                "causes": t.causes,  # the mistakes its checks named: ids of course/causes.py (for the class report)
                "waits_for": t.waits_for,  # the task it waits for, where it has nothing wrong of its own
            }
        )
    if results.void_points:  # a machine fault: no share of what could be graded, and no attempt charged
        void = sorted({r.task for r in results.tests if not r.counted}, key=registry.sort_key)
        return {
            "gradable": False,
            "message": f"{results.void_points} points of checks could not be graded in this grading container "
            f"(tasks {', '.join(void)}): this attempt is not counted; please submit again, and tell your instructor "
            "if it happens again.",
            "format_errors": [f"task {t}: could not be graded here" for t in void],
            "output": scorecard.text(results, hide_hidden=True),
        }
    score = results.score / results.max_score if results.max_score else 0.0
    return {
        "gradable": True,
        "score": score,
        "message": "\n".join(notes),
        "output": scorecard.text(results, hide_hidden=True),
        "tests": tests,
    }


def grade_submission(root: Path, deadline: float = DEADLINE) -> dict:
    """Grade `root/student` and write `root/results/results.json`; return what was written.

    What the isolation level means in PrairieLearn's container goes to the job's log (its standard output, which
    the course's staff read), not to the student.
    """
    path = root / "results" / "results.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    graded, notes = submissions.grade_staged(root / "student", root, "prairielearn", Path("/grade"), deadline)
    if graded is None:
        results = {
            "gradable": False,
            "message": "The grader could not grade this submission; please tell your instructor.",
        }
    else:
        results = results_json(graded, notes)
        print(scorecard.platform_note(graded))
    scorecard.write_json(path, results)
    return results
