"""Every judgement under a limit: the CPU time a check spends judging, here on the trusted side, is counted.

A judgement runs in the grader's own process, over the learner's answer: it
parses text the learner's code wrote, pairs up lists whose length that code
chose, walks graphs it built. Nothing it does may keep the grader from
finishing, so each check runs under `limit(seconds)`: once the check has used
`seconds` of this process's CPU time judging, it is stopped, and the check
fails, saying so (`OverLimit`). What the grader waits for or computes on its
own behalf is not counted (`paused`): the learner's worker answering a call
(its code has a limit of its own), and the reference's answers and PyTorch's
expected values (they do not depend on the learner's data).

The timer is the process's CPU-time timer (`ITIMER_PROF`), so a busy machine
never spends a judgement's budget. Past the limit it fires again every tenth of
a second of CPU time, and what it raises is not an `Exception`: a judgement's
`except Exception` (or the kit's `except CheckFailed`) cannot keep it running.
Where Python has no such timer (Windows) or the grader runs outside the main
thread, judgements run without it: they still read only size-capped answers
(`worker.wire`) and parse text in linear time (`kit.dot`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator

from autograder.kit.checks import CheckFailed

AGAIN = 0.1  # seconds of CPU time between the timer's firings once the limit is past


class _Stop(BaseException):
    """Raised by the timer inside the judgement; turned into `OverLimit` where the limit was set."""


class OverLimit(CheckFailed):
    """A judgement used its CPU time judging the answer it was given: the check fails, saying so."""

    def __init__(self, seconds: float):
        self.seconds = seconds
        super().__init__("judging your code's answer, here in the grader", "", "")

    def explain(self) -> str:
        return (
            f"check:    {self.what}\n"
            f"stopped:  the grader stopped judging after {self.seconds:g} s of its CPU time (the check's limit)\n"
            "note:     an answer far larger or stranger than the task asks for (a huge text, a giant list)?"
        )


class _Clock:
    """The one CPU-time limit of this process: armed by `limit`, stopped and started again by `paused`."""

    def __init__(self):
        self.armed = False  # a limit is set (the judgement is running or paused)
        self.running = False  # the judgement itself is running: time counts
        self.expired = False  # the timer fired while paused: the judgement stops as soon as it runs again

    def fired(self, signum, frame) -> None:
        if self.running:
            raise _Stop
        if self.armed:
            self.expired = True


_clock = _Clock()


def _has_timer() -> bool:
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def limit(seconds: float) -> Iterator[None]:
    """Run the block (a check's judgement) with `seconds` of this process's CPU time; past them, raise `OverLimit`.

    Nested limits, and a limit inside someone else's CPU-time timer (a notebook's), leave the outer one in charge.
    """
    if seconds <= 0 or _clock.armed or not _has_timer() or signal.getitimer(signal.ITIMER_PROF)[0]:
        yield
        return
    previous = signal.signal(signal.SIGPROF, _clock.fired)
    _clock.armed, _clock.running, _clock.expired = True, True, False
    try:
        try:
            signal.setitimer(signal.ITIMER_PROF, seconds, AGAIN)
            yield
        finally:  # a firing up to the timer's end is caught below, whatever the block was doing
            signal.setitimer(signal.ITIMER_PROF, 0)
            _clock.running = False
            _clock.armed = _clock.expired = False
            if previous not in (signal.SIG_DFL, None):  # the default would end the process on a firing on its way
                signal.signal(signal.SIGPROF, previous)
    except _Stop:
        raise OverLimit(seconds) from None


@contextlib.contextmanager
def paused() -> Iterator[None]:
    """Stop counting during the block: the grader waits for a worker, or computes an answer of its own."""
    if not _clock.running:
        yield
        return
    left, _ = signal.setitimer(signal.ITIMER_PROF, 0)
    _clock.running = False
    try:
        yield
    finally:
        _clock.running = True
        if _clock.expired:
            _clock.expired = False
            raise _Stop
        signal.setitimer(signal.ITIMER_PROF, left or AGAIN, AGAIN)
