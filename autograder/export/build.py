"""`python -m autograder dev build [--check]`: regenerate, or check, every file generated from the single source.

The generated files, and what they are made from:

- the task list in each solution file's module docstring (the course's data and the solution markers), and the
  spec sections that end the docstrings of the functions that hold a task's code (`Returns:`, `Raises:`, `Leaves
  unchanged:`, the data's `[task.spec.OWNER]`: `autograder/course/spec.py`);
- `autograder/course/data/parsed.json`, what `tomllib` reads from each lesson's data, beside the text it read (the
  data's .toml files: a run whose files are unchanged loads it instead of parsing TOML);
- `exercises/*.py`, the stubs, and their manifest (the solutions; a file the learner changed is never replaced);
- `exercises/notebooks/lessonNN.ipynb`, the learner notebooks (the registry and the solutions);
- `.github/classroom/classroom.yml`, the learners' Classroom workflow template (the registry and the tests' points);
- `autograder/lessons/shipped_answers.json`, the reference's answers on the checks' own inputs (the reference, the
  grading tests, the kit and the worker's code: a graded run of the reference computes them);
- `autograder/lessons/runs_through.json`, the other tasks whose code each check runs (from the same sources: each
  check is run over the reference, traced; `export/runs_through.py`);
- `course/_build/executed/*.json`, what the site's Python blocks and lesson 0's grader runs printed (the pages'
  code, the solutions, the grader): a site build in a temporary folder runs only the blocks whose results are not
  there yet, then the folder is made to hold exactly what that build used. With `--check` nothing runs: a block
  whose result is missing, or a result no block uses, is out of date.

With `--check` nothing is written; the command lists what is out of date and exits 1.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import SOLUTIONS, all_regions, has_sources
from autograder.course.spec import with_spec

TASK_LIST = re.compile(r"^Tasks in this file.*?(?=\n\n(?!- )|\n*\Z)", re.S | re.M)
HEADING = "Tasks in this file (the list is written by `python -m autograder build`):"


def task_list(module: str) -> str:
    """The docstring block that lists a solution file's tasks, one line each."""
    ids = sorted({t for r in all_regions() if r.module == module for t in r.tasks}, key=registry.sort_key)
    return "\n".join([HEADING, "", *(f"- {t} {registry.task(t).title}" for t in ids)])


def with_task_list(text: str, module: str) -> str:
    """The solution file's text with its docstring's task list regenerated."""
    start, end = text.index('"""') + 3, text.index('"""', text.index('"""') + 3)
    doc = text[start:end]
    block = task_list(module)
    new_doc = TASK_LIST.sub(lambda _: block, doc, count=1) if TASK_LIST.search(doc) else doc.rstrip() + "\n\n" + block
    if not new_doc.endswith("\n"):
        new_doc += "\n"
    return text[:start] + new_doc + text[end:]


def stale_docstrings() -> dict[Path, str]:
    """Solution files whose task list or spec sections are out of date, with their regenerated text."""
    if not has_sources():
        return {}
    out = {}
    for path in sorted(SOLUTIONS.glob("*.py")):
        if path.stem == "__init__" or not any(r.module == path.stem for r in all_regions()):
            continue
        text = path.read_text()
        new = with_spec(with_task_list(text, path.stem), path.stem, str(path))
        if new != text:
            out[path] = new
    return out


EXECUTED = SOLUTIONS.parent / "course" / "_build" / "executed"


def site_results(check: bool) -> list[str]:
    """Bring `course/_build/executed/` up to date (or with `check`, list what is not); return what changed.

    It builds the site into a temporary folder with `COURSE_SITE_RECORD` set (and `COURSE_SITE_CHECK` for
    `check`): the hooks say which files the folder should hold. MkDocs' lines about blocks being run are passed on.
    """
    root = SOLUTIONS.parent
    if not (root / "mkdocs.yml").exists() or not has_sources():
        return []  # a student edition: its site ships built
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.json"
        env = {**os.environ, "COURSE_SITE_RECORD": str(record), "NO_MKDOCS_2_WARNING": "1"}
        for name in ("COURSE_SITE_RERUN", "COURSE_SITE_COMMITTED", "COURSE_SITE_CHECK"):
            env.pop(name, None)
        if check:
            env["COURSE_SITE_CHECK"] = "1"
        command = [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(Path(tmp) / "site")]
        # stderr as it comes: a line per block that runs
        pipe, none = subprocess.PIPE, subprocess.DEVNULL
        proc = subprocess.Popen(command, cwd=root, env=env, stdout=none, stderr=pipe, text=True)
        log = []
        for line in proc.stderr:
            log.append(line)
            if "course: " in line:  # a block or a grader run starts: say so while it runs
                print(line.rstrip().split("course: ", 1)[1], file=sys.stderr, flush=True)
        proc.wait()
        wanted = json.loads(record.read_text()) if record.exists() else None
    if wanted is None or (proc.returncode and not (check and wanted["missing"])):
        raise RuntimeError("the site does not build (mkdocs build):\n" + "".join(log[-40:]))
    changed = [f"course/_build/executed/{name}" for name in [*wanted["write"], *wanted["delete"]]]
    if check:
        return changed + [f"course/_build/executed/ has no result for {what}" for what in wanted["missing"]]
    EXECUTED.mkdir(parents=True, exist_ok=True)
    for name, text in wanted["write"].items():
        (EXECUTED / name).write_text(text, encoding="utf-8")
    for name in wanted["delete"]:
        (EXECUTED / name).unlink()
    return changed


