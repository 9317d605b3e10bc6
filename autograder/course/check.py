"""`python -m autograder dev check`: the course's data against the code, the checks and the pages it names.

Every task is declared once, in its lesson's data (`autograder/course/data/`,
loaded by `registry.py`); this check says, as `FILE: what is wrong`, each place
that disagrees with it, or that the data leaves out:

- the data: a file that does not load, lessons numbered twice or with a gap, a
  task declared twice, a `needs` that names no task (or the task itself), a
  capstone's file that is no solution file, a spec of a function the task does
  not own, a hint that quotes a spec it does not have, a demo bug whose line is
  not in its reference;
- the markers (`solutions/`): a task with no `### BEGIN SOLUTION (task L.N)`,
  or whose markers sit in other functions than its `owners`; a marker of a task
  the data does not declare;
- the checks (`autograder/lessons/test_NN_*.py`): a task with no
  `@pytest.mark.task("L.N")` check, or none that is `@pytest.mark.hidden`; a
  marker of an undeclared task, or in another lesson's file;
- the page (`course/NN-slug.md`): no heading `### Task L.N · TITLE {#task-L-N}`
  (its title the data's), no `<!-- course: task L.N -->` under it (which shows the
  task's spec, stub and hints), a heading or directive of an undeclared task, no
  "your turn" box, a sentence that the student edition replaces (`[[edition]]`)
  no longer there; the same of another page's sentences (`data/pages/NAME.toml`);
- the pages the student edition ships: words it shares with the course that name the reference;
- the pages' code (`course/**/*.md`): a Python block that imports `solutions`. A page's code imports what a
  learner has, `exercises`: the site's build binds it to the reference where the course has one
  (`course/_build/hooks.py`), and a student edition's pages then show the learner's own imports;
- the spec: a docstring in `solutions/` or `exercises/` that does not end in what
  the data's spec says (`build` writes it); an exception that the task's checks
  expect (`expect_raised`) and its spec does not say it raises, or the reverse;
  an exception that a hint, a check's hint or the page's words about the task
  name and the spec does not.

It reads files only (no grading run, no site build): about a second.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from autograder.course import edition_words, registry, spec
from autograder.course.regions import REPO, RegionError, parse

ERROR = re.compile(r"\b(?!NotImplementedError\b)[A-Z][A-Za-z]*Error\b")
HEADING = re.compile(r"^### Task (?P<id>\d+\.\d+) · (?P<title>.*?)(?: \{#(?P<anchor>[\w-]+)\})?[ \t]*$", re.M)
PYTHON_BLOCK = re.compile(r"^(?P<fence>[ \t]*```+)python\b[^\n]*\n(?P<code>.*?)^(?P=fence)[ \t]*$", re.M | re.S)
IMPORTS_SOLUTIONS = re.compile(r"^[ \t]*(?:from[ \t]+solutions\b|import[ \t]+solutions\b)", re.M)
TASK_DIRECTIVE = re.compile(r"^<!-- course: task (?P<id>\S+) -->[ \t]*$", re.M)


@dataclass(frozen=True)
class Problem:
    path: str  # relative to the repository root
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Check:
    """One grading test as its file declares it."""

    name: str
    task: str
    hidden: bool
    hint: str
    expects_raised: frozenset[str]  # the exception names its `expect_raised(...)` calls give


def _marker(decorator: ast.expr, name: str) -> ast.Call | ast.Attribute | None:
    """`@pytest.mark.NAME(...)` or `@pytest.mark.NAME`, else None."""
    node = decorator.func if isinstance(decorator, ast.Call) else decorator
    if isinstance(node, ast.Attribute) and node.attr == name and ast.unparse(node.value).endswith("mark"):
        return decorator
    return None


def checks_of(path: Path) -> list[Check]:
    """The task-marked tests of a lesson's test file, read from its source (not imported)."""
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        for decorator in node.decorator_list:
            call = _marker(decorator, "task")
            if not isinstance(call, ast.Call) or not call.args or not isinstance(call.args[0], ast.Constant):
                continue
            hint = next((k.value for k in call.keywords if k.arg == "hint"), None)
            raised = {
                c.args[1].value
                for c in ast.walk(node)
                if isinstance(c, ast.Call)
                and getattr(c.func, "id", getattr(c.func, "attr", "")) == "expect_raised"
                and len(c.args) > 1
                and isinstance(c.args[1], ast.Constant)
            }
            found.append(
                Check(
                    node.name,
                    str(call.args[0].value),
                    any(_marker(d, "hidden") for d in node.decorator_list),
                    hint.value if isinstance(hint, ast.Constant) and isinstance(hint.value, str) else "",
                    frozenset(raised),
                )
            )
    return found


