"""Named causes: every diagnosis the grader makes has an id of `course/causes.py`, and every id is a diagnosis.

Read from the code (every `cause=` a check passes, every `"cause":` it returns, every id `verdicts` names) and
seen in real grading: for each cause, the reference with that one classic bug, graded on the task that
diagnoses it, gives a failed check carrying the cause's id, in the grader's own results and in Gradescope's
`extra_data`.
"""

from __future__ import annotations

import ast
import json

import pytest

from autograder.course import causes, registry
from autograder.grading.results import Results

from .conftest import REPO, copy_of, grade

PACKAGE = REPO / "autograder"

# a cause's classic bug: (file of solutions/, text, replacement, task that diagnoses it)
BUGS = {
    "accumulate-with-plus-equals": (
        "engine.py",
        "            self.grad += out.grad\n            other.grad += out.grad\n",
        "            self.grad = out.grad\n            other.grad = out.grad\n",
        "7.1",
    ),
    "tanh-derivative-from-input": ("engine.py", "(1 - t**2) * out.grad", "(1 - self.data**2) * out.grad", "5.1"),
    "tanh-derivative-one-minus-t": ("engine.py", "(1 - t**2) * out.grad", "(1 - t) * out.grad", "5.1"),
    "backward-calls-a-node-twice": ("engine.py", "            elif v not in visited:\n", "            else:\n", "6.1"),
    "backward-skips-a-node": (
        "engine.py",
        "for child in v._prev)",
        "for child in sorted(v._prev, key=lambda c: c.data)[:1])",
        "6.1",
    ),
    "backward-skips-a-leaf": (
        "engine.py",
        "                topo.append(v)\n",
        "                if v._prev:\n                    topo.append(v)\n",
        "6.1",
    ),
    "topological-order-reversed": ("engine.py", "for v in reversed(topo):", "for v in topo:", "6.1"),
    "reflected-operator-recurses": ("engine.py", "    return self + other\n", "    return other + self\n", "8.1"),
    "rsub-reversed": ("engine.py", "        return other + (-self)\n", "        return self - other\n", "8.3"),
    "float32-tensors": ("torch_bridge.py", "dtype=torch.double", "dtype=torch.float32", "9.1"),
    "parameters-are-copies": (
        "nn.py",
        "        return self.w + [self.b]\n",
        "        return [Value(p.data) for p in self.w + [self.b]]\n",
        "10.2",
    ),
    "sgd-step-uphill": (
        "train.py",
        "        p.data += -learning_rate * p.grad\n",
        "        p.data += learning_rate * p.grad\n",
        "11.2",
    ),
    "loss-recorded-after-update": (
        "train.py",
        "        history.append(loss.data)\n",
        "        history.append(squared_error_loss([model(x) for x in xs], ys).data)\n",
        "11.3",
    ),
    "gradients-never-zeroed": ("train.py", "        model.zero_grad()\n", "", "11.3"),
    "hinge-loss-without-penalty": (
        "classifier.py",
        "loss = hinge_loss(scores, y) + l2_penalty(model.parameters())",
        "loss = hinge_loss(scores, y)",
        "12.4",
    ),
    "learning-rate-schedule-slip": ("classifier.py", "1.0 - 0.9 * k / steps", "1.0 - 0.9 * (k + 1) / steps", "12.4"),
}


def _constants(node: ast.AST) -> set[str]:
    """The strings a value can be: a literal, either branch of a conditional (not what a call or subscript reads)."""
    if isinstance(node, ast.Constant):
        return {node.value} if isinstance(node.value, str) and node.value else set()
    if isinstance(node, ast.IfExp):
        return _constants(node.body) | _constants(node.orelse)
    if isinstance(node, ast.BoolOp):
        return set().union(*map(_constants, node.values))
    return set()


