"""Lesson 3 · Seeing the graph (tasks 3.1 and 3.2).

The graphs are built with the reference `Value` (`impl.Value` is the reference
for these tasks). `draw_dot` is checked through its DOT text (`.source`): no
Graphviz program is needed.
"""

import random
import re

import pytest

from autograder.kit.checks import expect, expect_equal
from autograder.grading.loading import reference

# ------------------------------------------------------------------------------------------------- graph builders


class Built:
    """A graph built by the test, with the children of every node recorded by the test itself."""

    def __init__(self, Value):
        self.Value = Value
        self.children: dict = {}
        self.order: list = []

    def leaf(self, data, label):
        v = self.Value(data, label=label)
        self.children[v] = ()
        self.order.append(v)
        return v

    def op(self, out, label, *kids):
        out.label = label
        self.children[out] = kids
        self.order.append(out)
        return out

    def expected(self, root):
        """Nodes reachable from root, and (child, parent) edges, from the test's own bookkeeping."""
        nodes, edges, todo = set(), set(), [root]
        while todo:
            v = todo.pop()
            if v in nodes:
                continue
            nodes.add(v)
            for kid in self.children[v]:
                edges.add((kid, v))
                todo.append(kid)
        return nodes, edges


def running_example(Value):
    g = Built(Value)
    a, b, c, f = g.leaf(2.0, "a"), g.leaf(-3.0, "b"), g.leaf(10.0, "c"), g.leaf(-2.0, "f")
    e = g.op(a * b, "e", a, b)
    d = g.op(e + c, "d", e, c)
    L = g.op(d * f, "L", d, f)
    return g, L


def double_use(Value):
    """b = a + a: a is used twice by the same node."""
    g = Built(Value)
    a = g.leaf(3.0, "a")
    return g, g.op(a + a, "b", a, a)


def reuse(Value):
    """out = a*b + a: a is used by two different nodes."""
    g = Built(Value)
    a, b = g.leaf(-2.0, "a"), g.leaf(3.0, "b")
    ab = g.op(a * b, "ab", a, b)
    return g, g.op(ab + a, "out", ab, a)


def lone_leaf(Value):
    g = Built(Value)
    return g, g.leaf(1.5, "x")


def seeded_graph(Value, rng):
    """A random DAG of +, * and tanh over a few leaves; some nodes may be unreachable from the root."""
    g = Built(Value)
    pool = [g.leaf(round(rng.uniform(-2, 2), 3), f"x{i}") for i in range(rng.randint(2, 5))]
    for k in range(rng.randint(3, 12)):
        kind = rng.choice("++**t")
        x, y = rng.choice(pool), rng.choice(pool)
        if kind == "+":
            out = g.op(x + y, f"n{k}", x, y)
        elif kind == "*":
            out = g.op(x * y, f"n{k}", x, y)
        else:
            out = g.op(x.tanh(), f"n{k}", x)
        pool.append(out)
    return g, pool[-1]


def show_nodes(nodes):
    try:
        return sorted(getattr(v, "label", repr(v)) for v in nodes)
    except TypeError:
        return nodes


def show_edges(edges):
    try:
        return sorted(f"{getattr(c, 'label', c)} -> {getattr(p, 'label', p)}" for c, p in edges)
    except (TypeError, ValueError):
        return edges


# ----------------------------------------------------------------------------------------------------- task 3.1

def check_trace(impl, built, root, inputs):
    result = impl.graph.trace(root)
    expect(isinstance(result, tuple) and len(result) == 2, f"type of trace({root.label})",
           "a tuple (nodes, edges)", type(result).__name__, inputs)
    nodes, edges = result
    want_nodes, want_edges = built.expected(root)
    expect(isinstance(nodes, (set, frozenset)), f"type of trace({root.label})[0] (the nodes)", "set",
           type(nodes).__name__, inputs)
    expect(isinstance(edges, (set, frozenset)), f"type of trace({root.label})[1] (the edges)", "set",
           type(edges).__name__, inputs)
    expect(nodes == want_nodes, f"the nodes of trace({root.label}), by label", show_nodes(want_nodes),
           show_nodes(nodes), inputs)
    expect(edges == want_edges, f"the edges (child -> parent) of trace({root.label}), by label",
           show_edges(want_edges), show_edges(edges), inputs)


@pytest.mark.task("3.1", points=2, hint="Walk from the root through `_prev`; an edge (child, parent) per child.")
def test_trace_running_example(impl):
    """trace(L) of the running example: 7 nodes and 6 edges"""
    built, L = running_example(impl.Value)
    check_trace(impl, built, L, "a = 2, b = -3, c = 10, f = -2; e = a*b; d = e + c; L = d*f")


@pytest.mark.task("3.1", points=1, hint="A leaf has no children: trace(leaf) is ({leaf}, set()).")
def test_trace_lone_leaf(impl):
    """trace of a lone leaf: the leaf itself and no edges"""
    built, x = lone_leaf(impl.Value)
    check_trace(impl, built, x, "x = Value(1.5)")


