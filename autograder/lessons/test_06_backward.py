"""Lesson 6 · Backward, automatically (tasks 6.1 and 6.2).

Graded independently of lessons 2, 5 and 8: the scenarios build graphs of plain
`Value(0.0)` nodes whose `_prev` and `_backward` they set themselves. Each
closure records that it was called (and pushes gradient to its children by a
weighted rule), so the worker reports exactly which closures the learner's
`backward()` called, how often and in which order; the judgements here decide
whether that order is a reverse topological one and compute the grads the
weights must give.
"""

import random
from collections import Counter

import pytest

from autograder.kit.checks import CheckFailed, expect, expect_close, expect_equal
from autograder.worker.scenario import deep_graph, grad_of, scenario

DEFAULT_RECURSION_LIMIT = 1000  # Python's default (sys.getrecursionlimit() in a fresh interpreter)
CHAIN = 100_000
# a graded run's second look at the chain (drawn about this size): still ten times past the recursion limit,
# for a tenth of the work on both sides; the look at CHAIN, which catches a search too slow, has passed first
DRAWN_CHAIN = 10_000

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def weighted_graph_backward(impl, spec, root, preset=None):
    """Build `spec` ([name, [[child, weight], ...]], children first), set the `preset` grads, call root.backward().

    A node's `_backward` records its name, remembers its own grad the first time
    it runs, and adds `weight * node.grad` to each child's grad.
    """
    calls, grad_when_called, nodes = [], {}, {}

    def closure(node, name, children):
        def _backward():
            calls.append(name)
            grad_when_called.setdefault(name, node.grad)
            for child, weight in children:
                child.grad += weight * node.grad

        return _backward

    for name, children in spec:
        node = impl.Value(0.0, tuple(nodes[c] for c, _ in children), "f", label=name)
        node._backward = closure(node, name, [(nodes[c], w) for c, w in children])
        nodes[name] = node
    for name, grad in (preset or {}).items():
        nodes[name].grad = grad
    nodes[root].backward()
    return {
        "calls": calls,
        "grad_when_called": grad_when_called,
        "grads": {name: grad_of(node) for name, node in nodes.items()},
    }


@scenario
def many_weighted_graphs(impl, cases):
    return [weighted_graph_backward(impl, spec, root) for spec, root in cases]


@scenario
def deep_backward(impl, shape, limit, guard=False):
    """Nodes 0..n-1 of `deep_graph(*shape)` (node i's children: smaller indices); the last one's backward() runs
    under the recursion limit `limit`, with the collector paused (building a huge graph wakes it again and again).

    Each closure records its node's index. With `guard`, each node's `_prev` counts how often it is listed and
    stops a search that keeps revisiting shared nodes (without a visited set, a ladder takes 2**depth steps).
    """
    import gc
    import sys
    from functools import partial

    class Revisiting(BaseException):  # not an Exception: the learner's `except Exception` must not swallow it
        pass

    class Children(set):
        def __init__(self, children, budget):
            super().__init__(children)
            self.budget = budget

        def __iter__(self):
            self.budget[0] -= 1
            if self.budget[0] < 0:
                raise Revisiting()
            return super().__iter__()

    was_enabled = gc.isenabled()
    gc.disable()
    old_limit, set_limit = sys.getrecursionlimit(), sys.setrecursionlimit
    requested, error, revisiting = [], None, False

    def spy(new_limit):
        requested.append(new_limit)
        set_limit(new_limit)

    try:
        kids = deep_graph(*shape)  # built here from its description: a request of a few bytes, not megabytes
        calls, nodes, budget = [], [], [10 * len(kids) + 100]
        for i, children in enumerate(kids):
            node = impl.Value(0.0, tuple(nodes[c] for c in children), "f")
            if guard:
                node._prev = Children(node._prev, budget)
            node._backward = partial(calls.append, i)
            nodes.append(node)
        root = nodes[-1]
        del nodes  # only the root keeps the graph alive, as in real use
        set_limit(limit)
        sys.setrecursionlimit = spy
        try:
            root.backward()
        except RecursionError as exc:
            error = f"RecursionError: {exc}"
        except Revisiting:
            revisiting = True
        finally:
            sys.setrecursionlimit = set_limit
            set_limit(old_limit)
        return {
            "error": error,
            "revisiting": revisiting,
            "requested_limits": requested,
            "root_grad": grad_of(root),
            "calls": calls,
        }
    finally:
        if was_enabled:
            gc.enable()


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------


