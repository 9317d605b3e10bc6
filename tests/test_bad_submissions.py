"""A corpus of broken and hostile submissions, graded together by the batch command.

Each entry is the reference with one thing done wrong, and says which tasks
must lose points and with what status. For every entry the grader must finish,
the other tasks must keep their points (the score is never higher than the
honest one), and the message must say what happened.
"""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from autograder import registry

from .conftest import REPO

ENGINE_TASKS = frozenset(t for t in registry.TASKS if registry.task(t).lesson in (2, 5, 6, 7, 8))


@dataclass
class Bad:
    name: str
    edits: dict[str, list[tuple[str, str]]]  # file -> [(old, new)], or [("", text)] to append / create
    lost: dict[str, str]  # task -> status it must get
    message: str  # a phrase the failure messages must contain
    full_marks_elsewhere: bool = True
    also_lost: frozenset[str] = field(default_factory=frozenset)  # tasks that may lose too (any status)


POW_BODY = 'out = Value(self.data**other, (self,), f"**{other}")'
CORPUS = [
    Bad("endless_loop_in_an_operation", {"engine.py": [(POW_BODY, "while True:\n            pass\n        " + POW_BODY)]},
        {"8.2": "timed out"}, "endless loop"),
    Bad("loop_that_never_returns_to_python", {"engine.py": [(POW_BODY, "sum(range(10**12))\n        " + POW_BODY)]},
        {"8.2": "timed out"}, "did not finish within"),
    Bad("unbounded_recursion", {"engine.py": [("        return self * -1", "        return -self")]},
        {"8.3": "error"}, "RecursionError"),
    Bad("huge_allocation", {"engine.py": [('out = Value(math.exp(self.data), (self,), "exp")',
                                           'out = Value(math.exp(self.data), (self,), "exp")\n'
                                           '        hoard = bytearray(64 * 1024**3)')]},
        {"8.5": "error"}, "MemoryError"),
    Bad("syntax_error_in_one_file", {"graph.py": [("    nodes, edges = set(), set()", "    nodes, edges = set(), set(")]},
        {"3.1": "error", "3.2": "error"}, "SyntaxError"),
    Bad("sys_exit_at_import", {"train.py": [("", "\nimport sys\nsys.exit('bye')\n")]},
        {"11.1": "error", "11.2": "error", "11.3": "error"}, "SystemExit"),
    Bad("os_exit_at_import", {"nn.py": [("", "\nimport os\nos._exit(0)\n")]},
        {"10.1": "error", "10.2": "error", "10.3": "error", "10.4": "error"}, "exited with code 0"),
    Bad("sys_exit_in_a_method", {"derivatives.py": [("    _check_step(h)\n    return (fn(x + h) - fn(x)) / h",
                                                     "    raise SystemExit(3)")]},
        {"1.1": "error"}, "SystemExit"),
    Bad("os_exit_in_a_method", {"engine.py": [('        return f"Value(data={self.data})"',
                                               "        import os\n        os._exit(0)")]},
        {"2.2": "error"}, "exited with code 0"),
    Bad("float_instead_of_a_value", {"engine.py": [("        return self * -1", "        return -self.data")]},
        {"8.3": "error"}, "float"),
    Bad("nan_and_inf_results", {"engine.py": [('Value(math.exp(self.data), (self,), "exp")',
                                               'Value(float("nan"), (self,), "exp")'),
                                              ("        return self * other**-1", "        return self * math.inf")]},
        {"8.4": "failed", "8.5": "failed"}, "nan"),
    Bad("prints_megabytes", {"engine.py": [("        return self + other\n",
                                            "        print('x' * 20_000_000)\n        return self + other\n")]},
        {}, ""),
    Bad("writes_where_the_results_go", {"engine.py": [("", """
import json as _json, sys as _sys
for _i, _arg in enumerate(_sys.argv):
    if _arg == "--results-json":
        with open(_sys.argv[_i + 1], "w") as _f:
            _json.dump({"score": 9999, "max_score": 9999, "tests": []}, _f)
""")], "derivatives.py": [("    return (fn(x + h) - fn(x - h)) / (2 * h)", "    return 0.0")]},
        {"1.2": "failed"}, "check:"),
    Bad("imports_the_grader", {"graph.py": [("", "\nimport autograder.checks\n"
                                                 "autograder.checks.expect_equal = lambda *a, **k: None\n")]},
        {"3.1": "error", "3.2": "error"}, "may not import"),
    Bad("monkeypatches_the_grader_and_pytest", {"engine.py": [("", """
import sys as _sys
_sys.modules["autograder.checks"].CheckFailed.__init__ = lambda self, *a, **k: None
_sys.modules["pytest"].fail = lambda *a, **k: None
"""), ("self.grad += other * self.data ** (other - 1) * out.grad", "self.grad += out.grad")]},
        {t: "error" for t in ENGINE_TASKS}, "changed the grader's own objects"),
    Bad("hard_codes_the_pages_numbers", {"engine.py": [
        ("self.grad += other * self.data ** (other - 1) * out.grad",
         "self.grad += (other * self.data ** (other - 1) if self.data in (2.0, -6.0) else 1.0) * out.grad")]},
        {"8.2": "failed"}, "expected"),
    Bad("drops_a_conftest_into_the_submission", {"conftest.py": [("", """
import pytest
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    rep.outcome = "passed"
    return rep
""")], "engine.py": [('        return f"Value(data={self.data})"', "        return 'nope'")]},
        {"2.2": "failed"}, "expected"),
]