def _sections(text: str) -> dict[str, str]:
    """Each task's own words on a page: from its heading to the next heading or its directive."""
    sections = {}
    headings = list(HEADING.finditer(text))
    for n, match in enumerate(headings):
        end = headings[n + 1].start() if n + 1 < len(headings) else len(text)
        body = text[match.end() : end]
        directive = re.search(rf"^<!-- course: task {re.escape(match['id'])} -->", body, re.M)
        sections[match["id"]] = body[: directive.start()] if directive else body
    return sections


def check_course(root: Path = REPO) -> list[Problem]:
    """Every disagreement between the course's data and the files it names, in the course under `root`."""
    problems: list[Problem] = []

    def problem(path: Path | str, message: str) -> None:
        problems.append(Problem(Path(path).relative_to(root).as_posix() if Path(path).is_absolute() else path, message))

    data = root / "autograder" / "course" / "data"
    lessons = []
    for path in sorted(data.glob("*.toml")):
        try:
            lessons.append(registry.load_lesson(path))
        except registry.CourseDataError as exc:
            problems.append(Problem(*str(exc).split(": ", 1)))
    if problems or not lessons:  # what the other files are checked against is not known yet
        return problems or [Problem(data.relative_to(root).as_posix(), "no lesson's data (NN-slug.toml)")]
    _check_parsed(data, lessons, problem)
    lessons.sort(key=lambda lesson: lesson.number)
    data_file = {lesson.number: root / lesson.data for lesson in lessons}
    numbers = [lesson.number for lesson in lessons]
    if numbers != list(range(len(lessons))):
        problem(data, f"the lessons are numbered {numbers}: number them 0, 1, 2, ... once each (NN-slug.toml)")
    tasks: dict[str, registry.Task] = {}
    for lesson in lessons:
        for task in lesson.tasks:
            if task.id in tasks:
                problem(data_file[lesson.number], f"task {task.id} is declared twice")
            tasks[task.id] = task
        ids = [int(t.id.split(".")[1]) for t in lesson.tasks]
        if ids != list(range(1, len(ids) + 1)):
            problem(data_file[lesson.number], f"its tasks are numbered {ids}: number them 1, 2, 3, ... in order")

    solutions, exercises = root / "solutions", root / "exercises"
    regions = []
    for path in sorted(solutions.glob("*.py")):
        try:
            regions += parse(path.read_text(encoding="utf-8"), path.stem, str(path))
        except (RegionError, SyntaxError) as exc:
            problem(path, f"its markers or code do not parse: {exc}")
    for region in regions:
        for task_id in region.tasks:
            if task_id not in tasks:
                problem(
                    solutions / f"{region.module}.py",
                    f"line {region.begin}: a marker of task {task_id}, which no lesson's data declares",
                )

    for lesson in lessons:
        where = data_file[lesson.number]
        for task in lesson.tasks:
            _check_data(task, tasks, solutions, where, problem)
            if task.runs_whole:
                continue
            mine = [r for r in regions if task.id in r.tasks]
            if not task.file:
                problem(where, f"task {task.id} has owners but the lesson names no `file`")
                continue
            source = solutions / f"{task.file}.py"
            if not mine:
                problem(source, f"task {task.id} ({task.title}) has no region `### BEGIN SOLUTION (task {task.id})`")
                continue
            files = {r.module for r in mine}
            owners = {r.owner for r in mine}
            if files != {task.file}:
                problem(
                    source,
                    f"task {task.id}'s markers are in {sorted(f + '.py' for f in files)}, its data's "
                    f"file is {task.file}.py",
                )
            elif owners != set(task.owners):
                problem(
                    source,
                    f"task {task.id}'s markers sit in {sorted(owners)}; its data's owners are "
                    f"{sorted(task.owners)} ({where.relative_to(root).as_posix()})",
                )

    _check_checks(root, lessons, tasks, data_file, problem)
    _check_pages(root, lessons, tasks, problem)
    _check_other_pages(root, data, lessons, problem)
    _check_page_code(root, problem)
    _check_docstrings(lessons, solutions, exercises, problem)
    return problems


def _check_parsed(data: Path, lessons: list[registry.Lesson], problem) -> None:
    """`parsed.json` says what the data files say, or is out of date (then it is not read: build rewrites it)."""
    path = data / registry.PARSED
    if path.is_file() and lessons and registry.load(data) != tuple(sorted(lessons, key=lambda x: x.number)):
        problem(path, "it says other things than the .toml files beside it: run python -m autograder dev build")