def _spec(edges: dict[str, list[str]]) -> list:
    """A spec with weight 1.0 on every edge, from {name: [children]} listed children first."""
    return [[name, [[c, 1.0] for c in children]] for name, children in edges.items()]


def _kids(spec: list) -> dict[str, list[str]]:
    return {name: [child for child, _ in children] for name, children in spec}


def _describe(edges: dict[str, list[str]]) -> str:
    return "; ".join(f"{n} uses {', '.join(c)}" if c else f"{n} is a leaf" for n, c in edges.items())


def _reachable(kids: dict[str, list[str]], root: str) -> set[str]:
    seen, todo = set(), [root]
    while todo:
        name = todo.pop()
        if name not in seen:
            seen.add(name)
            todo.extend(kids[name])
    return seen


def _oracle_grads(spec: list, root: str) -> dict[str, float]:
    """The grads the weighted rules give, computed in the spec's own (reverse creation) order."""
    grads = {name: 0.0 for name, _ in spec}
    grads[root] = 1.0
    reach = _reachable(_kids(spec), root)
    for name, children in reversed(spec):
        if name in reach:
            for child, weight in children:
                grads[child] += weight * grads[name]
    return grads


def _check_calls(got: dict, kids: dict[str, list[str]], root: str, inputs: str, leaves_too: bool = False) -> None:
    """Every reachable closure exactly once, no other closure, and every node before its children.

    A leaf's `_backward` does nothing in the engine, so only `test_leaf_closures_called` insists that the
    leaves' closures are called; elsewhere skipping them costs nothing (calling them twice does).
    """
    calls = got["calls"]
    reach = _reachable(kids, root)
    counts = Counter(calls)
    order = ", ".join(calls)
    for name in sorted(reach):
        if not leaves_too and not kids[name] and counts[name] == 0:
            continue
        if counts[name] > 1:
            why = "a node reached along two paths is still called once: list each node once, then sweep"
            hint = "Mark nodes as visited: a node reached along two paths is listed, and its _backward run, once."
            cause = "backward-calls-a-node-twice"
        elif kids[name]:
            why = "every node that root depends on must have its _backward called"
            hint = "Walk from the root through every node's _prev, and call each node's _backward once."
            cause = "backward-skips-a-node"
        else:
            why = "a leaf's _backward does nothing, but backward() calls it too, like every other node's"
            hint = "Call every node's _backward, leaves included: a leaf's does nothing, but it is called too."
            cause = "backward-skips-a-leaf"
        expect_equal(
            counts[name],
            1,
            f"number of calls of {name}._backward during {root}.backward()",
            inputs,
            note=f"{why}; the closures were called in this order: {order or '(none)'}",
            hint=hint,
            cause=cause,
        )
    others = sorted(set(counts) - reach)
    expect(
        not others,
        f"closures called that {root} does not depend on",
        "none",
        others,
        inputs,
        note="backward() walks down from the node it is called on, through _prev, and nowhere else",
    )
    position = {name: i for i, name in enumerate(calls)}
    for name in calls:
        for child in kids[name]:
            expect(
                position[name] < position.get(child, len(position)),
                f"order of {name}._backward and {child}._backward ({child} is a child of {name})",
                f"{name} before {child}",
                f"call order: {order}",
                inputs,
                note="a node's _backward must run after every node that uses it has pushed its gradient: "
                "reverse topological order",
                hint="List the nodes so each comes after its children; call _backward from the last to the first.",
                cause="topological-order-reversed",
            )


# --- 6.1 ------------------------------------------------------------------------------------------------------------


