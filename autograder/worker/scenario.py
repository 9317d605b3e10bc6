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

import random
from collections.abc import Callable

TYPE_CHECKING = False  # typing's import is most of a worker's start-up cost of this module
if TYPE_CHECKING:
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


# Helpers that do part of a task's job, and the tasks whose worker must not hold them: `withhold` deletes them
# there before the learner's code runs, so that it cannot call them (through sys.modules, a frame, gc).
SOLVES = {"sweep": ("6.1", "6.2"), "loss_report": ("6.1", "6.2")}


def withhold(task_id: str) -> None:
    """In `task_id`'s worker: drop every helper that does part of that task's job (see SOLVES)."""
    for name, tasks in SOLVES.items():
        if task_id in tasks:
            globals().pop(name, None)


def sweep(root, seed: float = 1.0) -> None:
    """Set `root.grad = seed` and call every `_backward` once, from the root back to the leaves (no recursion).

    This is the grader's sweep, not the learner's `backward()` (task 6.1), so that
    an operation's checks do not depend on the learner's backward. It finds its
    order its own way (a student edition ships it, beside the task): each node
    counts the nodes made from it, and its `_backward` runs once they all have run.
    """
    made_from, todo = {}, [root]  # each node of the graph: the nodes it was made from
    while todo:
        v = todo.pop()
        if v not in made_from:
            made_from[v] = list(v._prev)
            todo.extend(made_from[v])
    uses = dict.fromkeys(made_from, 0)  # how many nodes made from each one have still to run their _backward
    for children in made_from.values():
        for child in children:
            uses[child] += 1
    root.grad = seed
    ready = [root]
    while ready:
        v = ready.pop()
        v._backward()
        for child in made_from[v]:
            uses[child] -= 1
            if uses[child] == 0:
                ready.append(child)


def type_name(x: Any) -> str:
    return type(x).__name__


MAX_GRAPH_NODES = 2000  # a report is for drawing and diagnosis: a graph larger than any scenario's is not sent


def graph_report(root, names: dict[str, Any] | None = None) -> dict:
    """The plain-data picture of a graph: every node's label, op, data and grad, and who feeds whom.

    Nodes are numbered in an order that depends only on what the graph holds
    (depth first from the root; siblings by label, data to 6 digits, then the
    shape and data of what lies below them, then the name `names` gives them),
    never on object ids or set order,
    so that the trusted side can line up the learner's graph and the
    reference's built by the same scenario node by node. Ops are left out of
    the order on purpose: a learner's op symbol may differ without the graph
    being different. `names` ({name: Value}) are reported as {name: index}.

    A report never changes a verdict: anything that goes wrong while it is made
    (an odd `_prev`, a graph too large) gives `{"unavailable": why}`.
    """
    try:
        return _graph_report(root, names or {})
    except Exception as exc:  # noqa: BLE001 - a diagnosis must not turn a check into an error
        return {"unavailable": f"{type(exc).__name__}: {str(exc)[:200]}"}


def _children(v) -> list:
    return list(getattr(v, "_prev", None) or ())


def _rounded(x: Any) -> str:
    if isinstance(x, float):
        return format(x, ".6g")
    return repr(x)[:60]


def _graph_report(root, names: dict[str, Any]) -> dict:
    # every node, children before parents (iterative: graphs may be deep)
    post, seen, stack = [], set(), [(root, False)]
    while stack:
        v, children_done = stack.pop()
        if children_done:
            post.append(v)
        elif id(v) not in seen:
            seen.add(id(v))
            if len(seen) > MAX_GRAPH_NODES:
                raise ValueError(f"more than {MAX_GRAPH_NODES} nodes")
            stack.append((v, True))
            stack.extend((c, False) for c in _children(v))
    import hashlib  # here, not at the top: most workers never draw a graph, and every one would pay for it

    named = {}  # id -> the first of the names the scenario gave it: the last tie-break between twin siblings
    for name, v in sorted(names.items(), reverse=True):
        named[id(v)] = name
    key = {}  # id -> sort key of the node among its siblings
    for v in post:
        own = f"{getattr(v, 'label', '')}\0{_rounded(data_of(v))}"
        below = ",".join(sorted(key[id(c)][2] for c in _children(v)))
        shape = hashlib.sha1(f"{own}\0{below}".encode()).hexdigest()
        key[id(v)] = (str(getattr(v, "label", "")), _rounded(data_of(v)), shape, named.get(id(v), ""))
    order, index, stack = [], {}, [root]
    while stack:
        v = stack.pop()
        if id(v) in index:
            continue
        index[id(v)] = len(order)
        order.append(v)
        stack.extend(sorted(_children(v), key=lambda c: key[id(c)], reverse=True))
    nodes = []
    for v in order:
        kids = sorted({index[id(c)] for c in _children(v)})
        nodes.append(
            {
                "label": str(getattr(v, "label", "")),
                "op": str(getattr(v, "_op", "")),
                "data": data_of(v),
                "grad": grad_of(v),
                "children": kids,
            }
        )
    report = {"nodes": nodes}
    if names:
        report["names"] = {name: index.get(id(v)) for name, v in names.items()}
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
        kinds = [k.__name__ for k in type(exc).__mro__]  # a subclass of the error asked for counts, as in `except`
        return {"raised": type(exc).__name__, "message": str(exc)[:500], "kinds": kinds}


