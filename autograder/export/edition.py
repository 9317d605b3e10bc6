"""The student edition: a copy of the course for a class, with no reference code in any form and no hidden checks.

`python -m autograder student-edition --out DIR` copies the repository (what
git tracks) except `tests/`, `.ci/`, `solutions/` and the course repository's
own CI workflow, and:

- removes every `@pytest.mark.hidden` check from the lessons' grading tests;
- records the answers the reference gives to the visible checks' scenarios
  (`reference.run`), as data: the edition's grader compares with those, and
  with its oracles (hand values, finite differences, PyTorch);
- writes `autograder/edition.json` with what the grader otherwise reads off
  the solution sources: the task regions (file, owner, lines) and the stubs;
- ships the course site already built (`site/`), since its figures are drawn
  by the reference; the recap page, which shows the reference engine, says so
  instead;
- writes the learners' GitHub Classroom workflow into `.github/workflows/`.

Without the reference, each task's checks run over the learner's own code for
the other tasks: a bug may cost points twice here, never in the grade that
counts (the Gradescope bundle or a batch run with the full repository).
"""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from autograder.course.regions import REPO, manifest_entries, solution_files
from autograder.export import classroom
from autograder.export import stubs as sync

LEFT_OUT = (
    "tests/",
    ".ci/",
    "solutions/",
    "course/_build/executed/",  # what the course's blocks printed, reference code among it; the edition's own site
    ".github/workflows/ci.yml",
    ".github/workflows/pages.yml",
)
EDITION_NOTE = (
    "> **Student edition.** No reference solution ships with this copy and the hidden checks are left out:\n"
    "> `pytest autograder` gives you feedback from the visible checks; your grade comes from your instructor's\n"
    "> grader. The course site is already built: `python -m http.server -d site` and open http://127.0.0.1:8000.\n\n"
)


def tracked_files() -> list[str]:
    """The repository's files as git tracks them (or, outside a checkout, the usual top-level parts)."""
    try:
        out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
        return [line for line in out.splitlines() if (REPO / line).is_file()]
    except (OSError, subprocess.CalledProcessError):
        parts = ("autograder", "course", "exercises", "solutions", ".github")
        files = [p for part in parts for p in (REPO / part).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
        files += [REPO / name for name in ("README.md", "pyproject.toml", "mkdocs.yml", ".gitignore")]
        return [str(p.relative_to(REPO)) for p in files if p.exists()]


def without_hidden_tests(text: str) -> str:
    """The test module with every function marked `@pytest.mark.hidden` removed."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
            ast.unparse(d) == "pytest.mark.hidden" for d in node.decorator_list
        ):
            start = min(d.lineno for d in node.decorator_list)
            drop.update(range(start - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def export(out: Path) -> Path:
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: choose a new folder for the student edition")
    for name in tracked_files():
        if name.startswith(LEFT_OUT):
            continue
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        source = REPO / name
        if name.startswith("autograder/lessons/test_") and name.endswith(".py"):
            target.write_text(without_hidden_tests(source.read_text()))
        else:
            shutil.copy2(source, target)
    (out / "solutions").mkdir(exist_ok=True)
    manifest = {
        "files": [p.name for p in solution_files()],
        "regions": manifest_entries(),
        "stubs": sync.expected_files(),
    }
    (out / "autograder" / "edition.json").write_text(json.dumps(manifest, indent=1) + "\n")
    _record_reference_answers(out / "autograder" / "lessons" / "reference_answers.json")
    _build_site(out / "site")
    workflow = out / ".github" / "workflows" / "classroom.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(classroom.workflow(classroom.points_per_lesson()))
    readme = out / "README.md"
    readme.write_text(EDITION_NOTE + readme.read_text())
    return out


def _record_reference_answers(path: Path) -> None:
    """What the reference answers to every visible check's scenarios, as data."""
    from autograder.grading.runner import grade

    results = grade("solutions", extra=["-m", "not hidden", "--record-reference", str(path)])
    if results.score != results.max_score or results.bonus != results.bonus_max:
        raise RuntimeError("the reference does not pass its own visible checks; fix that before exporting")


def _build_site(target: Path) -> None:
    env = {**os.environ, "COURSE_EDITION": "1"}  # pages that would show reference code say so instead
    subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(target)],
        cwd=REPO,
        env=env,
        check=True,
    )