def ids_given() -> dict[str, set[str]]:
    """Each cause id the grader's code gives a failure, and where: `cause=...` arguments, `"cause": ...` entries,
    `cause = ...` assignments and `known_cause(...)` calls (the strings in them)."""
    found: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name == "causes.py":
            continue
        where = str(path.relative_to(REPO))
        for node in ast.walk(ast.parse(path.read_text())):
            values = []
            if isinstance(node, ast.Call):
                values += [k.value for k in node.keywords if k.arg == "cause"]
                if isinstance(node.func, ast.Name) and node.func.id == "known_cause":
                    values += node.args
            elif isinstance(node, ast.Dict):
                pairs = zip(node.keys, node.values, strict=True)
                values += [v for k, v in pairs if getattr(k, "value", None) == "cause"]
            elif isinstance(node, ast.Assign):
                targets = [t for tgt in node.targets for t in (tgt.elts if isinstance(tgt, ast.Tuple) else [tgt])]
                if any(isinstance(t, ast.Name) and t.id == "cause" for t in targets):
                    values.append(node.value)
            for value in values:
                for text in _constants(value):
                    found.setdefault(text, set()).add(where)
    return found


def test_every_cause_a_check_gives_is_in_the_table_and_every_cause_in_the_table_is_given():
    given = ids_given()
    assert not set(given) - set(causes.CAUSES), {i: given[i] for i in set(given) - set(causes.CAUSES)}
    assert not set(causes.CAUSES) - set(given), "causes no check gives: " + ", ".join(set(causes.CAUSES) - set(given))


def test_a_failure_with_its_own_hint_names_its_cause():
    """A check that can tell how it failed (its failure's own `hint=`) has diagnosed it: it gives a cause too."""
    unnamed = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not any(k.arg == "hint" for k in node.keywords):
                continue
            if isinstance(node.func, ast.Attribute) and node.func.attr == "task":  # a marker's hint: not a diagnosis
                continue
            if not any(k.arg == "cause" for k in node.keywords):
                unnamed.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert not unnamed, unnamed


def test_each_cause_has_a_name_of_one_line_and_a_task_to_revisit():
    for cause in causes.CAUSES.values():
        assert cause.id == cause.id.lower() and " " not in cause.id
        assert cause.name and "\n" not in cause.name and len(cause.name) <= 100, cause
        assert cause.task in registry.TASKS, cause
    with pytest.raises(KeyError, match="no cause"):
        causes.cause("no-such-cause")


def test_every_cause_has_a_bug_below_that_shows_it():
    assert set(BUGS) == set(causes.CAUSES)


@pytest.mark.parametrize("cause_id", sorted(BUGS))
def test_the_classic_bug_is_named_by_its_cause(cause_id, tmp_path):
    file, old, new, task = BUGS[cause_id]
    submission = copy_of("solutions", tmp_path)
    path = submission / file
    text = path.read_text()
    assert text.count(old) == 1, (file, old)
    path.write_text(text.replace(old, new))
    own = tmp_path / "own.json"
    run = grade(submission, "--task", task, "--results-file", str(own), tmp_path=tmp_path)
    checks = run.results["extra_data"]["results"]
    named = [r for r in checks if r["cause"] == cause_id]
    assert named, [(r["nodeid"], r["status"], r["cause"], r["message"][:300]) for r in checks]
    assert all(r["status"] in ("failed", "error") and r["task"] == task for r in named), named
    results = Results.from_json(json.loads(own.read_text()))  # the grader's own results file carries it too
    assert {t.cause for t in results.tests if t.task == task} >= {cause_id}


def test_results_files_written_before_causes_are_read():
    """A results file from before `cause` existed loads, every check with no cause."""
    old = {
        "graded": "exercises/",
        "impl_option": "",
        "isolation": "processes",
        "tests": [
            {
                "nodeid": "autograder/lessons/test_02_value.py::test_init",
                "description": "d",
                "task": "2.1",
                "points": 1,
                "hint": "h",
                "status": "failed",
                "message": "m",
            }
        ],
        "selected": ["2.1"],
    }
    (check,) = Results.from_json(old).tests
    assert check.cause == "" and check.status == "failed"
