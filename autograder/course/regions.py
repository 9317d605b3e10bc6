"""Read the solution regions of `solutions/`: where each task's code lives.

A region is the code between `### BEGIN SOLUTION (task L.N)` and
`### END SOLUTION` (several ids: `(task 5.2, 7.1)`; the first one is the
region's own task). From the regions we know each task's file and its
*owners*: the top-level functions, classes or `Class.method`s that hold its
code. The grader uses the owners to run a task's code over the reference
version of everything else.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from autograder.course import registry
from autograder.worker.wire import stub_message

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
EXERCISES = REPO / "exercises"
# A student edition (`python -m autograder export student-edition`) ships no reference: the regions, the stubs and the
# reference's fingerprint are written here instead.
EDITION_MANIFEST = REPO / "autograder" / "edition.json"

BEGIN = re.compile(r"^(?P<indent>[ \t]*)### BEGIN SOLUTION \(task (?P<ids>\d+\.\d+(?:, *\d+\.\d+)*)\)[ \t]*$")
END = re.compile(r"^[ \t]*### END SOLUTION[ \t]*$")


LINE_END = re.compile(r"(\r\n|\r|\n)")


def source_lines(text: str) -> list[str]:
    """The lines of Python source `text` as Python's tokenizer reads them: ended by "\\r\\n", "\\r" or "\\n" only.

    Not `str.splitlines`, which also ends a line at "\\x0b", "\\x0c", "\\x1c" to "\\x1e", "\\x85", U+2028 and
    U+2029: characters a string or a comment may hold, which would be cut in two (and a string literal no longer
    parse) once the lines are joined again, and would shift every line number after them from the AST's.
    """
    lines = LINE_END.split(text)[::2]
    return lines[:-1] if lines[-1] == "" else lines


class RegionError(ValueError):
    """A solution file whose markers are malformed."""


@dataclass(frozen=True)
class Region:
    module: str  # file stem in solutions/, e.g. "engine"
    tasks: tuple[str, ...]  # first = the region's own task
    begin: int  # 1-based line of the BEGIN marker
    end: int  # 1-based line of the END marker
    indent: str
    owner: str  # "Value.__add__", "trace", ...
    scope: str = ""  # the innermost function around it, as Python names it: "Value.__add__.<locals>._backward"

    @property
    def task(self) -> str:
        return self.tasks[0]


@cache
def parse(text: str, module: str, filename: str = "<solution>") -> list[Region]:
    """Find the regions of one solution file, checking that markers pair up and sit inside a function."""
    owners = _owners_by_line(text, filename)
    scopes = _scopes_by_line(text, filename)
    regions, open_at = [], None
    for number, line in enumerate(source_lines(text), start=1):
        if match := BEGIN.match(line):
            if open_at:
                raise RegionError(f"{filename}:{number}: BEGIN SOLUTION inside the region opened at line {open_at[0]}")
            open_at = (number, match)
        elif line.lstrip().startswith("#") and "BEGIN SOLUTION" in line:
            raise RegionError(f"{filename}:{number}: write the marker as `### BEGIN SOLUTION (task L.N)`")
        elif END.match(line):
            if not open_at:
                raise RegionError(f"{filename}:{number}: END SOLUTION without a BEGIN")
            begin, match = open_at
            owner = owners.get(begin)
            if owner is None:
                raise RegionError(f"{filename}:{begin}: a solution region must sit inside a function body")
            ids = tuple(i.strip() for i in match["ids"].split(","))
            regions.append(Region(module, ids, begin, number, match["indent"], owner, scopes.get(begin, owner)))
            open_at = None
    if open_at:
        raise RegionError(f"{filename}:{open_at[0]}: BEGIN SOLUTION is never closed")
    return regions


def _owners_by_line(text: str, filename: str) -> dict[int, str]:
    """Map each line inside a top-level function or method to its owner's name."""
    owners: dict[int, str] = {}

    def claim(node: ast.AST, name: str) -> None:
        for line in range(node.lineno, node.end_lineno + 1):
            owners[line] = name

    for node in ast.parse(text, filename).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            claim(node, node.name)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    claim(item, f"{node.name}.{item.name}")
    return owners


def owner_span(text: str, owner: str, filename: str = "<file>") -> tuple[int, int] | None:
    """The first and last lines (1-based) of `owner` (`Class.method` or a function) in `text`; None if it has none."""
    lines = [number for number, name in _owners_by_line(text, filename).items() if name == owner]
    return (min(lines), max(lines)) if lines else None


def _scopes_by_line(text: str, filename: str) -> dict[int, str]:
    """Map each line to the qualified name of the innermost function around it."""
    scopes: dict[int, str] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                for line in range(child.lineno, child.end_lineno + 1):
                    scopes[line] = name
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(text, filename), "")
    return scopes


