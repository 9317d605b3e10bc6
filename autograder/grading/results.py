"""The results of a grading run: one record per check, grouped by task, in one object every caller gets.

`Results` is what `runner.grade()` returns and what the plugin builds; the
scorecard, Gradescope's results.json, the batch gradebook and the notebooks
are all written from it (`scorecard.py`). It saves to and loads from JSON of
its own (`to_json`/`from_json`), which is how a grading process hands its
results to a batch or a notebook.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum

from autograder.course import registry


class Status(StrEnum):
    """A check's status (and a task's: its worst check's, or `IN_PROGRESS`), worst last; written as its value."""

    PASSED = "passed"
    VOID = "could not be graded"  # failed, and the reference fails it too on this machine: no one's points
    IN_PROGRESS = "in progress"  # a task's only: some checks passed, the others did not run yet
    NOT_STARTED = "not started"  # a stub, or a check that waits for another task
    SKIPPED = "skipped"  # not run: an earlier check of its task timed out (it costs its points like that one)
    FAILED = "failed"
    ERROR = "error"
    TIMED_OUT = "timed out"

    @property
    def symbol(self) -> str:
        return SYMBOLS[self]

    @property
    def letter(self) -> str:
        """pytest's progress letter."""
        return LETTERS[self]

    @property
    def went_wrong(self) -> bool:
        """The check ran (or a check of its task ran before it) and did not pass: it is the learner's to fix."""
        return self in (Status.FAILED, Status.ERROR, Status.TIMED_OUT, Status.SKIPPED)


SYMBOLS = {
    Status.PASSED: "✓",
    Status.VOID: "?",
    Status.IN_PROGRESS: "◐",
    Status.NOT_STARTED: "·",
    Status.SKIPPED: "⏱",  # like the timeout that caused it
    Status.FAILED: "✗",
    Status.ERROR: "!",
    Status.TIMED_OUT: "⏱",
}
LETTERS = {**{s: s.name[0] for s in Status}, Status.PASSED: ".", Status.VOID: "?", Status.SKIPPED: "s"}
SKIPPED = "skipped: an earlier check of this task timed out"  # the message of a check `Status.SKIPPED`


@dataclass
class TestResult:
    nodeid: str
    description: str
    task: str
    points: int
    hint: str
    hidden: bool = False
    status: Status = Status.NOT_STARTED  # until it has run and passed
    message: str = "did not run"
    settled: bool = False  # an outcome has been recorded (the first failing phase wins)
    seconds: float = 0.0
    waits_for: str = ""  # the other task this check could not get past ("" when it ran on its own)
    cause: str = ""  # the mistake the check named in a failure: an id of `course/causes.py` ("" if it named none)

    def __post_init__(self):
        self.status = Status(self.status)

    @property
    def earned(self) -> int:
        return self.points if self.status == Status.PASSED else 0

    @property
    def counted(self) -> bool:
        """Part of the score: every check but one that could not be graded here (`Status.VOID`)."""
        return self.status != Status.VOID

    @property
    def skipped(self) -> bool:
        """Not run because an earlier check of its task timed out (it costs its points like the one that did)."""
        return self.status == Status.SKIPPED


@dataclass
class TaskResult:
    task: registry.Task
    tests: list[TestResult] = field(default_factory=list)

    @property
    def points(self) -> int:
        """The points of its checks that count (not those that could not be graded here)."""
        return sum(t.points for t in self.tests if t.counted)

    @property
    def void_points(self) -> int:
        return sum(t.points for t in self.tests if not t.counted)

    @property
    def earned(self) -> int:
        return sum(t.earned for t in self.tests)

    @property
    def status(self) -> Status:
        worst = max((t.status for t in self.tests), key=list(Status).index, default=Status.NOT_STARTED)
        if worst == Status.NOT_STARTED and any(t.status == Status.PASSED for t in self.tests):
            return Status.IN_PROGRESS  # partly passed: never "not started"
        return worst

    @property
    def causes(self) -> list[str]:
        """The mistakes its checks that went wrong named (ids of `course/causes.py`), each once, in check order."""
        return list(dict.fromkeys(t.cause for t in self.tests if t.cause and t.status.went_wrong))

    @property
    def waits_for(self) -> str:
        """The other task a task that has nothing wrong of its own waits for, if a check said so."""
        if self.status not in (Status.NOT_STARTED, Status.IN_PROGRESS):
            return ""
        return next((t.waits_for for t in self.tests if t.waits_for and t.status == Status.NOT_STARTED), "")


