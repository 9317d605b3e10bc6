"""Gradient diagnostics: a failed graph check names the first wrong node and its rule; `--draw` pictures it.

One grading run of lesson 5 on the reference with `*`'s backward broken
(`self.grad += self.data * out.grad`, the classic slip) covers the whole path:
the worker's `graph_report`, `expect_same_grads` on the trusted side, the
plugin's `--draw` and the SVG. The other tests call the trusted helpers on
reports made here with the reference engine, which is what a worker sends.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from autograder.grading.drawing import draw_or_offer, graph_diff_dot
from autograder.kit.checks import CheckFailed, expect_close
from autograder.kit.graph_checks import GraphsDiffer, expect_same_grads, grads_explained
from autograder.worker.scenario import graph_report, sweep
from solutions.engine import Value

from .conftest import REPO, copy_of, grade

SLIP = ("            self.grad += other.data * out.grad\n", "            self.grad += self.data * out.grad\n")
SVG = "{http://www.w3.org/2000/svg}"


@pytest.fixture(scope="module")
def broken_mul(tmp_path_factory):
    """Lesson 5 graded with `*`'s backward broken, drawing into a folder; (per-test results, drawing folder)."""
    tmp = tmp_path_factory.mktemp("diagnostics")
    submission = copy_of("solutions", tmp)
    engine = submission / "engine.py"
    text = engine.read_text()
    assert text.count(SLIP[0]) == 1
    engine.write_text(text.replace(*SLIP))
    results, drawings = tmp / "results.json", tmp / "drawings"
    run = grade(submission, "--lesson", "5", "--draw", str(drawings), "--results-file", str(results), tmp_path=tmp)
    tests = {t["nodeid"].rsplit("::", 1)[1]: t for t in json.loads(results.read_text())["tests"]}
    return run, tests, drawings


def test_the_message_names_the_first_wrong_node_and_its_rule(broken_mul):
    run, tests, _ = broken_mul
    neuron = tests["test_neuron_through_mul"]
    assert neuron["status"] == "failed"
    message = neuron["message"]
    assert "walking back from the output, the first wrong grad is x1's" in message
    # x1's grad should have been 0.5 · w1 = -1.5; the slip gave 0.5 · x1 = 1.0
    assert "expected: -1.4999999999999993" in message and "got:      0.9999999999999996" in message
    assert "x1 feeds x1*w1 ('*', data -6, grad 0.5)" in message
    assert "d(out)/d(self) = other.data: this grad should be out.grad · other.data = 0.5 · -3 = -1.5" in message
    assert "(2 of 10 grads differ)" in message
    assert "walking back from the output" in run.output  # the scorecard shows it too
    # only messages change: the task still loses exactly its points, the others keep theirs
    assert run.score_by_task["5.3"] == (0, 5)
    assert run.score_by_task["5.1"] == (5, 5) and run.score_by_task["5.2"] == (5, 5)


def test_draw_writes_the_learners_graph_with_the_wrong_grads_marked(broken_mul):
    _, tests, drawings = broken_mul
    picture = drawings / "test_neuron_through_mul.svg"
    assert f"drawing:  {picture}" in tests["test_neuron_through_mul"]["message"]
    assert sorted(p.name for p in drawings.iterdir()) == ["test_neuron_through_mul.svg"]  # the graph check only
    root = ET.parse(picture).getroot()  # well-formed XML: what a browser opens
    assert root.tag == f"{SVG}svg"
    nodes = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "node":
            texts = [t.text for t in group.iter(f"{SVG}text")]
            fills = {p.get("fill") for p in group.iter(f"{SVG}polygon")}
            nodes.setdefault(" | ".join(texts), []).append(fills)
    assert nodes["x1 | data 2 | grad 1 ✗ first wrong"] == [{"#fde0dc"}]  # yours, filled red
    assert nodes["x2 | data 0 | grad 0 ✗"] == [{"#fde0dc"}]
    assert nodes["x1 | data 2 | grad -1.5 ← here"] == [{"none"}]  # the reference's, where to look
    assert nodes["w1 | data -3 | grad 1"] == [{"none"}, {"none"}]  # right in both: unmarked