def build(check: bool) -> tuple[list[str], list[str]]:
    """Regenerate (or with `check`, compare) every generated file; return (done or stale, refused)."""
    from autograder.export import classroom, notebooks, runs_through
    from autograder.export import stubs as sync
    from autograder.grading import blame, reference

    changed, refused = [], []
    parsed = registry.DATA / registry.PARSED
    snapshot = registry.parsed_snapshot()
    if not parsed.is_file() or parsed.read_text(encoding="utf-8") != snapshot:
        changed.append(str(parsed.relative_to(SOLUTIONS.parent)))
        if not check:
            parsed.write_text(snapshot, encoding="utf-8")
            if registry.load() != registry.LESSONS:  # this run loaded what the old file said: not the data
                raise RuntimeError(f"{parsed.name} said other things than the data: rewritten; run build again")
    docstrings = stale_docstrings()
    changed += [f"{p.relative_to(SOLUTIONS.parent)} (task list or spec)" for p in docstrings]
    if not check:
        for path, text in docstrings.items():
            path.write_text(text)
        all_regions.cache_clear()
    if check:
        changed += [diff.splitlines()[0] if diff else "exercises/" for diff in sync.check()]
        changed += [f"exercises/notebooks/{name}" for name in notebooks.stale_learner_notebooks()]
    else:
        written, refused = sync.sync()
        changed += [f"exercises/{name}" for name in written]
        changed += [f"exercises/notebooks/{name}" for name in notebooks.write_learner_notebooks()]
    if has_sources() and reference.shipped_answers_stale():  # after the task lists: the answers' key covers them
        changed.append(str(reference.SHIPPED.relative_to(SOLUTIONS.parent)))
        if not check:
            ship_answers()
    if has_sources() and runs_through.stale():  # keyed like the shipped answers, and by its recorder
        changed.append(str(blame.RUNS_THROUGH.relative_to(SOLUTIONS.parent)))
        if not check:
            runs_through.write()
    template = classroom.workflow(classroom.points_per_lesson())
    current = classroom.TEMPLATE.read_text() if classroom.TEMPLATE.exists() else ""
    if template != current:
        changed.append(str(classroom.TEMPLATE.relative_to(SOLUTIONS.parent)))
        if not check:
            classroom.TEMPLATE.parent.mkdir(parents=True, exist_ok=True)
            classroom.TEMPLATE.write_text(template)
    changed += site_results(check)  # last: the site shows the stubs, the notebooks and the task lists
    return changed, refused


MAX_SHIPPED = 100_000  # characters: a larger answer (a 100,000-node chain's order) is cheaper computed than shipped


def ship_answers(path: Path | None = None) -> bool:
    """Compute every answer of the reference that a graded run of it asks for (its checks' own inputs: the drawn
    ones are the run's alone) and write them to `path` with the digest of the sources they come from. Returns
    whether the file changed."""
    from autograder.grading import reference, runner

    path = path or reference.SHIPPED
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "answers.json"
        runner.grade("solutions", fresh_inputs=1, extra=["--ship-answers", str(out)])  # at the best level here
        answers = json.loads(out.read_text())
    # one answer a line, in order: a change of one check's answers is a change of its lines
    lines = [json.dumps(k) + ":" + json.dumps(v, separators=(",", ":")) for k, v in sorted(answers.items())]
    lines = [line for line in lines if len(line) <= MAX_SHIPPED]
    text = f'{{"sources":"{reference.answers_digest()}","answers":{{\n' + ",\n".join(lines) + "\n}}\n"
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    reference.shipped_answers.cache_clear()
    return True
