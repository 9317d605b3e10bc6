"""Lesson 7 · The accumulation bug (task 7.1).

Task 7.1 owns the `_backward` closures of `__add__`, `__mul__` and `tanh`
together: every check here reuses a Value, so a closure that assigns (`=`)
instead of adding (`+=`) loses a contribution. The scenarios build small
programs with the learner's operations and call each node's `_backward`
directly, in a reverse topological order the judgement chooses; `backward()`
(task 6.1) is never used. Expected grads come from hand values, the grader's
finite differences and forward-mode derivatives on plain floats; when a program's
grads are wrong, the message names the first wrong node against the reference's
graph of the same program (`grads_explained`).
"""

import math
import random
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from autograder.kit.checks import CheckFailed, WaitsFor, close, expect_close, finite_difference
from autograder.kit.graph_checks import grads_explained
from autograder.worker.scenario import data_of, grad_of, graph_report, scenario, type_name

# op: (task of its local rule, a, b, out.grad, expected (a.grad, b.grad))
LOCAL_RULES = {
    "+": ("5.2", 1.5, -0.5, 2.0, (2.0, 2.0)),
    "*": ("5.3", 1.5, -0.5, 2.0, (-1.0, 3.0)),
    "tanh": ("5.1", 0.4, 0.0, 2.0, ((1 - math.tanh(0.4) ** 2) * 2.0, 0.0)),
}

# --- scenarios: run in the worker, over the learner's code ----------------------------------------------------------


@scenario
def local_rule(impl, op, x, y, g):
    """c = a op b (or a.tanh()) with no reuse; c.grad = g, then c._backward(): what a and b received."""
    a, b = impl.Value(x), impl.Value(y)
    c = a.tanh() if op == "tanh" else (a + b if op == "+" else a * b)
    if not isinstance(c, impl.Value):
        return {"type": type_name(c)}
    c.grad = g
    c._backward()
    return {"type": "Value", "a": grad_of(a), "b": grad_of(b)}


@scenario
def run_program(impl, leaves, steps, order, sweeps=1):
    """Leaves {name: number}, then steps [name, op, left, right] ('+', '*' or 'tanh', which ignores right).

    Then, `sweeps` times: the grad of `order[0]` (the root) is set to 1.0 and
    each node of `order` has its `_backward` called once, in that order. Reports
    every node's data and grad and the root's graph (`graph_report`), or the
    first step that did not return a Value.
    """
    nodes = {name: impl.Value(x) for name, x in leaves.items()}
    for name, op, left, right in steps:
        a, b = nodes[left], nodes[right]
        out = a.tanh() if op == "tanh" else (a + b if op == "+" else a * b)
        if not isinstance(out, impl.Value):
            return {"not_a_value": name, "type": type_name(out)}
        nodes[name] = out
    for _ in range(sweeps):
        nodes[order[0]].grad = 1.0
        for name in order:
            nodes[name]._backward()
    return {
        "data": {name: data_of(v) for name, v in nodes.items()},
        "grads": {name: grad_of(v) for name, v in nodes.items()},
        "graph": graph_report(nodes[order[0]], nodes),
    }


# --- judgements: run here, on the trusted side ----------------------------------------------------------------------


def _local_rules_first(learner, *ops: str) -> None:
    """Check each op's closure once without reuse, so a wrong local rule is reported as such (tasks 5.1 to 5.3)."""
    for op in ops:
        task, x, y, g, (ga, gb) = LOCAL_RULES[op]
        text = "c = a.tanh()" if op == "tanh" else f"c = a {op} b"
        inputs = f"a = Value({x}), b = Value({y}), {text}, c.grad = {g}, then c._backward() (no reuse)"
        got = learner.run(local_rule, op, x, y, g)
        if got["type"] != "Value":
            raise CheckFailed(f"type of {text[4:]}", "a Value", got["type"], inputs)
        if not (close(got["a"], ga) and close(got["b"], gb)):  # without reuse, = and += agree: the rule is wrong
            raise WaitsFor(
                task,
                f"its local rule, without any reuse ({inputs}), gives a.grad = {got['a']!r}, b.grad = {got['b']!r} "
                f"instead of {ga!r}, {gb!r}",
            )


def _run(learner, leaves: dict, steps: list, order: list[str], inputs: str, sweeps: int = 1) -> dict:
    """Run a program and its sweep(s) over the learner's operations; fail at once if a step gave no Value."""
    got = learner.run(run_program, leaves, steps, order, sweeps)
    if "not_a_value" in got:
        step = next(s for s in steps if s[0] == got["not_a_value"])
        what = f"{step[2]}.tanh()" if step[1] == "tanh" else f"{step[2]} {step[1]} {step[3]}"
        raise CheckFailed(f"type of {what}", "a Value", got["type"], inputs)
    return got


