"""The student edition: a copy of the course for a class, without the reference's source and the hidden tests.

`python -m autograder student-edition --out DIR` copies the repository (what
git tracks) except `tests/` and `.ci/` (the project's own suite needs the
sources), replaces `solutions/*.py` by their bytecode (the grader and the
site's figures still run the reference; nobody reads it by accident), removes
every `@pytest.mark.hidden` check from `autograder/test_*.py`, and writes
`autograder/edition.json` with what the grader and the site otherwise read off
the solution sources (the regions and the stubs). The copy still installs,
builds the site and grades itself. Bytecode is tied to the Python minor version
that exports it: export with the version your class uses. Instructors keep
the full repository.
"""

from __future__ import annotations

import ast
import json
import py_compile
import shutil
import subprocess
from pathlib import Path

from autograder.export import stubs as sync
from autograder.course.regions import REPO, manifest_entries, solution_files

LEFT_OUT = ("tests/", ".ci/")


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
        if isinstance(node, ast.FunctionDef) and any(ast.unparse(d) == "pytest.mark.hidden" for d in node.decorator_list):
            start = min(d.lineno for d in node.decorator_list)
            drop.update(range(start - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def export(out: Path) -> Path:
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty: choose a new folder for the student edition")
    for name in tracked_files():
        if name.startswith(LEFT_OUT) or name.startswith("solutions/") and name.endswith(".py"):
            continue
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        source = REPO / name
        if name.startswith("autograder/test_") and name.endswith(".py"):
            target.write_text(without_hidden_tests(source.read_text()))
        else:
            shutil.copy2(source, target)
    for path in solution_files():
        py_compile.compile(str(path), cfile=str(out / "solutions" / (path.stem + ".pyc")), doraise=True)
    manifest = {"files": [p.name for p in solution_files()], "regions": manifest_entries(),
                "stubs": sync.expected_files()}
    (out / "autograder" / "edition.json").write_text(json.dumps(manifest, indent=1) + "\n")
    readme = out / "README.md"
    readme.write_text("> **Student edition.** The reference solution ships as bytecode only and the hidden checks\n"
                      "> are left out: your instructor grades with the full set.\n\n" + readme.read_text())
    return out


