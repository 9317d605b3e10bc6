"""Gradescope: build the autograder bundle, and grade a submission the way Gradescope runs it.

`python -m autograder gradescope --out autograder.zip` writes a zip with
`setup.sh` (installs the course's grader), `run_autograder` (grades
`/autograder/submission` into `/autograder/results/results.json`) and the
grader's source. The bundle's `run_autograder` calls `grade_submission` below;
it always leaves a valid results.json, even when the grader itself cannot run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from autograder.course.regions import EXERCISES, REPO, solution_files

SETUP_SH = """#!/usr/bin/env bash
# Gradescope runs this once, when it builds the autograder image.
set -euo pipefail
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-pip python3-venv >/dev/null
python3 -m venv /autograder/venv
# torch is pinned to 2.13.0 by the course; point pip at a CPU-only index (PIP_EXTRA_INDEX_URL) to keep the image small.
/autograder/venv/bin/pip install --quiet /autograder/source
"""

RUN_AUTOGRADER = """#!/usr/bin/env bash
# Gradescope runs this for every submission. AUTOGRADER_ROOT lets a test run it on a fake /autograder tree.
ROOT="${AUTOGRADER_ROOT:-/autograder}"
PYTHON="${AUTOGRADER_PYTHON:-$ROOT/venv/bin/python}"
mkdir -p "$ROOT/results"
cd "$ROOT/source" && "$PYTHON" -m autograder gradescope-run --root "$ROOT"
if [ ! -s "$ROOT/results/results.json" ]; then
    printf '{"score": 0, "output": "The autograder could not run; please tell your instructor.", "tests": []}\\n' \\
        > "$ROOT/results/results.json"
fi
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


def expected_files() -> list[str]:
    return [p.name for p in solution_files() if p.name != "__init__.py"]


def find_submitted(submission: Path) -> dict[str, Path]:
    """Each expected file of the submission: in the folder that holds most of them (top level or exercises/)."""
    names = set(expected_files())
    folders: dict[Path, int] = {}
    for path in submission.rglob("*.py"):
        if path.name in names and "__MACOSX" not in path.parts:
            folders[path.parent] = folders.get(path.parent, 0) + 1
    if not folders:
        return {}
    best = max(folders, key=lambda folder: (folders[folder], -len(folder.parts)))
    return {name: best / name for name in names if (best / name).is_file()}


def grade_submission(root: Path, timeout: float = 1200) -> dict:
    """Grade `root/submission` and write `root/results/results.json`; return what was written."""
    results_path = root / "results" / "results.json"
    results_path.parent.mkdir(parents=True, exist_ok=True)
    found = find_submitted(root / "submission")
    missing = sorted(set(expected_files()) - set(found))
    notes = []
    if missing:
        notes.append(f"Not in your submission (graded as the empty stubs): {', '.join(missing)}.")
    with tempfile.TemporaryDirectory() as tmp:
        graded = Path(tmp) / "submission"
        graded.mkdir()
        shutil.copy2(EXERCISES / "__init__.py", graded / "__init__.py")
        for name in expected_files():
            shutil.copy2(found.get(name, EXERCISES / name), graded / name)
        raw = Path(tmp) / "results.json"
        command = [sys.executable, "-m", "pytest", "autograder", "--impl", str(graded), "--results-json", str(raw),
                   "-p", "no:cacheprovider"]
        try:
            proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout)
            output = proc.stdout[-20_000:]
        except subprocess.TimeoutExpired:
            output = f"The grader did not finish within {timeout:g} s."
        try:
            results = json.loads(raw.read_text())
        except (OSError, ValueError):
            results = {"score": 0, "tests": [],
                       "output": "The grader could not grade this submission. Its last output:\n" + output[-5000:]}
    if notes:
        results["output"] = "\n".join(notes) + "\n\n" + results.get("output", "")
    results_path.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return results