@pytest.mark.task("6.1", points=1, hint="Seed the root's grad with dL/dL = 1 before any _backward runs.")
def test_seed_is_one(learner):
    """backward() sets the root's grad to 1.0 before its _backward runs"""
    edges = {"a": [], "b": [], "o": ["a", "b"]}
    inputs = _describe(edges)
    got = learner.run(weighted_graph_backward, _spec(edges), "o")
    expect("o" in got["grad_when_called"], "o._backward was called by o.backward()", True, False, inputs)
    expect_equal(got["grad_when_called"]["o"], 1.0, "o.grad when o._backward ran", inputs)
    expect_equal(got["grads"]["o"], 1.0, "o.grad after o.backward()", inputs)
    expect_equal(
        [got["grads"]["a"], got["grads"]["b"]],
        [1.0, 1.0],
        "[a.grad, b.grad] after o.backward()",
        inputs + " (each closure adds 1 * its grad to its children)",
    )
    got = learner.run(weighted_graph_backward, _spec(edges), "o", preset={"o": 7.0})
    expect_equal(
        got["grad_when_called"].get("o"),
        1.0,
        "o.grad when o._backward ran",
        inputs + "; o.grad = 7.0 first",
        note="the root's grad is set to 1.0 (not added to): dL/dL is always 1",
    )


@pytest.mark.task(
    "6.1", points=1, hint="A leaf is its own whole graph: backward() on it still seeds its grad with 1.0."
)
def test_lone_leaf(learner):
    """backward() on a leaf sets its grad to 1.0, and leaves alone a node that uses it"""
    edges = {"a": [], "b": ["a"]}
    inputs = "a = Value(0.0), a leaf with no children; b uses a, with b.grad = 2.5 first; a.backward() is called"
    got = learner.run(weighted_graph_backward, _spec(edges), "a", preset={"b": 2.5})
    expect_equal(got["grads"]["a"], 1.0, "a.grad after a.backward()", inputs)
    _check_calls(got, edges, "a", inputs)
    expect_equal(got["grads"]["b"], 2.5, "b.grad after a.backward()", inputs, note="a.backward() walks down from a")


@pytest.mark.task(
    "6.1", points=1, hint="Call every node's _backward, leaves included: a leaf's does nothing, but it is called too."
)
def test_leaf_closures_called(learner):
    """the leaves' _backward closures are called too, once each"""
    edges = {"a": [], "b": [], "c": ["a", "b"], "d": ["c", "a"]}
    inputs = _describe(edges)
    _check_calls(learner.run(weighted_graph_backward, _spec(edges), "d"), edges, "d", inputs, leaves_too=True)


@pytest.mark.task(
    "6.1", points=1, hint="List the nodes so each comes after its children; call _backward from the last to the first."
)
def test_chain_order(learner):
    """on a chain a <- b <- c <- d, d.backward() calls d, c, b, a in that order, once each"""
    edges = {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]}
    inputs = _describe(edges)
    got = learner.run(weighted_graph_backward, _spec(edges), "d")
    _check_calls(got, edges, "d", inputs)
    expect_equal(
        [c for c in got["calls"] if c != "a"],
        ["d", "c", "b"],
        "the _backward closures called, in order",
        inputs + " (leaf a's may come last)",
    )


@pytest.mark.task(
    "6.1",
    points=2,
    hint="Mark nodes as visited: a node reached along two paths is listed, and its _backward run, once.",
)
def test_diamond(learner):
    """a diamond (a used by b and c, both used by d): each closure once, a's last"""
    edges = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    _check_calls(learner.run(weighted_graph_backward, _spec(edges), "d"), edges, "d", _describe(edges))


@pytest.mark.task(
    "6.1", points=2, hint="A depth-first search that appends a node after all its children; BFS order is not enough."
)
def test_skip_connection(learner):
    """a node used both directly by the root and at the end of a longer path runs after that whole path"""
    edges = {"x": [], "y1": ["x"], "y2": ["y1"], "y3": ["y2"], "z": ["y3", "x"]}
    _check_calls(learner.run(weighted_graph_backward, _spec(edges), "z"), edges, "z", _describe(edges))


@pytest.mark.task(
    "6.1", points=2, hint="A shared sub-graph is visited once; every node in it still waits for all its users."
)
def test_shared_subgraph(learner):
    """two branches sharing a sub-graph: each closure once, in reverse topological order"""
    edges = {
        "p": [],
        "q": ["p"],
        "r": ["p", "q"],
        "leaf": [],
        "u": ["r", "leaf"],
        "v": ["r", "q"],
        "w": ["u", "v"],
        "top": ["w", "q"],
    }
    _check_calls(learner.run(weighted_graph_backward, _spec(edges), "top"), edges, "top", _describe(edges))


