"""The course's lessons and tasks, loaded from their data: `autograder/course/data/NN-slug.toml`, one per lesson.

Task ids are `L.N` (lesson L, task N) and are spelled the same in the solution
markers, the stubs' TODOs and errors, the page headings, the test markers and
the scorecard. Where each task's code is, the grader reads from the solution
markers (`autograder.course.regions`); the data says it too (`file`, `owners`),
and `python -m autograder dev check` (`autograder/course/check.py`) fails
when the two, the checks or the page disagree.

A lesson's file is named after its page (`01-derivatives.toml` for
`course/01-derivatives.md`) and holds:

- `title`; `file`, the stem of its solution file (`derivatives`); `bonus = true`
  when every task of the lesson is a bonus task (scored apart, never needed for
  full marks); `preload`, what the workers of its tasks import before the
  learner's code (`["torch"]`);
- one `[[task]]` table per task, in order:
  - `id` and `title`;
  - `owners`: the functions and `Class.method`s its code lives in, or, for a
    capstone that writes nothing, `runs_whole`: the learner files it runs whole,
    with no reference underneath, once every task in them passes;
  - `needs`: the tasks of its own lesson (or a later one) its checks run through,
    besides the earlier lessons (see `NEEDS`);
  - `hints`: the levels of hints, one paragraph each (blank lines between them),
    from a nudge to a plan; none pastes the answer line;
  - `[task.spec.OWNER]`: what the function or method promises, in phrases that
    `build` writes into its docstring (`Returns:`, `Raises:`, `Leaves unchanged:`),
    the page's task directive shows and hints quote: `returns = "..."`,
    `raises.KeyError = "when ..."`, `unchanged = "..."`. A hint quotes them with
    `{returns}`, `{raises}` or `{unchanged}` (`{OWNER.raises}` when the task has
    several owners with a spec);
  - `demo_bug`: the line of its reference and the buggy line that lesson 0 shows
    the grader's answer to;
- one `[[example]]` table per example of the lesson's learner notebook: `text`
  and `code`, run with the learner's code and with the reference;
- one `[[edition]]` table per sentence of the page that only the full course can
  say (a bug is charged once, because the reference runs underneath): `course`,
  the page's words, and `edition`, what the student edition's page says instead
  (words are compared, not line breaks; `""` leaves the words out, with the
  line break after them: a table's row).

The site's other pages that the student edition ships (the recap, the learners'
guide) say such sentences too: theirs are in `data/pages/NAME.toml` (for
`course/NAME.md`: `data/pages/guides/grading.toml` for the guide), `[[edition]]`
tables only, read by `pages()` when the edition is exported or the course checked.

Every grading run loads it (once per process), so loading is cheap: about 2 ms
of CPU more than the tuples this module held before. `build` keeps what
`tomllib` reads from the files in `data/parsed.json`, with their text; a run
whose files hold that very text reads the JSON (C) instead of parsing TOML
(Python, 2 to 3 ms more), and skips importing `tomllib`.
"""

from __future__ import annotations

import json
import os
import re
from collections import namedtuple
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"


class CourseDataError(ValueError):
    """A lesson's data file that does not say what the course needs, or says it wrong; the message names the file."""


# a named tuple: a tenth of a frozen dataclass's cost to define, every grading run
class Spec(namedtuple("Spec", ["owner", "returns", "raises", "unchanged"], defaults=("", (), ""))):
    """What one function or method of a task promises, as phrases: a docstring's sections, a page's list.

    `owner` (`Value.__pow__`), `returns` and `unchanged` (a phrase or ""), `raises`: (exception, when) pairs.
    """

    __slots__ = ()

    def raises_phrase(self) -> str:
        """`KeyError` when ...; `ValueError` when ... (what a hint's `{raises}` becomes)."""
        return "; ".join(f"`{error}` {when}" for error, when in self.raises)


