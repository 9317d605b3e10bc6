"""The installs of README.md's Quick start: what each kind of user gets, and torch's CPU build on Linux.

- The learner's install (pyproject's base dependencies) brings every package that the learner's side
  imports: the grader, the reference, the Jupyter side, the site's build hooks and the pages' blocks.
- Instructor-only packages (nbgrader, the batch grader's progress bar) are in the `instructor` extra, not in
  the learner's install, and a command that needs one says which extra to install instead of a traceback.
- The maintainers' `test` extra includes the instructors' extra.
- The README's Linux install line and pyproject's `[tool.uv.sources]` name the same CPU-only index for torch,
  at the version pyproject pins.
- The README's install commands are the ones lesson 0's tabs give and the ones `.ci/run` runs as a learner, string
  for string, with `--no-compile` (the install size the README states is measured with it).
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import re
import subprocess
import sys
import tomllib

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from .conftest import REPO

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]
README = (REPO / "README.md").read_text()
FIRST_PARTY = {"autograder", "solutions", "exercises", "pagekit", "buildcache", "hooks", "tests"}
OPTIONAL = {"sitecustomize", "usercustomize"}  # imported only when a site provides one
# what only instructors' commands import, and the command that says which extra brings it
INSTRUCTOR_ONLY = {"nbgrader": ["nbgrader", "--out", "unused"], "tqdm": ["batch", "unused", "--out", "unused.csv"]}


def _names(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


def _closure(requirements: list[str]) -> set[str]:
    """The distributions these requirements install, following the installed packages' own requirements."""
    seen: set[str] = set()
    todo = [Requirement(r) for r in requirements]
    while todo:
        req = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker and not req.marker.evaluate({"extra": ""})):
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(req.name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        for text in requires:
            sub = Requirement(text)
            wanted = sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("", *req.extras))
            if wanted:
                sub.marker = None
                todo.append(sub)
    return seen


