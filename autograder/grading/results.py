"""The results of a grading run: one record per check, grouped by task, in one object every caller gets.

`Results` is what `runner.grade()` returns and what the plugin builds; the
scorecard, Gradescope's results.json, the batch gradebook and the notebooks
are all written from it (`scorecard.py`). It saves to and loads from JSON of
its own (`to_json`/`from_json`), which is how a grading process hands its
results to a batch or a notebook.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from autograder.course import registry

# Worst last: a task shows the most serious status among its tests. "in progress" is a task's only, never a
# check's: some of its checks passed and the others did not run yet (they wait for another task, or hit a stub).
# VOID: the check failed, and the reference fails it too on this machine: it counts neither as earned nor as lost.
VOID = "could not be graded"
STATUSES = ("passed", VOID, "in progress", "not started", "failed", "error", "timed out")
SYMBOL = {
    "passed": "✓",
    VOID: "?",
    "in progress": "◐",
    "not started": "·",
    "failed": "✗",
    "error": "!",
    "timed out": "⏱",
}
SKIPPED = "skipped: an earlier check of this task timed out"  # a check not run after a timeout


@dataclass
class TestResult:
    nodeid: str
    description: str
    task: str
    points: int
    hint: str
    hidden: bool = False
    status: str = "not started"  # until it has run and passed
    message: str = "did not run"
    settled: bool = False  # an outcome has been recorded (the first failing phase wins)
    seconds: float = 0.0
    waits_for: str = ""  # the other task this check could not get past ("" when it ran on its own)

    @property
    def earned(self) -> int:
        return self.points if self.status == "passed" else 0

    @property
    def counted(self) -> bool:
        """Part of the score: every check but one that could not be graded here (`VOID`)."""
        return self.status != VOID

    @property
    def skipped(self) -> bool:
        """Not run because an earlier check of its task timed out (it costs its points like the one that did)."""
        return self.status == "timed out" and self.message == SKIPPED


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
    def status(self) -> str:
        worst = max((t.status for t in self.tests), key=STATUSES.index, default="not started")
        if worst == "not started" and any(t.status == "passed" for t in self.tests):
            return "in progress"  # partly passed: never "not started"
        return worst

    @property
    def waits_for(self) -> str:
        """The other task a task that has nothing wrong of its own waits for, if a check said so."""
        if self.status not in ("not started", "in progress"):
            return ""
        return next((t.waits_for for t in self.tests if t.waits_for and t.status == "not started"), "")

    def not_run(self) -> list[str]:
        """Why each check that did not run did not, one line per reason: "3 checks wait for task 5.1 (Value.tanh)".

        A task none of whose checks ran for one reason gets that reason alone ("waits for task 2.3 (...)"), and a
        task that is simply not started (every check hit its own stub) gets no line: its status says it all.
        """
        reasons: dict[str, int] = {}
        for t in self.tests:
            if t.status == "not started" and t.waits_for:
                why = f"task {t.waits_for} ({registry.task(t.waits_for).title})"
            elif t.status == "not started":
                why = "not started"
            elif t.skipped:
                why = "skipped"
            elif not t.counted:
                why = VOID
            else:
                continue
            reasons[why] = reasons.get(why, 0) + 1
        if self.status == "not started" and set(reasons) == {"not started"}:
            return []
        lines = []
        for why, n in reasons.items():
            checks = f"{n} check{'s' * (n != 1)}"
            if why == "not started":
                lines.append(f"{checks} not started: the stub still raises NotImplementedError")
            elif why == "skipped":
                lines.append(f"{checks} skipped: an earlier check of this task timed out")
            elif why == VOID:
                points = f"{self.void_points} pt not counted"
                lines.append(f"{checks} could not be graded here ({points}): see `python -m autograder doctor`")
            elif n == len(self.tests):
                lines.append(f"waits for {why}")
            else:
                lines.append(f"{checks} wait{'s' * (n == 1)} for {why}")
        return lines


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
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> Results:
        tests = [TestResult(**t) for t in data.get("tests", [])]
        return cls(**{**data, "tests": tests})
