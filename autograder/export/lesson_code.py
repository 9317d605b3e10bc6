"""The lesson's code, selected from the reference (`solutions/`) for the notebook of one lesson, and its tasks' specs.

A notebook's answer cell holds the lesson's code (`lesson_source`): the lesson's own solution regions keep their
markers, which nbgrader's `generate_assignment` turns into stubs. When the module also holds other lessons' tasks
(`engine.py`: lessons 2 and 5 to 8), the cell holds only the methods with this lesson's code (`is_partial`);
inside them an earlier lesson's region is solved (the lesson builds on it: the backward of `__add__` runs after
its forward) and a later one is the exercise stub. Everything else is the reference, in the notebook and when
graded. A task's spec (`task_markdown`) is the signature and docstring of each function or method it lives in,
then the registry's hints.
"""

from __future__ import annotations

import ast
import copy

from autograder.course import registry
from autograder.course.regions import SOLUTIONS, Region, all_regions, owners_of, parse, stub_lines


def lesson_modules(lesson: int) -> list[str]:
    """The files (stems) that hold the lesson's code, e.g. `['graph']`."""
    ids = {t.id for t in registry.lesson(lesson).tasks}
    return sorted({r.module for r in all_regions() if ids & set(r.tasks)})


def _in_lesson(region: Region, lesson: int) -> bool:
    return any(registry.task(t).lesson == lesson for t in region.tasks)


def _owner_lines(tree: ast.Module) -> dict[str, tuple[int, int]]:
    """The lines (first decorator to last line) of each top-level function and each method, by owner name."""
    spans = {}

    def span(node) -> tuple[int, int]:
        return min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno

    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans[node.name] = span(node)
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    spans[f"{node.name}.{item.name}"] = span(item)
    return spans


def lesson_source(lesson: int, module: str) -> str:
    """The module as the lesson's notebook holds it (see the module docstring); the lesson's regions keep their "
    "markers."""
    path = SOLUTIONS / f"{module}.py"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    regions = parse(text, module, str(path))
    mine = {r.owner for r in regions if _in_lesson(r, lesson)}
    spans = _owner_lines(ast.parse(text, str(path)))
    dropped: set[int] = set()
    for owner in {r.owner for r in regions} - mine:
        first, last = spans[owner]
        last = max(
            [last] + [r.end for r in regions if r.owner == owner]
        )  # a closing marker is a comment: not in the AST
        dropped.update(range(first, last + 1))
        if last < len(lines) and not lines[last].strip():
            dropped.add(last + 1)  # and the blank line after it
    by_begin = {r.begin: r for r in regions}
    out: list[str] = []
    number = 1
    while number <= len(lines):
        region = by_begin.get(number)
        if number in dropped:
            number += 1
        elif region is None:
            out.append(lines[number - 1])
            number += 1
        else:
            if _in_lesson(region, lesson):
                out.extend(lines[region.begin - 1 : region.end])
            elif registry.task(region.task).lesson < lesson:
                out.extend(lines[region.begin : region.end - 1])
            else:
                out.extend(stub_lines(region.tasks, region.indent))
            number = region.end + 1
    return "\n".join(out).rstrip() + "\n"


def is_partial(lesson: int, module: str) -> bool:
    """Whether the notebook holds only part of the module (it also holds other lessons' functions or methods)."""
    regions = parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"), module)
    return any(
        not any(_in_lesson(r, lesson) for r in regions if r.owner == owner) for owner in {r.owner for r in regions}
    )


def _signature_and_doc(module: str, owner: str) -> tuple[str, str]:
    """`def name(args) -> result` and the docstring of a function or method of a solution file."""
    tree = ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))
    cls, _, name = owner.rpartition(".")
    scope = next(n.body for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls) if cls else tree.body
    node = next(n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name)
    doc = ast.get_docstring(node) or ""
    bare = copy.copy(node)
    bare.body, bare.decorator_list = [ast.Pass()], []
    header = ast.unparse(bare)
    return header.splitlines()[0].rstrip(":"), doc


def task_markdown(task: registry.Task, heading: str = "##") -> str:
    """A task's spec: the signature and docstring of each function or method it lives in, then its hints."""
    parts = [f"{heading} Task {task.id} · {task.title}", ""]
    module = next(iter({r.module for r in _regions_of(task.id)}))
    for owner in sorted(owners_of(task.id), key=lambda o: _order(module, o)):
        header, doc = _signature_and_doc(module, owner)
        where = f"class {owner.split('.')[0]}: " if "." in owner else ""
        parts += [f"`{where}{header}`", "", doc, ""]
    parts += ["<details><summary>Hints</summary>", ""]
    parts += [f"{n}. {hint}" for n, hint in enumerate(task.hints, start=1)]
    parts += ["", f"Page: `{registry.LESSON_OF[task.id].page}#{task.anchor}`", "</details>"]
    return "\n".join(parts)


def _regions_of(task_id: str) -> list[Region]:
    return [r for r in all_regions() if task_id in r.tasks]


def _order(module: str, owner: str) -> int:
    spans = _owner_lines(ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8")))
    return spans[owner][0]


def module_docstring(module: str) -> str:
    return ast.get_docstring(ast.parse((SOLUTIONS / f"{module}.py").read_text(encoding="utf-8"))) or ""