@pytest.mark.task("3.1", points=2, hint="Collect nodes and edges in sets, so that a Value used twice appears once.")
def test_trace_node_used_twice(impl):
    """a node used twice appears once: b = a + a and out = a*b + a"""
    built, b = double_use(impl.Value)
    check_trace(impl, built, b, "a = Value(3.0); b = a + a")
    built, out = reuse(impl.Value)
    check_trace(impl, built, out, "a = Value(-2.0), b = Value(3.0); ab = a*b; out = ab + a")


@pytest.mark.task("3.1", points=1, hint="Only what the root was computed from: never walk towards parents.")
def test_trace_starts_from_root(impl):
    """trace(e) of the running example stops at e: d, f and L are not reached"""
    built, L = running_example(impl.Value)
    e = next(v for v in built.order if v.label == "e")
    check_trace(impl, built, e, "a = 2, b = -3, c = 10, f = -2; e = a*b; d = e + c; L = d*f")


@pytest.mark.hidden
@pytest.mark.task("3.1", points=2, hint="Visit every Value reachable through `_prev`, each once, whatever the shape.")
def test_trace_seeded_graphs(impl):
    """seeded random graphs of +, * and tanh with shared nodes"""
    rng = random.Random(3101)
    for n in range(25):
        built, root = seeded_graph(impl.Value, rng)
        check_trace(impl, built, root, f"seeded graph #{n} (leaves x0, x1, ...; operations n0, n1, ...)")


# ----------------------------------------------------------------------------------------------------- task 3.2

_ID = r'"(?:[^"\\]|\\.)*"|-?[\w.]+'
_EDGE = re.compile(rf"^\s*({_ID})\s*->\s*({_ID})\s*(?:\[(.*)\])?\s*;?\s*$")
_NODE = re.compile(rf"^\s*({_ID})\s*(?:\[(.*)\])?\s*;?\s*$")
_ATTR = re.compile(rf"({_ID})\s*=\s*({_ID})")
_KEYWORDS = {"graph", "node", "edge", "digraph", "subgraph", "strict"}


def _unquote(text):
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    return text


def parse_dot(source):
    """The nodes (name -> attributes) and edges {(tail, head)} of a DOT text as graphviz writes it."""
    nodes, edges = {}, set()
    for line in source.splitlines():
        if match := _EDGE.match(line):
            tail, head = _unquote(match[1]), _unquote(match[2])
            edges.add((tail, head))
            nodes.setdefault(tail, {})
            nodes.setdefault(head, {})
        elif (match := _NODE.match(line)) and _unquote(match[1]) not in _KEYWORDS:
            attrs = nodes.setdefault(_unquote(match[1]), {})
            attrs.update((_unquote(k), _unquote(v)) for k, v in _ATTR.findall(match[2] or ""))
    return nodes, edges


def record_fields(label):
    """'{ a | data 2.0000 | grad 0.0000 }' -> ['a', 'data 2.0000', 'grad 0.0000'] (spacing ignored)."""
    text = label.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return [" ".join(field.split()) for field in text.split("|")]


def draw(impl, root, inputs):
    from graphviz import Digraph

    dot = impl.graph.draw_dot(root)
    expect(isinstance(dot, Digraph), f"type of draw_dot({root.label})", "graphviz.Digraph", type(dot).__name__,
           inputs)
    source = dot.source
    expect(isinstance(source, str), f"draw_dot({root.label}).source", "the DOT text", source, inputs)
    return source


def check_draw_dot(impl, built, root, inputs):
    """Every reachable Value has its record node and, when made by an op, one op node wired as documented."""
    source = draw(impl, root, inputs)
    nodes, edges = parse_dot(source)
    want_nodes, want_edges = built.expected(root)
    records = {str(id(v)): v for v in want_nodes}
    names = {name: v.label for name, v in records.items()}
    for name, v in records.items():
        expect(name in nodes, f"the record node of {v.label!r} (named str(id({v.label})))",
               "present in draw_dot(...).source", "missing", inputs)

    op_nodes = {}
    for name, v in records.items():
        into = sorted(names.get(tail, tail) for tail, head in edges if head == name)
        what = f"nodes with an edge into the record node of {v.label!r}"
        if not built.children[v]:
            expect_equal(into, [], what, inputs, note=f"{v.label!r} is a leaf (no _op): it gets no op node")
            continue
        expect(len(into) == 1 and into[0] not in names.values(), what, f"one op node (its op is {v._op!r})",
               into, inputs)
        op_nodes[v] = into[0]
        expect_equal(nodes[into[0]].get("label"), v._op, f"label of the op node that makes {v.label!r}", inputs)

    for name, v in records.items():
        where = f"the record node of {v.label!r} (named str(id({v.label})))"
        attrs = nodes[name]
        expect_equal(attrs.get("shape"), "record", f"shape of {where}", inputs)
        want = [v.label, f"data {v.data:.4f}", f"grad {v.grad:.4f}"]
        expect_equal(record_fields(attrs.get("label", "")), want, f"fields of the label of {where}", inputs,
                     note="the label is '{ label | data %.4f | grad %.4f }'")
    expect_equal(len(nodes), len(records) + len(op_nodes), "number of nodes in draw_dot(...).source", inputs,
                 note=f"one record node per Value ({len(records)}) and one op node per non-leaf Value"
                      f" ({len(op_nodes)})")

    wanted = {(str(id(kid)), op_nodes[parent]) for kid, parent in want_edges}
    wanted |= {(op, str(id(v))) for v, op in op_nodes.items()}
    names |= {op: f"op of {v.label}" for v, op in op_nodes.items()}
    show = lambda pairs: sorted(f"{names.get(t, t)} -> {names.get(h, h)}" for t, h in pairs)  # noqa: E731
    expect(edges == wanted, "the edges of draw_dot(...).source (child -> op of parent, op -> its Value)",
           show(wanted), show(edges), inputs)