@dataclass(frozen=True)
class Task:
    id: str
    title: str
    hints: tuple[str, ...]
    # a capstone has no code of its own: it runs these files of the learner's whole, with no reference underneath,
    # once every task in them passes
    runs_whole: tuple[str, ...] = ()
    owners: tuple[str, ...] = ()  # the functions and methods its code lives in, as the data says
    file: str = ""  # the stem of its solution file, as the data says
    needs: tuple[str, ...] = ()
    preload: tuple[str, ...] = ()  # what its worker imports before the learner's code
    spec: tuple[Spec, ...] = ()
    demo_bug: tuple[str, str] | None = None  # (a line of its reference, the bug lesson 0 puts in its place)

    @property
    def lesson(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def anchor(self) -> str:
        """The id of the task's heading on its page, e.g. `task-2-3`."""
        return "task-" + self.id.replace(".", "-")

    @property
    def bonus(self) -> bool:
        """A bonus task is scored apart and never needed for full marks; its lesson says so."""
        return LESSON_OF[self.id].bonus


@dataclass(frozen=True)
class Lesson:
    number: int
    slug: str
    title: str
    tasks: tuple[Task, ...] = field(default=())
    bonus: bool = False  # every task of the lesson is a bonus task
    examples: tuple[tuple[str, str], ...] = ()  # its learner notebook's examples: (what it shows, the code)
    edition: tuple[tuple[str, str], ...] = ()  # (the page's words, what the student edition's page says instead)

    @property
    def page(self) -> str:
        """The page's source file, relative to the repository root."""
        return f"course/{self.slug}.md"

    @property
    def data(self) -> str:
        """The lesson's data file, relative to the repository root."""
        return f"autograder/course/data/{self.slug}.toml"


# --- the loader -----------------------------------------------------------------------------------------------------

LESSON_KEYS = {"title", "file", "bonus", "preload", "task", "example", "edition"}
TASK_KEYS = {"id", "title", "owners", "runs_whole", "needs", "hints", "spec", "demo_bug"}
SPEC_KEYS = {"returns", "raises", "unchanged"}
EXAMPLE_KEYS = {"text", "code"}
EDITION_KEYS = {"course", "edition"}
QUOTE = r"\{(?:(?P<owner>[\w.]+)\.)?(?P<kind>returns|raises|unchanged)\}"  # compiled on the first hint that quotes
SLUG_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-")


def _fail(path: Path, message: str, up: int = 3):
    # named from the repository root: a lesson's file is 4 folders down (`up` 3), an other page's further (`pages()`)
    raise CourseDataError(f"{path.relative_to(path.parents[up]).as_posix()}: {message}")


def _strings(value, path: Path, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        _fail(path, f"{what} must be a list of names")
    return tuple(value)


def _keys(table: dict, allowed: set[str], path: Path, what: str, up: int = 3) -> None:
    unknown = set(table) - allowed
    if unknown:
        _fail(path, f"{what} has unknown key(s) {sorted(unknown)}; known: {sorted(allowed)}", up)


def _spec(owner: str, table, path: Path, where: str) -> Spec:
    if not isinstance(table, dict):
        _fail(path, f"{where}: spec.{owner} must be a table")
    _keys(table, SPEC_KEYS, path, f"{where}: spec.{owner}")
    raises = table.get("raises", {})
    if not isinstance(raises, dict):
        _fail(path, f'{where}: spec.{owner}.raises must be a table, e.g. raises.KeyError = "when ..."')
    phrases = {**{k: table[k] for k in ("returns", "unchanged") if k in table}, **raises}
    for name, text in phrases.items():
        if not isinstance(text, str) or not text.strip():
            _fail(path, f"{where}: spec.{owner}.{name} must be a phrase")
        if text.rstrip().endswith(".") or '"""' in text or "\\" in text or "\n" in text:
            _fail(path, f'{where}: spec.{owner}.{name} is one line, without a final period, a backslash or """')
    return Spec(owner, table.get("returns", ""), tuple(raises.items()), table.get("unchanged", ""))


def _hints(text, specs: tuple[Spec, ...], path: Path, where: str) -> tuple[str, ...]:
    """The levels of a `hints` string: its paragraphs, each made one line, with the spec's phrases quoted."""
    if not isinstance(text, str) or not text.strip():
        _fail(path, f"{where}: hints must be a string of paragraphs, one per level")
    by_owner = {spec.owner: spec for spec in specs}

    def quote(match: re.Match) -> str:
        owner, kind = match["owner"], match["kind"]
        if owner is None and len(specs) != 1:
            _fail(path, f"{where}: a hint quotes {{{kind}}} of a task with {len(specs)} specs: write {{OWNER.{kind}}}")
        spec = by_owner.get(owner) if owner else specs[0]
        if spec is None:
            _fail(path, f"{where}: a hint quotes the spec of {owner}, which has none")
        phrase = spec.raises_phrase() if kind == "raises" else getattr(spec, kind)
        if not phrase:
            _fail(path, f"{where}: a hint quotes {{{match[0][1:-1]}}}, which the spec does not say")
        return phrase

    lines = "\n".join(line.strip() for line in text.strip().splitlines())
    levels = [" ".join(paragraph.split()) for paragraph in lines.split("\n\n") if paragraph.strip()]
    return tuple(re.sub(QUOTE, quote, level) if "{" in level else level for level in levels)


def _task(table, number: int, lesson: dict, path: Path) -> Task:
    if not isinstance(table, dict):
        _fail(path, "each [[task]] must be a table")
    task_id = table.get("id")
    lesson_part, _, task_part = task_id.partition(".") if isinstance(task_id, str) else ("", "", "")
    if lesson_part != str(number) or not task_part.isdigit() or task_part.startswith("0"):
        _fail(path, f"task id {task_id!r}: a task of lesson {number} is {number}.N")
    where = f"task {task_id}"
    _keys(table, TASK_KEYS, path, where)
    title = table.get("title")
    if not isinstance(title, str) or not title.strip():
        _fail(path, f"{where} has no title")
    owners = _strings(table.get("owners", []), path, f"{where}: owners")
    runs_whole = _strings(table.get("runs_whole", []), path, f"{where}: runs_whole")
    if bool(owners) == bool(runs_whole):
        _fail(path, f"{where}: give it either owners (its code) or runs_whole (a capstone's files)")
    specs = table.get("spec", {})
    if not isinstance(specs, dict):
        _fail(path, f"{where}: spec must be a table of owners")
    spec = tuple(_spec(owner, specs[owner], path, where) for owner in specs)
    bug = table.get("demo_bug")
    if bug is not None and (not isinstance(bug, list) or len(bug) != 2 or not all(isinstance(b, str) for b in bug)):
        _fail(path, f"{where}: demo_bug is [the line of the reference, the buggy line]")
    return Task(
        id=task_id,
        title=title,
        hints=_hints(table.get("hints"), spec, path, where),
        runs_whole=runs_whole,
        owners=owners,
        file=lesson.get("file", ""),
        needs=_strings(table.get("needs", []), path, f"{where}: needs"),
        preload=_strings(lesson.get("preload", []), path, "preload"),
        spec=spec,
        demo_bug=tuple(bug) if bug else None,
    )


def _parse(path: Path, text: str, up: int = 3) -> dict:
    import tomllib  # here: a run whose files `parsed.json` holds does not import it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        _fail(path, f"not valid TOML: {exc}", up)


def load_lesson(path: Path, data: dict | None = None) -> Lesson:
    """One lesson's data file (or `data`, what `tomllib` read from it), checked for its own shape (`check.py`
    checks it against the course)."""
    stem = path.stem
    if not (stem[:2].isdigit() and stem[2:3] == "-" and len(stem) > 3 and set(stem[3:]) <= SLUG_CHARACTERS):
        _fail(path, "a lesson's data file is named after its page: NN-slug.toml")
    if data is None:
        data = _parse(path, path.read_text(encoding="utf-8"))
    _keys(data, LESSON_KEYS, path, "the lesson")
    number = int(stem[:2])
    if not isinstance(data.get("title"), str) or not data["title"].strip():
        _fail(path, "the lesson has no title")
    if not isinstance(data.get("bonus", False), bool):
        _fail(path, "bonus is true or false")
    examples = []
    for example in data.get("example", []):
        _keys(example, EXAMPLE_KEYS, path, "an [[example]]")
        if not all(isinstance(example.get(k), str) for k in EXAMPLE_KEYS):
            _fail(path, "an [[example]] has a text and a code")
        examples.append((example["text"], example["code"]))
    edition = _edition(data, path)
    tasks = tuple(_task(table, number, data, path) for table in data.get("task", []))
    return Lesson(number, path.stem, data["title"], tasks, data.get("bonus", False), tuple(examples), edition)


def _edition(data: dict, path: Path, up: int = 3) -> tuple[tuple[str, str], ...]:
    """A data file's `[[edition]]` tables: (the page's words, the edition's; "" leaves the words and their line out)."""
    edition = []
    for sentence in data.get("edition", []):
        _keys(sentence, EDITION_KEYS, path, "an [[edition]]", up)
        course, said = sentence.get("course"), sentence.get("edition")
        if not (isinstance(course, str) and course.strip() and isinstance(said, str)):
            _fail(path, "an [[edition]] has the page's words (`course`) and the edition's (`edition`)", up)
        edition.append((course.strip(), said.strip()))
    return tuple(edition)


# What `tomllib` reads from each lesson's file, kept beside them by `python -m autograder dev build` with the text it
# was read from: a run whose files hold that very text takes it from there, a thousandth of the time (JSON's reader
# is C, TOML's Python); any other reads the TOML. A stale or missing one costs time, never a wrong course.
PARSED = "parsed.json"


def _texts(folder: Path) -> dict[str, str]:
    names = sorted(name for name in os.listdir(folder) if name.endswith(".toml"))  # no glob: its pattern costs more
    texts = {}
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8") as file:
            texts[name] = file.read()
    return texts


def parsed_snapshot(folder: Path = DATA) -> str:
    """The text of `folder/parsed.json`, as build writes it: each lesson's file's text and what `tomllib` read."""
    texts = _texts(folder)
    lessons = {name: {"toml": text, "parsed": _parse(folder / name, text)} for name, text in texts.items()}
    about = "written by `python -m autograder dev build` from the .toml files beside it; read where they are unchanged"
    return json.dumps({"about": about, "lessons": lessons}, ensure_ascii=False, indent=1) + "\n"  # in TOML order


def load(folder: Path = DATA) -> tuple[Lesson, ...]:
    """Every lesson's data, in lesson order."""
    texts = _texts(folder)
    try:
        kept = json.loads((folder / PARSED).read_bytes())["lessons"]
    except (OSError, ValueError, KeyError, TypeError):
        kept = {}
    parsed = {}
    for name, text in texts.items():
        same = kept.get(name) if isinstance(kept, dict) else None
        fresh = isinstance(same, dict) and same.get("toml") == text and isinstance(same.get("parsed"), dict)
        parsed[name] = same["parsed"] if fresh else _parse(folder / name, text)
    lessons = (load_lesson(folder / name, data) for name, data in parsed.items())
    return tuple(sorted(lessons, key=lambda lesson: lesson.number))


LESSONS: tuple[Lesson, ...] = load()
TASKS: dict[str, Task] = {t.id: t for lesson in LESSONS for t in lesson.tasks}
LESSON_OF: dict[str, Lesson] = {t.id: lesson for lesson in LESSONS for t in lesson.tasks}


@dataclass(frozen=True)
class Page:
    """A page of the site, not a lesson's, that the student edition ships and that says otherwise where it promises
    what only the full course does: `data/pages/NAME.toml` for `course/NAME.md`, which holds `[[edition]]` tables
    only (NAME may have folders: `guides/grading`)."""

    name: str  # guides/grading
    edition: tuple[tuple[str, str], ...] = ()

    @property
    def page(self) -> str:
        return f"course/{self.name}.md"

    @property
    def data(self) -> str:
        return f"autograder/course/data/pages/{self.name}.toml"


PAGE_KEYS = {"edition"}


def pages(folder: Path = DATA) -> tuple[Page, ...]:
    """The other pages' data, read when asked (by the student edition's export and `dev check`), not by every run."""
    found = []
    for path in sorted((folder / "pages").rglob("*.toml")):
        up = len(path.relative_to(folder).parts) + 2  # how far the repository is: its error names the file from there
        data = _parse(path, path.read_text(encoding="utf-8"), up=up)
        _keys(data, PAGE_KEYS, path, "a page's data", up=up)
        name = path.relative_to(folder / "pages").with_suffix("").as_posix()
        found.append(Page(name, _edition(data, path, up=up)))
    return tuple(found)


def lesson(number: int) -> Lesson:
    for candidate in LESSONS:
        if candidate.number == number:
            return candidate
    raise KeyError(f"there is no lesson {number}; lessons are 0 to {LESSONS[-1].number}")


def task(task_id: str) -> Task:
    try:
        return TASKS[task_id]
    except KeyError:
        raise KeyError(
            f"there is no task {task_id!r}; tasks look like 2.3 (see `python -m autograder tasks`)"
        ) from None


def words(sentence: str) -> re.Pattern:
    """A sentence as a pattern of its words, whatever spaces or line breaks stand between them on a page."""
    return re.compile(r"\s+".join(re.escape(word) for word in sentence.split()))


def sort_key(task_id: str) -> tuple[int, int]:
    lesson_number, number = task_id.split(".")
    return int(lesson_number), int(number)


# What a task's checks run through in its own lesson (or a later one), besides the lessons before it: the reference
# of these tasks sits under the learner's code in the task's worker, so that a bug there is not charged twice.
# `tests/test_prerequisites.py` grades each task over these alone. Each task's `needs` in its lesson's data.
NEEDS: dict[str, tuple[str, ...]] = {t.id: t.needs for t in TASKS.values() if t.needs}


def prerequisites(task_id: str) -> frozenset[str]:
    """The tasks whose reference code a task's worker holds: every task of the earlier lessons that are not
    bonus lessons, and the ones `NEEDS` names. No other reference code is in reach of the task's code: any other
    task's code it calls is the learner's own (three functions calling each other in a circle recurse forever).
    """
    number = LESSON_OF[task_id].number
    earlier = {t.id for lesson in LESSONS if lesson.number < number and not lesson.bonus for t in lesson.tasks}
    return frozenset(earlier | set(NEEDS.get(task_id, ())))
