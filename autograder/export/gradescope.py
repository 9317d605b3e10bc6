"""Gradescope: build the autograder bundle, grade a submission the way Gradescope runs it, and write its results.

`results_json` turns a run's `Results` into Gradescope's results.json; as a
pytest plugin (`autograder/conftest.py` loads it) this module writes it at the
end of a run given `--results-json PATH` (a batch's per-submission file too).

`python -m autograder gradescope --out autograder.zip` writes a zip with
`setup.sh` (installs the course's grader), `run_autograder` (grades
`/autograder/submission` into `/autograder/results/results.json`) and the
grader's source. The bundle's `run_autograder` calls `grade_submission` below;
it always leaves a valid results.json, even when the grader itself cannot run.
"""

from __future__ import annotations

import shutil
import tempfile
import zipfile
from dataclasses import asdict
from pathlib import Path

from autograder.course.regions import REPO
from autograder.export import submissions
from autograder.grading import scorecard
from autograder.grading.results import Results, Status

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
apt-get update -qq
# bubblewrap: the `sandbox` level, where the container allows namespaces (Docker's default does not: `user`)
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip python3-venv bubblewrap >/dev/null
python3 -m venv /autograder/venv
# torch is pinned to 2.13.0 by the course; point pip at a CPU-only index (PIP_EXTRA_INDEX_URL) to keep the image small.
/autograder/venv/bin/pip install --quiet /autograder/source
# The learner's code runs as an unprivileged user of its own: nothing of the grader may be writable by it.
chown -R root:root /autograder/source /autograder/run_autograder /autograder/setup.sh /autograder/venv
chmod -R go-w /autograder/source /autograder/venv
# Where the kernel forbids namespaces, workers still run as users of their own: the reference and the hidden
# checks must not be readable to them (everything else in the venv, such as torch, stays readable).
chmod -R o-rwx /autograder/source
/autograder/venv/bin/python - <<'PY'
import importlib.util, os, subprocess
for name in ("autograder", "solutions"):
    for folder in importlib.util.find_spec(name).submodule_search_locations:
        subprocess.run(["chmod", "-R", "o-rwx", folder], check=True)
PY
chmod 0755 /autograder/run_autograder
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT lets a test run it on a fake /autograder tree.
# The whole script is one compound command: bash has read all of it before it starts running it.
{
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
mkdir -p "$ROOT/results"
# The container grades this one submission. Gradescope's Docker forbids namespaces, so workers run at the `user`
# level, each as a user of its own: with no folder anyone may write, no data passes between them (a hidden
# check's inputs into a visible message) and nothing fills the disk. The grader itself is root: it still writes.
# Only in Gradescope's container itself (a test on a fake tree names stand-ins, or nothing: never this machine's).
if [ -z "${AUTOGRADER_ROOT:-}" ]; then SHARED="/tmp /var/tmp /dev/shm /run/lock /var/lock /dev/mqueue"; fi
for shared in ${AUTOGRADER_SHARED_FOLDERS:-${SHARED:-}}; do
    if [ -d "$shared" ] && [ ! -L "$shared" ]; then chmod o-w "$shared"; fi
done
cd "$ROOT/source" && "$PYTHON" -m autograder gradescope-run --root "$ROOT"
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"score": 0, "output": "The autograder could not run; please tell your instructor.", "tests": []}\\n' \\
        > "$ROOT/results/results.json"
fi
exit 0
}
"""

SOURCE_PARTS = ("autograder", "solutions", "exercises", "pyproject.toml", "README.md")


def build_bundle(out: Path) -> Path:
    """Write the zip Gradescope asks for: setup.sh and run_autograder at the top, the grader under source/."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.bak")
    with tempfile.TemporaryDirectory() as tmp:
        staging = Path(tmp)
        for part in SOURCE_PARTS:
            src = REPO / part
            if src.is_dir():
                shutil.copytree(src, staging / "source" / part, ignore=ignore)
            else:
                shutil.copy2(src, staging / "source" / part)
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope requires
                zf.writestr(info, text)
            for path in sorted((staging / "source").rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(staging))
    return out


def grade_submission(root: Path) -> dict:
    """Grade `root/submission` and write `root/results/results.json`; return what was written.

    The learner's code runs only in the runner's sandboxed workers, which are
    all gone before the results are written; whatever happens, a valid file is.
    """
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    graded, notes = submissions.grade_staged(root / "submission", root)
    if isinstance(graded, BaseException):
        results = {
            "score": 0,
            "tests": [],
            "output": f"The grader could not grade this submission ({type(graded).__name__}); "
            "please tell your instructor.",
        }
    else:
        results = results_json(graded)
    if notes:
        results["output"] = "\n".join(notes) + "\n\n" + results.get("output", "")
    scorecard.write_json(results_path, results)
    return results


def results_json(results: Results) -> dict:
    """Gradescope's results.json: one entry per task, numbered by task id; hidden checks show name and status only.

    Bonus tasks are extra credit: each is a test worth `max_score: 0` whose
    `score` is the bonus points earned, and the top-level `score` (which
    Gradescope takes over the sum of the tests) adds them to the graded points,
    so it can go above `max_score`, the full marks without bonus.
    """
    tasks, isolation = results.tasks, results.isolation
    card = scorecard.text(results, hide_hidden=True)
    tests = []
    for t in tasks:
        lines = scorecard.task_report(t)
        tests.append(
            {
                "name": f"{t.task.id} {t.task.title}" + (" (bonus)" if t.task.bonus else ""),
                "number": t.task.id,
                "score": t.earned,
                "max_score": 0 if t.task.bonus else t.points,
                "status": "passed" if t.status == Status.PASSED else "failed",
                "output": "\n".join(lines),
                **({"tags": tags} if (tags := scorecard.task_tags(t)) else {}),
            }
        )
    return {
        "score": results.score + results.bonus,
        "max_score": results.max_score,
        "output": card,
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "status": {t.task.id: t.status for t in tasks},
            "isolation": isolation,
            "memory_limit": results.memory_limit,
            "fresh_inputs": results.fresh_inputs,
            "bonus": results.bonus,
            "bonus_max": results.bonus_max,
            "could_not_be_graded": results.void_points,  # points left out of score and max_score: see the tests' tags
            "spawned_because": results.spawned_because,
            "results": [
                {**asdict(r), "message": "" if r.hidden and r.counted else r.message} for t in tasks for r in t.tests
            ],
        },
    }


def pytest_sessionfinish(session) -> None:
    """`--results-json PATH`: Gradescope's results.json of the run, once the grader's hooks have settled it."""
    from autograder.grading.plugin import GRADER, OPTIONS

    path = session.config.stash[OPTIONS].results_json
    if path and GRADER in session.config.stash:
        scorecard.write_json(Path(path), results_json(session.config.stash[GRADER].results))
