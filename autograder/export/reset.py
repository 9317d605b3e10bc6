"""`python -m autograder reset L.N`: put a task's stub back into the learner's file, and nothing else.

The learner's file has no markers left: where a task's code is comes from the
stub the file started as. The stub is fixed lines with a *hole* per solution
region (its TODO and `raise NotImplementedError` lines, `stub_lines`);
a learner writes in the holes. A task's code in the learner's file is what
lies between the fixed lines around its hole: the nearest non-blank fixed
lines before it (up to the hole before, or the start of the function: its
signature and docstring) and after it (up to the next hole), or, where the
hole ends its function, everything up to the first line indented less than the
hole. Where the file no longer has those lines, reset refuses and changes
nothing. Before writing, the file is saved beside itself, byte for byte
(`stubs.save_copy`), so that no line of the learner's work is ever lost.

Reset reads and writes only regular files of the learner's folder: a file that
is a symbolic link (to anywhere) is refused, and the new text replaces the
file's name in the folder (`stubs.write_inside`), never writing through it into
a file another name (a hard link) shares. Lines are Python's (`source_lines`):
a U+2028 in a string stays in its string.

The holes come from the regions (`regions.all_regions`) and the stubs
(`stubs.expected_files`), so reset works in a student edition too, which ships
both without the reference.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import EXERCISES, Region, all_regions, owner_span, source_lines, stub_lines
from autograder.export import stubs
from autograder.grading import caches
from autograder.grading.limits import MAX_SOURCE


class CannotReset(Exception):
    """A task whose code reset cannot find, or that has none of its own: the message says why; nothing was changed."""


@dataclass(frozen=True)
class Hole:
    """Where a region's stub lines are in the stub file, and the fixed lines around them."""

    region: Region
    start: int  # 0-based index of the hole's first line in the stub
    stop: int  # one past its last line
    before: list[str]  # the non-blank fixed lines before it, back to the previous hole or its function's start
    after: list[str]  # the non-blank fixed lines after it, up to the next hole or its function's end


def holes(stub: list[str], regions: list[Region]) -> list[Hole]:
    """The holes of one stub file, from its regions (which are numbered by the solution file's lines)."""
    spans, shift = [], 0
    for region in regions:
        lines = stub_lines(region.tasks, region.indent)
        start = region.begin - 1 - shift  # the lines of earlier regions, each replaced by its stub's, come before
        if stub[start : start + len(lines)] != lines:
            raise RuntimeError(f"the stub of {region.module}.py does not match its regions: rebuild it")
        spans.append((region, start, start + len(lines)))
        shift += (region.end - region.begin + 1) - len(lines)
    found = []
    for i, (region, start, stop) in enumerate(spans):
        previous_stop = spans[i - 1][2] if i else 0
        next_start = spans[i + 1][1] if i + 1 < len(spans) else len(stub)
        before = _within_function(stub[previous_stop:start][::-1], region.indent, include_dedent=True)[::-1]
        after = _within_function(stub[stop:next_start], region.indent, include_dedent=False)
        found.append(Hole(region, start, stop, before, after))
    return found


def _within_function(lines: list[str], indent: str, include_dedent: bool) -> list[str]:
    """The non-blank `lines`, in order, up to the first indented less than `indent` (kept if `include_dedent`: the
    `def` line, read backwards). Lines inside a docstring are kept whatever their indent."""
    kept = []
    for line in lines:
        if not line.strip():
            continue
        if not _indented(line, indent) and not _in_docstring(kept):
            if include_dedent:
                kept.append(line)
            break
        kept.append(line)
    return kept


def _indented(line: str, indent: str) -> bool:
    return line.startswith(indent) and len(line) - len(line.lstrip()) >= len(indent)


def _in_docstring(kept: list[str]) -> bool:
    """Whether the lines so far leave a triple-quoted string open (an odd count of `\"\"\"`)."""
    return sum(line.count('"""') for line in kept) % 2 == 1