@pytest.mark.task("3.2", points=1, hint="Build `Digraph(graph_attr={'rankdir': 'LR'})` and return it.")
def test_draw_dot_is_a_left_to_right_digraph(impl):
    """draw_dot returns a graphviz.Digraph laid out left to right (rankdir=LR)"""
    _, L = running_example(impl.Value)
    source = draw(impl, L, "the running example")
    expect(re.search(r'rankdir\s*=\s*"?LR"?', source) is not None, "draw_dot(L).source", "contains rankdir=LR",
           source, "the running example")


@pytest.mark.task("3.2", points=2,
                   hint="One record node per Value named str(id(v)), label '{ label | data %.4f | grad %.4f }'.")
def test_draw_dot_running_example(impl):
    """the running example: 7 record nodes, 3 op nodes and their edges"""
    built, L = running_example(impl.Value)
    check_draw_dot(impl, built, L, "a = 2, b = -3, c = 10, f = -2; e = a*b; d = e + c; L = d*f")


@pytest.mark.task("3.2", points=1, hint="Format data and grad with four decimals: f'{v.grad:.4f}'.")
def test_draw_dot_shows_grads_with_four_decimals(impl):
    """record labels show data and grad with four decimals: grad 0.123456 is 'grad 0.1235'"""
    built, L = running_example(impl.Value)
    grads = {"L": 1.0, "d": -2.0, "f": 4.0, "e": 0.123456, "c": -2.5, "a": 6.00004, "b": -1234.56789}
    for v in built.order:
        v.grad = grads[v.label]
    source = draw(impl, L, "the running example with grads set by hand")
    nodes, _ = parse_dot(source)
    for v in built.order:
        label = nodes.get(str(id(v)), {}).get("label", "")
        expect_equal(record_fields(label)[1:], [f"data {v.data:.4f}", f"grad {v.grad:.4f}"],
                     f"data and grad fields of the record node of {v.label!r}",
                     f"{v.label}.data = {v.data!r}, {v.label}.grad = {v.grad!r}")


@pytest.mark.task("3.2", points=2,
                   hint="A Value with an `_op` gets one op node; each child links to that op node, not to the Value.")
def test_draw_dot_node_used_twice_and_leaf(impl):
    """b = a + a, out = a*b + a and a lone leaf are drawn with the right nodes and edges"""
    built, b = double_use(impl.Value)
    check_draw_dot(impl, built, b, "a = Value(3.0); b = a + a")
    built, out = reuse(impl.Value)
    check_draw_dot(impl, built, out, "a = Value(-2.0), b = Value(3.0); ab = a*b; out = ab + a")
    built, x = lone_leaf(impl.Value)
    check_draw_dot(impl, built, x, "x = Value(1.5), a lone leaf")


@pytest.mark.hidden
@pytest.mark.task("3.2", points=2,
                   hint="Every Value gets its record node and every op its own node, whatever the graph.")
def test_draw_dot_seeded_graphs(impl):
    """seeded random graphs of +, * and tanh with random grads"""
    rng = random.Random(3202)
    for n in range(15):
        built, root = seeded_graph(impl.Value, rng)
        for v in built.order:
            v.grad = rng.uniform(-50, 50)
        check_draw_dot(impl, built, root, f"seeded graph #{n} (leaves x0, x1, ...; operations n0, n1, ...)")


@pytest.mark.hidden
@pytest.mark.task("3.2", points=1,
                   hint="Draw from the Values as they are now: read data and grad when draw_dot is called.")
def test_draw_dot_reads_current_values(impl):
    """after the reference backward, the drawing shows the new grads"""
    ref = reference("backprop_by_hand")
    rng = random.Random(3203)
    leaves = {k: round(rng.uniform(-5, 5), 3) for k in "abcf"}
    g = ref.running_example(**leaves)
    g["L"].backward()
    nodes, _ = parse_dot(draw(impl, g["L"], f"running example with {leaves}"))
    for name, v in g.items():
        label = nodes.get(str(id(v)), {}).get("label", "")
        fields = record_fields(label)
        expect_equal(fields, [name, f"data {v.data:.4f}", f"grad {v.grad:.4f}"],
                     f"fields of the record node of {name!r} after L.backward()", f"running example with {leaves}")