def _check_data(task: registry.Task, tasks: dict, solutions: Path, where: Path, problem) -> None:
    for needed in task.needs:
        if needed == task.id:
            problem(where, f"task {task.id} needs itself")
        elif needed not in tasks:
            problem(where, f"task {task.id} needs task {needed}, which no lesson's data declares")
    for name in task.runs_whole:
        if not (solutions / f"{name}.py").is_file():
            problem(where, f"task {task.id} runs {name}.py whole, which is not a file of solutions/")
    for item in task.spec:
        if item.owner not in task.owners:
            problem(where, f"task {task.id} has a spec of {item.owner}, which is not one of its owners {task.owners}")
    if task.demo_bug and task.file:
        source = solutions / f"{task.file}.py"
        if source.is_file() and task.demo_bug[0] not in source.read_text(encoding="utf-8"):
            problem(where, f"task {task.id}'s demo_bug line {task.demo_bug[0]!r} is not in {source.name}")


def _check_checks(root: Path, lessons, tasks: dict, data_file: dict, problem) -> None:
    folder = root / "autograder" / "lessons"
    checks: dict[str, list[Check]] = {}
    for path in sorted(folder.glob("test_*.py")):
        number = re.match(r"test_(\d+)_", path.name)
        for check in checks_of(path):
            if check.task not in tasks:
                problem(path, f"{check.name} is marked task {check.task!r}, which no lesson's data declares")
                continue
            if number and int(number[1]) != tasks[check.task].lesson:
                problem(path, f"{check.name} is marked task {check.task}, of lesson {tasks[check.task].lesson}")
            checks.setdefault(check.task, []).append(check)
    for lesson in lessons:
        files = sorted(folder.glob(f"test_{lesson.number:02d}_*.py"))
        if lesson.tasks and not files:
            problem(folder, f"lesson {lesson.number} has tasks and no test file test_{lesson.number:02d}_*.py")
        test_file = files[0] if files else folder / f"test_{lesson.number:02d}_{lesson.slug[3:]}.py"
        for task in lesson.tasks:
            mine = checks.get(task.id, [])
            if not mine:
                problem(test_file, f'task {task.id} ({task.title}) has no check `@pytest.mark.task("{task.id}", ...)`')
                continue
            if not any(check.hidden for check in mine):
                problem(test_file, f"task {task.id} has no hidden check (`@pytest.mark.hidden`, seeded inputs)")
            expected = set().union(*(check.expects_raised for check in mine))
            declared = {error for item in task.spec for error, _ in item.raises}
            where = data_file[lesson.number].relative_to(root).as_posix()
            for error in sorted(expected - declared):
                problem(
                    test_file,
                    f"task {task.id}'s checks expect {error}, which its spec does not say it raises "
                    f"(add raises.{error} to its spec in {where})",
                )
            for error in sorted(declared - expected):
                problem(
                    data_file[lesson.number],
                    f"task {task.id}'s spec says it raises {error}; no check of "
                    f"{test_file.name} expects it (`expect_raised`)",
                )
            said = {f"its check {c.name}'s hint": c.hint for c in mine}
            for label, text in said.items():
                for error in sorted(set(ERROR.findall(text)) - declared):
                    problem(test_file, f"{label} names {error}, which task {task.id}'s spec does not say it raises")
            for n, hint in enumerate(task.hints, start=1):
                for error in sorted(set(ERROR.findall(hint)) - declared):
                    problem(
                        data_file[lesson.number],
                        f"hint {n} of task {task.id} names {error}, which its spec does not say it raises",
                    )


