"""A task's spec in its docstrings: the `Returns:`, `Raises:` and `Leaves unchanged:` sections, written from the data.

The phrases of `[task.spec.OWNER]` in a lesson's data (`registry.Spec`) end
the docstring of that function or method, as Google-style sections:

    Raises:
        KeyError: when `leaf` is not one of `inputs`.

Those sections belong to the data: `python -m autograder dev build` rewrites them
in `solutions/` (and so in the stubs made from it), `dev sync` writes them into the
stubs even before, and `dev check` fails while a docstring in `solutions/`
or `exercises/` says something else. A function that is no task's owner keeps
its docstring as written.
"""

from __future__ import annotations

import ast
import re
import textwrap

from autograder.course import registry

SECTIONS = re.compile(r"\n[ \t]*\n[ \t]*(?:Returns|Raises|Leaves unchanged):[ \t]*\n.*\Z", re.S)
WIDTH = 88  # the solution files' docstrings are wrapped at about this width


def _wrap(text: str, indent: str, more: str = "") -> list[str]:
    return textwrap.wrap(
        text,
        WIDTH,
        initial_indent=indent,
        subsequent_indent=indent + more,
        break_long_words=False,
        break_on_hyphens=False,
    )


def sections(spec: registry.Spec, indent: str) -> str:
    """The docstring sections of one spec, each line starting with `indent` (the docstring's own)."""
    blocks = []
    inner = indent + "    "
    if spec.returns:
        blocks.append([f"{indent}Returns:", *_wrap(f"{spec.returns}.", inner)])
    if spec.raises:
        lines = [f"{indent}Raises:"]
        for error, when in spec.raises:
            lines += _wrap(f"{error}: {when}.", inner, "    ")
        blocks.append(lines)
    if spec.unchanged:
        blocks.append([f"{indent}Leaves unchanged:", *_wrap(f"{spec.unchanged}.", inner)])
    return "\n\n".join("\n".join(lines) for lines in blocks)


def module_specs(module: str, lessons: tuple[registry.Lesson, ...] | None = None) -> dict[str, registry.Spec]:
    """The specs of a solution file's functions and methods, by owner (`Value.__pow__`)."""
    lessons = registry.LESSONS if lessons is None else lessons
    tasks = [task for lesson in lessons for task in lesson.tasks if task.file == module]
    return {spec.owner: spec for task in tasks for spec in task.spec}


def module_owners(module: str, lessons: tuple[registry.Lesson, ...] | None = None) -> set[str]:
    """The functions and methods of a solution file that hold a task's code, as the data says."""
    lessons = registry.LESSONS if lessons is None else lessons
    return {owner for lesson in lessons for task in lesson.tasks if task.file == module for owner in task.owners}


def functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """A module's top-level functions and its classes' methods, by owner name (`Value.__add__`)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    return found


def docstring_node(node: ast.FunctionDef) -> ast.Constant | None:
    first = node.body[0] if node.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        return first.value
    return None


def with_spec(
    text: str,
    module: str,
    filename: str = "<solution>",
    lessons: tuple[registry.Lesson, ...] | None = None,
) -> str:
    """`text` (a solution or exercise file) with each owner's docstring ending in its spec's sections, and an owner
    without a spec ending in none."""
    specs, owners = module_specs(module, lessons), module_owners(module, lessons)
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    lines = text.splitlines(keepends=True)

    def offset(line: int, col: int) -> int:  # ast's columns count UTF-8 bytes
        return starts[line - 1] + len(lines[line - 1].encode()[:col].decode())

    edits = []
    for name, node in functions(ast.parse(text, filename)).items():
        if name not in owners and name not in specs:
            continue
        doc = docstring_node(node)
        if doc is None:
            if name in specs:
                raise ValueError(f"{filename}: {name} has no docstring to hold its spec")
            continue
        start, end = offset(doc.lineno, doc.col_offset), offset(doc.end_lineno, doc.end_col_offset)
        literal = text[start:end]
        if not (literal.startswith('"""') and literal.endswith('"""')):
            raise ValueError(f'{filename}:{doc.lineno}: write the docstring of {name} between """ and """')
        body = literal[3:-3]
        indent = " " * doc.col_offset
        kept = SECTIONS.sub("", body)
        if name in specs:
            body = f"{kept.rstrip()}\n\n{sections(specs[name], indent)}\n{indent}"
        elif kept != body:
            body = f"{kept.rstrip()}\n{indent}"
        edits.append((start, end, f'"""{body}"""'))
    for start, end, new in sorted(edits, reverse=True):
        text = text[:start] + new + text[end:]
    return text
