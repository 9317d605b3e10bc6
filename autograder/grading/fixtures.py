"""The `learner` fixture's objects, over a run's `Grader`: a check's calls into the learner's code, and a graded
run's second look at a visible check on inputs drawn afresh.

- `Learner` (the `learner` fixture) runs a scenario in the task's worker, over the learner's code, and returns its
  plain-data answer (or raises `LearnerError` with what went wrong there);
- `ReferenceAfresh` is a check's pass over the reference's answers on inputs drawn afresh (`fresh_inputs.draw`),
  and `LearnerAfresh` the pass over the learner's answers on the same inputs (`Learner.judge_afresh`).

The `reference` fixture's objects are the reference's side (`reference.py`). Each object's `grader` is the run's
`Grader`, left unannotated: `grader.py` imports this file (`Grader.machine_fault` makes a `Learner`), and naming
the type here would import it back, a cycle (`tests/test_layers.py`).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from autograder.grading import fresh_inputs, judging
from autograder.grading.reference import Reference, ReferenceCode
from autograder.grading.tasks import graded
from autograder.grading.verdicts import LearnerError
from autograder.kit import checks
from autograder.worker.scenario import SCENARIO_FLAG
from autograder.worker.wire import to_plain


class Learner:
    """The `learner` fixture: runs scenarios over the learner's code for this test's task.

    `fresh`: in a graded run, a visible check's draws (`fresh_inputs`): once the check passes, `judge_afresh` looks
    at it again on inputs drawn from them.
    """

    afresh = False  # a pass of a graded run's second look, on drawn inputs: each of its calls is asked anew

    def __init__(self, grader, task_id: str, fresh: random.Random | None = None):
        self.grader, self.task, self.fresh = grader, task_id, fresh

    def run(self, fn, *args, **kwargs):
        if not getattr(fn, SCENARIO_FLAG, False):
            raise TypeError(f"{fn.__name__} is not marked @scenario")
        return self.grader.run(self.task, fn, args, kwargs)

    def judge_afresh(self, check: Callable[[Learner], None]) -> None:
        """A graded run's second look at a visible check that passed: `check(other)` runs its judgement with `other`
        as its `learner`, once over the reference's answers on inputs drawn afresh (`ReferenceAfresh`), then over
        the learner's on the same inputs (`LearnerAfresh`), with the judgement's helpers only recording what they
        were given (`checks.judged`); the two records must agree (`fresh_inputs.compare`), and so must each call's
        answers in their numbers (`fresh_inputs.numbers_alike`: what the judgement only reads a property of, a
        trained model, say, must still be the reference's). Raises `CheckFailed` where they do not, what the
        learner's code raised there, or `fresh_inputs.NothingDrawn`."""
        if self.fresh is None:
            return
        reference = ReferenceAfresh(self.grader, self.task, self.fresh)
        want, want_end = reference.judged(check)
        if not any(d.drew for d in reference.draws):
            raise fresh_inputs.NothingDrawn(self.task)
        learner = LearnerAfresh(self.grader, self.task, reference.draws)
        got, got_end = learner.judged(check)
        if isinstance(got_end.raised, LearnerError):  # the learner's code failed there: that is the answer
            raise got_end.raised
        fresh_inputs.compare(want, want_end, got, got_end, reference.draws)
        fresh_inputs.compare_answers(reference.answers, learner.answers, reference.draws, want)


class ReferenceAfresh(Learner):
    """A check's pass over the reference's answers on inputs drawn afresh: each call's draw is the first one the
    reference answers (`fresh_inputs.draw`), kept in `draws` for the learner's pass."""

    afresh = True

    def __init__(self, grader, task_id: str, fresh: random.Random):
        super().__init__(grader, task_id)
        self.rng, self.draws, self.answers = fresh, [], []

    def judged(self, check: Callable[[Learner], None]) -> tuple[list, fresh_inputs.Ending]:
        """The records of the check's helpers as `check(self)` runs (`checks.judged`), and how it ended."""
        self.grader.drawing, drawing = True, self.grader.drawing
        try:
            with checks.judged() as records:
                try:
                    check(self)
                    ending = fresh_inputs.Ending(None)
                except Exception as exc:  # noqa: BLE001 - how a judgement ends is part of what it judged
                    ending = fresh_inputs.Ending(exc)
        finally:
            self.grader.drawing = drawing
        return records, ending

    def run(self, fn, *args, **kwargs):
        if not getattr(fn, SCENARIO_FLAG, False):
            raise TypeError(f"{fn.__name__} is not marked @scenario")
        checks.judged_call(fn.__name__)

        @judging.paused()  # the reference's answer does not depend on the learner's: not the judgement's time
        def answer(drawn_args: list, drawn_kwargs: dict):
            # a worker's missing answer is computed here: only the reference's own failure makes inputs prove nothing
            answered, got = self.grader.drawn_by_worker(graded(self.task), fn, drawn_args, drawn_kwargs)
            if answered:
                return got
            try:
                return to_plain(fn(ReferenceCode(), *drawn_args, **drawn_kwargs))
            except Exception:  # noqa: BLE001 - the reference fails on these inputs too: they prove nothing
                return None

        drawn, got = fresh_inputs.draw(fn.__name__, list(args), kwargs, self.rng, answer)
        self.draws.append(drawn)
        self.answers.append(got if drawn.drew else Reference(self.grader).run(fn, *args, **kwargs))
        return self.answers[-1]


class LearnerAfresh(ReferenceAfresh):
    """A check's pass over the learner's answers on the inputs the reference's pass drew (`draws`), in its order."""

    def __init__(self, grader, task_id: str, draws: list[fresh_inputs.Draw]):
        Learner.__init__(self, grader, task_id)
        self.draws, self.answers = draws, []

    def run(self, fn, *args, **kwargs):
        if not getattr(fn, SCENARIO_FLAG, False):
            raise TypeError(f"{fn.__name__} is not marked @scenario")
        checks.judged_call(fn.__name__)
        n = len(self.answers)
        drawn = self.draws[n] if n < len(self.draws) else None
        if drawn is None or drawn.name != fn.__name__ or drawn.args != list(args) or drawn.kwargs != kwargs:
            raise fresh_inputs.Diverged()  # the learner's answers led the judgement to another call
        self.answers.append(self.grader.run(self.task, fn, tuple(drawn.drawn_args), drawn.drawn_kwargs, planned=False))
        return self.answers[-1]
