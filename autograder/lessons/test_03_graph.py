"""Lesson 3 · Seeing the graph (tasks 3.1 and 3.2).

Every graph is described here as plain data (leaves, then operations by label),
built in the worker with the reference `Value` (`impl.Value` is the reference
for these tasks), and the learner's `trace` / `draw_dot` report what they found
by label. The expected nodes and edges come from that description, the expected
numbers from the reference. `draw_dot` is judged through its DOT text
(`.source`): no Graphviz program is needed.
"""

import random

import pytest

from autograder.kit import dot
from autograder.kit.checks import CheckFailed, expect, expect_equal
from autograder.worker.scenario import scenario, sweep, type_name

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def build_graph(impl, spec):
    """The Values of a graph spec `{"leaves": [[label, data]], "ops": [[label, kind, x, y]]}`, by label."""
    nodes = {}
    for label, data in spec["leaves"]:
        nodes[label] = impl.Value(data, label=label)
    for label, kind, x, y in spec["ops"]:
        if kind == "+":
            out = nodes[x] + nodes[y]
        elif kind == "*":
            out = nodes[x] * nodes[y]
        else:
            out = nodes[x].tanh()
        out.label = label
        nodes[label] = out
    return nodes


@scenario
def node_values(impl, spec, grads=None, swept=None):
    """`{label: [data, grad]}` of a graph, after setting `grads` by hand or sweeping back from `swept`."""
    nodes = build_graph(impl, spec)
    for label, grad in (grads or {}).items():
        nodes[label].grad = grad
    if swept:
        sweep(nodes[swept])
    return {label: [v.data, v.grad] for label, v in nodes.items()}


@scenario
def trace_report(impl, spec, root):
    """What `trace(root)` returned, with every Value named by its label."""
    nodes = build_graph(impl, spec)
    names = {id(v): label for label, v in nodes.items()}

    def name(v):
        return names.get(id(v)) or f"{getattr(v, 'label', '?')} (a {type_name(v)} that is not a node of this graph)"

    result = impl.graph.trace(nodes[root])
    if not (isinstance(result, tuple) and len(result) == 2):
        return {"pair": False, "type": type_name(result)}
    found, edges = result
    report = {
        "pair": True,
        "nodes_type": type_name(found),
        "edges_type": type_name(edges),
        "nodes_are_set": isinstance(found, (set, frozenset)),
        "edges_are_set": isinstance(edges, (set, frozenset)),
    }
    if report["nodes_are_set"]:
        report["nodes"] = sorted(name(v) for v in found)
    if report["edges_are_set"]:
        report["edges"] = sorted(
            f"{name(e[0])} -> {name(e[1])}"
            if isinstance(e, tuple) and len(e) == 2
            else f"not a (child, parent) pair: a {type_name(e)}"
            for e in edges
        )
    return report


@scenario
def draw_report(impl, spec, root, grads=None, swept=None):
    """What `draw_dot(root)` returned: its type, its DOT text, and the record-node name of each Value's label."""
    from graphviz import Digraph

    nodes = build_graph(impl, spec)
    for label, grad in (grads or {}).items():
        nodes[label].grad = grad
    if swept:
        sweep(nodes[swept])
    dot = impl.graph.draw_dot(nodes[root])
    report = {
        "type": type_name(dot),
        "is_digraph": isinstance(dot, Digraph),
        "names": {str(id(v)): label for label, v in nodes.items()},
    }
    if report["is_digraph"]:
        report["source"] = dot.source
    return report


# --- graphs, as plain data ------------------------------------------------------------------------------------------

RUNNING = "a = 2, b = -3, c = 10, f = -2; e = a*b; d = e + c; L = d*f"


def running_example(a=2.0, b=-3.0, c=10.0, f=-2.0):
    return {
        "leaves": [["a", a], ["b", b], ["c", c], ["f", f]],
        "ops": [["e", "*", "a", "b"], ["d", "+", "e", "c"], ["L", "*", "d", "f"]],
    }


DOUBLE_USE = {"leaves": [["a", 3.0]], "ops": [["b", "+", "a", "a"]]}  # a is used twice by the same node
REUSE = {"leaves": [["a", -2.0], ["b", 3.0]], "ops": [["ab", "*", "a", "b"], ["out", "+", "ab", "a"]]}
LONE_LEAF = {"leaves": [["x", 1.5]], "ops": []}
OPS = {"+": "+", "*": "*", "t": "tanh"}