@contextmanager
def _program(learner, reference, leaves: dict, steps: list, order: list[str], inputs: str) -> Iterator[dict]:
    """`_run` for the checks in the block; a failed one names the first wrong node against the reference's graph."""
    got = _run(learner, leaves, steps, order, inputs)
    want = reference.run(run_program, leaves, steps, order, 1)
    with grads_explained(got["graph"], want["graph"], "the grads of this graph", inputs):
        yield got


def _tanh(name: str, arg: str) -> list[str]:
    return [name, "tanh", arg, arg]


@pytest.mark.task("7.1", points=2, hint="b = a + a: both inputs of b are a, so the + closure must ADD to a.grad twice.")
def test_add_reuse(learner, reference):
    """b = a + a gives a.grad == 2, not 1"""
    _local_rules_first(learner, "+")
    inputs = "a = Value(3.0), b = a + a, b.grad = 1.0, then b._backward()"
    with _program(learner, reference, {"a": 3.0}, [["b", "+", "a", "a"]], ["b"], inputs) as got:
        note = "both of b's inputs are a: its two contributions add up"
        expect_close(got["grads"]["a"], 2.0, "a.grad", inputs, note=note)


@pytest.mark.task("7.1", points=2, hint="b = a * a: the * closure must ADD to a.grad once for each input, giving 2a.")
def test_mul_reuse(learner, reference):
    """b = a * a gives a.grad == 2a"""
    _local_rules_first(learner, "*")
    for x in (-1.5, 4.0):
        inputs = f"a = Value({x}), b = a * a, b.grad = 1.0, then b._backward()"
        with _program(learner, reference, {"a": x}, [["b", "*", "a", "a"]], ["b"], inputs) as got:
            expect_close(got["grads"]["a"], 2 * x, "a.grad (d(a*a)/da = 2a)", inputs)


@pytest.mark.task(
    "7.1", points=2, hint="a feeds both d = a*b and e = a+b: df/da = e*b + d. Every closure must use +=, never =."
)
def test_lesson_example(learner, reference):
    """a = -2, b = 3, d = a*b, e = a+b, f = d*e: df/da = -3, df/db = -8 (either sweep order)"""
    _local_rules_first(learner, "+", "*")
    steps = [["d", "*", "a", "b"], ["e", "+", "a", "b"], ["f", "*", "d", "e"]]
    for order in (["f", "d", "e"], ["f", "e", "d"]):
        inputs = f"a = -2, b = 3, d = a*b, e = a + b, f = d*e; f.grad = 1.0, then _backward() of {', '.join(order)}"
        with _program(learner, reference, {"a": -2.0, "b": 3.0}, steps, order, inputs) as got:
            expect_close(got["data"]["f"], -6.0, "f.data", inputs)
            grads = got["grads"]
            expect_close(grads["d"], 1.0, "d.grad (= e)", inputs)
            expect_close(grads["e"], -6.0, "e.grad (= d)", inputs)
            expect_close(grads["a"], -3.0, "a.grad (df/da = e*b + d)", inputs)
            expect_close(grads["b"], -8.0, "b.grad (df/db = e*a + d)", inputs)


@pytest.mark.task(
    "7.1",
    points=2,
    hint="The tanh closure must add to self's grad too (+=), so a reused input keeps both parts.",
)
def test_tanh_reuse(learner, reference):
    """tanh outputs and inputs used twice: t + t, a.tanh() + a, a.tanh() * a.tanh()"""
    _local_rules_first(learner, "tanh", "+", "*")
    x = 0.6
    t_val = math.tanh(x)
    local = 1 - t_val**2

    inputs = f"a = Value({x}), t = a.tanh(), s = t + t; s.grad = 1.0, then _backward() of s, t"
    with _program(learner, reference, {"a": x}, [_tanh("t", "a"), ["s", "+", "t", "t"]], ["s", "t"], inputs) as got:
        expect_close(got["grads"]["t"], 2.0, "t.grad", inputs)
        expect_close(got["grads"]["a"], 2 * local, "a.grad (= 2 * (1 - t**2))", inputs)

    inputs = f"a = Value({x}), t = a.tanh(), s = t + a; s.grad = 1.0, then _backward() of s, t"
    with _program(learner, reference, {"a": x}, [_tanh("t", "a"), ["s", "+", "t", "a"]], ["s", "t"], inputs) as got:
        expect_close(
            got["grads"]["a"],
            1 + local,
            "a.grad (= 1 + (1 - t**2))",
            inputs,
            note="a gets 1 from the + and 1 - t**2 through the tanh: the tanh closure must add its part",
        )

    inputs = f"a = Value({x}), t1 = a.tanh(), t2 = a.tanh(), p = t1 * t2; p.grad = 1.0, then _backward() of p, t1, t2"
    steps = [_tanh("t1", "a"), _tanh("t2", "a"), ["p", "*", "t1", "t2"]]
    with _program(learner, reference, {"a": x}, steps, ["p", "t1", "t2"], inputs) as got:
        expect_close(got["grads"]["a"], 2 * t_val * local, "a.grad (= 2 * t * (1 - t**2))", inputs)