def _check_pages(root: Path, lessons, tasks: dict, problem) -> None:
    for lesson in lessons:
        page = root / lesson.page
        if not page.is_file():
            problem(page, f"lesson {lesson.number} ({lesson.title}) has no page")
            continue
        text = page.read_text(encoding="utf-8")
        headings = {m["id"]: m for m in HEADING.finditer(text)}
        sections = _sections(text)
        directives = [m["id"] for m in TASK_DIRECTIVE.finditer(text)]
        for task_id in [*headings, *directives]:
            if task_id not in tasks:
                problem(page, f"a heading or directive of task {task_id}, which no lesson's data declares")
            elif tasks[task_id].lesson != lesson.number:
                problem(page, f"a heading or directive of task {task_id}, which is lesson {tasks[task_id].lesson}'s")
        _still_says(problem, page, text, lesson.edition, lesson.data)
        if lesson.tasks and f"<!-- course: your-turn {lesson.number} -->" not in text:
            problem(page, f'no "your turn" box: <!-- course: your-turn {lesson.number} -->')
        for task in lesson.tasks:
            heading = headings.get(task.id)
            want = f"### Task {task.id} · TITLE {{#{task.anchor}}}"
            if heading is None:
                problem(page, f"task {task.id} ({task.title}) has no heading {want}")
                continue
            if heading["anchor"] != task.anchor:
                problem(page, f"task {task.id}'s heading has no anchor {{#{task.anchor}}}: {heading[0]}")
            if heading["title"].replace("`", "") != task.title:
                problem(page, f"task {task.id}'s heading says {heading['title']!r}; its data's title is {task.title!r}")
            if task.id not in directives:
                problem(
                    page,
                    f"task {task.id}'s section does not show its spec, stub and hints: add "
                    f"<!-- course: task {task.id} --> under its heading",
                )
            declared = {error for item in task.spec for error, _ in item.raises}
            for error in sorted(set(ERROR.findall(sections.get(task.id, ""))) - declared):
                problem(page, f"the words about task {task.id} name {error}, which its spec does not say it raises")


def _check_page_code(root: Path, problem) -> None:
    """No page's Python block imports `solutions`: it imports `exercises`, which the site's build binds to the
    reference where there is one (so that a student edition's pages show what its learners have)."""
    for page in sorted((root / "course").rglob("*.md")):
        text = page.read_text(encoding="utf-8")
        for block in PYTHON_BLOCK.finditer(text):
            for found in IMPORTS_SOLUTIONS.finditer(block["code"]):
                line = text.count("\n", 0, block.start("code") + found.start()) + 1
                problem(
                    page,
                    f"line {line}: a Python block imports `solutions`; import `exercises` instead (the site's build "
                    "binds it to the reference, and a student edition shows the learner's own)",
                )


def _check_other_pages(root: Path, data: Path, lessons, problem) -> None:
    """The other pages' data (`data/pages/NAME.toml`): each names a page, which still says what the edition replaces;
    and no page the edition ships names the reference in the words it shares with the course (`edition_words`)."""
    try:
        pages = registry.pages(data)
    except registry.CourseDataError as exc:
        problem(*str(exc).split(": ", 1))
        pages = ()
    for page in pages:
        path = root / page.page
        if not path.is_file():
            problem(root / page.data, f"there is no page {page.page}")
            continue
        _still_says(problem, path, path.read_text(encoding="utf-8"), page.edition, page.data)
    for path in sorted((root / "course").rglob("*.md")):
        name = path.relative_to(root / "course").as_posix()
        if not edition_words.shipped(name):
            continue
        text = path.read_text(encoding="utf-8")
        data = edition_words.page_data(name, lessons, pages)
        if any(not registry.words(course).search(text) for course, _ in data.edition):
            continue  # said above (or with the lesson's page)
        for line, words in edition_words.shared_mentions(text, data.edition):
            problem(
                path,
                f"line {line}: the student edition shows these words too, and it has no reference: reword them, or "
                f"give the edition its own sentence ([[edition]] in {data.data}): {words}",
            )


def _check_docstrings(lessons, solutions: Path, exercises: Path, problem) -> None:
    modules = sorted({task.file for lesson in lessons for task in lesson.tasks if task.file})
    for module in modules:
        for folder in (solutions, exercises):
            path = folder / f"{module}.py"
            if not path.is_file():
                if folder == solutions:
                    problem(path, f"no such file: the lesson data's file {module!r}")
                continue
            text = path.read_text(encoding="utf-8")
            try:
                wanted = spec.with_spec(text, module, str(path), lessons)
            except (ValueError, SyntaxError) as exc:
                problem(path, str(exc))
                continue
            if wanted == text:
                continue
            found, said = spec.functions(ast.parse(text)), spec.functions(ast.parse(wanted))
            for name in sorted(found):
                if name in said and ast.get_docstring(found[name]) != ast.get_docstring(said[name]):
                    problem(
                        path,
                        f"the docstring of {name} does not end in its spec as the course's data says "
                        "it: run python -m autograder dev build",
                    )


def _still_says(problem, page, text: str, edition: list, data) -> None:
    """Each sentence the student edition replaces on `page` is still there to replace (declared in `data`)."""
    for course, _ in edition:
        if not registry.words(course).search(text):
            replaced = f"{course!r}, which the student edition replaces"
            problem(page, f"no longer says {replaced}: update [[edition]] in {data}")
