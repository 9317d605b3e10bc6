"""The student edition: a copy of the course for a class, with no reference code in any form and no hidden checks.

`python -m autograder export student-edition --out DIR` copies the repository (what
git tracks) except `tests/`, `.ci/`, `solutions/` and the course repository's
own CI workflow, and:

- removes every `@pytest.mark.hidden` check from the lessons' grading tests;
- records the answers the reference gives to the visible checks' scenarios
  (`reference.run`) and the notebooks' examples, as data: the edition's grader
  and notebooks compare with those, and with the grader's oracles (hand values,
  finite differences, PyTorch);
- writes `autograder/edition.json` with what the grader and the site otherwise
  read off the solution sources: the task regions (file, owner, lines), the
  stubs, and the reference's fingerprint (the key of the pages' results);
- builds the site inside the edition, as a learner's `mkdocs serve` does: the
  pages' results are the course's (`course/_build/executed/`), except lesson
  0's grader runs, which run the edition's own grader (its failing example's
  bug planted in the course's reference, `COURSE_SITE_SOLUTIONS`), and the
  recap, which says the reference is not there; the results and the built
  `site/` ship;
- says, on each page, what the edition does where the course's page promises
  what only the full course can (`course/edition_words.py`, from the data);
- lists only the packages it has in `pyproject.toml` (no `solutions`);
- writes its own README, and the learners' GitHub Classroom workflow into
  `.github/workflows/`.

Without the reference, each task's checks run over the learner's own code for
the other tasks: a check that runs through a broken task waits for it
(`grading/blame.py`), and the grade that counts comes from the Gradescope
bundle or a batch run with the full repository.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.course.edition_words import PAGES_LEFT_OUT, edition_page
from autograder.course.regions import REPO, SOLUTIONS, manifest_entries, solution_files
from autograder.export import classroom, runs_through
from autograder.export import stubs as sync
from autograder.export.notebooks import HOW_EXAMPLES_RUN
from autograder.export.recorded_examples import HOW_EXAMPLES_RUN_IN_EDITION, record_examples
from autograder.grading import caches
from autograder.grading.blame import RUNS_THROUGH, check_key_of
from autograder.grading.tasks import LESSONS
from autograder.jupyter import EXAMPLES_FILE

LEFT_OUT = (
    "tests/",
    ".ci/",
    "solutions/",
    "autograder/lessons/shipped_answers.json",  # the reference's answers, hidden checks' too
    "CONTRIBUTING.md",  # the maintainers' recipe: the reference's markers, the repository's tests, `dev` commands
    ".github/workflows/ci.yml",
    ".github/workflows/pages.yml",
    *PAGES_LEFT_OUT,  # the instructors' and maintainers' guides, and their screenshots
)
LEFT_OUT_OF_NAV = ("For instructors", "For maintainers")  # the nav sections of those guides, in mkdocs.yml


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


def hidden_tests(text: str) -> list[ast.FunctionDef]:
    """The functions of a test module marked `@pytest.mark.hidden`."""
    functions = [node for node in ast.parse(text).body if isinstance(node, ast.FunctionDef)]
    return [node for node in functions if any(ast.unparse(d) == "pytest.mark.hidden" for d in node.decorator_list)]


def without_hidden_tests(text: str) -> str:
    """The test module with every function marked `@pytest.mark.hidden` removed."""
    lines = text.splitlines(keepends=True)
    drop: set[int] = set()
    for node in hidden_tests(text):
        start = min(d.lineno for d in node.decorator_list)
        drop.update(range(start - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in drop)


def without_hidden_records(text: str) -> str:
    """`runs_through.json` (what each check runs through) without the hidden checks, whose names are not shipped."""
    hidden = {
        check_key_of(path.stem, node.name)
        for path in LESSONS.glob("test_*.py")
        for node in hidden_tests(path.read_text())
    }
    data = json.loads(text)
    return runs_through.text({k: v for k, v in data["checks"].items() if k not in hidden}, data["sources"])


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
        elif source == RUNS_THROUGH:
            target.write_text(without_hidden_records(source.read_text()))
        elif name == "pyproject.toml":
            target.write_text(edition_pyproject(source.read_text()))
        else:
            shutil.copy2(source, target)
    manifest = {
        "files": [p.name for p in solution_files()],
        "regions": manifest_entries(),
        "stubs": sync.expected_files(),
        "fingerprint": caches.sources_digest((SOLUTIONS,)),
    }
    (out / "autograder" / "edition.json").write_text(json.dumps(manifest, indent=1) + "\n")
    _record_reference_answers(out / "autograder" / "lessons" / "reference_answers.json")
    record_examples(out / EXAMPLES_FILE.relative_to(REPO))
    config = out / "mkdocs.yml"
    config.write_text(edition_config(config.read_text()))
    for notebook in (out / "exercises" / "notebooks").glob("*.ipynb"):
        text = notebook.read_text()
        notebook.write_text(
            text.replace(json.dumps(HOW_EXAMPLES_RUN)[1:-1], json.dumps(HOW_EXAMPLES_RUN_IN_EDITION)[1:-1])
        )
    for page in (out / "course").rglob("*.md"):
        page.write_text(edition_page(page.relative_to(out / "course").as_posix(), page.read_text()))
    fresh = _build_site(out)
    workflow = out / ".github" / "workflows" / "classroom.yml"
    workflow.parent.mkdir(parents=True, exist_ok=True)
    workflow.write_text(classroom.workflow(classroom.points_per_lesson()))
    (out / "README.md").write_text(readme(fresh))
    return out


def _record_reference_answers(path: Path) -> None:
    """What the reference answers to every visible check's scenarios, as data."""
    from autograder.grading.runner import grade

    results = grade("solutions", extra=["-m", "not hidden", "--record-reference", str(path)])
    if results.score != results.max_score or results.bonus != results.bonus_max:
        raise RuntimeError("the reference does not pass its own visible checks; fix that before exporting")