def tasks_of_scope(module: str, scope: str) -> frozenset[str]:
    """The tasks whose code sits directly in the function `scope` of `module` (empty if none does)."""
    return frozenset(t for r in all_regions() if r.module == module and r.scope == scope for t in r.tasks)


def has_sources(root: Path = SOLUTIONS) -> bool:
    """False in a student edition, which ships no reference (one stat: the grader asks often)."""
    return (root / "engine.py").is_file()


def edition_manifest() -> dict:
    try:
        return json.loads(EDITION_MANIFEST.read_text())
    except FileNotFoundError:
        raise RuntimeError(f"{SOLUTIONS} has no sources and {EDITION_MANIFEST} is missing") from None


def solution_files(root: Path = SOLUTIONS) -> list[Path]:
    """The reference's files (in a student edition, the names its manifest lists)."""
    if root != SOLUTIONS or has_sources(root):
        return sorted(root.glob("*.py"))
    return [root / name for name in edition_manifest()["files"]]


@cache
def all_regions(root: Path = SOLUTIONS) -> tuple[Region, ...]:
    if root == SOLUTIONS and not has_sources(root):
        return tuple(Region(**{**r, "tasks": tuple(r["tasks"])}) for r in edition_manifest()["regions"])
    return tuple(r for path in solution_files(root) for r in parse(path.read_text(), path.stem, str(path)))


def manifest_entries() -> list[dict]:
    """The regions as JSON-able data, for a student edition's manifest."""
    return [asdict(r) for r in all_regions()]


def module_of(task_id: str) -> str:
    """The file (stem) that holds a task's code, e.g. `'engine'` for task 2.3 (a capstone: the first file it runs)."""
    if task_id in registry.TASKS and registry.task(task_id).runs_whole:
        return registry.task(task_id).runs_whole[0]
    modules = {r.module for r in all_regions() if task_id in r.tasks}
    if len(modules) != 1:
        raise LookupError(f"task {task_id} has code in {sorted(modules) or 'no file'}; expected exactly one file")
    return modules.pop()


def waits_for(task_id: str) -> list[str]:
    """For a capstone, the tasks whose code it runs whole; for any other task, none."""
    files = registry.task(task_id).runs_whole
    ids = {t for r in all_regions() if r.module in files for t in r.tasks}
    return sorted((t for t in ids if not registry.task(t).bonus), key=registry.sort_key)


def owners_of(task_id: str) -> frozenset[str]:
    """The functions and methods a task's code lives in, e.g. `{'Value.__add__'}`."""
    return frozenset(r.owner for r in all_regions() if task_id in r.tasks)


# --- a region as a learner's stub ---------------------------------------------------------------------------------


def stub_lines(task_ids: tuple[str, ...], indent: str) -> list[str]:
    """The lines that replace a solution region: a TODO, one line per later task that shares it, the raise.

    A region shared with later tasks names them without their titles: a later task's title would
    announce what that lesson lets the learner discover before the learner gets there. Each note has a
    line of its own, so that none is cut off where the page shows the stub.
    """
    own = registry.task(task_ids[0])
    return [
        f"{indent}# TODO(task {own.id}): {own.title}: see the docstring.",
        *(f"{indent}# Also task {t}: a later task revisits this code." for t in task_ids[1:]),
        f'{indent}raise NotImplementedError("{stub_message(own.id, own.title)}")',
    ]


def generate(text: str, module: str, keep: frozenset[str] = frozenset(), filename: str = "<solution>") -> str:
    """Return the exercise version of a solution file; regions whose own task is in `keep` stay solved."""
    return _stub_regions(text, module, filename, lambda region: region.task in keep)


def for_task(text: str, module: str, task_id: str, kept: frozenset[str], filename: str = "<solution>") -> str:
    """The solution file as the worker of `task_id` holds it: every region a stub, except those of a task in `kept`
    (its prerequisites), and never one of `task_id`'s own (a region shared by tasks belongs to each of them)."""
    return _stub_regions(text, module, filename, lambda r: task_id not in r.tasks and bool(kept & set(r.tasks)))


def _stub_regions(text: str, module: str, filename: str, solved) -> str:
    lines = source_lines(text)
    out: list[str] = []
    cursor = 0
    for region in parse(text, module, filename):
        out.extend(lines[cursor : region.begin - 1])
        if solved(region):
            out.extend(lines[region.begin : region.end - 1])
        else:
            out.extend(stub_lines(region.tasks, region.indent))
        cursor = region.end
    out.extend(lines[cursor:])
    return "\n".join(out) + "\n"