def seeded_graph(rng):
    """A random DAG of +, * and tanh over a few leaves; some nodes may be unreachable from the root."""
    leaves = [[f"x{i}", round(rng.uniform(-2, 2), 3)] for i in range(rng.randint(2, 5))]
    pool, ops = [label for label, _ in leaves], []
    for k in range(rng.randint(3, 12)):
        kind = rng.choice("++**t")
        x, y = rng.choice(pool), rng.choice(pool)
        ops.append([f"n{k}", OPS[kind], x, None if kind == "t" else y])
        pool.append(f"n{k}")
    return {"leaves": leaves, "ops": ops}, pool[-1]


def all_labels(spec):
    return [label for label, _ in spec["leaves"]] + [op[0] for op in spec["ops"]]


def children(spec):
    """Each node's children as the spec builds them (`(x, y)`, `(x,)` for tanh, `()` for a leaf)."""
    kids = {label: () for label, _ in spec["leaves"]}
    kids.update({label: (x,) if y is None else (x, y) for label, _, x, y in spec["ops"]})
    return kids


def expected_graph(spec, root):
    """Labels of the nodes reachable from root, and (child, parent) label pairs, from the spec alone."""
    kids, nodes, edges, todo = children(spec), set(), set(), [root]
    while todo:
        v = todo.pop()
        if v in nodes:
            continue
        nodes.add(v)
        for kid in kids[v]:
            edges.add((kid, v))
            todo.append(kid)
    return nodes, edges


# --- task 3.1 -------------------------------------------------------------------------------------------------------


def check_trace(learner, spec, root, inputs):
    got = learner.run(trace_report, spec, root)
    expect(got["pair"], f"type of trace({root})", "a tuple (nodes, edges)", got.get("type"), inputs)
    want_nodes, want_edges = expected_graph(spec, root)
    expect(got["nodes_are_set"], f"type of trace({root})[0] (the nodes)", "set", got["nodes_type"], inputs)
    expect(got["edges_are_set"], f"type of trace({root})[1] (the edges)", "set", got["edges_type"], inputs)
    expect(
        got["nodes"] == sorted(want_nodes),
        f"the nodes of trace({root}), by label",
        sorted(want_nodes),
        got["nodes"],
        inputs,
    )
    want = sorted(f"{c} -> {p}" for c, p in want_edges)
    expect(got["edges"] == want, f"the edges (child -> parent) of trace({root}), by label", want, got["edges"], inputs)


@pytest.mark.task("3.1", points=2, hint="Walk from the root through `_prev`; an edge (child, parent) per child.")
def test_trace_running_example(learner):
    """trace(L) of the running example: 7 nodes and 6 edges"""
    check_trace(learner, running_example(), "L", RUNNING)


@pytest.mark.task("3.1", points=1, hint="A leaf has no children: trace(leaf) is ({leaf}, set()).")
def test_trace_lone_leaf(learner):
    """trace of a lone leaf: the leaf itself and no edges"""
    check_trace(learner, LONE_LEAF, "x", "x = Value(1.5)")


@pytest.mark.task("3.1", points=2, hint="Collect nodes and edges in sets, so that a Value used twice appears once.")
def test_trace_node_used_twice(learner):
    """a node used twice appears once: b = a + a and out = a*b + a"""
    check_trace(learner, DOUBLE_USE, "b", "a = Value(3.0); b = a + a")
    check_trace(learner, REUSE, "out", "a = Value(-2.0), b = Value(3.0); ab = a*b; out = ab + a")


@pytest.mark.task("3.1", points=1, hint="Only what the root was computed from: never walk towards parents.")
def test_trace_starts_from_root(learner):
    """trace(e) of the running example stops at e: d, f and L are not reached"""
    check_trace(learner, running_example(), "e", RUNNING)


@pytest.mark.hidden
@pytest.mark.task("3.1", points=2, hint="Visit every Value reachable through `_prev`, each once, whatever the shape.")
def test_trace_seeded_graphs(learner):
    """seeded random graphs of +, * and tanh with shared nodes"""
    rng = random.Random(3101)
    for n in range(25):
        spec, root = seeded_graph(rng)
        check_trace(learner, spec, root, f"seeded graph #{n} (leaves x0, x1, ...; operations n0, n1, ...)")