def _imports_of_python(text: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def learner_side_imports() -> dict[str, str]:
    """Top-level third-party modules imported by what a learner's commands run, each with one file that does."""
    files = [*sorted((REPO / "autograder").rglob("*.py")), *sorted((REPO / "solutions").glob("*.py"))]
    files += sorted((REPO / "course" / "_build").glob("*.py"))
    found: dict[str, str] = {}
    for path in files:
        for name in _imports_of_python(path.read_text()):
            found.setdefault(name, str(path.relative_to(REPO)))
    block = re.compile(r'^([ \t]*)```python exec="true"[^\n]*\n(.*?)^\1```', re.S | re.M)
    for page in sorted((REPO / "course").glob("*.md")):
        for indent, code in block.findall(page.read_text()):
            code = "\n".join(line[len(indent) :] for line in code.splitlines())
            for name in _imports_of_python(code):
                found.setdefault(name, str(page.relative_to(REPO)))
    return {n: f for n, f in found.items() if n not in sys.stdlib_module_names and n not in FIRST_PARTY | OPTIONAL}


def test_the_learners_install_has_every_package_the_learners_side_imports():
    base = _closure(PROJECT["dependencies"])
    providers = importlib.metadata.packages_distributions()
    missing = []
    for module, where in sorted(learner_side_imports().items()):
        if module in INSTRUCTOR_ONLY:
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        assert dists, f"{module} (imported by {where}) is not installed here: which package provides it?"
        if not dists & base:
            missing.append(f"{module} (imported by {where}, from {', '.join(sorted(dists))})")
    assert not missing, "not in the learner's install (pyproject's dependencies): " + "; ".join(missing)


def test_instructor_packages_are_an_extra_and_the_test_extra_includes_it():
    extras = PROJECT["optional-dependencies"]
    base = _closure(PROJECT["dependencies"])
    for module in INSTRUCTOR_ONLY:
        assert module not in base, f"{module} is for instructors: it belongs in the instructor extra only"
        assert module in _names(extras["instructor"]), f"the instructor extra does not bring {module}"
    assert f"{PROJECT['name']}[instructor]" in extras["test"], "the test extra must include the instructor extra"


@pytest.mark.parametrize("module", sorted(INSTRUCTOR_ONLY))
def test_a_missing_instructor_package_names_the_extra(module, tmp_path):
    """With the package hidden, the instructor command that needs it says which extra to install."""
    args = INSTRUCTOR_ONLY[module]
    hide = (
        f"import sys, runpy; sys.modules[{module!r}] = None; sys.argv = ['autograder', *{args!r}]; "
        "runpy.run_module('autograder', run_name='__main__')"
    )
    proc = subprocess.run([sys.executable, "-c", hide], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert 'pip install -e ".[instructor]"' in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    assert not any(tmp_path.iterdir()), "the command wrote something before it stopped"


def test_readme_and_pyproject_take_torch_from_the_same_cpu_index():
    pin = next(r for r in PROJECT["dependencies"] if Requirement(r).name == "torch")
    version = str(Requirement(pin).specifier).removeprefix("==")
    uv = PYPROJECT["tool"]["uv"]
    (source,) = uv["sources"]["torch"]
    index = next(i for i in uv["index"] if i["name"] == source["index"])
    assert index["explicit"] is True, "the CPU index must serve torch only (explicit = true)"
    assert "linux" in source["marker"] and "cpu" in index["url"]
    torch_line = readme_install_commands()["Linux"][0]
    assert torch_line == f"pip install --no-compile torch=={version} --extra-index-url {index['url']}", torch_line
    assert "torch pinned to the CPU build" not in (REPO / "pyproject.toml").read_text()


def readme_install_commands() -> dict[str, list[str]]:
    """The commands of the Quick start's install table, per row: {"Linux": [...], "macOS, Windows": [...]}."""
    rows = {}
    for row in README[README.index("| platform | install |") :].splitlines()[2:]:
        if not row.startswith("|"):
            break
        platform, commands = (cell.strip() for cell in row.strip("|").split("|"))
        rows[platform] = re.findall(r"`([^`]+)`", commands)
    return rows


def test_the_readme_lesson_0_and_ci_give_the_same_install_commands():
    """Lesson 0's tabs run the README's commands through `python -m`, and `.ci/run`'s learner runs the Linux ones."""
    readme = readme_install_commands()
    assert readme == {
        "Linux": [readme["Linux"][0], "pip install --no-compile -e ."],
        "macOS, Windows": ["pip install --no-compile -e ."],
    }, readme
    assert readme["Linux"][0].startswith("pip install --no-compile torch==")
    page = (REPO / "course" / "00-welcome.md").read_text()
    tabs = re.split(r'^=== "(\w+)"$', page[page.index('=== "Linux"') : page.index("Then open this course")], flags=re.M)
    bodies = dict(zip(tabs[1::2], tabs[2::2], strict=True))
    pip_lines = {name: re.findall(r"^ +(\S.*pip install.*)$", body, re.M) for name, body in bodies.items()}
    assert pip_lines == {
        "Linux": [f"python -m {command}" for command in readme["Linux"]],
        "macOS": [f"python -m {command}" for command in readme["macOS, Windows"]],
        "Windows": [f"python -m {command}" for command in readme["macOS, Windows"]],
    }, pip_lines
    ci = (REPO / ".ci" / "run").read_text()
    learner = ci[ci.index('as_learner /usr/bin/python3 -m venv "$home/venv"') :]
    ran = re.findall(r"python -m (pip install[^\"&]*?)\s*(?:\"|&&)", learner)
    assert ran == readme["Linux"], ran


def test_lesson_0_says_how_to_get_and_install_the_course(monkeypatch):
    """No bare placeholder: `git clone` of mkdocs.yml's repo_url when it is set, else of the address the learner
    was given, said in words; the Linux tab takes torch from pyproject's CPU index."""
    page = (REPO / "course" / "00-welcome.md").read_text()
    assert "<the course repository>" not in page and "\n<!-- course: clone -->\n" in page
    index = PYPROJECT["tool"]["uv"]["index"][0]["url"]
    linux = page[page.index('=== "Linux"') : page.index('=== "macOS"')]
    assert f"pip install --no-compile torch==2.13.0 --extra-index-url {index}" in linux
    monkeypatch.syspath_prepend(str(REPO / "course" / "_build"))
    import hooks

    monkeypatch.setattr(hooks, "_config", {"repo_url": "https://example.org/course.git"})
    assert "git clone https://example.org/course.git backprop-course" in hooks.expand("clone", None)
    monkeypatch.setattr(hooks, "_config", {"repo_url": None})
    told = hooks.expand("clone", None)
    assert "git clone URL-YOU-WERE-GIVEN backprop-course" in told and "address you were given" in told


def test_the_readmes_install_figures_come_from_the_benchmark_that_runs_its_commands():
    """The size and time the README states name `bench_install.py`, which runs the README's own table."""
    readme = " ".join(README.split())
    assert "Measured with `python tests/benchmarks/bench_install.py`, which runs this table's commands" in readme
    spec = importlib.util.spec_from_file_location("bench_install", REPO / "tests/benchmarks/bench_install.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    table = readme_install_commands()
    assert bench.readme_commands("Linux") == table["Linux"]
    assert bench.readme_commands("Darwin") == bench.readme_commands("Windows") == table["macOS, Windows"]
