"""Gradescope: build the autograder bundle, grade a submission the way Gradescope runs it, and write its results.

`results_json` turns a run's `Results` into Gradescope's results.json; as a
pytest plugin (`autograder/conftest.py` loads it) this module writes it at the
end of a run given `--results-json PATH` (a batch's per-submission file too).

`python -m autograder export gradescope --out autograder.zip` writes the zip an
instructor uploads. Gradescope unpacks it into `/autograder/source`, copies its
`run_autograder` to `/autograder/`, and runs its `setup.sh` once to build the
image (on any Ubuntu base image: see SETUP_SH); then `run_autograder` grades
each `/autograder/submission` into `/autograder/results/results.json` through
`grade_submission` below, and always leaves a valid results.json, even when the
grader itself cannot run.
"""

from __future__ import annotations

import tempfile
import zipfile
from dataclasses import asdict
from pathlib import Path

from autograder.export import submissions
from autograder.grading import scorecard
from autograder.grading.results import Results, Status

PLATFORM_TIMEOUT = 600  # seconds: Gradescope's default overall timeout for a submission (at most 40 minutes)
DEADLINE = PLATFORM_TIMEOUT - 60  # seconds: a run still going then is stopped and scored as far as it got

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder image, on the base image the instructor picked.
# Ubuntu 22.04, the default, has Python 3.10: older than the course's 3.11. uv, from PyPI, then provides a CPython
# of its own (a python-build-standalone build, which uv downloads and checks); on an image whose python3 is 3.11 or
# newer (Ubuntu 24.04) uv takes that one. Only what grading needs is installed: the `grading` extra's packages
# (requirements-grading.txt), with torch's CPU build. AUTOGRADER_ROOT lets a test build on a fake /autograder tree.
set -euo pipefail
ROOT="${AUTOGRADER_ROOT:-/autograder}"
step="starting"
trap 'echo "setup.sh: failed while ${step} (line $LINENO); the autograder image is not usable" >&2' ERR

step="installing the system's packages (apt-get)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# python3-venv: a place for uv; bubblewrap: the `sandbox` level, where a container allows namespaces (Gradescope's
# does not: the grader runs at the `user` level there)
apt-get install -y -qq python3 python3-venv bubblewrap >/dev/null

step="installing uv (it provides a Python 3.11 or newer)"
python3 -m venv "$ROOT/tools"
"$ROOT/tools/bin/python" -m pip install --quiet "uv>=0.5"
step="making the grader's Python environment (Python 3.11 or newer)"
# under $ROOT, where the workers' users may read it (uv's default place is root's home, which they may not enter)
export UV_PYTHON_INSTALL_DIR="$ROOT/python"
mkdir -p "$UV_PYTHON_INSTALL_DIR"
"$ROOT/tools/bin/uv" venv --quiet --seed --python ">=3.11" "$ROOT/venv"

step="installing what grading needs (torch's CPU build, pytest, numpy, graphviz)"
# torch from PyTorch's CPU index (the default index has the CUDA build on Linux: 3 GB the grader never uses)
"$ROOT/venv/bin/python" -m pip install --quiet --no-compile -r "$ROOT/source/requirements-grading.txt" \\
    --extra-index-url https://download.pytorch.org/whl/cpu
"$ROOT/venv/bin/python" -m pip install --quiet --no-deps "$ROOT/source"
step="checking that the grader starts"
"$ROOT/venv/bin/python" -c "import torch, pytest, autograder.grading.runner"
# run_autograder runs the grader from source/: its bytecode made once here, not in every submission's container
"$ROOT/venv/bin/python" -m compileall -q "$ROOT/source" >/dev/null

step="protecting the grader's files"
# The learner's code runs as an unprivileged user of its own: nothing of the grader may be writable by it.
chown -R root:root "$ROOT/source" "$ROOT/run_autograder" "$ROOT/venv" "$ROOT/python" "$ROOT/tools"
chmod -R go-w "$ROOT/source" "$ROOT/venv" "$ROOT/python" "$ROOT/tools"
# Where the kernel forbids namespaces, workers still run as users of their own: the reference and the hidden
# checks must not be readable to them (everything else in the venv, such as torch, stays readable).
chmod -R o-rwx "$ROOT/source"
"$ROOT/venv/bin/python" - <<'PY'
import importlib.util, os, subprocess
for name in ("autograder", "solutions"):
    for folder in importlib.util.find_spec(name).submodule_search_locations:
        subprocess.run(["chmod", "-R", "o-rwx", folder], check=True)
PY
chmod 0755 "$ROOT/run_autograder"
echo "setup.sh: the grader is ready ($("$ROOT/venv/bin/python" --version))"
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT lets a test run it on a fake /autograder tree.
# The whole script is one compound command: bash has read all of it before it starts running it.
{
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
mkdir -p "$ROOT/results"
cd "$ROOT/source" && "$PYTHON" -m autograder run gradescope --root "$ROOT" "$@"
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"score": 0, "output": "The autograder could not run; please tell your instructor.", "tests": []}\\n' \\
        > "$ROOT/results/results.json"
