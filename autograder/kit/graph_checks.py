"""A graph's grads, node by node: for a whole graph (`graph_report` of a scenario, next to the reference's),
`expect_same_grads` names the first node, walking back from the output, whose grad is wrong, and the local rule
that should have produced it; `grads_explained` turns a failed check on a graph's numbers into that message.
`GraphsDiffer` is that failure, which the grader can draw (`--draw`)."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from autograder.kit.checks import CheckFailed, _is_number, _record, _show, close, judging_again

ASSIGNED = "yours is one use's share alone: a _backward closure sets the grad (=) where it must add to it (+=)"


class GraphsDiffer(CheckFailed):
    """A graph whose grads (or data) differ from the reference's, with the first wrong node named.

    It keeps both reports and the wrong nodes' indices, so that `--draw` can
    picture the learner's graph next to the reference's from data alone.
    """

    def __init__(
        self,
        what: str,
        expected: Any,
        actual: Any,
        inputs: str | None,
        note: str,
        *,
        got: dict,
        want: dict,
        wrong: list[int],
        first: int,
        kind: str,
        hint: str | None = None,
        cause: str = "",
    ):
        self.got, self.want, self.wrong, self.first, self.kind = got, want, wrong, first, kind
        self.drawing: str | None = None  # where `--draw` wrote the picture, once it has
        super().__init__(what, expected, actual, inputs, note, hint, cause)

    def explain(self) -> str:
        text = super().explain()
        return f"{text}\ndrawing:  {self.drawing}" if self.drawing else text


def _num(x: Any) -> str:
    return format(x, ".6g") if _is_number(x) else _show(x)


def _misaligned(got: Any, want: dict) -> str | None:
    """Why the learner's report cannot be lined up with the reference's node by node, or None if it can."""
    if not isinstance(got, dict) or not isinstance(got.get("nodes"), list):
        why = got.get("unavailable") if isinstance(got, dict) else None
        return f"your graph could not be reported ({why})" if why else "your graph could not be reported"
    mine, theirs = got["nodes"], want["nodes"]
    if len(mine) != len(theirs):
        return f"your graph has {len(mine)} nodes, a correct one {len(theirs)}"
    for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
        if not isinstance(a, dict) or a.get("children") != b["children"]:
            return f"node #{i} of your graph is linked differently from a correct graph"
    return None


def _walking_back(nodes: list[dict]) -> list[int]:
    """The nodes from the root (0) back to the leaves, each after every node it feeds (a reverse topological order).

    The walk goes level by level (a node's level: its longest path from the
    root), and within a level in the report's order, so it is the same walk
    for both reports and names the wrong node nearest the output.
    """
    feeds = [0] * len(nodes)  # how many parents of each node are still to be walked
    for node in nodes:
        for c in node["children"]:
            feeds[c] += 1
    level = [0] * len(nodes)
    order, ready = [], [(0, 0)]
    while ready:
        _, i = heapq.heappop(ready)
        order.append(i)
        for c in nodes[i]["children"]:
            feeds[c] -= 1
            level[c] = max(level[c], level[i] + 1)
            if not feeds[c]:
                heapq.heappush(ready, (level[c], c))
    return order


class _Graph:
    """The reference's report, read: names of nodes, who feeds whom, and the local rule of each edge."""

    def __init__(self, report: dict):
        self.nodes = report["nodes"]
        self.names = {i: name for name, i in (report.get("names") or {}).items() if isinstance(i, int)}
        self.parents: dict[int, list[int]] = {i: [] for i in range(len(self.nodes))}
        for j, node in enumerate(self.nodes):
            for c in node["children"]:
                self.parents[c].append(j)

    def name(self, i: int) -> str:
        node = self.nodes[i]
        if node["label"] or i in self.names:
            return node["label"] or self.names[i]
        if node["op"]:
            return f"the {node['op']!r} node of data {_num(node['data'])}"
        return f"the leaf of data {_num(node['data'])}"

    def show(self, i: int) -> str:
        """The node named, with its op, data and grad (for a node the rule reads)."""
        node = self.nodes[i]
        if node["label"] or i in self.names:
            op = f"{node['op']!r}, " if node["op"] else ""
            return f"{self.name(i)} ({op}data {_num(node['data'])}, grad {_num(node['grad'])})"
        return f"{self.name(i)} (grad {_num(node['grad'])})"

    def share(self, parent: int, child: int) -> tuple[str, str, float | None]:
        """What `parent`'s _backward adds to `child`'s grad, by the reference's numbers.

        Returns the local derivative, the formula with its numbers, and the
        amount (None for an op the course does not teach).
        """
        p = self.nodes[parent]
        op, g, kids, x = p["op"], p["grad"], p["children"], self.nodes[child]["data"]
        twice = len(kids) == 1 and op in ("+", "*")  # a + a, a * a: one child is both inputs
        try:
            if op == "+" and twice:
                return "d(self + self)/d(self) = 2", f"2 · out.grad = 2 · {_num(g)}", 2 * g
            if op == "+":
                return "d(out)/d(self) = 1: + passes out.grad on", "out.grad", g
            if op == "*" and twice:
                return (
                    "d(self · self)/d(self) = 2 · self.data",
                    f"2 · self.data · out.grad = 2 · {_num(x)} · {_num(g)}",
                    2 * x * g,
                )
            if op == "*" and len(kids) == 2:
                other = self.nodes[kids[1] if kids[0] == child else kids[0]]["data"]
                return ("d(out)/d(self) = other.data", f"out.grad · other.data = {_num(g)} · {_num(other)}", g * other)
            if op == "tanh":
                t = p["data"]
                return (
                    "d(out)/d(self) = 1 − out.data²",
                    f"(1 − o²) · out.grad = (1 − {_num(t)}²) · {_num(g)}",
                    (1 - t * t) * g,
                )
            if op.startswith("**"):
                n = float(op[2:])
                value = n * x ** (n - 1) * g
                return (
                    "d(out)/d(self) = n · self.data^(n−1)",
                    f"n · x^(n−1) · out.grad = {_num(n)} · {_num(x)}^{_num(n - 1)} · {_num(g)}",
                    value if isinstance(value, float) else None,
                )
            if op == "exp":
                return (
                    "d(out)/d(self) = e^self = out.data",
                    f"out.data · out.grad = {_num(p['data'])} · {_num(g)}",
                    p["data"] * g,
                )
            if op == "ReLU":
                o = p["data"]
                return (
                    "d(out)/d(self) = 1 where out.data > 0, else 0",
                    f"(out.data > 0) · out.grad = ({_num(o)} > 0) · {_num(g)}",
                    float(o > 0) * g,
                )
        except (TypeError, ValueError, ArithmeticError):
            pass
        return f"the local rule of the {op!r} closure", "out.grad times the local derivative", None

    def one_share_only(self, i: int, got: Any) -> bool:
        """Whether a grad `got` is what one use of node i alone gives it, as when a closure sets it (=) instead of
        adding to it (+=): the last use's share wins."""
        parents = self.parents[i]
        if (
            len(parents) == 1
            and self.nodes[parents[0]]["op"] in ("+", "*")
            and len(self.nodes[parents[0]]["children"]) == 1
        ):
            value = self.share(parents[0], i)[2]  # a + a: both shares are half of the whole
            shares = [value / 2] if value is not None else []
        elif len(parents) > 1:
            shares = [value for p in parents if (value := self.share(p, i)[2]) is not None]
        else:
            return False
        return any(close(got, share) for share in shares)

    def tanh_slip(self, i: int, got: Any) -> str:
        """The cause when node i's grad is what a tanh closure with a classic slip gives it (1 − x², 1 − t)."""
        parents = self.parents[i]
        if len(parents) != 1 or self.nodes[parents[0]]["op"] != "tanh":
            return ""
        p = self.nodes[parents[0]]
        t, g, x = p["data"], p["grad"], self.nodes[i]["data"]
        cause = ""
        if _is_number(t) and _is_number(g) and _is_number(x) and not close(got, (1 - t * t) * g):
            if x != 0 and close(got, (1 - x * x) * g):
                cause = "tanh-derivative-from-input"
            elif t not in (0, 1) and close(got, (1 - t) * g):
                cause = "tanh-derivative-one-minus-t"
        return cause

    def rule(self, i: int) -> str:
        """How node i's grad is made: the seed at the output, one parent's local rule, or the sum over the uses."""
        parents = self.parents[i]
        if not parents:
            seed = _num(self.nodes[i]["grad"])
            return f"{self.name(i)} is the output: the sweep starts by setting its grad to {seed}"
        if len(parents) == 1:
            (p,) = parents
            derivative, formula, value = self.share(p, i)
            twice = len(self.nodes[p]["children"]) == 1 and self.nodes[p]["op"] in ("+", "*")
            uses = "is both inputs of" if twice else "feeds"
            amount = f" = {_num(value)}" if value is not None else ""
            return f"{self.name(i)} {uses} {self.show(p)}; {derivative}: this grad should be {formula}{amount}"
        shares = [(p, *self.share(p, i)) for p in parents]
        parts = "; ".join(
            f"from {self.show(p)}: {formula}" + (f" = {_num(value)}" if value is not None else "")
            for p, _, formula, value in shares
        )
        values = [value for *_, value in shares]
        total = f"; sum {_num(sum(values))}" if None not in values else ""
        return f"{self.name(i)} feeds {len(parents)} nodes: its grad is the sum over the uses, {parts}{total}"


