"""Lesson 6 · Backward, automatically (tasks 6.1 and 6.2).

Graded independently of lessons 2, 5 and 8: the graphs are made of plain
`Value(0.0)` nodes whose `_prev` and `_backward` the test sets itself. Each
closure records that it was called (and, in some checks, pushes gradient to
its children by a simple weighted rule), so the checks see exactly which
closures `backward()` called, how often, and in which order.
"""

import random
import sys
from collections import Counter
from functools import partial

import pytest

from autograder.kit.checks import CheckFailed, expect, expect_close, expect_equal
from autograder.kit.testkit import collector_paused

DEFAULT_RECURSION_LIMIT = 1000  # Python's default (sys.getrecursionlimit() in a fresh interpreter)


# --- graphs whose closures are written by the test ------------------------------------------------------------------

class Graph:
    """Nodes made with `impl.Value`, wired from a spec: [(name, [(child, weight), ...]), ...], children first.

    A node's `_backward` records its name in `calls`, remembers its own grad at that
    moment, and adds `weight * node.grad` to each child's grad.
    """

    def __init__(self, impl, spec):
        self.calls: list[str] = []
        self.grad_when_called: dict[str, float] = {}
        self.kids = {name: [child for child, _ in children] for name, children in spec}
        self.nodes = {}
        for name, children in spec:
            node = impl.Value(0.0, tuple(self.nodes[c] for c, _ in children), "f", label=name)
            node._backward = self._closure(node, name, [(self.nodes[c], w) for c, w in children])
            self.nodes[name] = node

    def _closure(self, node, name, children):
        def _backward():
            self.calls.append(name)
            self.grad_when_called.setdefault(name, node.grad)
            for child, weight in children:
                child.grad += weight * node.grad
        return _backward

    def reachable(self, root: str) -> set[str]:
        seen, todo = set(), [root]
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(self.kids[name])
        return seen

    def oracle_grads(self, root: str, spec) -> dict[str, float]:
        """The grads the weighted rules give, computed in the spec's own (reverse creation) order."""
        grads = {name: 0.0 for name, _ in spec}
        grads[root] = 1.0
        reach = self.reachable(root)
        for name, children in reversed(spec):
            if name in reach:
                for child, weight in children:
                    grads[child] += weight * grads[name]
        return grads


def _spec(edges: dict[str, list[str]]):
    """A spec with weight 1.0 on every edge, from {name: [children]} listed children first."""
    return [(name, [(c, 1.0) for c in children]) for name, children in edges.items()]


def _describe(edges: dict[str, list[str]]) -> str:
    return "; ".join(f"{n} uses {', '.join(c)}" if c else f"{n} is a leaf" for n, c in edges.items())


def _check_calls(graph: Graph, root: str, inputs: str, leaves_too: bool = False) -> None:
    """Every reachable closure exactly once, no other closure, and every node before its children.

    A leaf's `_backward` does nothing in the engine, so only `test_leaf_closures_called` insists that the
    leaves' closures are called; elsewhere skipping them costs nothing (calling them twice does).
    """
    reach = graph.reachable(root)
    counts = Counter(graph.calls)
    order = ", ".join(graph.calls)
    for name in sorted(reach):
        if not leaves_too and not graph.kids[name] and counts[name] == 0:
            continue
        expect_equal(counts[name], 1, f"number of calls of {name}._backward during {root}.backward()", inputs,
                     note=f"the _backward closures were called in this order: {order or '(none)'}")
    others = sorted(set(counts) - reach)
    expect(not others, f"closures called that {root} does not depend on", "none", others, inputs,
           note="backward() walks down from the node it is called on, through _prev, and nowhere else")
    position = {name: i for i, name in enumerate(graph.calls)}
    for name in graph.calls:
        for child in graph.kids[name]:
            expect(position[name] < position.get(child, len(position)),
                   f"order of {name}._backward and {child}._backward ({child} is a child of {name})",
                   f"{name} before {child}", f"call order: {order}", inputs,
                   note="a node's _backward must run after every node that uses it has pushed its gradient: "
                        "reverse topological order")


# --- 6.1 ------------------------------------------------------------------------------------------------------------