# --- task 3.2 -------------------------------------------------------------------------------------------------------


def parse_dot(source):
    """The nodes (name -> attributes) and edges {(tail, head)} of a DOT text as graphviz writes it.

    Read in one pass, in time proportional to the text (`kit.dot`); a text over `dot.MAX_DOT` characters fails the
    check instead of being read."""
    return _read_dot(source)[:2]


def _read_dot(source):
    try:
        drawn = dot.parse(source)
    except dot.TooLong as exc:
        raise CheckFailed("draw_dot(...).source", "a DOT text the check can read", str(exc)) from None
    return drawn.nodes, drawn.edges, drawn.graph


def record_fields(label):
    """'{ a | data 2.0000 | grad 0.0000 }' -> ['a', 'data 2.0000', 'grad 0.0000'] (spacing ignored)."""
    text = label.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1]
    return [" ".join(field.split()) for field in text.split("|")]


def draw(learner, spec, root, inputs, grads=None, swept=None):
    """The learner's drawing: (DOT source, {record-node name: label}), once it is a Digraph with a DOT text."""
    got = learner.run(draw_report, spec, root, grads, swept)
    expect(got["is_digraph"], f"type of draw_dot({root})", "graphviz.Digraph", got["type"], inputs)
    source = got["source"]
    expect(isinstance(source, str), f"draw_dot({root}).source", "the DOT text", source, inputs)
    return source, got["names"]


def check_draw_dot(learner, reference, spec, root, inputs, grads=None):
    """Every reachable Value has its record node and, when made by an op, one op node wired as documented."""
    source, all_names = draw(learner, spec, root, inputs, grads)
    values = reference.run(node_values, spec, grads)
    nodes, edges = parse_dot(source)
    want_nodes, want_edges = expected_graph(spec, root)
    kids, ops = children(spec), {label: op for label, op, _, _ in spec["ops"]}
    records = {name: label for name, label in all_names.items() if label in want_nodes}
    by_label = {label: name for name, label in records.items()}
    names = dict(records)
    for name, label in records.items():
        expect(
            name in nodes,
            f"the record node of {label!r} (named str(id({label})))",
            "present in draw_dot(...).source",
            "missing",
            inputs,
        )

    op_nodes = {}
    for name, label in records.items():
        into = sorted(names.get(tail, tail) for tail, head in edges if head == name)
        what = f"nodes with an edge into the record node of {label!r}"
        if not kids[label]:
            expect_equal(into, [], what, inputs, note=f"{label!r} is a leaf (no _op): it gets no op node")
            continue
        expect(
            len(into) == 1 and into[0] not in names.values(),
            what,
            f"one op node (its op is {ops[label]!r})",
            into,
            inputs,
        )
        op_nodes[label] = into[0]
        expect_equal(nodes[into[0]].get("label"), ops[label], f"label of the op node that makes {label!r}", inputs)

    for name, label in records.items():
        where = f"the record node of {label!r} (named str(id({label})))"
        attrs = nodes[name]
        data, grad = values[label]
        expect_equal(attrs.get("shape"), "record", f"shape of {where}", inputs)
        want = [label, f"data {data:.4f}", f"grad {grad:.4f}"]
        expect_equal(
            record_fields(attrs.get("label", "")),
            want,
            f"fields of the label of {where}",
            inputs,
            note="the label is '{ label | data %.4f | grad %.4f }'",
        )
    expect_equal(
        len(nodes),
        len(records) + len(op_nodes),
        "number of nodes in draw_dot(...).source",
        inputs,
        note=f"one record node per Value ({len(records)}) and one op node per non-leaf Value ({len(op_nodes)})",
    )

    wanted = {(by_label[kid], op_nodes[parent]) for kid, parent in want_edges}
    wanted |= {(op, by_label[label]) for label, op in op_nodes.items()}
    names |= {op: f"op of {label}" for label, op in op_nodes.items()}

    def show(pairs):
        return sorted(f"{names.get(t, t)} -> {names.get(h, h)}" for t, h in pairs)

    expect(
        edges == wanted,
        "the edges of draw_dot(...).source (child -> op of parent, op -> its Value)",
        show(wanted),
        show(edges),
        inputs,
    )