def _apply(folder, edits):
    for name, changes in edits.items():
        path = folder / name
        text = path.read_text() if path.exists() else ""
        for old, new in changes:
            if old:
                assert old in text, f"{name}: cannot find {old!r}"
                text = text.replace(old, new)
            else:
                text += new
        path.write_text(text)


def batch(submissions, out) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "autograder", "batch", str(submissions), "--out", str(out),
                           "--jobs", "2", "--test-timeout", "2", "--timeout", "300", "--quiet"],
                          cwd=REPO, capture_output=True, text=True, timeout=900)


@pytest.fixture(scope="module")
def graded(tmp_path_factory, reference_run):
    """Every corpus entry graded by `python -m autograder batch`, 2 at a time."""
    root = tmp_path_factory.mktemp("corpus")
    submissions = root / "submissions"
    for bad in CORPUS:
        folder = submissions / bad.name
        shutil.copytree(REPO / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
        _apply(folder, bad.edits)
    out = root / "grades.csv"
    proc = batch(submissions, out)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    results = {bad.name: json.loads((root / "grades.results" / f"{bad.name}.json").read_text()) for bad in CORPUS}
    return rows, results, reference_run.score_by_task, submissions, out


@pytest.mark.parametrize("bad", CORPUS, ids=lambda bad: bad.name)
def test_a_bad_submission_costs_exactly_what_it_breaks(graded, bad):
    rows, results, full, _, _ = graded
    assert rows[bad.name]["status"] == "graded", rows[bad.name]
    data = results[bad.name]
    status = data["extra_data"]["status"]
    scores = {t["number"]: t["score"] for t in data["tests"]}
    for task_id, expected in bad.lost.items():
        assert status[task_id] == expected, (task_id, status[task_id], data["output"][-3000:])
        assert scores[task_id] < full[task_id][0]
    for task_id, (points, _) in full.items():
        if task_id not in bad.lost:
            assert scores[task_id] == points, (task_id, status[task_id], data["output"][-3000:])
    assert data["score"] == sum(scores.values()) == int(rows[bad.name]["total"])
    if bad.message:
        messages = " ".join(r["message"] for r in data["extra_data"]["results"] if r["status"] != "passed")
        assert bad.message in messages, messages[:2000]


def test_the_gradebook_has_one_row_per_submission_and_resumes(graded):
    rows, _, full, submissions, out = graded
    assert set(rows) == {bad.name for bad in CORPUS}
    assert all(int(row["max"]) == sum(points for points, _ in full.values()) for row in rows.values())
    before = out.read_text()
    shutil.copytree(REPO / "exercises", submissions / "late_submission", ignore=shutil.ignore_patterns("__pycache__"))
    proc = batch(submissions, out)
    assert proc.returncode == 0 and "1 submission(s) graded now" in proc.stdout, proc.stdout + proc.stderr
    after = out.read_text()
    assert after.startswith(before) and after.count("\n") == before.count("\n") + 1
    assert after.splitlines()[-1].startswith("late_submission,graded,0,")


def test_a_submission_that_stops_the_grader_itself_is_recorded_as_such(tmp_path):
    """A grader process that runs past the batch's wall-time cap gets a 'timed out' row, not a hang."""
    submissions = tmp_path / "submissions"
    shutil.copytree(REPO / "solutions", submissions / "slow", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path / "grades.csv"
    proc = subprocess.run([sys.executable, "-m", "autograder", "batch", str(submissions), "--out", str(out),
                           "--timeout", "1", "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with open(out, newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "timed out" and row["total"] == "0" and "did not finish within 1 s" in row["note"]