@pytest.mark.task("6.1", points=1, hint="Start with self.grad = 1.0 (dL/dL = 1), before calling any _backward.")
def test_seed_is_one(impl):
    """backward() sets the root's grad to 1.0 before its _backward runs"""
    edges = {"a": [], "b": [], "o": ["a", "b"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["o"].backward()
    expect("o" in graph.grad_when_called, "o._backward was called by o.backward()", True, False, inputs)
    expect_equal(graph.grad_when_called["o"], 1.0, "o.grad when o._backward ran", inputs)
    expect_equal(graph.nodes["o"].grad, 1.0, "o.grad after o.backward()", inputs)
    expect_equal((graph.nodes["a"].grad, graph.nodes["b"].grad), (1.0, 1.0), "(a.grad, b.grad) after o.backward()",
                 inputs + " (each closure adds 1 * its grad to its children)")
    graph = Graph(impl, _spec(edges))
    graph.nodes["o"].grad = 7.0
    graph.nodes["o"].backward()
    expect_equal(graph.grad_when_called.get("o"), 1.0, "o.grad when o._backward ran", inputs + "; o.grad = 7.0 first",
                 note="the root's grad is set to 1.0 (not added to): dL/dL is always 1")


@pytest.mark.task("6.1", points=1,
                  hint="A leaf is its own whole graph: backward() on it still seeds its grad with 1.0.")
def test_lone_leaf(impl):
    """backward() on a leaf sets its grad to 1.0"""
    edges = {"a": []}
    inputs = "a = Value(0.0), a leaf with no children"
    graph = Graph(impl, _spec(edges))
    graph.nodes["a"].backward()
    expect_equal(graph.nodes["a"].grad, 1.0, "a.grad after a.backward()", inputs)
    _check_calls(graph, "a", inputs)


@pytest.mark.task("6.1", points=1,
                  hint="Call every node's _backward, leaves included: a leaf's does nothing, but it is called too.")
def test_leaf_closures_called(impl):
    """the leaves' _backward closures are called too, once each"""
    edges = {"a": [], "b": [], "c": ["a", "b"], "d": ["c", "a"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["d"].backward()
    _check_calls(graph, "d", inputs, leaves_too=True)


@pytest.mark.task("6.1", points=1,
                  hint="List the nodes so each comes after its children; call _backward from the last to the first.")
def test_chain_order(impl):
    """on a chain a <- b <- c <- d, d.backward() calls d, c, b, a in that order, once each"""
    edges = {"a": [], "b": ["a"], "c": ["b"], "d": ["c"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["d"].backward()
    _check_calls(graph, "d", inputs)
    expect_equal([c for c in graph.calls if c != "a"], ["d", "c", "b"], "the _backward closures called, in order",
                 inputs + " (leaf a's may come last)")


@pytest.mark.task("6.1", points=2,
                  hint="Mark nodes as visited: a node reached along two paths is listed, and its _backward run, once.")
def test_diamond(impl):
    """a diamond (a used by b and c, both used by d): each closure once, a's last"""
    edges = {"a": [], "b": ["a"], "c": ["a"], "d": ["b", "c"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["d"].backward()
    _check_calls(graph, "d", inputs)


@pytest.mark.task("6.1", points=2,
                  hint="A depth-first search that appends a node after all its children; BFS order is not enough.")
def test_skip_connection(impl):
    """a node used both directly by the root and at the end of a longer path runs after that whole path"""
    edges = {"x": [], "y1": ["x"], "y2": ["y1"], "y3": ["y2"], "z": ["y3", "x"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["z"].backward()
    _check_calls(graph, "z", inputs)


@pytest.mark.task("6.1", points=2,
                  hint="A shared sub-graph is visited once; every node in it still waits for all its users.")
def test_shared_subgraph(impl):
    """two branches sharing a sub-graph: each closure once, in reverse topological order"""
    edges = {"p": [], "q": ["p"], "r": ["p", "q"], "leaf": [], "u": ["r", "leaf"], "v": ["r", "q"],
             "w": ["u", "v"], "top": ["w", "q"]}
    inputs = _describe(edges)
    graph = Graph(impl, _spec(edges))
    graph.nodes["top"].backward()
    _check_calls(graph, "top", inputs)


@pytest.mark.task("6.1", points=2,
                  hint="A node's _backward that runs before all its users pushed into its grad passes on too little.")
def test_gradients_flow(impl):
    """closures that push weight * grad to their children give the path-sum grads"""
    spec = [("a", []), ("b", [("a", 2.0)]), ("c", [("a", -1.0), ("b", 3.0)]), ("d", [("b", 0.5), ("c", 4.0)])]
    inputs = ("b = f(a), c = f(a, b), d = f(b, c); each closure adds weight * its grad to a child, "
              "weights b->a 2, c->a -1, c->b 3, d->b 0.5, d->c 4")
    graph = Graph(impl, spec)
    graph.nodes["d"].backward()
    for name, value in (("d", 1.0), ("c", 4.0), ("b", 12.5), ("a", 21.0)):
        expect_close(graph.nodes[name].grad, value, f"{name}.grad after d.backward()", inputs,
                     note=f"the _backward closures were called in this order: {', '.join(graph.calls)}")


@pytest.mark.task("6.1", points=1,
                  hint="Walk down from self through _prev only: nodes that merely share a child are not part of it.")
def test_only_reachable_nodes(impl):
    """a node that uses a shared leaf but is not below the root is left alone"""
    edges = {"a": [], "b": [], "u": ["a", "b"], "other": ["a"], "o": ["u"]}
    inputs = _describe(edges) + "; o.backward() is called"
    graph = Graph(impl, _spec(edges))
    graph.nodes["o"].backward()
    _check_calls(graph, "o", inputs)
    expect_equal(graph.nodes["other"].grad, 0.0, "other.grad after o.backward()", inputs)


@pytest.mark.task("6.1", points=1,
                  hint="backward() sets only the root's grad; the others keep adding up (zeroing is the loop's job).")
def test_does_not_zero_grads(impl):
    """backward() adds to the grads already there: it does not zero them"""
    spec = [("a", []), ("o", [("a", 3.0)])]
    inputs = "o = f(a), o's closure adds 3 * o.grad to a.grad; a.grad = 10.0 before o.backward()"
    graph = Graph(impl, spec)
    graph.nodes["a"].grad = 10.0
    graph.nodes["o"].backward()
    expect_close(graph.nodes["a"].grad, 13.0, "a.grad after o.backward()", inputs)


@pytest.mark.hidden
@pytest.mark.task("6.1", points=2,
                  hint="Each reachable _backward once, each node after all of its users, nothing outside the graph.")
def test_random_dags(impl):
    """seeded random graphs: order, each closure once, and the path-sum grads"""
    rng = random.Random(6101)
    for trial in range(25):
        size = rng.randint(3, 40)
        spec = []
        for i in range(size):
            k = rng.randint(0, min(i, 4))
            children = rng.sample(range(i), k)
            spec.append((f"n{i}", [(f"n{c}", rng.choice([-2.0, -1.0, 0.5, 1.0, 1.5, 3.0])) for c in children]))
        root = f"n{size - 1 - rng.randint(0, min(2, size - 1))}"
        inputs = f"seeded graph #{trial}: " + "; ".join(f"{n} uses {', '.join(c for c, _ in k)}" for n, k in spec if k)
        graph = Graph(impl, spec)
        graph.nodes[root].backward()
        _check_calls(graph, root, inputs + f"; {root}.backward()")
        oracle = graph.oracle_grads(root, spec)
        for name, _ in spec:
            expect_close(graph.nodes[name].grad, oracle[name], f"{name}.grad after {root}.backward()", inputs, rel=1e-9)


# --- 6.2 ------------------------------------------------------------------------------------------------------------


class _Children(set):
    """A `_prev` that counts how often the graph's children are listed, to stop a search without a visited set."""

    def __init__(self, children, budget):
        super().__init__(children)
        self.budget = budget

    def __iter__(self):
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise CheckFailed("how often backward() lists the nodes' children (_prev)", "a few times per node",
                              "far more: the search keeps revisiting shared nodes",
                              note="mark each node as visited the first time you reach it, and skip it after that")
        return super().__iter__()


def _backward_at_default_limit(root, inputs: str) -> None:
    """Call root.backward() under Python's default recursion limit; report RecursionError as a failed check."""
    old_limit, set_limit = sys.getrecursionlimit(), sys.setrecursionlimit
    requested = []

    def spy(limit):
        requested.append(limit)
        set_limit(limit)

    recursion_error = None
    set_limit(DEFAULT_RECURSION_LIMIT)
    sys.setrecursionlimit = spy
    try:
        root.backward()
    except RecursionError as exc:
        recursion_error = f"RecursionError: {exc}"
    finally:
        sys.setrecursionlimit = set_limit
        set_limit(old_limit)
    expect(recursion_error is None, "root.backward() finishes", "no error", recursion_error, inputs,
           note=f"a recursive depth-first search uses one Python call per level, and Python allows only about "
                f"{DEFAULT_RECURSION_LIMIT} nested calls: do the same search with your own list as a stack")
    raised = [n for n in requested if n > DEFAULT_RECURSION_LIMIT]
    expect(not raised, "sys.setrecursionlimit called by backward()", "never (the default limit stays)",
           f"sys.setrecursionlimit({raised[0]})" if raised else None, inputs,
           note="raising the recursion limit only moves the wall (and can crash Python): use an explicit stack")


def _check_order_by_index(calls: list[int], kids: list[tuple[int, ...]], inputs: str) -> None:
    """Each of the nodes 0..n-1 called once (leaves: at most once), and every node before each of its children."""
    n = len(kids)
    position = [-1] * n
    for i, node in enumerate(calls):
        if position[node] != -1:
            raise CheckFailed(f"number of calls of node {node}'s _backward", 1, "2 or more", inputs)
        position[node] = i
    missing = [node for node in range(n) if position[node] == -1 and kids[node]]  # leaves' closures: optional
    expect(not missing, "nodes whose _backward was never called", "none",
           f"{len(missing)} nodes, e.g. node {missing[0]}" if missing else None, inputs)
    for node in range(n):
        for child in kids[node]:
            if position[node] > position[child] != -1:
                raise CheckFailed(f"order of node {node}'s and node {child}'s _backward (node {child} is a child of "
                                  f"node {node})", f"node {node} first", f"node {child} ran first", inputs,
                                  note="reverse topological order: a node's _backward runs before its children's")


def _build(impl, kids: list[tuple[int, ...]], guard: bool = False):
    """Nodes 0..n-1 (children listed by index, always smaller) whose closures record their index in `calls`."""
    Value, calls, nodes = impl.Value, [], []
    budget = [10 * len(kids) + 100]
    for i, children in enumerate(kids):
        node = Value(0.0, tuple(nodes[c] for c in children), "f")
        if guard:
            node._prev = _Children(node._prev, budget)
        node._backward = partial(calls.append, i)
        nodes.append(node)
    return nodes, calls


CHAIN = 100_000


@pytest.mark.task("6.2", points=3,
                  hint="Replace the recursion by a loop over your own stack: push (node, False), then (node, True).")
def test_chain_100k(impl):
    """a chain 100,000 nodes deep under the default recursion limit: finishes, each closure once, in order"""
    inputs = f"a chain of {CHAIN:,} nodes, each the only child of the next; backward() on the last one"
    with collector_paused():
        kids = [()] + [(i - 1,) for i in range(1, CHAIN)]
        nodes, calls = _build(impl, kids)
        root = nodes[-1]
        del nodes
        _backward_at_default_limit(root, inputs)
        expect_equal(root.grad, 1.0, "root.grad after root.backward()", inputs)
        if calls[:CHAIN - 1] != list(range(CHAIN - 1, 0, -1)) or calls[CHAIN - 1:] not in ([], [0]):
            _check_order_by_index(calls, kids, inputs)
            expect(False, "the _backward calls, in order", "the last node first, back to the first node",
                   f"{len(calls)} calls, starting {calls[:5]}", inputs)
        del root


@pytest.mark.task("6.2", points=2,
                  hint="With an explicit stack, append a node to the order only once all of its children are done.")
def test_deep_ladder(impl):
    """a ladder two nodes wide and 25,000 levels deep (every node used twice): each closure once, in order"""
    levels = 25_000
    inputs = (f"a ladder of {levels:,} levels: nodes 2k and 2k+1 both use nodes 2k-2 and 2k-1; "
              "the root uses the last two; backward() on the root")
    with collector_paused():
        kids = [(), ()]
        for k in range(1, levels):
            kids += [(2 * k - 2, 2 * k - 1), (2 * k - 2, 2 * k - 1)]
        kids.append((len(kids) - 2, len(kids) - 1))
        nodes, calls = _build(impl, kids, guard=True)
        root = nodes[-1]
        del nodes
        _backward_at_default_limit(root, inputs)
        _check_order_by_index(calls, kids, inputs)
        del root


@pytest.mark.hidden
@pytest.mark.task("6.2", points=2,
                  hint="Deep graphs with shortcuts need the same post-order as small ones: a node after its children.")
def test_deep_random_shortcuts(impl):
    """a seeded chain 50,000 deep with random shortcuts: each closure once, in reverse topological order"""
    depth = 50_000
    rng = random.Random(6202)
    inputs = f"a seeded chain of {depth:,} nodes where node i uses node i-1 and, often, one of the 50 nodes before it"
    with collector_paused():
        kids = [()]
        for i in range(1, depth):
            if i > 2 and rng.random() < 0.4:
                kids.append((i - 1, rng.randint(max(0, i - 50), i - 2)))
            else:
                kids.append((i - 1,))
        nodes, calls = _build(impl, kids, guard=True)
        root = nodes[-1]
        del nodes
        _backward_at_default_limit(root, inputs)
        _check_order_by_index(calls, kids, inputs)
        del root
