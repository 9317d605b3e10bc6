"""The causes the grader can name: each diagnosis of a failure, with a stable id and a one-line name.

A check that recognises a classic mistake in a wrong answer (`=` where `+=`
belongs, tanh's derivative taken from the input, ...) passes the cause's id
with its failure (`CheckFailed(..., cause=ID)` in `kit/checks.py`, or
`verdicts` for what a worker reports). The id is written into every results
file beside the check's status (`TestResult.cause`), and the class report
(`export/class_report.py`) counts them. Ids are stable: results files keep
them, so rename a cause's name freely, never its id.

`tests/test_causes.py` reads the grader's code: every id given to a check is
in this table, and every id in this table is given by some check.
"""

from __future__ import annotations

from typing import NamedTuple


class Cause(NamedTuple):
    id: str
    name: str  # one line: what the code does wrong
    task: str  # the task whose page teaches the right way (the section to revisit)


CAUSES: dict[str, Cause] = {
    c.id: c
    for c in (
        Cause("accumulate-with-plus-equals", "a _backward sets the grad (=) where it must add to it (+=)", "7.1"),
        Cause("tanh-derivative-from-input", "tanh's derivative taken as 1 − x² from the input, not 1 − t²", "5.1"),
        Cause("tanh-derivative-one-minus-t", "tanh's derivative taken as 1 − t, not 1 − t²", "5.1"),
        Cause("backward-calls-a-node-twice", "backward runs a node reached along two paths twice", "6.1"),
        Cause("backward-skips-a-node", "backward never runs the _backward of a node the root depends on", "6.1"),
        Cause("backward-skips-a-leaf", "backward lists only the nodes that have children, not the leaves", "6.1"),
        Cause("topological-order-reversed", "a node's _backward runs before a node that uses it has pushed", "6.1"),
        Cause("reflected-operator-recurses", "__radd__/__rmul__ written as `other + self` recurse forever", "8.1"),
        Cause("rsub-reversed", "__rsub__ computes self − other where it must compute other − self", "8.3"),
        Cause("float32-tensors", "PyTorch tensors made in float32, not float64", "9.1"),
        Cause("parameters-are-copies", "parameters() returns new Values, not the ones the model computes with", "10.2"),
        Cause("sgd-step-uphill", "sgd_step moves the data along its grad (uphill), not against it", "11.2"),
        Cause("loss-recorded-after-update", "the loss history records the loss after the update", "11.3"),
        Cause("gradients-never-zeroed", "the training loop never zeroes the grads: they pile up", "11.3"),
        Cause("hinge-loss-without-penalty", "train_step's loss leaves out the L2 penalty", "12.4"),
        Cause("learning-rate-schedule-slip", "the learning rate schedule is constant or off by a step", "12.4"),
    )
}


def cause(cause_id: str) -> Cause:
    """The cause of an id the grader gives; an unknown id is the grader's own bug."""
    try:
        return CAUSES[cause_id]
    except KeyError:
        raise KeyError(f"no cause {cause_id!r} in autograder/course/causes.py") from None