@pytest.mark.task(
    "6.1",
    points=2,
    hint="A node's _backward passes on its grad as it is when it runs: after all its users, and once.",
)
def test_gradients_flow(learner):
    """closures that push weight * grad to their children give the path-sum grads"""
    spec = [["a", []], ["b", [["a", 2.0]]], ["c", [["a", -1.0], ["b", 3.0]]], ["d", [["b", 0.5], ["c", 4.0]]]]
    inputs = (
        "b = f(a), c = f(a, b), d = f(b, c); each closure adds weight * its grad to a child, "
        "weights b->a 2, c->a -1, c->b 3, d->b 0.5, d->c 4"
    )
    got = learner.run(weighted_graph_backward, spec, "d")
    for name, value in (("d", 1.0), ("c", 4.0), ("b", 12.5), ("a", 21.0)):
        expect_close(
            got["grads"][name],
            value,
            f"{name}.grad after d.backward()",
            inputs,
            note=f"the _backward closures were called in this order: {', '.join(got['calls'])}",
        )


@pytest.mark.task(
    "6.1", points=1, hint="Walk down from self through _prev only: nodes that merely share a child are not part of it."
)
def test_only_reachable_nodes(learner):
    """a node that uses a shared leaf but is not below the root is left alone"""
    edges = {"a": [], "b": [], "u": ["a", "b"], "other": ["a"], "o": ["u"]}
    inputs = _describe(edges) + "; o.backward() is called"
    got = learner.run(weighted_graph_backward, _spec(edges), "o")
    _check_calls(got, edges, "o", inputs)
    expect_equal(got["grads"]["other"], 0.0, "other.grad after o.backward()", inputs)


@pytest.mark.task(
    "6.1", points=1, hint="backward() sets only the root's grad; the others keep adding up (zeroing is the loop's job)."
)
def test_does_not_zero_grads(learner):
    """backward() adds to the grads already there: it does not zero them"""
    spec = [["a", []], ["o", [["a", 3.0]]]]
    inputs = "o = f(a), o's closure adds 3 * o.grad to a.grad; a.grad = 10.0 before o.backward()"
    got = learner.run(weighted_graph_backward, spec, "o", preset={"a": 10.0})
    expect_close(got["grads"]["a"], 13.0, "a.grad after o.backward()", inputs)


@pytest.mark.hidden
@pytest.mark.task(
    "6.1", points=2, hint="Each reachable _backward once, each node after all of its users, nothing outside the graph."
)
def test_random_dags(learner):
    """seeded random graphs: order, each closure once, and the path-sum grads"""
    rng = random.Random(6101)
    cases = []
    for _ in range(25):
        size = rng.randint(3, 40)
        spec = []
        for i in range(size):
            k = rng.randint(0, min(i, 4))
            children = rng.sample(range(i), k)
            spec.append([f"n{i}", [[f"n{c}", rng.choice([-2.0, -1.0, 0.5, 1.0, 1.5, 3.0])] for c in children]])
        cases.append([spec, f"n{size - 1 - rng.randint(0, min(2, size - 1))}"])
    for trial, ((spec, root), got) in enumerate(zip(cases, learner.run(many_weighted_graphs, cases), strict=True)):
        inputs = f"seeded graph #{trial}: " + "; ".join(f"{n} uses {', '.join(c for c, _ in k)}" for n, k in spec if k)
        _check_calls(got, _kids(spec), root, inputs + f"; {root}.backward()")
        oracle = _oracle_grads(spec, root)
        for name, _ in spec:
            expect_close(got["grads"][name], oracle[name], f"{name}.grad after {root}.backward()", inputs, rel=1e-9)


# --- 6.2 ------------------------------------------------------------------------------------------------------------


def _deep_run(learner, shape: list, inputs: str, guard: bool = False) -> dict:
    """Run backward() on the last node of `deep_graph(*shape)`, under the default recursion limit; check it ends."""
    got = learner.run(deep_backward, shape, DEFAULT_RECURSION_LIMIT, guard=guard)
    expect(
        not got["revisiting"],
        "how often backward() lists the nodes' children (_prev)",
        "a few times per node",
        "far more: the search keeps revisiting shared nodes",
        inputs,
        note="mark each node as visited the first time you reach it, and skip it after that",
    )
    expect(
        got["error"] is None,
        "root.backward() finishes",
        "no error",
        got["error"],
        inputs,
        note=f"a recursive depth-first search uses one Python call per level, and Python allows only about "
        f"{DEFAULT_RECURSION_LIMIT} nested calls: do the same search with your own list as a stack",
    )
    raised = [n for n in got["requested_limits"] if not isinstance(n, int) or n > DEFAULT_RECURSION_LIMIT]
    expect(
        not raised,
        "sys.setrecursionlimit called by backward()",
        "never (the default limit stays)",
        f"sys.setrecursionlimit({raised[0]})" if raised else None,
        inputs,
        note="raising the recursion limit only moves the wall (and can crash Python): use an explicit stack",
    )
    return got


