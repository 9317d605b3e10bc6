"""Lesson 7 · The accumulation bug (task 7.1).

Task 7.1 owns the `_backward` closures of `__add__`, `__mul__` and `tanh`
together: every check here reuses a Value, so a closure that assigns (`=`)
instead of adding (`+=`) loses a contribution. The sweeps call each node's
`_backward` directly in a reverse topological order written by the test;
`backward()` (task 6.1) is never used.
"""

import math
import random

import pytest

from autograder.kit.checks import expect_close, finite_difference
from autograder.kit.testkit import expect_value



LOCAL_RULES = {
    # op: (task, how to build from a and b, a, b, out.grad, expected (a.grad, b.grad))
    "+": ("5.2", lambda a, b: a + b, 1.5, -0.5, 2.0, (2.0, 2.0)),
    "*": ("5.3", lambda a, b: a * b, 1.5, -0.5, 2.0, (-1.0, 3.0)),
    "tanh": ("5.1", lambda a, b: a.tanh(), 0.4, 0.0, 2.0, ((1 - math.tanh(0.4) ** 2) * 2.0, 0.0)),
}


def _local_rules_first(impl, *ops: str) -> None:
    """Check each op's closure once without reuse, so a wrong local rule is reported as such (tasks 5.1 to 5.3)."""
    for op in ops:
        task, build, x, y, g, (ga, gb) = LOCAL_RULES[op]
        text = "c = a.tanh()" if op == "tanh" else f"c = a {op} b"
        inputs = f"a = Value({x}), b = Value({y}), {text}, c.grad = {g}, then c._backward() (no reuse)"
        a, b = impl.Value(x), impl.Value(y)
        c = build(a, b)
        expect_value(c, impl.Value, text[4:], inputs)
        c.grad = g
        c._backward()
        note = (f"this is the local rule of the {op} closure (task {task}), checked before any reuse: "
                f"get task {task} passing first")
        expect_close(a.grad, ga, "a.grad", inputs, note=note)
        expect_close(b.grad, gb, "b.grad", inputs, note=note)


def _sweep(root, order) -> None:
    """What backward() does, with the order given by the test: seed the root, then each closure once."""
    root.grad = 1.0
    for node in order:
        node._backward()


@pytest.mark.task("7.1", points=2, hint="b = a + a: both inputs of b are a, so the + closure must ADD to a.grad twice.")
def test_add_reuse(impl):
    """b = a + a gives a.grad == 2, not 1"""
    _local_rules_first(impl, "+")
    inputs = "a = Value(3.0), b = a + a, b.grad = 1.0, then b._backward()"
    a = impl.Value(3.0)
    b = a + a
    expect_value(b, impl.Value, "a + a", inputs)
    _sweep(b, [b])
    expect_close(a.grad, 2.0, "a.grad", inputs, note="both of b's inputs are a: its two contributions add up")


@pytest.mark.task("7.1", points=2, hint="b = a * a: the * closure adds a.data * out.grad to a.grad twice, giving 2a.")
def test_mul_reuse(impl):
    """b = a * a gives a.grad == 2a"""
    _local_rules_first(impl, "*")
    for x in (-1.5, 4.0):
        inputs = f"a = Value({x}), b = a * a, b.grad = 1.0, then b._backward()"
        a = impl.Value(x)
        b = a * a
        expect_value(b, impl.Value, "a * a", inputs)
        _sweep(b, [b])
        expect_close(a.grad, 2 * x, "a.grad (d(a*a)/da = 2a)", inputs)


@pytest.mark.task("7.1", points=2,
                  hint="a feeds both d = a*b and e = a+b: df/da = e*b + d. Every closure must use +=, never =.")
def test_lesson_example(impl):
    """a = -2, b = 3, d = a*b, e = a+b, f = d*e: df/da = -3, df/db = -8 (either sweep order)"""
    _local_rules_first(impl, "+", "*")
    for order_name in ("f, d, e", "f, e, d"):
        inputs = f"a = -2, b = 3, d = a*b, e = a + b, f = d*e; f.grad = 1.0, then _backward() of {order_name}"
        a, b = impl.Value(-2.0), impl.Value(3.0)
        d = a * b
        e = a + b
        expect_value(d, impl.Value, "a * b", inputs)
        expect_value(e, impl.Value, "a + b", inputs)
        f = d * e
        expect_value(f, impl.Value, "d * e", inputs)
        expect_close(f.data, -6.0, "f.data", inputs)
        _sweep(f, [f, d, e] if order_name == "f, d, e" else [f, e, d])
        expect_close(d.grad, 1.0, "d.grad (= e)", inputs)
        expect_close(e.grad, -6.0, "e.grad (= d)", inputs)
        expect_close(a.grad, -3.0, "a.grad (df/da = e*b + d)", inputs)
        expect_close(b.grad, -8.0, "b.grad (df/db = e*a + d)", inputs)


