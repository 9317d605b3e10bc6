"""What each check runs through: the other tasks whose code its scenarios run, recorded from the reference.

Blame (`grading/blame.py`) charges a check that went wrong to a task it runs through when that task fails on its
own, so it needs to know, check by check, which tasks' code a check's scenarios reach: 8.2's power-rule check
runs `**` alone, while its headline divides, and division runs `**` and `*`. That is a property of the check and
of the course's code, not of a learner's: `record()` runs every grading check here over the whole reference,
each of its `learner.run` calls under a tracer that notes every function of `solutions/` that runs, and files the
regions those functions hold, with their file, owner and tasks (a region that holds the check's own task alone is
its own code; one it shares, as 7.1 shares the backward closures of lesson 5, is kept: which of its other tasks
the check runs through is blame's to say).

`python -m autograder dev build` writes the record to `autograder/lessons/runs_through.json`, keyed by the digest of
the sources that decide it (the reference, the grading tests, the kit and the worker's helpers: the shipped
answers' key) and of this recorder, and `build --check` says when it is stale. A student edition ships it, for
its visible checks.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import sys
import threading
from pathlib import Path

from autograder.course.regions import SOLUTIONS, Region, all_regions
from autograder.grading import blame, caches
from autograder.grading.reference import Reference, ReferenceCode
from autograder.grading.tasks import LESSONS, LESSONS_PACKAGE
from autograder.worker.scenario import SCENARIO_FLAG
from autograder.worker.wire import to_plain


class _Answers:
    """What `Reference` asks of a grader, for a run with no grader: every answer computed here, none kept."""

    recording = None

    @staticmethod
    def answer(key: str, compute) -> object:
        return to_plain(compute())


class _Tracing:
    """A check's `learner` fixture that runs each scenario here, over the whole reference, and notes every code
    object of `solutions/` that runs (called from any thread: PyTorch may call a Function's backward elsewhere)."""

    afresh = False  # as `fixtures.Learner`'s: the check on its own inputs, never a graded run's second look

    def __init__(self, task_id: str):
        self.task, self.grader, self.ran = task_id, _Answers(), set()  # a grader of its own: no check shares a run

    def _trace(self, frame, event, arg):
        if event == "call":
            self.ran.add(frame.f_code)

    def run(self, fn, *args, **kwargs):
        if not getattr(fn, SCENARIO_FLAG, False):
            raise TypeError(f"{fn.__name__} is not marked @scenario")
        sys.settrace(self._trace)
        threading.settrace(self._trace)
        try:
            return to_plain(fn(ReferenceCode(), *args, **kwargs))
        finally:
            sys.settrace(None)
            threading.settrace(None)


def _regions_of(code, regions: dict[str, list[Region]]) -> list[Region]:
    """The regions whose lines hold code of `code` (its own lines, not those of the functions it defines: a
    closure's body is a code object of its own)."""
    path = Path(code.co_filename)
    if path.parent != SOLUTIONS:
        return []
    lines = {line for _, _, line in code.co_lines() if line is not None}
    return [r for r in regions.get(path.stem, []) if any(r.begin < n < r.end for n in lines)]


def checks(lessons: tuple[int, ...] = ()) -> list[tuple[str, str, object]]:
    """Every grading check of the course (of `lessons` only, if given): (key, task id, test function), in file
    order."""
    found = []
    for path in sorted(LESSONS.glob("test_*.py")):
        if lessons and int(path.stem.split("_")[1]) not in lessons:
            continue
        module = importlib.import_module(f"{LESSONS_PACKAGE}.{path.stem}")
        for name, fn in vars(module).items():
            marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "task"]
            if name.startswith("test_") and callable(fn) and marks:
                found.append((blame.check_key_of(path.stem, name), marks[0].args[0], fn))
    return found


def record(lessons: tuple[int, ...] = ()) -> dict[str, list[list[str]]]:
    """For each check (`blame.check_key_of`; of `lessons` only, if given), the regions of other tasks whose code it
    runs in the reference, each as `[file, owner, task, ...]` (`["engine", "Value.__add__", "5.2", "7.1"]`): which
    of them run the learner's code depends on the run (`blame.through`)."""
    regions: dict[str, list[Region]] = {}
    for region in all_regions():
        regions.setdefault(region.module, []).append(region)
    out = {}
    for key, task_id, fn in checks(lessons):
        learner = _Tracing(task_id)
        wanted = inspect.signature(fn).parameters
        fixtures = {"learner": learner, "reference": Reference(_Answers())}
        try:
            fn(**{name: fixtures[name] for name in wanted})
        except Exception as exc:
            raise RuntimeError(f"{key}: the reference fails its own check here ({type(exc).__name__}: {exc})") from exc
        ran = {r for code in learner.ran for r in _regions_of(code, regions) if r.tasks != (task_id,)}
        out[key] = sorted([r.module, r.owner, *r.tasks] for r in ran)
    return out


def sources_digest() -> str:
    """What the record is made from: the sources the shipped answers are keyed by, and this recorder (which regions
    it keeps is part of the record)."""
    recorder = hashlib.sha256(Path(__file__).read_bytes().replace(b"\r\n", b"\n"))
    return caches.sources_digest(caches.SOURCES, recorder)


def text(record_: dict[str, list[list[str]]], sources: str | None = None) -> str:
    """The file's text: the sources' digest, then one check a line (a change of one check is a change of a line)."""
    lines = [json.dumps(k) + ":" + json.dumps(v) for k, v in sorted(record_.items())]
    return f'{{"sources":"{sources or sources_digest()}","checks":{{\n' + ",\n".join(lines) + "\n}}\n"


def stale() -> bool:
    """Whether the committed record was made from other sources than these (or is missing)."""
    try:
        return json.loads(blame.RUNS_THROUGH.read_text()).get("sources") != sources_digest()
    except (OSError, ValueError, AttributeError):
        return True


def write(path: Path | None = None) -> bool:
    """Record, and write the file if it changed; returns whether it did."""
    path = path or blame.RUNS_THROUGH
    new = text(record())
    if path.is_file() and path.read_text() == new:
        return False
    path.write_text(new)
    blame.recorded.cache_clear()
    return True
