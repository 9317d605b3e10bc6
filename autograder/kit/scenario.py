"""What a scenario may use: the grader's own helpers that run *inside* the worker, next to the learner's code.

A check has two halves. The **scenario** is grader code that runs in the
sandboxed worker over the learner's code and returns plain data (numbers,
strings, lists, dicts); the **judgement** runs in the trusted pytest process
and compares that data with expected values only the trusted side computes.

Scenarios are module-level functions of a lesson's test file marked with
`@scenario`. The worker never imports that file: it receives the source of
the file's `@scenario` functions only, compiled in a namespace holding the
names of this module (plus `math` and `random`), so the judgements and their
expected values never enter the worker. A scenario therefore uses only its
arguments, this module's helpers and other `@scenario` functions of its file.
Its first argument is `impl`: the graded code as the task sees it
(`impl.Value`, `impl.nn`, `impl.graph`, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

SCENARIO_FLAG = "__scenario__"


def scenario(fn: Callable) -> Callable:
    """Mark a function as a scenario: it runs in the worker, over the learner's code."""
    setattr(fn, SCENARIO_FLAG, True)
    return fn


def data_of(v: Any) -> Any:
    """`v.data`, or `v` itself when an operation returned something that is not a Value."""
    return getattr(v, "data", v)


def grad_of(v: Any) -> Any:
    return getattr(v, "grad", None)


def sweep(root, seed: float = 1.0) -> None:
    """Set `root.grad = seed` and call every `_backward` once, from the root back to the leaves (no recursion).

    This is the grader's sweep, not the learner's `backward()` (task 6.1), so that
    an operation's checks do not depend on the learner's backward.
    """
    topo, seen, stack = [], set(), [(root, False)]
    while stack:
        v, children_done = stack.pop()
        if children_done:
            topo.append(v)
        elif v not in seen:
            seen.add(v)
            stack.append((v, True))
            stack.extend((child, False) for child in v._prev)
    root.grad = seed
    for v in reversed(topo):
        v._backward()


def type_name(x: Any) -> str:
    return type(x).__name__


def graph_report(root, leaves: dict[str, Any] | None = None) -> dict:
    """The plain-data picture of a graph: every node's label, op, data and grad, and who feeds whom.

    Nodes are numbered in a fixed order (depth first from the root, children by
    label and data) so that the trusted side can walk the learner's graph and
    the reference's side by side.
    """
    order, index, stack = [], {}, [root]
    while stack:
        v = stack.pop()
        if id(v) in index:
            continue
        index[id(v)] = len(order)
        order.append(v)
        kids = sorted(getattr(v, "_prev", ()), key=lambda c: (str(getattr(c, "label", "")), repr(data_of(c))))
        stack.extend(reversed(kids))
    nodes = []
    for v in order:
        nodes.append(
            {
                "label": str(getattr(v, "label", "")),
                "op": str(getattr(v, "_op", "")),
                "data": data_of(v),
                "grad": grad_of(v),
                "children": [index[id(c)] for c in getattr(v, "_prev", ()) if id(c) in index],
            }
        )
    report = {"nodes": nodes}
    if leaves:
        report["leaves"] = {name: index.get(id(v)) for name, v in leaves.items()}
    return report


def outcome(call: Callable[[], Any]) -> dict:
    """Call `call()`: `{"returned": result}`, or `{"raised": type name, "message": ...}` if it raised.

    A stub's NotImplementedError is not an outcome: it goes on up, so the check
    reads "not started" (or "waits for task L.N").
    """
    try:
        return {"returned": call()}
    except NotImplementedError:
        raise
    except Exception as exc:  # noqa: BLE001 - which exception the learner raised is the answer
        return {"raised": type(exc).__name__, "message": str(exc)[:500]}