@pytest.mark.task("7.1", points=2,
                  hint="The tanh closure too: self.grad += (1 - t**2) * out.grad, so a reused input keeps both parts.")
def test_tanh_reuse(impl):
    """tanh outputs and inputs used twice: t + t, a.tanh() + a, a.tanh() * a.tanh()"""
    _local_rules_first(impl, "tanh", "+", "*")
    x = 0.6
    t_val = math.tanh(x)
    local = 1 - t_val**2

    inputs = f"a = Value({x}), t = a.tanh(), s = t + t; s.grad = 1.0, then _backward() of s, t"
    a = impl.Value(x)
    t = a.tanh()
    expect_value(t, impl.Value, "a.tanh()", inputs)
    s = t + t
    _sweep(s, [s, t])
    expect_close(t.grad, 2.0, "t.grad", inputs)
    expect_close(a.grad, 2 * local, "a.grad (= 2 * (1 - t**2))", inputs)

    inputs = f"a = Value({x}), t = a.tanh(), s = t + a; s.grad = 1.0, then _backward() of s, t"
    a = impl.Value(x)
    t = a.tanh()
    s = t + a
    expect_value(s, impl.Value, "t + a", inputs)
    _sweep(s, [s, t])
    expect_close(a.grad, 1 + local, "a.grad (= 1 + (1 - t**2))", inputs,
                 note="a gets 1 from the + and 1 - t**2 through the tanh: the tanh closure must add its part")

    inputs = f"a = Value({x}), t1 = a.tanh(), t2 = a.tanh(), p = t1 * t2; p.grad = 1.0, then _backward() of p, t1, t2"
    a = impl.Value(x)
    t1, t2 = a.tanh(), a.tanh()
    p = t1 * t2
    expect_value(p, impl.Value, "t1 * t2", inputs)
    _sweep(p, [p, t1, t2])
    expect_close(a.grad, 2 * t_val * local, "a.grad (= 2 * t * (1 - t**2))", inputs)


def _deep(x: float, y: float):
    """The deep-reuse expression on plain floats, for the grader's finite differences."""
    p = x * y
    q = p + x
    r = math.tanh(q)
    s = r * x
    u = s + p
    return u * y + q


@pytest.mark.task("7.1", points=2,
                  hint="A Value used at several depths collects a contribution from each use: += everywhere.")
def test_reuse_deep_in_graph(impl):
    """x and y reused at several depths: the grads match finite differences"""
    _local_rules_first(impl, "+", "*", "tanh")
    x0, y0 = 0.7, -1.3
    inputs = (f"x = {x0}, y = {y0}; p = x*y; q = p + x; r = q.tanh(); s = r*x; u = s + p; o = u*y + q; "
              "o.grad = 1.0, then _backward() of o, u*y, u, s, r, q, p")
    x, y = impl.Value(x0), impl.Value(y0)
    p = x * y
    q = p + x
    r = q.tanh()
    s = r * x
    u = s + p
    uy = u * y
    o = uy + q
    built = ((p, "x*y"), (q, "p + x"), (r, "q.tanh()"), (s, "r*x"), (u, "s + p"), (uy, "u*y"), (o, "u*y + q"))
    for node, what in built:
        expect_value(node, impl.Value, what, inputs)
    expect_close(o.data, _deep(x0, y0), "o.data", inputs)
    _sweep(o, [o, uy, u, s, r, q, p])
    expect_close(x.grad, finite_difference(lambda v: _deep(v, y0), x0), "x.grad (do/dx)", inputs, rel=1e-6)
    expect_close(y.grad, finite_difference(lambda v: _deep(x0, v), y0), "y.grad (do/dy)", inputs, rel=1e-6)


@pytest.mark.task("7.1", points=2,
                  hint="A second sweep without zeroing adds the same amounts again: only += makes the grads double.")