def group(results: list[TestResult], task_ids: list[str]) -> list[TaskResult]:
    by_task = {tid: TaskResult(registry.task(tid)) for tid in sorted(task_ids, key=registry.sort_key)}
    for r in results:
        if r.task in by_task:
            by_task[r.task].tests.append(r)
    return [t for t in by_task.values() if t.tests]


@dataclass
class Results:
    """Everything one grading run found."""

    graded: str  # what was graded, as shown ("exercises/", a folder)
    impl_option: str  # the `--impl ...` to repeat in suggested commands ("" for exercises/)
    isolation: str  # the isolation level the learner's code ran under
    tests: list[TestResult] = field(default_factory=list)
    selected: list[str] = field(default_factory=list)  # the task ids this run graded
    complete: bool = True  # False while the run is still going (a batch reads partial results)
    memory_limit: str = ""  # what enforced --memory-limit: "cgroup", "address space (RLIMIT_AS)" or "none"
    fresh_inputs: int | None = None  # a graded run's seed: visible checks were asked again on numbers drawn from it
    self_checked: bool = True  # a failed check was asked of the reference too (never in a student edition)
    spawned_because: str = ""  # why workers were spawned where they would have been forked ("" if they were not)
    edition: bool = False  # graded in a student edition: a task's checks run over the learner's code for the others
    platform: str | None = (
        None  # graded as a platform's grader (Gradescope, PrairieLearn): its container is the sandbox
    )
    # checks of tasks the run did not select, graded quietly because a check it graded runs through their code
    # (`blame.py`): never scored nor shown, only named by the checks that wait for them
    quiet: list[TestResult] = field(default_factory=list)

    @property
    def tasks(self) -> list[TaskResult]:
        return group(self.tests, self.selected)

    @property
    def score(self) -> int:
        """Points earned on the graded tasks; bonus points are counted apart (`bonus`)."""
        return sum(t.earned for t in self.tests if not registry.task(t.task).bonus)

    @property
    def max_score(self) -> int:
        """Full marks: the points of every graded task, bonus tasks and checks that could not be graded not included."""
        return sum(t.points for t in self.tests if t.counted and not registry.task(t.task).bonus)

    @property
    def void_points(self) -> int:
        """Points of checks that could not be graded here (graded tasks): counted neither as earned nor as lost."""
        return sum(t.points for t in self.tests if not t.counted and not registry.task(t.task).bonus)

    @property
    def bonus(self) -> int:
        """Points earned on bonus tasks, on top of `score`."""
        return sum(t.earned for t in self.tests if registry.task(t.task).bonus)

    @property
    def bonus_max(self) -> int:
        return sum(t.points for t in self.tests if t.counted and registry.task(t.task).bonus)

    def to_json(self) -> dict:
        """Plain data for JSON: each check's record one level deep, sharing its values (`asdict` copied every nested
        value again, once a second while checks run: more CPU than a graded run's judging)."""
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        for name in ("tests", "quiet"):
            data[name] = [{f.name: getattr(t, f.name) for f in fields(t)} for t in data[name]]
        return data

    @classmethod
    def from_json(cls, data: dict) -> Results:
        tests = [TestResult(**current(t)) for t in data.get("tests", [])]
        quiet = [TestResult(**current(t)) for t in data.get("quiet", [])]
        return cls(**{**data, "tests": tests, "quiet": quiet})


def current(test: dict) -> dict:
    """A check's record as this version writes it: before `Status.SKIPPED`, a skipped check was "timed out"."""
    if test.get("status") == Status.TIMED_OUT and test.get("message") == SKIPPED:
        return {**test, "status": Status.SKIPPED}
    return test