fi
exit 0
}
"""


def build_bundle(out: Path) -> Path:
    """Write the zip Gradescope asks for. Gradescope unpacks it into /autograder/source, copies `run_autograder`
    to /autograder and runs `setup.sh` there: so the scripts, the grader and its requirements are all at the top."""
    with tempfile.TemporaryDirectory() as tmp:
        staging = submissions.copy_grader(Path(tmp) / "source")
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            for name, text in (("setup.sh", SETUP_SH), ("run_autograder", RUN_AUTOGRADER)):
                info = zipfile.ZipInfo(name)
                info.external_attr = 0o755 << 16  # executable, as Gradescope requires
                zf.writestr(info, text)
            for path in sorted(staging.rglob("*")):
                if path.is_file():
                    zf.write(path, path.relative_to(staging))
    return out


def grade_submission(root: Path, deadline: float = DEADLINE) -> dict:
    """Grade `root/submission` and write `root/results/results.json`; return what was written.

    The learner's code runs only in the runner's sandboxed workers, which are
    all gone before the results are written; whatever happens, a valid file is.
    What the isolation level means in Gradescope's container goes to the
    instructor alone: the stdout Gradescope keeps (hidden from students) and
    `extra_data`.
    """
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    graded, notes = submissions.grade_staged(root / "submission", root, "gradescope", Path("/autograder"), deadline)
    if graded is None:
        results = {
            "score": 0,
            "output": code_block(
                "\n".join(
                    [
                        *notes,
                        "The grader could not grade this submission; please tell your instructor.",
                    ]
                )
            ),
            "output_format": "md",
            "tests": [],
        }
    else:
        results = results_json(graded, notes)
        print(results["extra_data"]["platform_note"])
    scorecard.write_json(results_path, results)
    return results


def code_block(text: str) -> str:
    """`text` as a Markdown code block (each line indented four spaces): shown in a fixed-width font, aligned, and
    never read as Markdown or HTML, whatever the learner's code printed."""
    return "\n".join(f"    {line}" for line in text.splitlines())


def results_json(results: Results, notes: list[str] = ()) -> dict:
    """Gradescope's results.json: one entry per task, numbered by task id; hidden checks show name and status only.

    Only the fields of Gradescope's specification are at the top; the rest is in `extra_data`. The scorecard is a
    Markdown code block (`output_format: md`), each test's output plain text in Gradescope's <pre> (`text`).
    Bonus tasks are extra credit: each is a test worth `max_score: 0` whose `score` is the bonus points earned,
    and the top-level `score` (which overrides the sum of the tests, in Gradescope's words) adds them to the
    graded points, so a learner can go above the assignment's points: the full marks without bonus,
    `extra_data.max_score`, which is what the instructor sets as the assignment's autograder points.
    """
    tasks, isolation = results.tasks, results.isolation
    card = scorecard.text(results, hide_hidden=True)
    # A grade (on Gradescope) counts a check that could not be graded against the full maximum, so that no machine
    # fault can raise a share; the instructor finds them named in extra_data. A learner's own run leaves them out.
    void = results.void_points if results.platform else 0
    tests = []
    for t in tasks:
        lines = scorecard.task_report(t)
        tests.append(
            {
                "name": f"{t.task.id} {t.task.title}" + (" (bonus)" if t.task.bonus else ""),
                "name_format": "text",
                "number": t.task.id,
                "score": t.earned,
                "max_score": 0 if t.task.bonus else t.points + (t.void_points if void else 0),
                "status": "passed" if t.status == Status.PASSED else "failed",
                "output": "\n".join(lines),
                "output_format": "text",
                **({"tags": tags} if (tags := scorecard.task_tags(t)) else {}),
            }
        )
    return {
        "score": results.score + results.bonus,
        "output": code_block("\n".join([*notes, "", card]) if notes else card),
        "output_format": "md",
        "test_output_format": "text",
        "test_name_format": "text",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "max_score": results.max_score + void,
            "status": {t.task.id: t.status for t in tasks},
            "causes": {t.task.id: t.causes for t in tasks if t.causes},  # the mistakes named (course/causes.py)
            "isolation": isolation,
            **({"platform_note": scorecard.platform_note(results)} if results.platform else {}),
            "memory_limit": results.memory_limit,
            "fresh_inputs": results.fresh_inputs,
            "bonus": results.bonus,
            "bonus_max": results.bonus_max,
            "could_not_be_graded": results.void_points,  # points no one earned here: see the tests' tags
            "void_checks": [f"{r.task} {r.description}" for t in tasks for r in t.tests if not r.counted],
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
    if path and GRADER in session.config.stash and not session.config.option.collectonly:
        scorecard.write_json(Path(path), results_json(session.config.stash[GRADER].results))