def _build_site(out: Path) -> str:
    """Build the edition's site in the edition, as a learner would, and keep the pages' results it used.

    Returns what lesson 0's fresh grader run printed: the edition's own scorecard, for its README.
    """
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.json"
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("COURSE_SITE_")},
            "COURSE_EDITION": str(out),  # lesson 0's grader runs are the edition's; the recap leaves the code out
            "COURSE_SITE_SOLUTIONS": str(SOLUTIONS),  # lesson 0's deliberate bug is planted in the course's reference
            "COURSE_SITE_RECORD": str(record),
            "PYTHONPATH": str(out),  # the edition's grader and hooks, not this checkout's
            "NO_MKDOCS_2_WARNING": "1",
        }
        command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(out / "site")]
        subprocess.run(command, cwd=out, env=env, check=True)
        wanted = json.loads(record.read_text())
    executed = out / "course" / "_build" / "executed"
    for name, text in wanted["write"].items():
        (executed / name).write_text(text, encoding="utf-8")
    for name in wanted["delete"]:
        (executed / name).unlink()
    runs = [r for f in executed.glob("*.json") for r in json.loads(f.read_text())["results"] if "grader run" in r]
    printed = next(r["output"] for r in runs if r["grader run"] == "pytest autograder")
    return printed[printed.index("=") :]  # from the scorecard's first line: not pytest's progress letters


def edition_config(text: str) -> str:
    """mkdocs.yml as the edition has it: `mkdocs serve` watches no solutions/ (the edition has none), and the nav
    has no section of `LEFT_OUT_OF_NAV` (whose pages the edition leaves out)."""
    text = text.replace("watch:\n  - solutions\n", "watch:\n")
    lines, kept, cut = text.splitlines(keepends=True), [], None
    found = set()
    for line in lines:
        indent = len(line) - len(line.lstrip())
        if cut is not None and line.strip() and indent > cut:
            continue
        cut = None
        title = line.strip().removeprefix("- ").removesuffix(":").strip('"')
        if line.lstrip().startswith("- ") and line.rstrip().endswith(":") and title in LEFT_OUT_OF_NAV:
            cut = indent
            found.add(title)
            continue
        kept.append(line)
    if found != set(LEFT_OUT_OF_NAV):
        raise RuntimeError(
            f"mkdocs.yml's nav has no section {sorted(set(LEFT_OUT_OF_NAV) - found)}: update LEFT_OUT_OF_NAV"
        )
    return "".join(kept)


def edition_pyproject(text: str) -> str:
    """pyproject.toml as the edition has it: its packages are the grader and the exercises (no `solutions`)."""
    packages = '"autograder*", "solutions*", "exercises*"'
    if packages not in text:
        raise RuntimeError(f"pyproject.toml no longer lists the packages as [{packages}]: update edition_pyproject")
    return text.replace(packages, '"autograder*", "exercises*"')


# the course README's section the edition's README has too, as the README marks it
SHARED = re.compile(
    r"<!-- edition: the student edition's README has this section too -->\n(.*?)<!-- edition: end -->", re.S
)


def shared_readme_section(course_readme: str) -> str:
    """What the course's README marks as the edition's too (its Quick start), between its `<!-- edition: ... -->`
    comments: the edition's README is written around it."""
    found = SHARED.search(course_readme)
    if not found:
        raise RuntimeError("README.md marks no section for the student edition's README (<!-- edition: ... -->)")
    return found[1].strip()


def readme(fresh_scorecard: str) -> str:
    """The edition's README: how to install, read, grade and explore this edition, and what its grader prints."""
    install = shared_readme_section((REPO / "README.md").read_text())
    return f"""# Backprop from scratch: student edition

A self-paced course: build a scalar autograd engine (a `Value` class that does backpropagation), then a small
neural-net library on top of it, and let the grader check every step. This is the student edition: no reference
solution ships with it and the hidden checks are left out. `pytest autograder` grades your work with the visible
checks; the grade that counts comes from your instructor's grader.

{install}

## Read

```bash
mkdocs serve        # then open http://127.0.0.1:8000 (the pages' results ship: it runs none of their code)
```

## Write and grade

Fill the stubs in `exercises/`, one task at a time, as the pages say, then grade:

| to grade | command |
| --- | --- |
| everything in `exercises/` | `pytest autograder` |
| one lesson | `pytest autograder --lesson 8` |
| one task | `pytest autograder --task 8.2` |
| and draw a wrong backward pass | `pytest autograder --task 5.3 --draw drawings` |

`python -m autograder watch` re-grades each file as you save it; `python -m autograder hint 8.2` prints a task's
next hint; `python -m autograder tasks` lists every task with its page. The site's page *Grading your work* (under
Guides) has every command and option, and what each line of the scorecard means.

In this edition each task's checks run over *your* code for everything they need (there is no reference to run
them over): a bug in one task stops the tasks that run through it, which say "waits for task L.N" until it
passes. Fix the task `Next:` names first.

What the grader prints on the stubs as they come:

```text
$ pytest autograder
{fresh_scorecard.rstrip()}
```

## Explore in Jupyter

```bash
jupyter lab          # then open exercises/notebooks/lesson03.ipynb
```

Each `lessonNN.ipynb` runs a few examples of its lesson with your code and compares what they give with the
reference's recorded answers; where a picture or an answer was not recorded, it says so. The last cell,
`lesson.grade()`, prints the lesson's scorecard.
"""