def _deep(x: float, y: float):
    """The deep-reuse expression on plain floats, for the grader's finite differences."""
    p = x * y
    q = p + x
    r = math.tanh(q)
    s = r * x
    u = s + p
    return u * y + q


@pytest.mark.task(
    "7.1", points=2, hint="A Value used at several depths collects a contribution from each use: += everywhere."
)
def test_reuse_deep_in_graph(learner, reference):
    """x and y reused at several depths: the grads match finite differences"""
    _local_rules_first(learner, "+", "*", "tanh")
    x0, y0 = 0.7, -1.3
    inputs = (
        f"x = {x0}, y = {y0}; p = x*y; q = p + x; r = q.tanh(); s = r*x; u = s + p; o = u*y + q; "
        "o.grad = 1.0, then _backward() of o, u*y, u, s, r, q, p"
    )
    steps = [
        ["p", "*", "x", "y"],
        ["q", "+", "p", "x"],
        _tanh("r", "q"),
        ["s", "*", "r", "x"],
        ["u", "+", "s", "p"],
        ["u*y", "*", "u", "y"],
        ["o", "+", "u*y", "q"],
    ]
    order = ["o", "u*y", "u", "s", "r", "q", "p"]
    with _program(learner, reference, {"x": x0, "y": y0}, steps, order, inputs) as got:
        expect_close(got["data"]["o"], _deep(x0, y0), "o.data", inputs)
        do_dx, do_dy = finite_difference(lambda v: _deep(v, y0), x0), finite_difference(lambda v: _deep(x0, v), y0)
        expect_close(got["grads"]["x"], do_dx, "x.grad (do/dx)", inputs, rel=1e-6)
        expect_close(got["grads"]["y"], do_dy, "y.grad (do/dy)", inputs, rel=1e-6)


@pytest.mark.task(
    "7.1", points=2, hint="A second sweep without zeroing adds the same amounts again: only += makes the grads double."
)
def test_second_sweep_doubles(learner):
    """sweeping twice without zeroing doubles the leaves' grads (f = a*b, s = a + b, t = a.tanh())"""
    _local_rules_first(learner, "*", "+", "tanh")
    x, y = 2.0, -3.0
    cases = (
        ("f = a * b", ["f", "*", "a", "b"], (y, x)),
        ("s = a + b", ["s", "+", "a", "b"], (1.0, 1.0)),
        ("t = a.tanh()", _tanh("t", "a"), (1 - math.tanh(x) ** 2, 0.0)),
    )
    for text, step, (ga, gb) in cases:
        inputs = f"a = Value({x}), b = Value({y}), {text}; twice: {step[0]}.grad = 1.0, then its _backward()"
        got = _run(learner, {"a": x, "b": y}, [step], [step[0]], inputs, sweeps=2)
        expect_close(
            got["grads"]["a"],
            2 * ga,
            "a.grad after two sweeps",
            inputs,
            note="backward() twice without zero_grad doubles the grads: this is why training zeroes them",
        )
        expect_close(got["grads"]["b"], 2 * gb, "b.grad after two sweeps", inputs)


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
def test_random_reuse(learner, reference):
    """seeded random expressions with heavy reuse: the leaves' grads match forward-mode derivatives"""
    _local_rules_first(learner, "+", "*", "tanh")
    rng = random.Random(7101)
    for trial in range(30):
        values, steps = _random_program(rng, rng.randint(1, 3), rng.randint(3, 14))
        text = "; ".join(
            f"n{len(values) + k} = " + (f"n{i}.tanh()" if op == "tanh" else f"n{i} {op} n{j}")
            for k, (op, i, j) in enumerate(steps)
        )
        inputs = (
            f"seeded expression #{trial}: leaves {', '.join(f'n{i} = {v!r}' for i, v in enumerate(values))}; "
            f"{text}; the last node's grad = 1.0, then the _backward of every node it depends on, "
            "from the last to the first"
        )
        used, last = set(), len(values) + len(steps) - 1
        for k in range(last, len(values) - 1, -1):  # the nodes the last one depends on, by the program's own steps
            if k == last or k in used:
                used.add(k)
                op, i, j = steps[k - len(values)]
                used.update((i,) if op == "tanh" else (i, j))
        with _program(
            learner,
            reference,
            {f"n{i}": v for i, v in enumerate(values)},
            [[f"n{len(values) + k}", op, f"n{i}", f"n{j}"] for k, (op, i, j) in enumerate(steps)],
            [f"n{k}" for k in range(last, len(values) - 1, -1) if k in used],
            inputs,
        ) as got:
            for leaf in range(len(values)):
                value, derivative = _dual(values, steps, leaf)
                expect_close(got["grads"][f"n{leaf}"], derivative, f"n{leaf}.grad", inputs, rel=1e-9, abs_tol=1e-12)