def test_second_sweep_doubles(impl):
    """sweeping twice without zeroing doubles the leaves' grads (f = a*b, s = a + b, t = a.tanh())"""
    _local_rules_first(impl, "*", "+", "tanh")
    x, y = 2.0, -3.0
    cases = (
        ("f = a * b", lambda a, b: a * b, (y, x)),
        ("s = a + b", lambda a, b: a + b, (1.0, 1.0)),
        ("t = a.tanh()", lambda a, b: a.tanh(), (1 - math.tanh(x) ** 2, 0.0)),
    )
    for text, build, (ga, gb) in cases:
        inputs = f"a = Value({x}), b = Value({y}), {text}; twice: {text.split()[0]}.grad = 1.0, then its _backward()"
        a, b = impl.Value(x), impl.Value(y)
        out = build(a, b)
        expect_value(out, impl.Value, text.split(" = ")[1], inputs)
        _sweep(out, [out])
        _sweep(out, [out])
        expect_close(a.grad, 2 * ga, "a.grad after two sweeps", inputs,
                     note="backward() twice without zero_grad doubles the grads: this is why training zeroes them")
        expect_close(b.grad, 2 * gb, "b.grad after two sweeps", inputs)


def _random_program(rng: random.Random, leaves: int, ops: int):
    """A seeded expression with much reuse: (op, i, j) steps over earlier nodes, the leaves first."""
    values = [rng.uniform(-1.5, 1.5) for _ in range(leaves)]
    steps = []
    for k in range(ops):
        n = leaves + k
        op = rng.choice(["+", "*", "tanh"])
        # favour recent nodes, and sometimes use the same node twice
        i = rng.randint(max(0, n - 6), n - 1)
        j = i if rng.random() < 0.25 else rng.randint(0, n - 1)
        steps.append((op, i, j))
    return values, steps


def _dual(values, steps, leaf: int):
    """Forward-mode derivative of the program's last node with respect to one leaf (the grader's oracle)."""
    nodes = [(v, 1.0 if i == leaf else 0.0) for i, v in enumerate(values)]
    for op, i, j in steps:
        (a, da), (b, db) = nodes[i], nodes[j]
        if op == "+":
            nodes.append((a + b, da + db))
        elif op == "*":
            nodes.append((a * b, da * b + a * db))
        else:
            t = math.tanh(a)
            nodes.append((t, (1 - t * t) * da))
    return nodes[-1]


@pytest.mark.hidden
@pytest.mark.task("7.1", points=2, hint="Reuse anywhere in a graph: every closure (+, * and tanh) must add with +=.")
def test_random_reuse(impl):
    """seeded random expressions with heavy reuse: the leaves' grads match forward-mode derivatives"""
    _local_rules_first(impl, "+", "*", "tanh")
    rng = random.Random(7101)
    for trial in range(30):
        values, steps = _random_program(rng, rng.randint(1, 3), rng.randint(3, 14))
        text = "; ".join(f"n{len(values) + k} = " + (f"n{i}.tanh()" if op == "tanh" else f"n{i} {op} n{j}")
                         for k, (op, i, j) in enumerate(steps))
        inputs = (f"seeded expression #{trial}: leaves {', '.join(f'n{i} = {v!r}' for i, v in enumerate(values))}; "
                  f"{text}; the last node's grad = 1.0, then the _backward of every node it depends on, "
                  "from the last to the first")
        nodes = [impl.Value(v) for v in values]
        for op, i, j in steps:
            out = nodes[i].tanh() if op == "tanh" else (nodes[i] + nodes[j] if op == "+" else nodes[i] * nodes[j])
            expect_value(out, impl.Value, f"an operation {op!r}", inputs)
            nodes.append(out)
        used, last = set(), len(nodes) - 1
        for k in range(last, len(values) - 1, -1):  # the nodes the last one depends on, by the program's own steps
            if k == last or k in used:
                used.add(k)
                op, i, j = steps[k - len(values)]
                used.update((i,) if op == "tanh" else (i, j))
        _sweep(nodes[-1], [nodes[k] for k in range(last, len(values) - 1, -1) if k in used])
        for leaf in range(len(values)):
            value, derivative = _dual(values, steps, leaf)
            expect_close(nodes[leaf].grad, derivative, f"n{leaf}.grad", inputs, rel=1e-9, abs_tol=1e-12)
