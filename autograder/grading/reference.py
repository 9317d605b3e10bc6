"""The reference's answers, on the trusted side of the boundary: what a check's answer should be, and where it is kept.

- `Reference` (the `reference` fixture) runs a scenario here, over the reference (`ReferenceCode`), to compute
  what the answer should be, and computes any other expected value here (PyTorch's), kept alike;
- `answer_key` is how an answer is filed; the answers the course ships (`SHIPPED`, `shipped_answers`, valid for
  the sources `answers_digest` names) and those a student edition records (`RECORDED`, `recorded_answers`);
  `lessons_digest` tells whether the grading tests, the kit or the reference changed during a run.

A `Reference`'s `grader` is the run's `Grader`, left unannotated: `grader.py` imports this file, and naming the
type here would import it back, a cycle (`tests/test_layers.py`). Nothing here is sent to a worker.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
from functools import cache, cached_property

from autograder.course.regions import SOLUTIONS, has_sources
from autograder.grading import caches, judging
from autograder.grading.tasks import LESSONS, scenario_source

RECORDED = LESSONS / "reference_answers.json"
# the reference's answers on the checks' own inputs, written by `python -m autograder dev build` (`build.ship_answers`)
SHIPPED = LESSONS / "shipped_answers.json"


class ReferenceCode:
    """What a scenario's `impl` is on the trusted side: the whole reference."""

    @cached_property  # a scenario may build 100,000 Values: the module is looked up once per call, not per Value
    def Value(self):  # noqa: N802 - the scenarios' `impl.Value`
        return importlib.import_module("solutions.engine").Value

    def module(self, name: str):
        return importlib.import_module(f"solutions.{name}")

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return self.module(name)


class Reference:
    """The `reference` fixture: the expected answer of a scenario, computed here and never sent to a worker.

    Answers are kept by the reference's fingerprint, the scenario's source and
    its arguments: in memory for a warm process (watch mode), and on disk for the
    next run at the same level (`caches.GradingCache`), so a batch or a second
    run computes each answer once. A student edition ships no reference
    code; there the answers of the visible checks ship as data (recorded by
    `python -m autograder export student-edition`).
    """

    def __init__(self, grader):
        self.grader = grader

    def run(self, fn, *args, **kwargs):
        key = answer_key(fn, args, kwargs)
        if not has_sources():
            answers = recorded_answers()
            if key not in answers:
                raise RuntimeError("this check needs the reference, which a student edition does not ship")
            return answers[key]
        cached = f"{hashlib.sha256(scenario_source(fn.__module__).encode()).hexdigest()[:16]}:{key}"
        with judging.paused():  # the reference's answer does not depend on the learner's: not the judgement's time
            answer = self.grader.answer(cached, lambda: fn(ReferenceCode(), *args, **kwargs))
        if self.grader.recording is not None:
            self.grader.recording[key] = answer
        return answer

    def compute(self, fn, *args):
        """`fn(*args)` as plain data, computed here once and kept with the reference's answers.

        For expected values that need a heavy library (`kit.torch_values`): once
        they are known, a run never imports it.
        """
        cached = f"{source_digest(fn)}:{answer_key(fn, args, {})}"
        with judging.paused():
            return self.grader.answer(cached, lambda: fn(*args))


@cache  # `inspect.getsource` tokenizes the whole file: once per function and run, not once per expected value
def source_digest(fn) -> str:
    return hashlib.sha256(inspect.getsource(fn).encode()).hexdigest()[:16]


def answer_key(fn, args: tuple, kwargs: dict) -> str:
    """How a reference answer is filed: the scenario's file and name, and its arguments (hashed when long)."""
    key = f"{fn.__module__.rpartition('.')[2]}:{fn.__name__}:{json.dumps([args, kwargs], sort_keys=True)}"
    return key if len(key) <= 4000 else hashlib.sha256(key.encode()).hexdigest()[:32]


def lessons_digest() -> str:
    """A digest of the grading tests, the judgement kit and the reference, to tell whether they changed in a run."""
    return caches.sources_digest((LESSONS, LESSONS.parent / "kit", SOLUTIONS))


def answers_digest() -> str:
    """What the shipped answers were computed from: every source that decides a call or an expected value."""
    return caches.sources_digest(caches.SOURCES)


@cache
def shipped_answers() -> dict:
    """The reference's answers shipped with the course (`SHIPPED`), if they were computed from these very sources
    (`answers_digest`); nothing if they are stale, missing or not a regular file. Read once, before any learner
    code runs (`Grader.load_trusted_inputs`): they are as trusted as the grading tests beside them.

    With them a run computes no expected value of a check's own inputs (so imports no PyTorch to judge): a cold
    run (a platform's fresh container, a learner's first) is as fast as a warm one. They were computed by another
    Python and PyTorch than this run's, maybe: every judgement compares numbers within a tolerance, far above
    what two builds' rounding can differ by (the student edition's recorded answers travel the same way).
    """
    if not has_sources():
        return {}
    try:
        data = json.loads(caches.read_regular(SHIPPED, caches.MAX_FILE))
    except (OSError, caches.NotRegular, ValueError):
        return {}
    answers = data.get("answers") if isinstance(data, dict) and data.get("sources") == answers_digest() else None
    return answers if isinstance(answers, dict) else {}


def shipped_answers_stale() -> bool:
    """Whether `SHIPPED` is missing, or was computed from other sources than these (`build --check` says so)."""
    try:
        return json.loads(SHIPPED.read_text()).get("sources") != answers_digest()
    except (OSError, ValueError, AttributeError):
        return True


@cache
def recorded_answers() -> dict:
    try:
        return json.loads(RECORDED.read_text())
    except FileNotFoundError:
        return {}