def expect_same_grads(
    got_report: Any, want_report: dict, what: str, inputs: str | None = None, rel: float = 1e-6, abs_tol: float = 1e-9
) -> None:
    """Fail unless the learner's graph has the reference's data and grads, node by node.

    Both reports come from the same scenario (`graph_report`), the learner's in
    its worker and the reference's here. The data are compared first, from the
    leaves up (a wrong forward pass makes every grad after it wrong); then the
    grads, walking back from the output in the reference graph's reverse
    topological order: at the first node whose grad is wrong, every node it
    feeds has the right grad, so the fault is in the local rule that feeds it,
    which the message spells out with the reference's numbers.
    """
    if _record("graph", what, got_report, rel, abs_tol):
        return
    why = _misaligned(got_report, want_report)
    if why:
        raise CheckFailed(
            what,
            "a graph shaped like a correct one",
            why,
            inputs,
            note="the graphs must line up node by node to compare their grads",
        )
    mine, graph = got_report["nodes"], _Graph(want_report)
    back = _walking_back(graph.nodes)
    for field in ("data", "grad"):
        order = back[::-1] if field == "data" else back  # the forward pass from the leaves, the backward from the root
        wrong = [i for i in order if not close(mine[i].get(field), graph.nodes[i][field], rel, abs_tol)]
        if not wrong:
            continue
        first = wrong[0]
        node = graph.nodes[first]
        hint, cause = None, ""
        if field == "data":
            kids = ", ".join(graph.name(c) for c in node["children"])
            check = f"{what}: the forward pass differs first at {graph.name(first)}"
            note = "a leaf's data differ"
            if kids:
                note = (
                    f"{graph.name(first)} = {node['op']!r} of {kids}, whose data are right; "
                    "the grads are compared once the data agree"
                )
        else:
            check = f"{what}: walking back from the output, the first wrong grad is {graph.name(first)}'s"
            note = graph.rule(first)
            if len(wrong) > 1:
                note += f" ({len(wrong)} of {len(order)} grads differ)"
            if graph.one_share_only(first, mine[first].get("grad")):
                note += f"; {ASSIGNED}"
                hint = "Every _backward closure adds to its children's grads (+=); none sets them (=)."
                cause = "accumulate-with-plus-equals"
            else:
                cause = graph.tanh_slip(first, mine[first].get("grad"))
        raise GraphsDiffer(
            check,
            node[field],
            mine[first].get(field),
            inputs,
            note,
            hint=hint,
            cause=cause,
            got=got_report,
            want=want_report,
            wrong=wrong,
            first=first,
            kind=field,
        )


@contextmanager
def grads_explained(
    got_report: Any, want_report: dict, what: str, inputs: str | None = None, rel: float = 1e-6, abs_tol: float = 1e-9
) -> Iterator[None]:
    """Checks of a graph's numbers in a `with` block: when one fails, say which node is wrong and by which rule.

    The block's checks decide whether the test passes; this only changes the
    message of a failure, and only when `expect_same_grads` finds the node
    (otherwise, as when the graphs do not line up, the block's own failure stands).
    """
    if judging_again():  # a graded run's second look: the block's checks only record
        yield
        return
    try:
        yield
    except CheckFailed as failure:
        try:
            expect_same_grads(got_report, want_report, what, inputs, rel, abs_tol)
        except GraphsDiffer as precise:
            precise.cause = precise.cause or failure.cause  # the block's own diagnosis, where the walk has none
            raise precise from failure
        except CheckFailed:
            pass
        raise
