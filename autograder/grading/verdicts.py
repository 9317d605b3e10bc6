"""Verdicts: what a check's outcome was, and the one place that words it for the learner, safely.

Everything a worker sends is hostile data. It crosses as plain data
(`worker.wire`), its error fields are given their types there
(`wire.check_answer`), and every message the learner reads passes through
`shown()` on its way into the results: control characters (terminal escape
sequences among them) and lone surrogates are shown as escapes, and its
length is capped, so no submission can draw on the grader's terminal, forge a
scorecard line, or make the results file unwritable.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import NamedTuple

from autograder.course import registry
from autograder.course.causes import cause as known_cause
from autograder.course.regions import has_sources, owners_of, tasks_of_scope
from autograder.grading.pool import Lost
from autograder.grading.results import SKIPPED, Status
from autograder.kit.checks import CheckFailed, WaitsFor
from autograder.worker.wire import ErrorKind, Problem

MAX_MESSAGE = 5000  # characters of one check's message
MAX_NAME = 100  # characters of an exception's type name, a file name, a function name


def shown(text: object, cap: int = MAX_MESSAGE, lines: bool = True) -> str:
    """`text` made safe to print and to store: non-printable characters escaped (newlines kept if `lines`), capped."""
    text = text if isinstance(text, str) else str(text)
    if not text.isprintable():
        out = []
        for ch in text:
            if ch.isprintable() or (lines and ch == "\n"):
                out.append(ch)
            else:
                code = ord(ch)
                out.append(
                    f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
                )
        text = "".join(out)
    return text if len(text) <= cap else text[:cap] + f"… ({len(text) - cap} more characters)"


class Fault(enum.Enum):
    """What went wrong in the learner's process, as the grader itself knows it.

    The kind is never read from a name a worker sends: a learner's exception
    may be called anything ("waits", "skipped"), and then it is only that, the
    name of what the learner's code raised.
    """

    RAISED = "raised"  # the learner's code raised (the load of its file included): `info` is the worker's report
    TIMED_OUT = "timed out"  # past the check's time limit
    DIED = "died"  # the process ended without an answer
    GARBLED = "garbled"  # the process sent something that is not the answer to the call (`info`: detail)
    SKIPPED = "skipped"  # not run: an earlier check of the task timed out
    WAITS = "waits"  # a capstone, waiting for the tasks whose files it runs whole (`info`: task, more)
    BAD_FILE = "bad file"  # the grader could not read the learner's file (`info`: message)


# what the pool saw of a worker that failed a call, as the fault it is
LOST = {Lost.ENDED: Fault.DIED, Lost.GARBLED: Fault.GARBLED, Lost.TIMED_OUT: Fault.TIMED_OUT}


class LearnerError(Exception):
    """The learner's code raised, hung, died or could not run while a scenario ran: `fault` says which.

    `info` holds the details (the worker's report for `RAISED`: hostile text, shown only through `shown`).
    """

    def __init__(self, fault: Fault, info: dict | None = None, output: str = ""):
        info = info or {}
        super().__init__(str(info.get("message", "")))
        self.fault, self.info, self.output = fault, info, output


class Unjudgeable(Exception):  # noqa: N818 - reads as what it says: the learner's answer could not be judged
    """A check's judgement raised on the learner's answer, where the reference's answer passes the same check: the
    answer is wrong in a way the check did not foresee (an int too large for a float, say), not the grader."""

    def __init__(self, raised: BaseException):
        super().__init__(str(raised))
        self.raised = raised


def judgement_raised(exc: BaseException) -> bool:
    """The check itself raised, rather than judging (a failed expectation) or passing on what the worker said."""
    return not isinstance(exc, (WaitsFor, CheckFailed, LearnerError, AssertionError, Unjudgeable))


class Verdict(NamedTuple):
    """A check's status, the message the learner reads, the task it waits for (if it waits), and the mistake it
    named (an id of `course/causes.py`, if it named one)."""

    status: Status
    message: str
    waits_for: str = ""
    cause: str = ""


def _waits(other: str, why: str) -> Verdict:
    return Verdict(Status.NOT_STARTED, f"waits for task {other} ({registry.task(other).title}){why}", other)


RUNS_THROUGH = ": this check runs through its code, which raised "
# a visible check of a graded run none of whose calls had inputs to draw afresh (`fresh_inputs.NothingDrawn`)
NOTHING_DRAWN = (
    "not counted in this graded run: none of this check's calls had inputs to draw afresh, so its answers are "
    "known ones"
)


def comes_back(message: str, other: str) -> str:
    """A wait on task `other` that comes back round to the check's own task (8.2's check divides, and division
    runs 8.2's `**`): the check's own task is to blame."""
    prefix = f"waits for task {other} ({registry.task(other).title})"
    rest = message.removeprefix(prefix).removeprefix(RUNS_THROUGH).removeprefix(": ").removeprefix(", ")
    return f"this check runs task {other}'s code, which runs this task's own, and went wrong: {rest}"


def charged_here(message: str, other: str) -> str:
    """A wait on task `other` reworded for a run in which `other` passed: the check's own task is to blame."""
    prefix = f"waits for task {other} ({registry.task(other).title})"
    rest = message.removeprefix(prefix)
    if rest.startswith(RUNS_THROUGH):
        return f"task {other}'s code ({registry.task(other).title}), which passes its own checks, raised " + rest[
            len(RUNS_THROUGH) :
        ].replace(": ", " when this check ran it: ", 1)
    return (
        f"task {other} ({registry.task(other).title}) passes its own checks, yet this check could not get past it{rest}"
    )


def classify(exc: BaseException, task_id: str) -> Verdict:
    """Sort what a test raised into a status and a message for the learner, made safe to show (`shown`)."""
    status, message, waits_for, cause = _classify(exc, task_id)
    return Verdict(status, shown(message), waits_for, cause)


def _classify(exc: BaseException, task_id: str) -> Verdict:
    if isinstance(exc, WaitsFor) and exc.task != task_id:
        return _waits(exc.task, f": {exc.reason}")
    if isinstance(exc, CheckFailed):
        return Verdict(Status.FAILED, exc.explain(), cause=exc.cause)
    if isinstance(exc, LearnerError):
        return _learner_status(exc.fault, exc.info, exc.output, task_id)
    if isinstance(exc, AssertionError):
        return Verdict(Status.FAILED, str(exc).split("\nassert ")[0] or "a check did not hold")
    if isinstance(exc, Unjudgeable):
        raised = f"{type(exc.raised).__name__}: {str(exc.raised)[:300]}"
        return Verdict(
            Status.FAILED,
            f"your code's answer could not be compared with the expected one (the reference's passes this check):\n"
            f"the check raised {raised}",
        )
    text = str(exc)
    return Verdict(Status.ERROR, f"the check itself failed ({type(exc).__name__}: {text[:300]}); please report it")


def _learner_status(fault: Fault, info: dict, output: str, task_id: str) -> Verdict:
    # the class of what the learner's code raised, or what else the worker reports (an answer too large, ...)
    kind = shown(info.get("exception") or info.get("kind", ""), MAX_NAME, lines=False)
    message = shown(info.get("message", ""), 2000, lines=False)
    where = shown(info.get("where", ""), 300, lines=False)
    at = f"\nwhere:    {where}" if where else ""
    printed = shown(output if isinstance(output, str) else "", 500).strip().replace("\n", "\n          ")
    printed = f"\nprinted:  {printed}" if printed else ""
    if fault is Fault.SKIPPED:
        return Verdict(Status.SKIPPED, SKIPPED)
    if fault is Fault.WAITS:
        return _waits(info["task"], f"{info.get('more', '')}: this check runs your whole engine once they all pass")
    if fault is Fault.TIMED_OUT and info.get("backstop"):  # no CPU-time verdict: the reference answers in time
        detail = shown(info.get("detail", ""), 300, lines=False)
        return Verdict(Status.TIMED_OUT, f"stopped: {detail}. Is it waiting for something that never comes?{at}")
    if fault is Fault.TIMED_OUT:
        doing = f" while importing {info['file']}" if info.get("file") else ""
        return Verdict(Status.TIMED_OUT, f"stopped after the time limit{doing}: is there an endless loop?{at}")
    if fault is Fault.DIED:
        return Verdict(Status.ERROR, f"the check's process ended without an answer ({ENDINGS}){at}")
    if fault is Fault.GARBLED:
        detail = shown(info.get("detail", ""), 300, lines=False)
        return Verdict(Status.ERROR, f"the check's process sent something that is not an answer ({detail}){at}")
    if fault is Fault.BAD_FILE:
        return Verdict(Status.ERROR, message)
    if kind == "NotImplementedError":
        other = info.get("stub_task")
        if other and other != task_id and other in registry.TASKS:
            later = registry.task(other).lesson > registry.task(task_id).lesson
            if later and other not in registry.prerequisites(task_id):  # a stub of the reference's, not the learner's
                return Verdict(
                    Status.ERROR,
                    f"your code calls task {other}'s code ({registry.task(other).title}), from a later lesson: "
                    f"task {task_id} must do without it{at}",
                )
            sibling = not registry.task(task_id).runs_whole and not owners_of(other) & owners_of(task_id)
            if sibling and other not in registry.prerequisites(task_id) and has_sources():
                return Verdict(  # a stub in its worker, whatever the learner wrote for that task (`loading`)
                    Status.ERROR,
                    f"your code calls task {other}'s code ({registry.task(other).title}): a task is graded on its own "
                    f"code, over the reference of the tasks it builds on only, so task {task_id} must do without it "
                    f"(a helper function of yours may serve both){at}",
                )
            return _waits(other, ", which this check runs through")
        return Verdict(Status.NOT_STARTED, "the stub still raises NotImplementedError")
    if info.get("load"):
        if info.get("kind") == ErrorKind.CANNOT_MAKE:
            return Verdict(Status.ERROR, _code_problem(info.get("problem", ""), where, message))
        if kind == "SyntaxError":
            return Verdict(Status.ERROR, f"{where}: SyntaxError: {message} (every task in this file needs it to load)")
        return Verdict(Status.ERROR, f"importing your file raised {kind}: {message}{at}")
    other = _other_task_that_raised(info, task_id)
    if other:
        text = message if len(message) <= 200 else message[:200] + "…"
        return _waits(other, f"{RUNS_THROUGH}{kind}: {text}{at}")
    if kind == "RecursionError":
        why, cause = _recursing(info)
        return Verdict(Status.ERROR, f"RecursionError: the code recursed too deep{why}{at}", cause=cause)
    text = message if len(message) <= 300 else message[:300] + "…"
    return Verdict(Status.ERROR, f"your code raised {kind}: {text}{at}{printed}")


ENDINGS = "sys.exit, os._exit, a crash, or the memory limit?"

# what a reflected operator that recursed was most likely written as: `other + self` with a plain number `other`
# hands the sum back to the same method (a number does not know how to add a Value)
REFLECTED = {"__radd__": "+", "__rmul__": "*"}


def _recursing(info: dict) -> tuple[str, str]:
    """Why the learner's code recursed, where the function it recursed in tells, and the cause it names."""
    name = shown(info.get("function", ""), MAX_NAME, lines=False).rpartition(".")[2]
    if name in REFLECTED:
        op = REFLECTED[name]
        return (
            f": in {name}, `other {op} self` with a plain number `other` calls {name} again (a number cannot "
            f"{'add' if op == '+' else 'multiply'} a Value); write `self {op} other`",
            known_cause("reflected-operator-recurses").id,
        )
    return (f" in {name}" if name else ""), ""


def may_be_the_machines(exc: BaseException, status: Status) -> bool:
    """Whether a check's failure could come from the machine rather than the code: worth asking the reference.

    Not a stub, a check that waits for another task or was skipped, nor a file that cannot load for what it
    says (it does not parse, or lacks what the task needs): only the learner's files can do that.
    """
    if status in (Status.PASSED, Status.NOT_STARTED, Status.SKIPPED):
        return False
    if isinstance(exc, LearnerError):
        if exc.fault in (Fault.SKIPPED, Fault.WAITS, Fault.BAD_FILE):
            return False
        if exc.info.get("load") and (
            exc.info.get("kind") == ErrorKind.CANNOT_MAKE or exc.info.get("exception") == "SyntaxError"
        ):
            return False
    return True


def could_not_grade(fault: str) -> str:
    """A check the reference fails too, on this machine (`fault`: its verdict's message): what the learner reads."""
    said = " ".join(line.strip() for line in fault.splitlines() if line.strip())
    said = "it " + said.removeprefix("your code ") if said.startswith("your code ") else said
    return (
        "could not be graded here: the reference solution fails this check on this machine too\n"
        f"({shown(said, 300, lines=False)}).\nThis is about the machine, not your code: it counts neither as "
        "earned nor as lost.\nRun `python -m autograder doctor` to see what is wrong."
    )


def _code_problem(problem: str, file: str, detail: str) -> str:
    """What a worker's `LearnerCodeError` means: the learner's files cannot make what the task needs."""
    if problem == Problem.FILE_MISSING:
        return f"{file} is missing: the graded folder needs every file of exercises/"
    if problem == Problem.NO_VALUE:
        return f"{file} defines no class Value"
    if problem == Problem.METHODS_MISSING:
        return f"{file}: class Value has no method {detail}"
    return f"your files could not be loaded ({shown(problem, MAX_NAME, lines=False)})"


def start_failed(detail: object) -> str:
    """The grader could not start a worker (`pool.StartFailed`): the machine's problem, never the learner's."""
    return (
        "the grader could not start a worker process (this is about the machine, not your code):\n"
        f"{shown(detail)}\nrun `python -m autograder doctor` to see what is wrong and how to fix it"
    )


def _other_task_that_raised(info: dict, task_id: str) -> str | None:
    """The task whose code raised, when the innermost frame of the learner's code is another task's function."""
    where, scope = info.get("where", ""), info.get("function", "")
    if not where or not scope:
        return None
    module = Path(where.split(":")[0]).stem
    owners = tasks_of_scope(module, scope)
    if not owners or task_id in owners:
        return None
    return min(owners, key=registry.sort_key)
