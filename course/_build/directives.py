"""The page directives: HTML comments that a writer puts on a line of its own, expanded into Markdown generated
from `autograder.course.registry` and the sources; and the checks that the nav and the lessons' task headings
agree with the course's data.

`<!-- course: your-turn N -->`   the "your turn" box of lesson N: its tasks, the stub files, the command that
                                  grades the lesson
`<!-- course: task L.N -->`       a task's spec (what its functions return, raise and leave unchanged, from the
                                  course's data), its stub (what the learner finds in exercises/) and its graded
                                  hints, collapsed
`<!-- course: hints L.N -->`      the hints alone
`<!-- course: lessons -->`        the table of lessons and tasks (home page)
`<!-- course: lecture N -->`      the chapters of the lecture that lesson N follows, linked
`<!-- course: scorecard -->`      what `pytest autograder` prints on a fresh clone (`grader_runs.py`)
`<!-- course: scorecard-failure -->` the scorecard of a run with a deliberate bug
`<!-- course: clone -->`          the `git clone` command of the course (mkdocs.yml's `repo_url` when set)

A directive it does not know stops the build.
"""

from __future__ import annotations

import ast
import re

import grader_runs
from mkdocs.exceptions import PluginError

from autograder.course import registry
from autograder.course.regions import module_of, owners_of

DIRECTIVE = re.compile(r"^<!-- course: (?P<name>[\w-]+)(?: (?P<arg>[^>]*?))? -->[ \t]*$", re.M)


def nav_title(lesson) -> str:
    """A lesson's title in the navigation: `N · title`, marked when all its tasks are bonus tasks."""
    return f"{lesson.number} · {lesson.title}" + (" (bonus)" if lesson.bonus else "")


def check_nav(config) -> None:
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
            f"Nothing new to write: this task runs your own {files} together, and nothing else, "
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


def _clone(config) -> str:
    """How to get the course: `git clone` of mkdocs.yml's `repo_url`, or of the address the learner was given."""
    url = (config or {}).get("repo_url")
    if url:
        return f"```bash\ngit clone {url} backprop-course\ncd backprop-course\n```\n"
    return (
        "The course is a Git repository: clone it from the address you were given (your instructor's link, or\n"
        "the repository page's **Code** button, an address such as `https://github.com/NAME/REPOSITORY.git`).\n"
        "Put that address in place of `URL-YOU-WERE-GIVEN`:\n\n"
        "```bash\ngit clone URL-YOU-WERE-GIVEN backprop-course\ncd backprop-course\n```\n"
    )


def expand(name: str, arg: str | None, config=None, runs: dict | None = None, page: str = "") -> str:
    """The Markdown of `<!-- course: NAME ARG -->` on `page`: `config` is mkdocs', `runs` lesson 0's grader runs
    (`grader_runs.start`)."""
    runs = runs or {}
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
        return _clone(config)
    if name == "scorecard":
        run = runs[name]
        return _output_block(run.output(page), f"$ {run.command}")
    if name == "scorecard-failure":
        if name not in runs:
            return "!!! note\n    This example of a failing task is shown in the full course, not in this edition.\n"
        run = runs[name]
        # the grader's hints for the buggy task would hand its answer to a reader of lesson 0 (a hint wrapped over
        # lines goes on 12 spaces in or more)
        out = run.output(page)
        hint = r"^( +hint: +).*(?:\n {12,}\S.*)*$"
        demo = grader_runs.demo()
        out = re.sub(hint, rf"\1[left out here: it would give task {demo.id} away]", out, flags=re.M)
        buggy = run.shown_code(page)
        return (
            f'```python title="exercises/{module_of(demo.id)}.py, task {demo.id}, with a bug"\n{buggy}'
            f"\n```\n\nGrading lesson {demo.lesson} then prints:\n\n" + _output_block(out, f"$ {run.command}")
        )
    raise ValueError(f"unknown directive <!-- course: {name} -->")


def check_task_headings(markdown: str, page) -> None:
    """A lesson page has `### Task L.N · title {#task-L-N}` for each task, titled as in the course's data."""
    lesson = next((x for x in registry.LESSONS if page.file.src_path == f"{x.slug}.md"), None)
    for task in lesson.tasks if lesson else ():
        want = f"### Task {task.id} · {md_title(task.title)} {{#{task.anchor}}}"
        if not re.search("^" + re.escape(want) + "[ \t]*$", markdown, re.M):
            raise PluginError(f"{page.file.src_path}: the heading of task {task.id} must read: {want}")