def locate(lines: list[str], hole: Hole) -> tuple[int, int]:
    """Where the hole's task's code is in the learner's `lines`: [start, stop), without blank lines at either end.

    Looked for inside the hole's function (the whole file if it does not parse). Raises CannotReset if the fixed
    lines before the hole are not there exactly once, or are not followed by the fixed lines after it.
    """
    task, where = hole.region.task, hole.region.owner
    try:
        span = owner_span("\n".join(lines), where)
    except SyntaxError:
        span = (1, len(lines))
    if span is None:
        raise CannotReset(f"task {task}'s code cannot be found: the file has no {where} any more")
    content = [(i, line.rstrip()) for i, line in enumerate(lines) if span[0] <= i + 1 <= span[1] and line.strip()]
    text = [line for _, line in content]
    wanted = [line.rstrip() for line in hole.before]
    matches = [k for k in range(len(text) - len(wanted) + 1) if wanted and text[k : k + len(wanted)] == wanted]
    if len(matches) != 1:
        why = "are not in it" if not matches else f"are in it {len(matches)} times"
        raise CannotReset(
            f"task {task}'s code cannot be found: the lines before it in {where}, as the stub has them, {why}"
        )
    k = matches[0] + len(wanted)
    after = [line.rstrip() for line in hole.after]
    end = k
    while end < len(text) and not (after and text[end : end + len(after)] == after):
        if not _indented(text[end], hole.region.indent):
            break
        end += 1
    if after and text[end : end + len(after)] != after:
        raise CannotReset(
            f"task {task}'s code cannot be found: the lines after it in {where}, as the stub has them, are not there"
        )
    if end > k:
        return content[k][0], content[end - 1][0] + 1
    return content[k - 1][0] + 1, content[k - 1][0] + 1  # no code at all: the stub goes right after the lines before


def tasks_of_lesson(number: int) -> list[str]:
    """The tasks of lesson `number` that have code of their own (a task that only revisits another's has none)."""
    owning = {r.task for r in all_regions()}
    return [t.id for t in registry.lesson(number).tasks if t.id in owning] or [
        t.id for t in registry.lesson(number).tasks
    ]


def regions_to_reset(task_ids: list[str]) -> list[Region]:
    """The regions whose own task is one of `task_ids`; a task with none of its own is refused, saying why."""
    regions = [r for r in all_regions() if r.task in task_ids]
    for task_id in task_ids:
        if any(r.task == task_id for r in regions):
            continue
        task = registry.task(task_id)
        revisits = sorted({r.task for r in all_regions() if task_id in r.tasks}, key=registry.sort_key)
        if revisits:
            raise CannotReset(
                f"task {task_id} has no code of its own: it changes the code of task(s) {', '.join(revisits)}; "
                f"reset {' and '.join(revisits)} to start that code over"
            )
        if task.runs_whole:
            raise CannotReset(f"task {task_id} runs your whole engine: it has no code of its own to reset")
    return regions


def reset(task_ids: list[str], folder: Path = EXERCISES) -> list[tuple[Path, Path]]:
    """Put the stubs of `task_ids`' regions back into `folder`'s files; return (file, saved copy) per file changed.

    Every file is checked before any is written: one task that cannot be found changes nothing at all.
    """
    expected = stubs.expected_files()
    plans = []
    by_module: dict[str, list[Region]] = {}
    for region in regions_to_reset(task_ids):
        by_module.setdefault(region.module, []).append(region)
    for module, wanted in by_module.items():
        path = folder / f"{module}.py"
        try:
            original = caches.read_regular(path, MAX_SOURCE)
        except FileNotFoundError:
            raise CannotReset(f"{path} is missing: `python -m autograder dev sync` writes the stubs again") from None
        except caches.NotRegular as exc:  # a link out of the folder, a pipe: reset writes only the folder's own files
            raise CannotReset(f"{path} {exc}") from None
        try:
            lines = source_lines(original.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise CannotReset(f"{path} is not UTF-8 text (byte {exc.start})") from None
        stub = source_lines(expected[path.name])
        module_holes = holes(stub, [r for r in all_regions() if r.module == module])
        edits = []
        for hole in module_holes:
            if hole.region in wanted:
                start, stop = locate(lines, hole)
                edits.append((start, stop, stub[hole.start : hole.stop]))
        for start, stop, replacement in sorted(edits, reverse=True):
            lines[start:stop] = replacement
        newline = "\r\n" if b"\r\n" in original else "\n"
        plans.append((path, original, newline.join(lines) + newline))
    done = []
    for path, original, text in plans:
        if text.encode("utf-8") == original:
            continue  # already the stub
        copy = stubs.save_copy(path, original)
        stubs.write_inside(path, text.encode("utf-8"))
        done.append((path, copy))
    return done
