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
    # TODO(task 3.1): trace: see the docstring.
    raise NotImplementedError("task 3.1: trace")


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
    # TODO(task 3.2): draw_dot: see the docstring.
    raise NotImplementedError("task 3.2: draw_dot")
