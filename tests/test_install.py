"""The installs of README.md's Quick start: what each kind of user gets, and torch's CPU build on Linux.

- The learner's install (pyproject's base dependencies) brings every package that the learner's side
  imports: the grader, the reference, the Jupyter side, the site's build hooks and the pages' blocks.
- Instructor-only packages (nbgrader, the batch grader's progress bar) are in the `instructor` extra, not in
  the learner's install, and a command that needs one says which extra to install instead of a traceback.
- The maintainers' `test` extra includes the instructors' extra.
- The README's Linux install line and pyproject's `[tool.uv.sources]` name the same CPU-only index for torch,
  at the version pyproject pins.
- The README's Quick start makes and activates a virtual environment on each system, and its commands are the ones
  lesson 0's tabs give, command for command (a line ending in a backslash goes on, as in a shell); `.ci/run`'s
  learner pass runs the Linux ones as written (it reads them from the README), with `--no-compile` (the install
  size the README states is measured with it).
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
FIRST_PARTY = {"autograder", "solutions", "exercises", "tests"}
# the site build's modules (course/_build/), which its hooks import by name
FIRST_PARTY |= {path.stem for path in (REPO / "course" / "_build").glob("*.py")}
OPTIONAL = {"sitecustomize", "usercustomize"}  # imported only when a site provides one
# what only instructors' commands import, and the command that says which extra brings it
INSTRUCTOR_ONLY = {
    "nbgrader": ["export", "nbgrader", "--out", "unused"],
    "tqdm": ["batch", "unused", "--out", "unused.csv"],
}


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
    assert (
        torch_line
        == f"python -m pip install --no-compile --retries 0 torch=={version} --extra-index-url {index['url']}"
    )
    assert "torch pinned to the CPU build" not in (REPO / "pyproject.toml").read_text()


def commands(block: str) -> list[str]:
    """A shell block's commands, one each, a line that ends with a backslash joined to the next as the shell does
    (the torch command is continued on a second line, to fit the site's code column)."""
    return [line.strip() for line in re.sub(r"\\\n\s*", "", block).splitlines() if line.strip()]


def readme_quick_start() -> dict[str, list[str]]:
    """The Quick start's commands per system: {"Linux": [...], "macOS": [...], "Windows": [...]}."""
    blocks = re.findall(
        r"^On (Linux|macOS|Windows)\b[^\n]*\n(?:[^\n]+\n)*\n```(?:bash|powershell)\n(.*?)^```$", README, re.S | re.M
    )
    return {system: commands(body) for system, body in blocks}


def readme_install_commands() -> dict[str, list[str]]:
    """The pip commands of the Quick start, per system, as a learner types them once the environment is on."""
    return {system: [c for c in lines if "pip install" in c] for system, lines in readme_quick_start().items()}


def test_quick_start_makes_and_activates_a_virtual_environment_on_each_system():
    quick = readme_quick_start()
    assert set(quick) == {"Linux", "macOS", "Windows"}, quick
    for system, lines in quick.items():
        make, activate, *installs = lines
        assert make == ("py" if system == "Windows" else "python3") + " -m venv .venv"
        assert activate == (".venv\\Scripts\\Activate.ps1" if system == "Windows" else "source .venv/bin/activate")
        assert installs and all(c.startswith("python -m pip install --no-compile ") for c in installs), installs
        assert installs[-1] == "python -m pip install --no-compile -e ."
    # PyTorch's index, where it cannot be reached, costs no retry warnings (about 50, over two minutes, without this)
    assert "--retries 0" in quick["Linux"][2] and "torch==" in quick["Linux"][2]
    text = " ".join(README.split())
    assert "**Each new terminal** starts without the environment" in text and "`source .venv/bin/activate`" in text


def test_the_readme_lesson_0_and_ci_give_the_same_install_commands():
    """Lesson 0's tabs are the README's Quick start, command for command, and `.ci/run`'s learner runs the Linux
    one."""
    quick = readme_quick_start()
    page = (REPO / "course" / "00-welcome.md").read_text()
    tabs = re.split(r'^=== "(\w+)"$', page[page.index('=== "Linux"') : page.index("Then open this course")], flags=re.M)
    bodies = dict(zip(tabs[1::2], tabs[2::2], strict=True))
    tab_lines = {name: commands(re.search(r"```\w+\n(.*?)```", body, re.S)[1]) for name, body in bodies.items()}
    assert tab_lines == quick, tab_lines
    ci = (REPO / ".ci" / "run").read_text()
    (awk,) = re.findall(r"^ *quick_start=\$\((awk .*)\)$", ci, re.M)
    ran = subprocess.run(["bash", "-c", awk], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert commands(ran) == quick["Linux"], ran
    assert 'as_learner bash -euc "$quick_start"' in ci and "env -i HOME=" in ci


def test_lesson_0_says_how_to_get_and_install_the_course(monkeypatch):
    """No bare placeholder: `git clone` of mkdocs.yml's repo_url when it is set, else of the address the learner
    was given, said in words; the Linux tab takes torch from pyproject's CPU index."""
    page = (REPO / "course" / "00-welcome.md").read_text()
    assert "<the course repository>" not in page and "\n<!-- course: clone -->\n" in page
    index = PYPROJECT["tool"]["uv"]["index"][0]["url"]
    linux = commands(page[page.index('=== "Linux"') : page.index('=== "macOS"')])
    assert f"python -m pip install --no-compile --retries 0 torch==2.13.0 --extra-index-url {index}" in linux
    monkeypatch.syspath_prepend(str(REPO / "course" / "_build"))
    import directives

    told = directives.expand("clone", None, config={"repo_url": "https://example.org/course.git"})
    assert "git clone https://example.org/course.git backprop-course" in told
    told = directives.expand("clone", None, config={"repo_url": None})
    assert "git clone URL-YOU-WERE-GIVEN backprop-course" in told and "address you were given" in told


def test_the_install_benchmark_runs_the_quick_starts_own_commands():
    """`bench_install.py`, whose figures the maintainers' Benchmarks page gives, times the README's pip commands of
    each system, exactly: it reads them from the Quick start."""
    spec = importlib.util.spec_from_file_location("bench_install", REPO / "tests/benchmarks/bench_install.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    commands = readme_install_commands()
    assert bench.readme_commands("Linux") == commands["Linux"]
    assert bench.readme_commands("Darwin") == commands["macOS"]
    assert bench.readme_commands("Windows") == commands["Windows"]