@pytest.mark.task(
    "3.2", points=1, hint="Return a graphviz `Digraph` laid out left to right: graph attribute `rankdir` 'LR'."
)
def test_draw_dot_is_a_left_to_right_digraph(learner):
    """draw_dot returns a graphviz.Digraph laid out left to right (rankdir=LR)"""
    source, _ = draw(learner, running_example(), "L", "the running example")
    expect(
        _read_dot(source)[2].get("rankdir") == "LR",
        "draw_dot(L).source",
        "the graph attribute rankdir=LR",
        source,
        "the running example",
    )


@pytest.mark.task(
    "3.2", points=2, hint="One record node per Value named str(id(v)), label '{ label | data %.4f | grad %.4f }'."
)
def test_draw_dot_running_example(learner, reference):
    """the running example: 7 record nodes, 3 op nodes and their edges"""
    check_draw_dot(learner, reference, running_example(), "L", RUNNING)


@pytest.mark.task(
    "3.2", points=1, hint="Format data and grad with four decimals (a format spec does it): 0.123456 shows as 0.1235."
)
def test_draw_dot_shows_grads_with_four_decimals(learner, reference):
    """record labels show data and grad with four decimals: grad 0.123456 is 'grad 0.1235'"""
    spec = running_example()
    grads = {"L": 1.0, "d": -2.0, "f": 4.0, "e": 0.123456, "c": -2.5, "a": 6.00004, "b": -1234.56789}
    source, names = draw(learner, spec, "L", "the running example with grads set by hand", grads)
    values = reference.run(node_values, spec, grads)
    by_label = {label: name for name, label in names.items()}
    nodes, _ = parse_dot(source)
    for label in all_labels(spec):
        data, grad = values[label]
        fields = record_fields(nodes.get(by_label[label], {}).get("label", ""))
        expect_equal(
            fields[1:],
            [f"data {data:.4f}", f"grad {grad:.4f}"],
            f"data and grad fields of the record node of {label!r}",
            f"{label}.data = {data!r}, {label}.grad = {grad!r}",
        )


@pytest.mark.task(
    "3.2", points=2, hint="A Value with an `_op` gets one op node; each child links to that op node, not to the Value."
)
def test_draw_dot_node_used_twice_and_leaf(learner, reference):
    """b = a + a, out = a*b + a and a lone leaf are drawn with the right nodes and edges"""
    check_draw_dot(learner, reference, DOUBLE_USE, "b", "a = Value(3.0); b = a + a")
    check_draw_dot(learner, reference, REUSE, "out", "a = Value(-2.0), b = Value(3.0); ab = a*b; out = ab + a")
    check_draw_dot(learner, reference, LONE_LEAF, "x", "x = Value(1.5), a lone leaf")


@pytest.mark.hidden
@pytest.mark.task(
    "3.2", points=2, hint="Every Value gets its record node and every op its own node, whatever the graph."
)
def test_draw_dot_seeded_graphs(learner, reference):
    """seeded random graphs of +, * and tanh with random grads"""
    rng = random.Random(3202)
    for n in range(15):
        spec, root = seeded_graph(rng)
        grads = {label: rng.uniform(-50, 50) for label in all_labels(spec)}
        check_draw_dot(
            learner, reference, spec, root, f"seeded graph #{n} (leaves x0, x1, ...; operations n0, n1, ...)", grads
        )


@pytest.mark.hidden
@pytest.mark.task(
    "3.2", points=1, hint="Draw from the Values as they are now: read data and grad when draw_dot is called."
)
def test_draw_dot_reads_current_values(learner, reference):
    """after the reference backward, the drawing shows the new grads"""
    rng = random.Random(3203)
    leaves = {k: round(rng.uniform(-5, 5), 3) for k in "abcf"}
    spec = running_example(**leaves)
    # the grader's own sweep stands in for backward(): the drawing must not depend on task 6.1
    source, names = draw(learner, spec, "L", f"running example with {leaves}", swept="L")
    values = reference.run(node_values, spec, swept="L")
    by_label = {label: name for name, label in names.items()}
    nodes, _ = parse_dot(source)
    for name in all_labels(spec):
        data, grad = values[name]
        fields = record_fields(nodes.get(by_label[name], {}).get("label", ""))
        expect_equal(
            fields,
            [name, f"data {data:.4f}", f"grad {grad:.4f}"],
            f"fields of the record node of {name!r} after the backward sweep from L",
            f"running example with {leaves}",
        )