def test_the_drawing_is_where_the_readme_and_the_message_say_it_is(broken_mul):
    """Yours above a correct graph: in the SVG, in the check's message and in --draw's help (which the learners'
    guide prints as it is)."""
    _, tests, drawings = broken_mul
    root = ET.parse(drawings / "test_neuron_through_mul.svg").getroot()
    tops = {}
    for group in root.iter(f"{SVG}g"):
        if group.get("class") == "cluster":
            title = " ".join(t.text for t in group.iter(f"{SVG}text"))
            points = group.find(f"{SVG}polygon").get("points").split()
            tops[title.split(":")[0]] = min(float(p.split(",")[1]) for p in points)  # SVG's y grows downwards
    assert tops["your graph"] < tops["a correct graph"], tops
    where = "above a correct one"
    assert where in tests["test_neuron_through_mul"]["message"]
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(_report(_neuron, __add__=_doubling_add), _report(_neuron), "the neuron's grads")
    draw_or_offer(failure.value, None, "test_neuron_through_add", "pytest autograder --task 5.2")
    assert f"yours {where}" in failure.value.explain()
    help_text = subprocess.run(
        [sys.executable, "-m", "pytest", "autograder", "--help"], cwd=REPO, capture_output=True, text=True
    ).stdout
    assert where in " ".join(help_text.split())


# --- the trusted helpers on reports made here ------------------------------------------------------------------------


def _report(build, **ops):
    """Build a graph with the reference Value (ops replaced as given), sweep it, and report it.

    `build()` returns the root, the names to report, and the nodes whose `_backward` to call in that order
    after setting the root's grad to 1 (or None for the grader's sweep).
    """
    saved = {name: getattr(Value, name) for name in ops}
    try:
        for name, fn in ops.items():
            setattr(Value, name, fn)
        root, names, order = build()
        if order is None:
            sweep(root)
        else:
            root.grad = 1.0
            for node in order:
                node._backward()
        return graph_report(root, names)
    finally:
        for name, fn in saved.items():
            setattr(Value, name, fn)


def _assigning_mul(self, other):
    """`*` whose closure assigns (`=`) instead of adding: the accumulation bug of lesson 7."""
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data * other.data, (self, other), "*")

    def _backward():
        self.grad = other.data * out.grad
        other.grad = self.data * out.grad

    out._backward = _backward
    return out


def _lesson_example():
    a, b = Value(-2.0, label="a"), Value(3.0, label="b")
    d, e = a * b, a + b
    f = d * e
    return f, {"d": d, "e": e, "f": f}, [f, e, d]  # d's closure last: the one that assigns overwrites e's share


def test_a_node_used_twice_is_told_the_sum_over_its_uses():
    want = _report(_lesson_example)
    got = _report(_lesson_example, __mul__=_assigning_mul)
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(got, want, "the lesson's example", "a = -2, b = 3")
    text = failure.value.explain()
    assert "the first wrong grad is a's" in text
    assert "a feeds 2 nodes: its grad is the sum over the uses" in text
    assert "from d ('*', data -6, grad 1): out.grad · other.data = 1 · 3 = 3" in text
    assert "from e ('+', data 1, grad -6): out.grad = -6" in text
    assert "sum -3" in text


def _doubling_add(self, other):
    """`+` whose closure gives `other` twice out.grad."""
    other = other if isinstance(other, Value) else Value(other)
    out = Value(self.data + other.data, (self, other), "+")

    def _backward():
        self.grad += out.grad
        other.grad += 2 * out.grad

    out._backward = _backward
    return out


def _neuron():
    x1, x2 = Value(2.0, label="x1"), Value(0.0, label="x2")
    w1, w2, b = Value(-3.0, label="w1"), Value(1.0, label="w2"), Value(6.8813735870195432, label="b")
    n = x1 * w1 + x2 * w2 + b
    return n.tanh(), {"n": n}, None


def test_the_walk_names_the_wrong_node_nearest_the_output():
    # b (n = s + b) and x2*w2 (s = x1*w1 + x2*w2) are both `other` of a `+`; b is one step nearer the output
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(_report(_neuron, __add__=_doubling_add), _report(_neuron), "the neuron's grads")
    assert failure.value.what.endswith("the first wrong grad is b's")
    assert failure.value.note.startswith("b feeds n ('+', data 0.881374, grad 0.5)")