def _check_order_by_index(calls: list, kids: list[list[int]], inputs: str) -> None:
    """Each of the nodes 0..n-1 called once (leaves: at most once), and every node before each of its children."""
    n = len(kids)
    position = [-1] * n
    for i, node in enumerate(calls):
        if not isinstance(node, int) or not 0 <= node < n:
            raise CheckFailed("the _backward calls recorded", f"node numbers 0 to {n - 1}", node, inputs)
        if position[node] != -1:
            cause = "backward-calls-a-node-twice"
            raise CheckFailed(f"number of calls of node {node}'s _backward", 1, "2 or more", inputs, cause=cause)
        position[node] = i
    missing = [node for node in range(n) if position[node] == -1 and kids[node]]  # leaves' closures: optional
    expect(
        not missing,
        "nodes whose _backward was never called",
        "none",
        f"{len(missing)} nodes, e.g. node {missing[0]}" if missing else None,
        inputs,
        cause="backward-skips-a-node",
    )
    for node in range(n):
        for child in kids[node]:
            if position[node] > position[child] != -1:
                raise CheckFailed(
                    f"order of node {node}'s and node {child}'s _backward (node {child} is a child of node {node})",
                    f"node {node} first",
                    f"node {child} ran first",
                    inputs,
                    note="reverse topological order: a node's _backward runs before its children's",
                    cause="topological-order-reversed",
                )


@pytest.mark.task(
    "6.2",
    points=3,
    hint="Replace the recursion by a loop over your own stack: each node goes on it to expand, then to be appended.",
)
def test_chain_100k(learner):
    """a chain 100,000 nodes deep under the default recursion limit: finishes, each closure once, in order"""
    length = DRAWN_CHAIN if learner.afresh else CHAIN
    inputs = f"a chain of {length:,} nodes, each the only child of the next; backward() on the last one"
    got = _deep_run(learner, ["chain", length], inputs)
    expect_equal(got["root_grad"], 1.0, "root.grad after root.backward()", inputs)
    calls = got["calls"]
    if calls[: length - 1] != list(range(length - 1, 0, -1)) or calls[length - 1 :] not in ([], [0]):
        _check_order_by_index(calls, deep_graph("chain", length), inputs)
        expect(
            False,
            "the _backward calls, in order",
            "the last node first, back to the first node",
            f"{len(calls)} calls, starting {calls[:5]}",
            inputs,
        )


@pytest.mark.task(
    "6.2", points=2, hint="With an explicit stack, append a node to the order only once all of its children are done."
)
def test_deep_ladder(learner):
    """a ladder two nodes wide and 5,000 levels deep (every node used twice): each closure once, in order"""
    levels = 5_000
    inputs = (
        f"a ladder of {levels:,} levels: nodes 2k and 2k+1 both use nodes 2k-2 and 2k-1; "
        "the root uses the last two; backward() on the root"
    )
    shape = ["ladder", levels]
    _check_order_by_index(_deep_run(learner, shape, inputs, guard=True)["calls"], deep_graph(*shape), inputs)


@pytest.mark.hidden
@pytest.mark.task(
    "6.2",
    points=2,
    hint="Deep graphs with shortcuts need the same post-order as small ones: a node after its children.",
)
def test_deep_random_shortcuts(learner):
    """a seeded chain 10,000 deep with random shortcuts: each closure once, in reverse topological order"""
    shape = ["shortcuts", 10_000, 6202]
    inputs = (
        f"a seeded chain of {shape[1]:,} nodes where node i uses node i-1 and, often, one of the 50 nodes before it"
    )
    _check_order_by_index(_deep_run(learner, shape, inputs, guard=True)["calls"], deep_graph(*shape), inputs)
