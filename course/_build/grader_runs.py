"""The grader's runs that lesson 0 shows: `pytest autograder` on a fresh clone, and again with a deliberate bug.

`start()` starts them (each in a thread, in a throw-away fresh clone) when a build begins, unless their output is
committed or cached; the `scorecard` and `scorecard-failure` directives (`directives.py`) read them. What they
printed is kept with the pages' results (`buildcache.Committed`), keyed by what they grade; the grader's own
sources key this machine's cache only (`grader_digest`).
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
import threading
import tomllib
from pathlib import Path

import buildcache
from mkdocs.exceptions import PluginError
from settings import SiteSettings

from autograder.course import registry
from autograder.course.regions import has_sources, module_of
from autograder.grading import caches

BUILD = Path(__file__).resolve().parent
REPO = BUILD.parent.parent

# pytest's last line ends with how long the run took ("215 not_started in 2.87s"): a page shows the run without it,
# so that the committed output is the same from one run to the next
PYTEST_DURATION = re.compile(r" in [\d.]+s(?: \([\d:]+\))?$")

# parts of autograder/ that neither a grader run nor a page uses
NOT_GRADING = ("export", "jupyter", "commands", "__main__.py")


def demo():
    """The task of the deliberate bug in the "what a failure looks like" example: the one whose data has a
    `demo_bug` (task 1.1 with the run forgotten)."""
    found = [task for task in registry.TASKS.values() if task.demo_bug]
    if len(found) != 1:
        raise PluginError(f"one task of the course's data has a demo_bug for lesson 0, not {len(found)}")
    return found[0]


def _grader_run_inputs() -> str:
    """What a grader run grades, the same on every machine: the reference (the stubs are made from it) and
    pytest's options. The grader's own sources are left out of the committed key (`BlockRunner.depends`)."""
    pytest_options = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    bug = demo().demo_bug[1]
    return buildcache.solutions_fingerprint() + buildcache.sha(json.dumps(pytest_options, sort_keys=True), bug)


def grader_digest(settings: SiteSettings) -> str:
    return caches.sources_digest((graded_course(settings) / "autograder",), skip=NOT_GRADING)


def graded_course(settings: SiteSettings) -> Path:
    """Where lesson 0's grader runs take the grader from: this course, or the edition `COURSE_EDITION` names
    (`python -m autograder export student-edition` builds the edition's site, whose lesson 0 shows the edition's
    grader)."""
    named = settings.edition
    return Path(named) if named and Path(named).is_dir() else REPO


def _fresh_clone(
    root: Path, settings: SiteSettings, solved: frozenset[str] = frozenset(), solutions: Path | None = None
) -> Path:
    """Copy what grading needs into `root`, with exercises/ generated from solutions/ as in a fresh clone (the
    `solved` tasks' code kept, from `solutions`)."""
    from autograder.export import stubs as sync

    course = graded_course(settings)
    for folder in ("autograder", "solutions"):
        if (course / folder).is_dir():  # a student edition has no solutions/
            shutil.copytree(course / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(course / "pyproject.toml", root / "pyproject.toml")
    (root / "exercises").mkdir()
    files = sync.expected_files(solutions, keep=solved) if solved else sync.expected_files()
    for name, text in files.items():
        (root / "exercises" / name).write_text(text)
    return root


class GraderRun:
    """`pytest autograder ARGS` in a throw-away fresh clone, started now, read when a page needs it.

    What it printed is kept with the pages' results: committed, keyed by what it grades (the solutions' sources),
    and in the local cache, keyed by the grader's sources too. A plain build reads the committed result;
    `python -m autograder dev build` runs it again when the grader changed, and rewrites it only if it prints
    something else.
    """

    def __init__(
        self,
        name: str,
        args: list[str],
        settings: SiteSettings,
        committed: buildcache.Committed,
        solved=frozenset(),
        bug: tuple[str, str] | None = None,
        solutions: Path | None = None,
        code: tuple[str, str] | None = None,
    ):
        self.settings = settings
        self.solutions = solutions  # where `solved` tasks' code comes from (`solutions_of`)
        self.code = code  # (key, text) of the function the page shows above the run (`shown_code`)
        self.committed_results = committed
        self.key = buildcache.sha("grader run", name, _grader_run_inputs())
        self.local = buildcache.sha(buildcache.machine(), self.key, grader_digest(settings))
        self.command = "pytest autograder" + "".join(f" {a}" for a in args)
        kept = None if settings.recording else committed.get(self.key)
        self.result = kept or (None if settings.check else buildcache.read(self.local))
        self._thread = None
        if self.result is None and settings.check:
            committed.missing.append(f"the grader run `{self.command}` (lesson 0)")
            self.result = ""
        if self.result is None:
            buildcache.log.info(f"course: running `{self.command}` on a fresh copy of the stubs, for lesson 0")
            self._thread = threading.Thread(target=self._run, args=(args, solved, bug), daemon=True)
            self._thread.start()

    def _run(self, args, solved, bug) -> None:
        try:
            self._grade(args, solved, bug)
        except Exception as exc:  # reported by output(), on the page that needs it
            self.error = f"`{self.command}` could not run: {type(exc).__name__}: {exc}"

    def _grade(self, args, solved, bug) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            root = _fresh_clone(Path(tmp), self.settings, solved, self.solutions)
            if bug:
                name, right, wrong = bug
                path = root / "exercises" / name
                text = path.read_text()
                if right not in text:
                    self.error = f"the deliberate bug {right!r} no longer matches exercises/{name}"
                    return
                path.write_text(text.replace(right, wrong, 1))
            # the copy's autograder/ and solutions/ must be the ones imported, not an installed checkout
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONSAFEPATH", "PYTEST_ADDOPTS")}
            env["PYTHONPATH"] = str(root)
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "autograder", *args],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
        out = done.stdout.rstrip()
        if "Scorecard" not in out:
            self.error = f"`{self.command}` printed no scorecard:\n{out}\n{done.stderr}"
            return
        out = PYTEST_DURATION.sub("", out)
        self.result = out + "\n"
        buildcache.write(self.local, self.result)

    def output(self, page: str) -> str:
        if self._thread:
            self._thread.join()
        if self.result is None:
            raise RuntimeError(getattr(self, "error", f"`{self.command}` failed"))
        self.committed_results.use(page, {"key": self.key, "grader run": self.command, "output": self.result})
        return self.result

    def shown_code(self, page: str) -> str:
        """The deliberate bug's function, as the page shows it above the run: kept with the run, so that an edition
        (which has no reference to take it from) shows it too."""
        key, code = self.code
        self.committed_results.use(page, {"key": key, "code of": "the deliberate bug", "output": code})
        return code


def solutions_of(settings: SiteSettings) -> Path | None:
    """The reference to plant lesson 0's bug in: the course's own, or the one the settings name (the course's, when
    `export student-edition` builds an edition's site); None in an edition's own build, which shows what its
    export kept."""
    for folder in (REPO / "solutions", Path(settings.solutions) if settings.solutions else None):
        if folder and has_sources(folder):
            return folder
    return None


def start(settings: SiteSettings, committed: buildcache.Committed) -> dict[str, GraderRun]:
    """Lesson 0's grader runs, by the directive that shows each: started now unless kept."""
    runs = {"scorecard": GraderRun("fresh", [], settings, committed)}
    solutions = solutions_of(settings)
    code = buildcache.sha("the deliberate bug's code", _grader_run_inputs())
    if solutions or (committed.get(code) and not settings.recording):
        bugged = demo()
        solved = frozenset(t.id for t in registry.lesson(bugged.lesson).tasks)
        bug = (f"{module_of(bugged.id)}.py", *bugged.demo_bug)
        args = ["--lesson", str(bugged.lesson)]
        shown = (code, buggy_function(solutions) if solutions else committed.get(code))
        runs["scorecard-failure"] = GraderRun("bug", args, settings, committed, solved, bug, solutions, shown)
    return runs


def buggy_function(solutions: Path) -> str:
    """The function of the deliberate bug, as the grader saw it."""
    bugged = demo()
    text = (solutions / f"{module_of(bugged.id)}.py").read_text()
    text = "\n".join(line for line in text.splitlines() if "### " not in line).replace(*bugged.demo_bug)
    node = next(n for n in ast.parse(text).body if getattr(n, "name", "") == bugged.owners[0])
    return ast.get_source_segment(text, node)
