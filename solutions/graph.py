"""Seeing the graph: list and draw what a Value was computed from (lesson 3).

Tasks in this file (the list is written by `python -m autograder build`):

- 3.1 trace
- 3.2 draw_dot
"""

from __future__ import annotations

from graphviz import Digraph

from .engine import Value


def trace(root: Value) -> tuple[set[Value], set[tuple[Value, Value]]]:
    """Return `(nodes, edges)`: every Value reachable from `root`, and each (child,
    parent) use (task 3.1).

    An edge `(a, b)` means `a` is one of the Values `b` was computed from
    (`a in b._prev`). A Value used twice appears once.
    """
    ### BEGIN SOLUTION (task 3.1)
    nodes, edges = set(), set()
    stack = [root]
    while stack:
        v = stack.pop()
        if v not in nodes:
            nodes.add(v)
            for child in v._prev:
                edges.add((child, v))
                stack.append(child)
    return nodes, edges
    ### END SOLUTION


def draw_dot(root: Value) -> Digraph:
    """Return a `graphviz.Digraph` of the graph behind `root`, left to right
    (task 3.2).

    Left to right is the graph attribute `rankdir='LR'`. One `shape='record'`
    node per Value, named `str(id(value))`, with the label
    `{ label | data 4.0000 | grad 0.0000 }`: four decimals, and the braces lay
    the three fields out side by side. Each Value made by an operation also gets
    a small node named `str(id(value)) + value._op`, showing the op, with an
    edge into the Value; each child has an edge into that op node.
    """
    ### BEGIN SOLUTION (task 3.2)
    dot = Digraph(format="svg", graph_attr={"rankdir": "LR"})
    nodes, edges = trace(root)
    for n in nodes:
        uid = str(id(n))
        dot.node(name=uid, label=f"{{ {n.label} | data {n.data:.4f} | grad {n.grad:.4f} }}", shape="record")
        if n._op:
            dot.node(name=uid + n._op, label=n._op)
            dot.edge(uid + n._op, uid)
    for child, parent in edges:
        dot.edge(str(id(child)), str(id(parent)) + parent._op)
    return dot
    ### END SOLUTION