def test_the_rules_of_tanh_pow_exp_and_relu_use_the_references_numbers():
    def build():
        x = Value(0.5, label="x")
        return x.tanh() + x**3 + x.exp() + (x * -1).relu(), {}, None

    want = _report(build)
    got = json.loads(json.dumps(want))
    (x,) = [node for node in got["nodes"] if node["label"] == "x"]
    x["grad"] += 1.0  # only x is wrong: every node it feeds is right
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(got, want, "x's uses")
    note = failure.value.note
    assert "x feeds 4 nodes: its grad is the sum over the uses" in note
    assert f"(1 − o²) · out.grad = (1 − {math.tanh(0.5):.6g}²) · 1 = {1 - math.tanh(0.5) ** 2:.6g};" in note
    assert "n · x^(n−1) · out.grad = 3 · 0.5^2 · 1 = 0.75" in note
    assert f"out.data · out.grad = {math.exp(0.5):.6g} · 1" in note
    assert "out.grad · other.data = 0 · -1 = -0" in note  # x * -1 feeds the relu, which blocks: out.grad is 0


def test_a_wrong_forward_pass_is_named_before_any_grad():
    def build():
        a, b = Value(2.0, label="a"), Value(-3.0, label="b")
        c = a * b
        return (c + a).tanh(), {"c": c}, None

    want = _report(build)
    got = json.loads(json.dumps(want))
    for node in got["nodes"]:
        if node["op"] == "*":
            node["data"] = 5.0  # the forward of * gave a wrong number; everything above it follows
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(got, want, "the graph")
    assert failure.value.kind == "data"
    assert "the forward pass differs first at c" in failure.value.what
    assert "c = '*' of a, b, whose data are right" in failure.value.note


def test_grads_explained_keeps_the_checks_verdict_and_their_message_when_graphs_do_not_line_up():
    want = _report(_lesson_example)
    # a passing block passes, whatever the graphs
    with grads_explained({"unavailable": "odd"}, want, "g"):
        expect_close(1.0, 1.0, "x")
    # a graph that cannot be lined up leaves the block's own failure
    with pytest.raises(CheckFailed) as failure, grads_explained({"nodes": []}, want, "g"):
        expect_close(2.0, 1.0, "a.grad")
    assert not isinstance(failure.value, GraphsDiffer) and failure.value.what == "a.grad"
    # the same graphs with the same grads: nothing to name, the block's failure stands
    with pytest.raises(CheckFailed) as failure, grads_explained(want, want, "g"):
        expect_close(2.0, 1.0, "a.grad")
    assert failure.value.what == "a.grad"


def test_graph_report_numbers_nodes_by_content_not_by_identity():
    def build(seed: int):
        rng = random.Random(seed)
        values = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
        rng.shuffle(values)  # the leaves made in another order, at other addresses
        padding = [Value(0.0) for _ in range(rng.randrange(50))]
        leaves = sorted((Value(v) for v in values), key=lambda v: v.data)
        one, two, three, four, five, six = leaves
        left, right = one * two + five, three * four + six  # siblings told apart by data only
        del padding
        return (left + right) * (right + left), {}, None

    first = _report(lambda: build(0))
    assert all(_report(lambda s=seed: build(s)) == first for seed in range(1, 40))


def test_without_draw_the_message_says_how_to_get_the_picture():
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(_report(_neuron, __add__=_doubling_add), _report(_neuron), "the neuron's grads")
    draw_or_offer(failure.value, None, "test_neuron_through_add", "pytest autograder --task 5.2")
    assert "drawing:  `pytest autograder --task 5.2 --draw drawings` draws this graph" in failure.value.explain()


def test_the_picture_escapes_what_the_learner_chose():
    def build():
        a = Value(2.0, label='we{ir}d|"<a>\\')
        return a * 3.0, {}, None

    want = _report(build)
    got = json.loads(json.dumps(want))
    got["nodes"][0]["op"] = '*"\\'
    for node in got["nodes"]:
        if node["label"]:
            node["grad"] = 7.0
    with pytest.raises(GraphsDiffer) as failure:
        expect_same_grads(got, want, 'a "graph"')
    from autograder.jupyter import dot_to_svg

    root = ET.fromstring(dot_to_svg(graph_diff_dot(failure.value)))
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert 'we{ir}d|"<a>\\' in texts
    assert '*"\\' in texts