def loss_report(impl, loss_fn: Callable, numbers: list[float], *args: Any, gradient: bool = True) -> dict:
    """`loss_fn([Value(x) for x in numbers], *args)`: its type, its data and (grader's sweep) each input's grad."""
    values = [impl.Value(x) for x in numbers]
    loss = loss_fn(values, *args)
    is_value = isinstance(loss, impl.Value)
    if gradient and is_value:
        sweep(loss)
    return {
        "is_value": is_value,
        "type": type_name(loss),
        "data": data_of(loss),
        "grads": [v.grad for v in values] if gradient and is_value else None,
    }


def collecting_only_new_objects(run: Callable[[], Any]) -> Any:
    """`run()` with the objects alive now frozen (`gc.freeze`), so that collections walk only what it creates.

    Every training step leaves a graph of reference cycles; without this, each
    collection during a run would also walk every object already alive (PyTorch's,
    on the trusted side). Objects frozen before stay frozen.
    """
    import gc

    frozen_before = gc.get_freeze_count()
    gc.freeze()
    try:
        return run()
    finally:
        if not frozen_before:
            gc.unfreeze()


# --- the course's two classic expressions (micrograd's own tests), shared by lessons 8 and 12 ---------------


def headline_expression(a, b, relu, names=None):
    """The lesson's headline expression, for Values (in the worker) or float64 tensors (on the trusted side).

    `names`, a dict, receives the intermediate results c, d, e, f (for `graph_report`).
    """
    c = a + b
    d = a * b + b**3
    c = c + (c + 1)
    c = c + (1 + c + (-a))
    d = d + (d * 2 + relu(b + a))
    d = d + (3 * d + relu(b - a))
    e = c - d
    f = e**2
    g = f / 2.0
    g = g + 10.0 / f
    if names is not None:
        names.update(c=c, d=d, e=e, f=f)
    return g


def sanity_expression(x, relu, names=None):
    """The PyTorch sanity expression, for Values or float64 tensors; `names` receives z, q and h."""
    z = 2 * x + 2 + x
    q = relu(z) + z * x
    h = relu(z * z)
    if names is not None:
        names.update(z=z, q=q, h=h)
    return h + q + q * x


def deep_graph(shape: str, size: int, seed: int = 0) -> list[list[int]]:
    """The children of nodes 0..n-1 of a deep graph (task 6.2): built alike in the worker and by the judgement.

    "chain": `size` nodes, each using the one before; "ladder": `size` levels
    two nodes wide, both nodes of a level using both of the level below, and a
    root using the last two; "shortcuts": a chain of `size` nodes where node i
    often also uses one of the 50 nodes before it (seeded by `seed`).
    """
    if shape == "chain":
        return [[]] + [[i - 1] for i in range(1, size)]
    if shape == "ladder":
        kids = [[], []]
        for k in range(1, size):
            kids += [[2 * k - 2, 2 * k - 1], [2 * k - 2, 2 * k - 1]]
        return [*kids, [len(kids) - 2, len(kids) - 1]]
    if shape == "shortcuts":
        rng, kids = random.Random(seed), [[]]
        for i in range(1, size):
            shortcut = i > 2 and rng.random() < 0.4
            kids.append([i - 1, rng.randint(max(0, i - 50), i - 2)] if shortcut else [i - 1])
        return kids
    raise ValueError(f"no deep graph shaped {shape!r}")
