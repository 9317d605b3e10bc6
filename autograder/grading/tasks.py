"""What a grading run needs to know of a task, resolved once: `GradedTask`, and the trusted sources its worker gets.

A task's id names, through the course's registry and the reference's regions,
the learner file that holds its code, the functions of that file it owns, the
prerequisites whose code the worker takes from the reference, the test files
whose scenarios it runs and what its worker preloads. `graded(task_id)` works
all of that out the first time a run asks and hands back one frozen object;
the grader reads its fields and never resolves the id again.

The sources a worker is sent (`reference_for`, `scenario_source`) are read
once per process too: before any learner code runs (`Grader.load_trusted_inputs`).
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import SOLUTIONS, all_regions, for_task, has_sources, module_of, owners_of, waits_for

LESSONS = Path(__file__).resolve().parents[1] / "lessons"
LESSONS_PACKAGE = f"{__package__.rpartition('.')[0]}.lessons"  # what pytest names the test modules there


def node_label(task_id: str) -> str:
    """The name of a task's node in pytest's tree (`tasknodes`): its id and title, as the scorecard writes them."""
    return f"task {task_id} · {registry.task(task_id).title}"


@dataclass(frozen=True)
class GradedTask:
    """One task as a grading run sees it."""

    id: str
    module: str  # the learner file (stem) that holds its code; a capstone's first file
    owners: tuple[str, ...]  # the functions and methods of that file its code lives in
    prerequisite_owners: tuple[str, ...]  # those of that file holding a prerequisite's code: the reference's
    learner_files: tuple[str, ...]  # what its worker loads of the learner's: its file, a capstone's files, or all
    lesson_modules: tuple[str, ...]  # its lesson's test modules: where its scenarios are
    preload: tuple[str, ...]  # what its worker finds imported: torch where the learner's code uses it (the data's)
    waits_for: tuple[str, ...]  # a capstone's: the tasks whose code it runs whole, which must pass first
    runs_whole: bool  # a capstone: it runs the learner's files whole, over no reference


@cache
def graded(task_id: str) -> GradedTask:
    """The task `task_id` resolved: once per process (the registry and the reference's regions do not change)."""
    task = registry.task(task_id)
    module = module_of(task_id)
    if not has_sources():  # a student edition: each task's worker loads every learner file
        files = tuple(sorted({r.module for r in all_regions()} | {"engine"}))
    else:
        files = tuple(task.runs_whole) or (module,)
    needed = registry.prerequisites(task_id)
    tests = sorted(LESSONS.glob(f"test_{task.lesson:02d}_*.py"))
    under = {r.owner for r in all_regions() if r.module == module and needed & set(r.tasks)}
    return GradedTask(
        id=task_id,
        module=module,
        owners=tuple(sorted(owners_of(task_id))),
        prerequisite_owners=tuple(sorted(under - owners_of(task_id))),
        learner_files=files,
        lesson_modules=tuple(f"{LESSONS_PACKAGE}.{path.stem}" for path in tests),
        preload=task.preload,
        waits_for=tuple(waits_for(task_id)) if task.runs_whole else (),
        runs_whole=bool(task.runs_whole),
    )


@cache
def reference_for(task_id: str) -> dict[str, str]:
    """The reference's sources as a task's worker holds them: solved only where a prerequisite of the task is.

    Every other region is turned back into its stub, the task's own among them: a delegation to the reference
    finds nothing that solves the task, and calling the code of a task that is not a prerequisite raises.
    """
    needed = registry.prerequisites(task_id)
    return {
        path.stem: for_task(path.read_text(), path.stem, task_id, needed, str(path))
        for path in sorted(SOLUTIONS.glob("*.py"))
        if path.stem != "__init__"
    }


@cache
def scenario_source(module_name: str) -> str:
    """The source of a test file's `@scenario` functions, and nothing else of it.

    Read from the file, so that a run can send planned calls before pytest imports the test files.
    """
    module = sys.modules.get(module_name)
    if module is not None:
        path = Path(module.__file__)
    elif module_name.startswith(f"{LESSONS_PACKAGE}."):
        path = LESSONS / f"{module_name.rpartition('.')[2]}.py"
    else:
        raise OSError(f"no file known for {module_name}")
    text = path.read_text()
    lines = text.splitlines(keepends=True)
    parts = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.FunctionDef) and any(_is_scenario(d) for d in node.decorator_list):
            first = min(d.lineno for d in node.decorator_list)
            parts.append("".join(lines[first - 1 : node.end_lineno]))
    return "\n\n".join(parts)


def _is_scenario(decorator: ast.expr) -> bool:
    return (isinstance(decorator, ast.Name) and decorator.id == "scenario") or (
        isinstance(decorator, ast.Attribute) and decorator.attr == "scenario"
    )
