"""A corpus of broken and hostile submissions, graded together by the real batch command.

Each entry is the reference with one thing done wrong (by mistake or on
purpose) and says which tasks must lose points and with what status. For every
entry the grader must finish; the attacked tasks score no more than honest
code would; every other task keeps its marks; the total is the sum of the
tasks; and the messages say what happened. At the isolation level CI has
(root: `sandbox`), the run must also leave no process of a submission alive
and no file outside the submission changed. The classes that attack the
verdict itself (forged numbers, tampering, a forged result channel, trickling,
floods, delegation to the reference) run at the no-root level (`processes`)
too, which promises exactly that the verdict cannot be forged.
"""

from __future__ import annotations

import csv
import glob
import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from autograder.course import regions, registry
from autograder.grading.isolation import best_level
from autograder.grading.results import Results
from autograder.worker import sandbox

from .conftest import REPO, copy_of, grade, level_here

# the tasks that run engine.py: its own, and the capstone that runs it whole
ENGINE_TASKS = frozenset(
    t for t in registry.TASKS if registry.task(t).lesson in (2, 5, 6, 7, 8) or "engine" in registry.task(t).runs_whole
)
AS_ROOT = best_level() == "sandbox"
IS_ROOT = hasattr(os, "geteuid") and os.geteuid() == 0


@dataclass
class Bad:
    name: str
    edits: dict[str, list[tuple[str, str]]]  # file -> [(old, new)], or [("", text)] to append / create
    lost: dict[str, str]  # task -> status it must get ("failed|error": either)
    message: str  # a phrase the failure messages must contain
    verdict_attack: bool = False  # also run at the no-root level, where only the verdict is promised
    may_lose: frozenset[str] = field(default_factory=frozenset)  # tasks that may lose too (their own code is attacked)


POW_BODY = 'out = Value(self.data**other, (self,), f"**{other}")'
REPR = '        return f"Value(data={self.data})"'
BACKWARD_BODY = (
    Path(__file__)
    .resolve()
    .parents[1]
    .joinpath("solutions", "engine.py")
    .read_text()
    .split("### BEGIN SOLUTION (task 6.1, 6.2)\n")[1]
    .split("        ### END SOLUTION")[0]
    .rstrip("\n")
)
FORWARD = "    _check_step(h)\n    return (fn(x + h) - fn(x)) / h"
EXP = 'out = Value(math.exp(self.data), (self,), "exp")'

# learner code that looks for the grader's expected values in the frames that called it
FRAME_THIEF = '''
import sys as _sys


class _Sneaky(float):
    """A float that claims to equal whatever it is compared with, and turns into the caller's expected value."""

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __float__(self):
        frame = _sys._getframe(1)
        while frame:
            for name in ("expected", "want", "reference"):
                if isinstance(frame.f_locals.get(name), float):
                    return frame.f_locals[name]
            frame = frame.f_back
        return 0.0
'''

CORPUS = [
    # --- mistakes and accidents ------------------------------------------------------------------------------------
    Bad(
        "endless_loop_in_an_operation",
        {"engine.py": [(POW_BODY, "while True:\n            pass\n        " + POW_BODY)]},
        {"8.2": "timed out"},
        "endless loop",
    ),
    Bad(
        "loop_that_never_returns_to_python",
        {"engine.py": [(POW_BODY, "sum(range(10**12))\n        " + POW_BODY)]},
        {"8.2": "timed out"},
        "time limit",
    ),
    Bad(
        "unbounded_recursion",
        {"engine.py": [("        return self * -1", "        return -self")]},
        {"8.3": "error"},
        "RecursionError",
    ),
    Bad(
        "huge_allocation",
        {"engine.py": [(EXP, EXP + "\n        hoard = bytearray(64 * 1024**3)")]},
        {"8.5": "error"},
        "MemoryError",
    ),
    Bad(
        "syntax_error_in_one_file",
        {"graph.py": [("    nodes, edges = set(), set()", "    nodes, edges = set(), set(")]},
        {"3.1": "error", "3.2": "error"},
        "SyntaxError",
    ),
    Bad(
        "sys_exit_at_import",
        {"train.py": [("", "\nimport sys\nsys.exit('bye')\n")]},
        {"11.1": "error", "11.2": "error", "11.3": "error"},
        "SystemExit",
    ),
    Bad(
        "os_exit_at_import",
        {"nn.py": [("", "\nimport os\nos._exit(0)\n")]},
        {"10.1": "error", "10.2": "error", "10.3": "error", "10.4": "error"},
        "ended without an answer",
    ),
    Bad(
        "sys_exit_in_a_method",
        {"derivatives.py": [(FORWARD, "    raise SystemExit(3)")]},
        {"1.1": "error"},
        "SystemExit",
    ),
    Bad(
        "os_exit_in_a_method",
        {"engine.py": [(REPR, "        import os\n        os._exit(0)")]},
        {"2.2": "error"},
        "ended without an answer",
    ),
    Bad(
        "float_instead_of_a_value",
        {"engine.py": [("        return self * -1", "        return -self.data")]},
        {"8.3": "failed"},
        "float",
    ),
    Bad(
        "nan_and_inf_results",
        {
            "engine.py": [
                (EXP, 'out = Value(float("nan"), (self,), "exp")'),
                ("        return self * other**-1", "        return self * math.inf"),
            ]
        },
        {"8.4": "failed", "8.5": "failed"},
        "nan",
    ),
    Bad(
        "hard_codes_the_pages_numbers",
        {
            "engine.py": [
                (
                    "self.grad += other * self.data ** (other - 1) * out.grad",
                    "self.grad += (other * self.data ** (other - 1) if self.data in (2.0, -6.0) else 1.0) * out.grad",
                )
            ]
        },
        {"8.2": "failed"},
        "expected",
    ),
    Bad(  # a known answer replayed: worth nothing where a graded run asks the visible checks on drawn numbers
        "answers_the_visible_checks_from_the_pages_table",
        {
            "derivatives.py": [
                (
                    FORWARD,
                    "    page = {(3.0, 1e-08): 14.00000009255109, (3.0, 1e-06): 14.0, (3.0, 0.5): 15.5,\n"
                    "            (2 / 3, 1e-06): 0.0, (-3.0, 1e-06): -22.0}\n"
                    "    return page.get((x, h), 0.0)",
                )
            ]
        },
        {"1.1": "failed"},
        "expected",
    ),
    Bad(  # a judgement that took the worker's word: the grader recomputes accuracy from the reported parameters
        "reports_a_training_it_did_not_do",
        {
            "classifier.py": [
                (
                    "history.append(train_step(model, [X[i] for i in batch], [y[i] for i in batch], "
                    "1.0 - 0.9 * k / steps))",
                    "history.append((0.0, 1.0))",
                )
            ]
        },
        {"12.4": "failed"},
        "",
        may_lose=frozenset({"12.5"}),
    ),
    Bad(
        "drops_a_conftest_into_the_submission",
        {
            "conftest.py": [
                (
                    "",
                    """
import pytest
@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    rep = yield
    rep.outcome = "passed"
    return rep
""",
                )
            ],
            "engine.py": [(REPR, "        return 'nope'")],
        },
        {"2.2": "failed"},
        "expected",
    ),
    # --- forged numbers --------------------------------------------------------------------------------------------
    Bad(
        "float_subclass_that_reads_the_expected_value",
        {"derivatives.py": [("", FRAME_THIEF), (FORWARD, "    return _Sneaky(0.0)")]},
        {"1.1": "failed"},
        "expected",
        verdict_attack=True,
    ),
    # --- tampering in the process that runs the code ---------------------------------------------------------------
    Bad(
        "walks_the_stack_and_marks_every_check_passed",
        {
            "engine.py": [
                (
                    REPR,
                    """        import gc, sys
        for obj in gc.get_objects():
            if type(obj).__name__ in ("TestResult", "Grader", "Results") or hasattr(obj, "status"):
                try:
                    obj.status, obj.earned = "passed", 99
                except Exception:
                    pass
        frame = sys._getframe()
        while frame:
            for value in list(frame.f_locals.values()):
                if isinstance(value, dict) and "status" in value:
                    value["status"] = "passed"
            frame = frame.f_back
        return 'tampered'""",
                )
            ]
        },
        {"2.2": "failed|error"},
        "",
        verdict_attack=True,
    ),
    Bad(
        "swaps_the_code_of_the_check_helpers",
        {
            "engine.py": [
                (
                    "",
                    """
import gc as _gc
def _nothing(*args, **kwargs):
    return None
for _f in _gc.get_objects():
    if callable(_f) and getattr(_f, "__name__", "") in ("expect", "expect_close", "expect_equal", "sweep"):
        try:
            _f.__code__ = _nothing.__code__
        except Exception:
            pass
""",
                ),
                ("self.grad += other * self.data ** (other - 1) * out.grad", "self.grad += out.grad"),
            ]
        },
        {"8.2": "failed"},
        "expected",
        verdict_attack=True,
        may_lose=ENGINE_TASKS,
    ),
    Bad(
        "writes_forged_answers_into_every_channel",
        {
            "engine.py": [
                (
                    REPR,
                    """        import json, os, struct
        for fd in range(3, 64):
            body = json.dumps({"ok": "Value(data=4.0)", "output": ""}).encode()
            try:
                os.write(fd, struct.pack("!I", len(body)) + body)
            except OSError:
                pass
        return 'forged'""",
                )
            ]
        },
        {"2.2": "error"},  # a forged frame carries no request's id: it is no answer at all
        "not an answer",
        verdict_attack=True,
    ),
    Bad(
        "borrows_the_graders_sweep",  # a one-line backward that calls the scenario kit's own sweep
        {
            "engine.py": [
                (
                    BACKWARD_BODY,
                    """        import sys
        sys.modules["autograder.worker.scenario"].sweep(self)""",
                )
            ]
        },
        {"6.1": "error|failed", "6.2": "error|failed"},
        "AttributeError",
        verdict_attack=True,
    ),
    Bad(  # each once passed over the reference of the others, then over their code (the learner's): now over neither
        "calls_its_siblings_in_a_circle",
        {
            "derivatives.py": [
                (FORWARD, "    return partial_derivative(lambda t: fn(t), [x], 0, h)"),
                (
                    "    _check_step(h)\n    return (fn(x + h) - fn(x - h)) / (2 * h)",
                    "    return forward_difference(fn, x - h, 2 * h)",
                ),
                (
                    "    nudged = list(args)\n    nudged[i] += h\n    return (fn(*nudged) - fn(*args)) / h",
                    "    return forward_difference(lambda t: fn(*args[:i], t, *args[i + 1 :]), args[i], h)",
                ),
            ]
        },
        {"1.1": "error", "1.2": "error", "1.3": "error"},
        "must do without it",
    ),
    Bad(
        "derives_by_hand_with_a_later_lessons_backward",  # task 4.2 through the reference's backward (task 6.1)
        {
            "backprop_by_hand.py": [
                (
                    "    e = a * b\n    d = e + c\n",
                    """    a, b, c, f = Value(a), Value(b), Value(c), Value(f)
    e = a * b
    d = e + c
    L = d * f
    L.backward()
    return {"L": L.grad, "f": f.grad, "d": d.grad, "c": c.grad, "e": e.grad, "a": a.grad, "b": b.grad}
""",
                )
            ]
        },
        {"4.2": "error"},
        "from a later lesson",
    ),
    Bad(
        "writes_frames_that_are_not_answers",
        {
            "engine.py": [
                (
                    REPR,
                    """        import json, os, struct
        kinds = [[1, 2], "ok", 7, None, {}, {"error": "text"}, {"output": ""}]
        body = json.dumps(kinds[int(abs(self.data) * 7) % len(kinds)]).encode()  # a kind for each check
        for fd in range(3, 64):
            try:
                os.write(fd, struct.pack("!I", len(body)) + body)
            except OSError:
                pass
        return "Value(data={})".format(self.data)""",
                )
            ]
        },
        {"2.2": "error"},
        "not an answer",
        verdict_attack=True,
    ),
    Bad(
        "trickles_bytes_into_the_channel",
        {
            "engine.py": [
                (
                    REPR,
                    """        import os, time
        while True:
            for fd in range(3, 64):
                try:
                    os.write(fd, b"\\x00")
                except OSError:
                    pass
            time.sleep(0.5)""",
                )
            ]
        },
        {"2.2": "timed out|error"},
        "",
        verdict_attack=True,
    ),
    Bad(
        "five_megabyte_failure_message",
        {"engine.py": [(REPR, "        raise ValueError('x' * 5_000_000)")]},
        {"2.2": "error"},
        "ValueError",
        verdict_attack=True,
    ),
    Bad(
        "prints_megabytes",
        {
            "engine.py": [
                ("        return self + other\n", "        print('x' * 20_000_000)\n        return self + other\n")
            ]
        },
        {},
        "",
        verdict_attack=True,
    ),
    # --- handing the task to the reference -------------------------------------------------------------------------
    Bad(
        "imports_the_reference_through_importlib",
        {
            "engine.py": [
                (
                    REPR,
                    """        import importlib
        return importlib.import_module("solutions.engine").Value.__repr__(self)""",
                )
            ]
        },
        {"2.2": "error"},
        "",
    ),
    Bad(
        "finds_the_reference_in_memory",
        {
            "engine.py": [
                (
                    REPR,
                    """        import sys
        for name, module in list(sys.modules.items()):
            cls = getattr(module, "Value", None)
            if name.endswith("engine") and cls is not None and cls.__repr__ is not type(self).__repr__:
                return cls.__repr__(self)
        raise LookupError("no reference here")""",
                )
            ]
        },
        {"2.2": "not started|error"},
        "",
        verdict_attack=True,
    ),
    Bad(
        "reads_the_reference_from_disk",
        {
            "engine.py": [
                (
                    REPR,
                    """        import glob
        for path in glob.glob("/**/solutions/engine.py", recursive=True):
            source = open(path).read()
            if "BEGIN SOLUTION (task 2.2)" in source:
                return f"Value(data={self.data})"
        raise LookupError("no reference on disk")""",
                )
            ]
        },
        {"2.2": "error|timed out"},
        "",
    ),
    Bad(
        "imports_the_grader",
        {
            "graph.py": [
                ("", "\nimport autograder.kit.checks\nautograder.kit.checks.expect_equal = lambda *a, **k: None\n")
            ]
        },
        {"3.1": "error", "3.2": "error"},
        "may not import",
        verdict_attack=True,
    ),
    # --- processes, memory, and harm to others ---------------------------------------------------------------------
    Bad(
        "starts_a_process_that_outlives_the_check",
        {
            "engine.py": [
                (
                    REPR,
                    """        import os, time
        if os.fork() == 0:
            os.setsid()
            time.sleep(120)
            os._exit(0)
        return f"Value(data={self.data})"
""",
                )
            ]
        },
        {"2.2": "error"},
        "BlockingIOError",
    ),
    Bad(
        "spreads_memory_over_processes",
        {
            "engine.py": [
                (
                    EXP,
                    """import multiprocessing
        procs = [multiprocessing.Process(target=lambda: (bytearray(800 * 1024**2), __import__("time").sleep(60)))
                 for _ in range(3)]
        for p in procs:
            p.start()
        """
                    + EXP,
                )
            ]
        },
        {"8.5": "error"},
        "",
    ),
    Bad(
        "harms_the_grader_the_gradebook_and_other_submissions",
        {
            "engine.py": [
                (
                    REPR,
                    """        import glob, os, signal
        targets = glob.glob("/**/grades.csv", recursive=True) + glob.glob("/**/kit/checks.py", recursive=True)
        for path in targets:
            try:
                open(path, "a").write("\\nharmed,graded,251,251\\n")
            except OSError:
                pass
        for path in glob.glob("/**/submissions/*/engine.py", recursive=True):
            try:
                open(path, "a").write("\\nraise SystemExit\\n")
            except OSError:
                pass
        for pid in range(2, 5000):
            if pid != os.getpid():
                try:
                    os.kill(pid, signal.SIGSTOP)
                except OSError:
                    pass
        return f"Value(data={self.data})"
""",
                )
            ]
        },
        {},
        "",
        may_lose=frozenset({"2.2"}),  # searching the whole disk may take longer than its check
    ),
    Bad(
        "delayed_del_that_breaks_later_checks",
        {
            "engine.py": [
                (
                    "",
                    """
class _Saboteur:
    def __del__(self):
        import math
        math.tanh = lambda x: 0.0
        Value.__add__ = lambda self, other: 0


_keep = [_Saboteur() for _ in range(3)]
del _keep
""",
                )
            ]
        },
        {},
        "",
        may_lose=ENGINE_TASKS,
    ),
]
VERDICT = [bad for bad in CORPUS if bad.verdict_attack]


def _apply(folder: Path, edits: dict) -> None:
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


def batch(
    submissions: Path, out: Path, *extra: str, check_timeout: float = 5, timeout: float = 300, budget: int = 1
) -> subprocess.CompletedProcess:
    """`python -m autograder batch`, two at a time; `budget`: how many submissions' `timeout` it may take in all
    (the batch's own per-submission limit ends it well before: this only stops a batch that hangs)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "autograder",
            "batch",
            str(submissions),
            "--out",
            str(out),
            "--jobs",
            "2",
            "--check-timeout",
            str(check_timeout),
            "--timeout",
            str(timeout),
            "--quiet",
            *extra,
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout * (budget + 1) + 300,
    )


def _fingerprint(*folders: Path) -> dict[str, str]:
    """A hash of every file under the folders (what no submission may change)."""
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                out[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def _sandbox_processes(before: frozenset[int] = frozenset()) -> list[int]:
    """Processes running as one of the workers' own users that no grading run owns any more (none may survive).

    Only what this test could have left: not there `before` it ran, and with no live grader above it (another
    grader's workers, on a shared machine, are that grader's business).
    """
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) not in before:
            try:
                if os.stat(f"/proc/{entry}").st_uid >= sandbox.FIRST_SANDBOX_UID and not _under_a_grader(int(entry)):
                    found.append(int(entry))
            except OSError:
                pass
    return found


def _under_a_grader(pid: int) -> bool:
    """Whether a live pytest or batch process (a grader) is among `pid`'s ancestors."""
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                pid = int(f.read().rsplit(b")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                command = f.read().replace(b"\0", b" ")
        except (OSError, ValueError, IndexError):
            return False
        if b"pytest" in command or b"autograder batch" in command or b"autograder grade" in command:
            return True
    return False


def _grade_corpus(root: Path, entries: list[Bad], *extra: str) -> dict:
    submissions = root / "submissions"
    for bad in entries:
        folder = submissions / bad.name
        shutil.copytree(REPO / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
        _apply(folder, bad.edits)
    out = root / "gradebook" / "grades.csv"
    out.parent.mkdir()
    before = _fingerprint(REPO / "autograder", REPO / "solutions", submissions)
    running = frozenset(_sandbox_processes())
    proc = batch(submissions, out, *extra, budget=len(entries))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, newline="") as f:
        rows = {row["submission"]: row for row in csv.DictReader(f)}
    results = {
        bad.name: Results.from_json(
            __import__("json").loads((out.with_suffix(".results") / bad.name / "results.json").read_text())
        )
        for bad in entries
    }
    after = _fingerprint(REPO / "autograder", REPO / "solutions", submissions)
    return {
        "rows": rows,
        "results": results,
        "changed": sorted(k for k in before if before[k] != after.get(k)),
        "survivors": _sandbox_processes(running),
        "submissions": submissions,
        "out": out,
    }


def _check_entry(graded: dict, bad: Bad, full: dict[str, tuple[int, int]]) -> None:
    row, results = graded["rows"][bad.name], graded["results"][bad.name]
    log = graded["out"].with_suffix(".results") / bad.name / "grader.log"
    assert row["status"] == "graded", (row, log.read_text()[-6000:])  # the log ends with where a stuck grader was
    assert results.fresh_inputs is not None  # a batch is a graded run: its visible checks were asked afresh too
    status = {t.task.id: t.status for t in results.tasks}
    scores = {t.task.id: t.earned for t in results.tasks}
    output = "\n".join(f"{r.task} {r.status}: {r.message}" for r in results.tests if r.status != "passed")
    for task_id, expected in bad.lost.items():
        assert status[task_id] in expected.split("|"), (task_id, status[task_id], output[-3000:])
        assert scores[task_id] < full[task_id][0]
    for task_id, (points, _) in full.items():
        assert scores[task_id] <= points
        waiting = registry.task(task_id).runs_whole and any(scores[t] < full[t][0] for t in regions.waits_for(task_id))
        if waiting:  # a capstone runs the whole engine only once every task of it passes
            assert status[task_id] == "not started", (task_id, status[task_id])
        elif task_id not in bad.lost and task_id not in bad.may_lose:
            assert scores[task_id] == points, (task_id, status[task_id], output[-3000:])
    graded_sum = sum(score for task_id, score in scores.items() if not registry.task(task_id).bonus)
    assert results.score == graded_sum == int(row["total"])
    if bad.message:
        assert bad.message in output, output[:3000]
    assert all(len(r.message) < 20_000 for r in results.tests)


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> dict:
    """Every corpus entry graded by `python -m autograder batch`, 2 at a time, at the best level here."""
    return _grade_corpus(tmp_path_factory.mktemp("corpus"), CORPUS)


@pytest.mark.parametrize("bad", CORPUS, ids=lambda bad: bad.name)
def test_a_bad_submission_costs_exactly_what_it_breaks(graded, bad, reference_run):
    _check_entry(graded, bad, reference_run.score_by_task)


@pytest.mark.skipif(not AS_ROOT, reason="the sandbox level needs root and namespaces")
def test_no_submission_changes_a_file_or_leaves_a_process(graded):
    assert graded["changed"] == []
    assert graded["survivors"] == []
    rows = graded["rows"]
    assert "harmed" not in rows and all(row["status"] == "graded" for row in rows.values())


@pytest.fixture(scope="module")
def graded_without_root(tmp_path_factory) -> dict:
    level = level_here("processes")
    return _grade_corpus(tmp_path_factory.mktemp("corpus-processes"), VERDICT, "--isolation", level)


@pytest.mark.parametrize("bad", VERDICT, ids=lambda bad: bad.name)
def test_without_root_the_verdict_still_cannot_be_forged(graded_without_root, bad, reference_run):
    _check_entry(graded_without_root, bad, reference_run.score_by_task)


def test_the_gradebook_has_one_row_per_submission_and_resumes(graded, reference_run):
    rows, submissions, out = graded["rows"], graded["submissions"], graded["out"]
    full = reference_run.score_by_task
    assert set(rows) == {bad.name for bad in CORPUS}
    assert all(int(row["max"]) == sum(most for _, most in full.values()) for row in rows.values())  # bonus: 0
    before = out.read_text()
    shutil.copytree(REPO / "exercises", submissions / "late_submission", ignore=shutil.ignore_patterns("__pycache__"))
    proc = batch(submissions, out)
    assert proc.returncode == 0 and "1 submission(s) graded now" in proc.stdout, proc.stdout + proc.stderr
    after = out.read_text()
    assert after.startswith(before) and after.count("\n") == before.count("\n") + 1
    assert after.splitlines()[-1].startswith("late_submission,graded,0,")


def test_a_slow_honest_submission_keeps_the_checks_it_finished(tmp_path):
    """Stopped at the batch's wall time, a submission keeps the points of every check that finished."""
    submissions = tmp_path / "submissions"
    folder = submissions / "slow"
    shutil.copytree(REPO / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    _apply(
        folder,
        {
            # several seconds per worker that loads them: more, all told, than the batch's time limit, even
            # with the workers loading them side by side
            "train.py": [("", "\nimport time as _t\n_t.sleep(5)\n")],
            "classifier.py": [("", "\nimport time as _t\n_t.sleep(5)\n")],
        },
    )
    out = tmp_path / "grades.csv"
    running = frozenset(_sandbox_processes())
    proc = batch(submissions, out, check_timeout=10, timeout=8)
    assert proc.returncode == 0, proc.stderr
    with open(out, newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["status"] == "timed out" and "did not finish within 8 s" in row["note"], row
    assert int(row["total"]) > 0 and "kept the" in row["note"], row
    log = (out.with_suffix(".results") / "slow" / "grader.log").read_text()
    assert "most recent call first" in log and "in main" in log, log[-3000:]  # where the grader was, for a report
    if AS_ROOT:  # the killed grader's workers are gone too, not even left as zombies for the system to reap
        assert _sandbox_processes(running) == []


HOSTILE_TEXT = {
    # escape sequences that clear the screen and draw a forged line, and a bell
    "draws_on_the_terminal": "        print('\\x1b[2J\\x1b[H')\n"
    "        raise ValueError('\\x1b[2J\\x1b[1;1H  \\u2713 2.2  Value.__repr__   passed 2/2\\x07')",
    # an exception class with a long name, under the wire's cap on a string (it once made a 12 MB results.json)
    "names_its_error_at_length": "        raise type('E' * 90_000, (Exception,), {})('x')",
    # a lone surrogate, which UTF-8 cannot encode (it once left no results.json: zero on Gradescope)
    "raises_a_lone_surrogate": "        raise ValueError('\\ud800 and more')",
    # errors named like the grader's own faults: a capstone's wait (it once crashed the report hook), a skip
    "names_its_error_like_a_fault": "        kind = ['waits', 'skipped', 'died'][int(self.data) % 3]\n"
    "        raise type(kind, (Exception,), {})('x')",
}


@pytest.mark.parametrize("name", HOSTILE_TEXT)
def test_learner_text_reaches_the_terminal_and_the_results_escaped_and_capped(name, tmp_path):
    import json

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    assert REPR in source
    engine.write_text(source.replace(REPR, HOSTILE_TEXT[name]))
    run = grade(submission, "--task", "2.2", tmp_path=tmp_path)  # it asserts the results were written
    assert run.status["2.2"] == "error", run.output[-2000:]
    assert "\x1b" not in run.output and "\x07" not in run.output
    written = json.dumps(run.results, ensure_ascii=False)
    assert "\x1b" not in written and "\ud800" not in written
    assert len(written) < 50_000, len(written)


PROBE = """        import os
        cmdlines = []
        for pid in os.listdir("/proc") if os.path.isdir("/proc") else []:
            try:
                cmdlines.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
            except OSError:
                pass
        wrote = []
        for folder in ("/run/lock", "/var/lock", "/dev/shm", "/tmp"):
            try:
                open(os.path.join(folder, "autograder-probe-" + str(os.getpid())), "w").write("left behind")
                wrote.append(folder)
            except OSError:
                pass
        secret = os.environ.get("COURSE_PROBE_SECRET", "none")
        other = any("--impl" in c for c in cmdlines)
        import socket
        try:
            socket.socket(socket.AF_UNIX).connect("/run/autograder-probe.sock")
            reached = True
        except OSError:
            reached = False
        devices = sorted(os.listdir("/dev"))
        import ctypes
        try:  # a user namespace of its own, in which it would be root (and could mount a tmpfs and fill it)
            userns = ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0
        except AttributeError:
            userns = False
        host = [p for p in ("/etc/passwd", "/home", "/var", "/srv", HOST_FILE) if os.path.exists(p)]
        status = open("/proc/self/status").read() if os.path.exists("/proc/self/status") else ""
        caps = [line.split()[1] for line in status.splitlines() if line.startswith("CapEff:")]
        raise ValueError(
            f"probe: secret={secret} graders_seen={other} wrote={wrote} socket={reached} dev={devices} userns={userns}"
            f" host={host} caps={caps}"
        )"""


def test_a_worker_sees_no_secret_no_grader_and_leaves_nothing_in_shared_folders(tmp_path):
    """The grader's environment stays out of reach at every level; at `sandbox` so do the other processes'
    command lines (the other submissions' folder names), every folder that anyone may write, host sockets, the
    host's files (bubblewrap shows only the system's and Python's), capabilities, and a user namespace of its own."""
    import glob
    import json

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    host_file = tmp_path / "host-file-outside-the-submission"  # under /tmp: private at `sandbox`, as is all but Python
    host_file.write_text("the grader's")
    engine.write_text(engine.read_text().replace(REPR, PROBE.replace("HOST_FILE", repr(str(host_file)))))
    before = set(glob.glob("/run/lock/autograder-probe-*") + glob.glob("/dev/shm/autograder-probe-*"))
    listening = None
    if AS_ROOT:  # a host socket, like syslog's /dev/log or D-Bus's /run/dbus/system_bus_socket
        import socket

        listening = socket.socket(socket.AF_UNIX)
        Path("/run/autograder-probe.sock").unlink(missing_ok=True)
        listening.bind("/run/autograder-probe.sock")
        os.chmod("/run/autograder-probe.sock", 0o777)
        listening.listen()
    try:
        run = grade(submission, "--task", "2.2", tmp_path=tmp_path, env={"COURSE_PROBE_SECRET": "s3cret-value"})
    finally:
        if listening:
            listening.close()
            Path("/run/autograder-probe.sock").unlink(missing_ok=True)
    said = json.dumps(run.results) + run.output
    assert "probe: secret=" in said, run.output[-2000:]
    assert "s3cret-value" not in said and "secret=none" in said
    if AS_ROOT:
        assert "graders_seen=False" in said and "socket=False" in said and "userns=True" not in said
        assert "'fuse'" not in said and "'kmsg'" not in said and "'null'" in said, said[-1500:]
        assert "host=[]" in said and "caps=['0000000000000000']" in said, said[-1500:]  # bubblewrap's file system
        left = set(glob.glob("/run/lock/autograder-probe-*") + glob.glob("/dev/shm/autograder-probe-*")) - before
        assert not left, left


# Learner code that passes what it sees in a hidden check to a later check that shows it: every way there is for one
# worker to reach another (a file in a folder anyone may write, a pty pair, a lock on a file every worker reads, the
# session's scheduling group). Task 1.1's hidden check is the only one that steps by 1e-3 and 1e-4; task 1.2's
# visible checks come after it in the lesson's file, and say what reached them.
CHANNELS = """

import ctypes as _ctypes
import fcntl as _fcntl
import glob as _glob
import os as _os

_KEPT = []  # what the sender keeps open, for as long as its worker lives
_FILES = ["/tmp", "/var/tmp", "/dev/shm", "/run/lock"]


def _send(text):
    for folder in _FILES:
        try:
            with open(_os.path.join(folder, "channel-TOKEN"), "w") as f:
                f.write(text)
            _os.chmod(_os.path.join(folder, "channel-TOKEN"), 0o666)
        except OSError:
            pass
    libc = _ctypes.CDLL(None, use_errno=True)
    try:
        master = _os.open("/dev/ptmx", _os.O_RDWR | _os.O_NOCTTY)
        number = _ctypes.c_int(0)
        libc.ioctl(master, 0x40045431, _ctypes.byref(number))  # unlockpt
        libc.ioctl(master, 0x80045430, _ctypes.byref(number))  # ptsname
        other = _os.open(f"/dev/pts/{number.value}", _os.O_RDWR | _os.O_NOCTTY)
        _os.fchmod(other, 0o666)
        _os.write(master, text.encode() + b"\\n")
        _KEPT.extend([master, other])
    except OSError:
        pass
    try:
        shared = _os.open(_os.__file__, _os.O_RDONLY)
        _fcntl.flock(shared, _fcntl.LOCK_SH | _fcntl.LOCK_NB)
        _KEPT.append(shared)
    except OSError:
        pass
    try:
        libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
        with open("/proc/self/autogroup", "w") as f:
            f.write("13")
    except OSError:
        pass


def _received():
    found = []
    for folder in _FILES:
        try:
            with open(_os.path.join(folder, "channel-TOKEN")) as f:
                found.append(f.read())
        except OSError:
            pass
    for path in _glob.glob("/dev/pts/[0-9]*"):
        try:
            if _os.stat(path).st_uid < 200_000:  # only a worker's pty: never a terminal of the machine's
                continue
            fd = _os.open(path, _os.O_RDONLY | _os.O_NONBLOCK | _os.O_NOCTTY)
            found.append(_os.read(fd, 300).decode(errors="replace"))
            _os.close(fd)
        except OSError:
            pass
    try:
        shared = _os.open(_os.__file__, _os.O_RDONLY)
        _fcntl.flock(shared, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
        _fcntl.flock(shared, _fcntl.LOCK_UN)
    except BlockingIOError:
        found.append("HIDDEN-INPUT through a lock")
    except OSError:
        pass
    try:
        with open("/proc/self/autogroup") as f:
            if "nice 13" in f.read():
                found.append("HIDDEN-INPUT through the autogroup")
    except OSError:
        pass
    return found
"""


@pytest.mark.parametrize("level", ["sandbox", "user", "processes"])
def test_no_input_of_a_hidden_check_reaches_a_visible_message(level, tmp_path):
    """A graded run shows nothing of its hidden checks: what learner code sees in one reaches no visible check, at
    any level, through whatever the workers could share: every visible check runs before any hidden one, and at the
    root levels workers share no pty, no lock and no scheduling group."""
    import json
    import secrets

    from autograder.grading import isolation

    if isolation.why_not(level):
        pytest.skip(f"--isolation {level}: {isolation.why_not(level)}")
    token = secrets.token_hex(6)
    submission = copy_of("solutions", tmp_path)
    derivatives = submission / "derivatives.py"
    text = derivatives.read_text() + CHANNELS.replace("TOKEN", token)
    text = text.replace(FORWARD, '    if h in (1e-3, 1e-4):\n        _send(f"HIDDEN-INPUT x={x!r}")\n' + FORWARD)
    central = "    _check_step(h)\n    return (fn(x + h) - fn(x - h)) / (2 * h)"
    text = text.replace(central, '    raise ValueError(f"received {_received()}")')
    derivatives.write_text(text)
    autogroup = Path("/proc/self/autogroup")  # this session's: at `processes` the workers are in it too
    try:
        autogroup.write_text("0")  # no signal left in it by another run
    except OSError:
        pass
    try:
        run = grade(submission, "--lesson", "1", "--fresh-inputs", "7", "--isolation", level, tmp_path=tmp_path)
    finally:
        for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
            Path(folder, f"channel-{token}").unlink(missing_ok=True)
        try:
            autogroup.write_text("0")  # what a sender at `processes` may have set
        except OSError:
            pass
    checks = run.results["extra_data"]["results"]
    assert [c["status"] for c in checks if c["task"] == "1.1" and c["hidden"]] == ["passed"], checks  # it sent
    visible = [c["message"] for c in checks if c["task"] == "1.2" and not c["hidden"] and c["status"] != "passed"]
    assert visible and all("received" in m for m in visible), visible  # so did the receivers
    assert not any("HIDDEN-INPUT" in m for m in visible), visible
    assert "HIDDEN-INPUT" not in json.dumps([c for c in checks if not c["hidden"]]), checks


# A plugin for the grader's run: the order in which its checks run, pytest's and those the settler grades quietly
# (each check's own verdict is kept once, as it ran: `Settler.conclude`), one line per check into $CHECK_ORDER.
CHECK_ORDER = """
import json
import os

from autograder.grading import settle

_conclude = settle.Settler.conclude


def conclude(self, result, *args, **kwargs):
    with open(os.environ["CHECK_ORDER"], "a") as f:
        f.write(json.dumps([result.nodeid, result.task, result.hidden]) + "\\n")
    return _conclude(self, result, *args, **kwargs)


settle.Settler.conclude = conclude
"""


@pytest.mark.parametrize("selected", [False, True], ids=["2.3 not selected", "2.3 selected"])
def test_a_visible_failure_that_sends_blame_to_another_task_runs_no_hidden_check_before_a_visible_one(
    selected, tmp_path
):
    """Blame that grades another task quietly keeps a graded run's order: 5.2's visible checks fail, they run
    through 2.3, and 2.3 is graded then, but only its visible checks; its hidden ones wait until every visible check
    (5.3's) has run. 2.3 fails only its hidden check (one sum, of its first seeded pair): 5.2's checks, which 2.3's
    visible checks alone would leave failing on their own, end waiting for 2.3, as in a run that knew 2.3 whole."""
    import json
    import random

    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "check_order.py").write_text(CHECK_ORDER)
    order = tmp_path / "order.jsonl"
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    text = engine.read_text()
    hidden_x = random.Random(20231).uniform(-100, 100)  # 2.3's hidden check adds it first; nothing else does
    forward = 'out = Value(self.data + other.data, (self, other), "+")'
    backward = "            other.grad += out.grad\n"
    assert forward in text and backward in text
    text = text.replace(forward, forward.replace("other.data", f"other.data + (self.data == {hidden_x!r})"))
    engine.write_text(text.replace(backward, "            other.grad += 2 * out.grad\n"))
    tasks = ["--task", "2.3"] if selected else []
    own = tmp_path / "own-results.json"  # the grader's own results: a task the run does not select is in `quiet`
    run = grade(
        submission,
        *tasks,
        *("--task", "5.2", "--task", "5.3", "--fresh-inputs", "7", "--results-file", str(own), "-p", "check_order"),
        tmp_path=tmp_path,
        env={"PYTHONPATH": str(plugins), "CHECK_ORDER": str(order)},
    )
    ran = [json.loads(line) for line in order.read_text().splitlines()]
    assert {task for _, task, _ in ran} == {"2.3", "5.2", "5.3"}, ran  # 2.3 was graded, quietly or not
    last_visible = max(i for i, (_, _, hidden) in enumerate(ran) if not hidden)
    first_hidden = min(i for i, (_, _, hidden) in enumerate(ran) if hidden)
    shown = "\n".join(
        f"{'hidden ' if hidden else 'visible'} {task} {nodeid.rpartition('::')[2]}" for nodeid, task, hidden in ran
    )
    assert last_visible < first_hidden, f"checks in the order they ran:\n{shown}"
    assert len({nodeid for nodeid, _, _ in ran}) == len(ran), ran  # each check ran once
    results = json.loads(own.read_text())
    every = {c["nodeid"]: c for c in [*results["tests"], *results["quiet"]]}
    assert [c["status"] for c in every.values() if c["task"] == "2.3" and c["status"] != "passed"] == ["failed"]
    assert {c["task"] for c in results["quiet"]} == (set() if selected else {"2.3"}), results["quiet"]
    waits = {(c["status"], c["waits_for"]) for c in every.values() if c["task"] == "5.2" and c["status"] != "passed"}
    assert waits == {("not started", "2.3")}, every
    assert run.status.get("5.3") == "passed", run.output[-3000:]
    assert run.status.get("5.2") == "in progress", run.output[-3000:]


def test_a_capstone_that_passed_before_a_task_it_runs_failed_a_hidden_check_waits_for_it(tmp_path):
    """A graded run asks hidden checks last: the capstone (12.5, the whole engine) runs while 8.2 has passed the
    checks asked so far, and once 8.2 fails a hidden one the capstone waits for it, as it would have had 8.2
    failed first (a bug is charged once, where it is); over the reference, it passes."""
    honest = grade("solutions", "--task", "8.2", "--task", "12.5", "--fresh-inputs", "5", tmp_path=tmp_path)
    assert honest.status == {"8.2": "passed", "12.5": "passed"}, honest.output[-3000:]
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    rule = "self.grad += other * self.data ** (other - 1) * out.grad"
    wrong = "self.grad += (other * self.data ** (other - 1) if other != 0.25 else 0.0) * out.grad"  # hidden only
    assert rule in engine.read_text()
    engine.write_text(engine.read_text().replace(rule, wrong))
    run = grade(submission, "--task", "8.2", "--task", "12.5", "--fresh-inputs", "5", tmp_path=tmp_path)
    checks = run.results["extra_data"]["results"]
    assert [c["status"] for c in checks if c["task"] == "8.2" and c["status"] != "passed"] == ["failed"], checks
    assert run.status["12.5"] == "not started", run.output[-3000:]
    assert {c["waits_for"] for c in checks if c["task"] == "12.5"} == {"8.2"}, checks


def test_a_visible_check_that_waits_quotes_no_hidden_failure():
    """A check that waits for a task quotes why that task fails, but never a hidden check's words: learner code
    can put what it sees in a hidden check into its own exception, which the waiting check would show."""
    from autograder.grading import scorecard
    from autograder.grading.blame import blame_by_dependency
    from autograder.grading.results import Results, TestResult

    leak = "your code raised ValueError: HIDDEN-INPUT x=0.731"
    tests = [
        TestResult("a", "visible", "8.2", 2, "h", status="passed", message=""),
        TestResult("b", "seeded powers", "8.2", 2, "h", hidden=True, status="error", message=leak),
        TestResult("c", "the whole model", "12.5", 2, "h", status="error", message="your code raised KeyError"),
    ]
    results = Results("your submission", "", "user", tests=tests, selected=["8.2", "12.5"], platform="gradescope")
    blame_by_dependency(results, edition=False)
    assert results.tests[2].waits_for == "8.2", results.tests[2]
    shown = [line for t in results.tasks for line in scorecard.task_report(t)]
    shown += scorecard.text(results, hide_hidden=True).splitlines()
    assert not [line for line in shown if "HIDDEN-INPUT" in line], shown


def _has_memory_cgroup() -> bool:
    from autograder.grading import isolation

    run = isolation.memory_cgroup()
    isolation.remove_cgroup(run)
    return run is not None


@pytest.mark.skipif(not AS_ROOT or not _has_memory_cgroup(), reason="needs root and a memory cgroup")
def test_memory_that_the_address_space_limit_does_not_count_is_capped_too(tmp_path):
    """Files in memory (memfd, written and never mapped) escaped RLIMIT_AS: the workers' cgroup counts them."""
    import json

    hog = """        import os
        fds = [os.memfd_create(f"hog{i}") for i in range(20)]
        for fd in fds:
            os.write(fd, b"x" * (15 << 20))
        raise ValueError(f"wrote {len(fds) * 15} MB")"""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, hog))
    run = grade(submission, "--task", "2.2", "--memory-limit", "200", tmp_path=tmp_path)
    said = json.dumps(run.results)
    assert run.status["2.2"] == "error", run.output[-2000:]
    assert "wrote 300 MB" not in said and "memory limit" in said, said[-2000:]
    assert run.results["extra_data"]["memory_limit"] == "cgroup"


SYSCALL_PROBE = """        import ctypes, errno, os, socket
        libc = ctypes.CDLL(None, use_errno=True)
        resolve = ctypes.CDLL("libseccomp.so.2").seccomp_syscall_resolve_name
        def refused(call, *args):
            number = resolve(call.encode())
            if number < 0:
                return "unknown"
            ctypes.set_errno(0)
            result = libc.syscall(number, *[ctypes.c_long(a) for a in args])
            return "EPERM" if result == -1 and ctypes.get_errno() == errno.EPERM else f"{result}/{ctypes.get_errno()}"
        said = {
            "socket": refused("socket", socket.AF_INET, socket.SOCK_STREAM, 0),
            "unix socket": refused("socket", socket.AF_UNIX, socket.SOCK_STREAM, 0),
            "socketpair": refused("socketpair", socket.AF_UNIX, socket.SOCK_STREAM, 0, 0),
            "shmget": refused("shmget", 0, 1 << 20, 0o1666),
            "msgget": refused("msgget", 0, 0o1666),
            "semget": refused("semget", 0, 1, 0o1666),
            "mq_open": refused("mq_open", 0, 0o100, 0o666, 0),
            "add_key": refused("add_key", 0, 0, 0, 0, -4),
            "keyctl": refused("keyctl", 0, -4, 0, 0, 0),
            "io_uring_setup": refused("io_uring_setup", 1, 0),
            "ptrace": refused("ptrace", 0, 0, 0, 0),
            "perf_event_open": refused("perf_event_open", 0, 0, -1, -1, 0),
            "bpf": refused("bpf", 0, 0, 0),
            "mount": refused("mount", 0, 0, 0, 0, 0),
            "unshare": refused("unshare", 0x10000000),
            "setns": refused("setns", 0, 0),
            "execve": refused("execve", 0, 0, 0),
            "clone with a namespace": refused("clone", 0x20000000 | 17, 0, 0, 0, 0),
            "userfaultfd": refused("userfaultfd", 0),
        }
        # what every worker shares and could signal through: locks on a file they all read (the interpreter's own
        # library), a pty pair, a scheduling handle of their session, their names in /proc
        shared = os.open(os.__file__, os.O_RDONLY)
        lock = ctypes.create_string_buffer(64)  # struct flock, zeroed: a read lock on the whole file
        said["flock"] = refused("flock", shared, 1 | 4)  # LOCK_SH | LOCK_NB
        said["fcntl lock"] = refused("fcntl", shared, 6, ctypes.addressof(lock))  # F_SETLK
        said["fcntl open file lock"] = refused("fcntl", shared, 37, ctypes.addressof(lock))  # F_OFD_SETLK
        said["fcntl lock query"] = refused("fcntl", shared, 5, ctypes.addressof(lock))  # F_GETLK
        try:
            master = os.open("/dev/ptmx", os.O_RDWR | os.O_NOCTTY)
        except OSError:
            said["unlockpt"] = "unknown"  # no pty to make at all
        else:
            unlock = ctypes.c_int(0)
            said["unlockpt"] = refused("ioctl", master, 0x40045431, ctypes.addressof(unlock))  # TIOCSPTLCK
        said["TIOCSTI with high bits"] = refused("ioctl", shared, (1 << 32) | 0x5412, 0)  # the kernel reads 32 bits
        said["prctl set name"] = refused("prctl", 15, ctypes.addressof(ctypes.create_string_buffer(b"x")), 0, 0, 0)
        said["prctl dumpable"] = refused("prctl", 4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: /proc/self/* its own
        try:
            with open("/proc/self/autogroup", "w") as f:
                f.write("19")
            said["autogroup renice"] = "written"
        except OSError:
            said["autogroup renice"] = "EPERM"
        allowed = sorted((k, v) for k, v in said.items() if v not in ("EPERM", "unknown"))
        raise ValueError("syscalls: " + repr(allowed))"""


@pytest.mark.skipif(not AS_ROOT, reason="the system-call filter shuts in workers at the root levels only")
@pytest.mark.parametrize("level", ["sandbox", "user"])
def test_a_worker_can_make_only_the_system_calls_it_needs(level, tmp_path):
    """An allowlist, not a denylist: each family a worker never needs is refused with EPERM, from inside a worker;
    so is each object workers could pass data through (locks on a file they all read, a pty pair, their session's
    scheduling group, their names in /proc), and each call is matched on all 64 bits of its arguments."""
    import json

    from autograder.grading import isolation

    if isolation.why_not(level):
        pytest.skip(f"--isolation {level}: {isolation.why_not(level)}")
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, SYSCALL_PROBE))
    run = grade(submission, "--task", "2.2", "--isolation", level, tmp_path=tmp_path)
    said = json.dumps(run.results) + run.output
    assert "syscalls: []" in said, said[-2000:]


def test_batch_trusts_no_folder_name(tmp_path):
    """A folder named like a formula lands in the gradebook as text; one named like another's results file owns
    only its own folder of results."""
    from autograder.grading import batch as batching

    submissions = tmp_path / "submissions"
    names = ['=HYPERLINK("x","y")', "b_victim", "b_victim.results", "@sum", "-1"]
    for name in names:
        shutil.copytree(
            REPO / "exercises", submissions / name, ignore=shutil.ignore_patterns("__pycache__", "notebooks")
        )
    out = tmp_path / "grades.csv"
    proc = batch(submissions, out, budget=len(names))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    with open(out, newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted(batching.uncell(row["submission"]) for row in rows) == sorted(names)
    for row in rows:
        for value in row.values():
            assert not value.startswith(batching.FORMULA), row
    kept = out.with_suffix(".results")
    for name in names:
        assert Results.from_json(__import__("json").loads((kept / name / "results.json").read_text())).tests
    assert batching.finished(out) == set(names)  # a second run grades none of them again


def test_batch_shows_a_folders_or_files_control_characters_escaped_in_its_progress_and_every_log(tmp_path):
    """A submission folder named with terminal escape sequences (clear the screen, red, a bell), holding a file named
    like that: the progress line, the batch's output, each grader's log and the gradebook's notes show them escaped;
    the gradebook keeps the folder's name as it is, to find it again (a second run resumes)."""
    name = "draws\x1b[2J\x1b[31mRED\x07"
    submissions = tmp_path / "submissions"
    folder = submissions / name
    shutil.copytree(REPO / "exercises", folder, ignore=shutil.ignore_patterns("__pycache__", "notebooks"))
    (folder / "x\x1b[2Jy.py").symlink_to(folder / "engine.py")  # not graded, and named in the row's note
    out = tmp_path / "grades.csv"
    command = [sys.executable, "-m", "autograder", "batch", str(submissions), "--out", str(out), "--jobs", "1"]
    proc = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    log = (out.with_suffix(".results") / name / "grader.log").read_text()
    with open(out, newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert "\\x1b[2J" in proc.stderr and "\\x1b[2J" in log and "\\x1b[2J" in row["note"], proc.stderr[-500:]
    for text in (proc.stdout, proc.stderr, log, row["note"]):
        assert "\x1b" not in text and "\x07" not in text
    assert row["submission"] == name


def test_hint_reads_and_writes_no_file_through_a_link(tmp_path):
    """`hint` on a handed-in folder: its `.hints-seen.json` is a link to a file outside it, which stays as it was."""
    folder = copy_of("exercises", tmp_path)
    outside = tmp_path / "instructors-file.json"
    outside.write_text('{"1.1": 3}\n')
    (folder / ".hints-seen.json").symlink_to(outside)
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "autograder", "hint", "1.1", "--impl", str(folder)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, proc.stderr
    assert outside.read_text() == '{"1.1": 3}\n'  # neither read (level 3) nor written
    assert not (folder / ".hints-seen.json").is_symlink()
    assert "hint 2" in proc.stdout.lower() or "2/" in proc.stdout, proc.stdout


def test_reset_and_sync_write_only_the_folders_own_files_never_through_a_link(tmp_path):
    """`reset` and `sync --force` on a folder whose engine.py is a link to a file outside it (an instructor's, the
    system's) refuse it and write nothing, not even a copy beside the link; a hard link to a file outside keeps
    that file as it was (the folder's name is given a new file)."""
    from autograder.course import regions as course

    folder = copy_of("exercises", tmp_path)
    solutions = REPO / "solutions" / "engine.py"
    done = course.generate(solutions.read_text(), "engine", frozenset({"2.3"}), str(solutions))
    outside = tmp_path / "instructors-engine.py"
    outside.write_text(done)
    engine = folder / "engine.py"
    engine.unlink()
    engine.symlink_to(outside)

    def command(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True, text=True, timeout=120
        )

    refused = command("reset", "2.3", "--impl", str(folder))
    assert refused.returncode == 1 and "symbolic link" in refused.stderr, refused.stdout + refused.stderr
    forced = command("sync", "--into", str(folder), "--force")
    assert "kept" in forced.stderr and "not a regular file" in forced.stderr, forced.stdout + forced.stderr
    assert outside.read_text() == done and engine.is_symlink()
    assert not list(folder.glob("*.bak")) and not list(tmp_path.glob("*.bak"))
    engine.unlink()
    os.link(outside, engine)  # one file, two names: the folder's, and one outside it
    reset_done = command("reset", "2.3", "--impl", str(folder))
    assert reset_done.returncode == 0, reset_done.stdout + reset_done.stderr
    assert outside.read_text() == done, "reset wrote into a file outside the folder"
    assert engine.read_text() != done and engine.stat().st_nlink == 1


COPY_PROBE = """        import os, sys
        found = []
        for entry in sys.path + [os.path.dirname(p) for p in sys.path]:
            for name in ("solutions/engine.py", "autograder/grading/plugin.py"):
                try:
                    with open(os.path.join(entry, name)) as f:
                        text = f.read()
                    if "BEGIN SOLUTION" in text or "def pytest_addoption" in text:
                        found.append(os.path.join(entry, name))
                except OSError:
                    pass
        raise ValueError("copies: " + repr(sorted(set(found))))"""


@pytest.mark.skipif(not AS_ROOT, reason="the sandbox level's file system is bubblewrap's, as root")
def test_a_copy_of_the_course_installed_under_usr_local_is_covered(tmp_path):
    """`pip install .` into a prefix under /usr/local (bound whole, with /usr): the worker sees no reference there."""
    import json
    import tempfile

    prefix = Path(tempfile.mkdtemp(prefix="autograder-probe-", dir="/usr/local/lib"))
    source = tmp_path / "course"  # a copy: building the package leaves a build/ folder where it is built
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(".git", ".cache", "site", "course", "__pycache__"))
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--no-compile"]
            + ["--target", str(prefix), str(source)],
            check=True,
            capture_output=True,
            env={**os.environ, "PIP_NO_INDEX": "1"},
        )
        assert (prefix / "solutions" / "engine.py").exists()
        prefix.chmod(0o755)
        submission = copy_of("solutions", tmp_path)
        engine = submission / "engine.py"
        engine.write_text(engine.read_text().replace(REPR, COPY_PROBE))
        run = grade(submission, "--task", "2.2", tmp_path=tmp_path, env={"PYTHONPATH": str(prefix)})
        said = json.dumps(run.results) + run.output
        assert "copies: []" in said, said[-2000:]
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


DAEMON = """        import os, time
        if os.fork() == 0:  # a daemon: out of the worker's process group, waiting for the grader to end
            os.setsid()
            if os.fork() == 0:
                time.sleep(4)
                open(MARKER, "w").write("written after the run")
            os._exit(0)
        return f"Value(data={self.data})\""""


@pytest.mark.skipif(not AS_ROOT, reason="as root, every worker's processes are in a cgroup of the run's")
def test_nothing_a_worker_starts_outlives_the_run(tmp_path):
    """At `processes` as root a worker is root: a daemon it leaves (its own session, out of its process group)
    would write after the run, into a cache or anywhere. The run's cgroup ends it with the run."""
    import time

    marker = tmp_path / "marker"
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, DAEMON.replace("MARKER", repr(str(marker)))))
    run = grade(submission, "--task", "2.2", "--isolation", level_here("processes"), tmp_path=tmp_path)
    assert run.results["extra_data"]["memory_limit"] == "cgroup", run.output[-2000:]
    time.sleep(6)
    assert not marker.exists(), "a daemon the worker started outlived the run"


@pytest.mark.skipif(sys.platform != "linux", reason="zygotes fork the workers on Linux only")
def test_the_references_re_ask_shares_no_session_and_no_cgroup_with_the_learners_workers():
    """A learner's worker can renice its session's scheduling group (Linux's autogroup) and fill its run's memory
    cgroup. Were the reference's re-ask of a failed check forked from the same zygote, in the same session and
    cgroup, the learner could starve it until it timed out: the failed check would be void, and the learner's
    share of the points would rise. Its zygotes are its own, each in a session of its own, under a cgroup of its
    own; nor is any zygote in the grader's session."""
    from autograder.grading.grader import Grader
    from autograder.grading.options import GradeOptions
    from autograder.grading.tasks import graded

    grader = Grader(GradeOptions(impl="solutions", tasks=("2.3",)))
    grader.start()
    try:
        checker = grader.self_checker()
        checker.prepare(graded("2.3"))
        if grader.workers.start != "fork":
            pytest.skip(f"this run's workers are not forked: {grader.workers.spawned_because}")
        learners = [z.process.pid for z in grader.zygotes._zygotes.values()]
        references = [z.process.pid for z in checker.zygotes._zygotes.values()]
        assert learners and references and not set(learners) & set(references)
        sessions = {os.getsid(pid) for pid in learners + references}
        assert len(sessions) == len(learners + references) and os.getsid(0) not in sessions
        if grader.workers.options["cgroup"]:
            assert checker.workers.options["cgroup"] not in (None, grader.workers.options["cgroup"])
    finally:
        grader.stop_workers()
    assert not (checker.workers or checker.zygotes._zygotes), "the re-ask's zygotes end with the run"


def _ended_graders_cgroups() -> set[str]:
    """The memory cgroups of graders whose process has ended: what a grader killed from outside left behind."""
    from autograder.grading import isolation

    left = set()
    for base in isolation.memory_cgroup_bases():
        for path in glob.glob(os.path.join(base, "autograder-*")):
            match = isolation.CGROUP_NAME.fullmatch(os.path.basename(path))
            if match and not os.path.exists(f"/proc/{match[1]}"):
                left.add(path)
    return left


@pytest.mark.skipif(not AS_ROOT or not _has_memory_cgroup(), reason="needs root and a memory cgroup")
def test_a_grader_killed_from_outside_leaves_no_process_and_no_cgroup(tmp_path):
    """A grader stopped at its deadline (batch, a platform's run) or killed by anyone cannot clean up after itself:
    its workers' cgroups, and whatever is still in them, are removed by whoever stopped it (batch), and otherwise by
    the next grader that makes a memory cgroup beside them."""
    import signal
    import time

    from autograder.grading import batch, isolation
    from autograder.grading.options import GradeOptions

    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, "        import time\n        time.sleep(3600)"))
    before = _ended_graders_cgroups()
    results = tmp_path / "results"
    results.mkdir()
    outcome = batch.grade_one(submission, results, 15, GradeOptions(tasks=("2.2",)))  # stopped at its deadline
    assert outcome.status == "timed out", outcome
    assert not _ended_graders_cgroups() - before

    grader = subprocess.Popen(  # killed by someone else: nobody removes its cgroups until the next grader
        [sys.executable, "-m", "autograder", "grade", f"--impl={submission}", "--task", "2.2"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    bases = isolation.memory_cgroup_bases()
    while not any(glob.glob(os.path.join(base, f"autograder-{grader.pid}", "w*")) for base in bases):
        assert time.monotonic() < deadline and grader.poll() is None, "the grader's workers never started"
        time.sleep(0.1)
    os.killpg(grader.pid, signal.SIGKILL)
    grader.wait()
    left = _ended_graders_cgroups() - before
    assert any(f"autograder-{grader.pid}" in path for path in left), left
    isolation.remove_cgroup(isolation.memory_cgroup())  # the next grader's first step
    # the killed grader's are gone (another grader of the machine may be ending beside this test: not its to judge)
    assert not [path for path in _ended_graders_cgroups() if f"autograder-{grader.pid}" in path]


# --- judgements over the learner's data: each under a limit, and text read in linear time ---------------------------

# a line of a drawing's DOT text that backtracking patterns such as `^\s*(ID)\s*(\[.*\])?\s*;?\s*$` take days over
HOSTILE_DOT_LINE = "\ta" + " " * 20_000 + "x"
DRAWS_A_LONG_LINE = '    dot.body.append("\\ta" + " " * 20_000 + "x\\n")\n    return dot\n    ### END SOLUTION'

# A plugin for the grader's run: task 3.2's judgements read DOT text with the backtracking patterns they once had,
# standing for any judgement whose work an answer can blow up.
BACKTRACKING_JUDGE = r"""
import re

ID = r'"(?:[^"\\]|\\.)*"|-?[\w.]+'
EDGE = re.compile(rf"^\s*({ID})\s*->\s*({ID})\s*(?:\[(.*)\])?\s*;?\s*$")
NODE = re.compile(rf"^\s*({ID})\s*(?:\[(.*)\])?\s*;?\s*$")
ATTR = re.compile(rf"({ID})\s*=\s*({ID})")


def unquote(text):
    return text[1:-1].replace('\\"', '"') if len(text) >= 2 and text[0] == text[-1] == '"' else text


def parse_dot(source):
    nodes, edges = {}, set()
    for line in source.splitlines():
        if match := EDGE.match(line):
            tail, head = unquote(match[1]), unquote(match[2])
            edges.add((tail, head))
            nodes.setdefault(tail, {})
            nodes.setdefault(head, {})
        elif (match := NODE.match(line)) and unquote(match[1]) not in ("graph", "node", "edge", "digraph"):
            attrs = nodes.setdefault(unquote(match[1]), {})
            attrs.update((unquote(k), unquote(v)) for k, v in ATTR.findall(match[2] or ""))
    return nodes, edges


def pytest_collection_modifyitems(items):
    for item in items:
        if hasattr(item.module, "parse_dot"):
            item.module.parse_dot = parse_dot
"""


def test_a_judgement_past_its_time_limit_fails_its_check_and_the_run_goes_on(tmp_path):
    """A judgement whose work the answer blows up (a backtracking pattern over a drawing's long line: days) is
    stopped at its CPU limit, the check's: that check fails, saying so, and every other check is graded."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "backtracking_judge.py").write_text(BACKTRACKING_JUDGE)
    submission = copy_of("solutions", tmp_path)
    graph = submission / "graph.py"
    graph.write_text(graph.read_text().replace("    return dot\n    ### END SOLUTION", DRAWS_A_LONG_LINE))
    run = grade(
        submission,
        *("--task", "3.1", "--task", "3.2", "--check-timeout", "1", "-p", "backtracking_judge"),
        tmp_path=tmp_path,
        env={"PYTHONPATH": str(plugins)},
        timeout=300,
    )
    assert run.status == {"3.1": "passed", "3.2": "failed"}, run.output[-3000:]
    stopped = [c for c in run.results["extra_data"]["results"] if "stopped judging" in c["message"]]
    assert stopped and all(c["status"] == "failed" for c in stopped), run.output[-3000:]
    assert "after 1 s of its CPU time" in stopped[0]["message"]


def test_the_text_of_a_drawing_is_read_in_time_proportional_to_it():
    """Task 3.2's judgements read the learner's DOT text without a pattern that backtracks: the lines that took a
    backtracking reader days (runs of spaces between tokens, quotes, attributes) take it milliseconds."""
    lines = [
        HOSTILE_DOT_LINE,
        "\ta" + " " * 20_000 + "[" + " " * 20_000 + "x",
        "\t" + '"' * 30_001,
        "\ta [" + "x = y " * 5_000,
        "\t" + "a -> " * 5_000,
    ]
    probe = (
        "import sys, time\n"
        "from autograder.lessons.test_03_graph import parse_dot\n"
        "lines = sys.stdin.read().split('\\n')\n"
        "start = time.process_time()\n"
        "for line in lines:\n"
        "    parse_dot('digraph {\\n' + line + '\\n}')\n"
        "print(time.process_time() - start)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input="\n".join(lines), cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert float(done.stdout) < 2.0, done.stdout


def test_a_stack_a_stopped_worker_sends_is_read_whatever_its_numbers():
    """The frames a worker past its deadline reports are its to write: a line number of 5,000 digits (past
    Python's limit on converting one) is not a frame, and the others still are."""
    from autograder.grading import handle

    dump = b'  File "engine.py", line ' + b"9" * 5_000 + b' in f\n  File "engine.py", line 12 in __pow__\n'
    assert handle.stack_of(dump) == [("engine.py", 12, "__pow__")]


# --- `processes`: no learner code runs as root, and the CPU time of what a worker starts counts -----------------------

WHO = """        import os
        raise ValueError(f"euid {os.geteuid()} groups {os.getgroups()}")"""

# a daemon that leaves the run's cgroup (its pid written into the root of each hierarchy), then outlives the run
ESCAPES = """        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for top in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified"):
                    try:
                        with open(top + "/cgroup.procs", "w") as f:
                            f.write(str(os.getpid()))
                    except OSError:
                        pass
                time.sleep(4)
                open(MARKER, "w").write("written after the run")
            os._exit(0)
        return f"Value(data={self.data})\""""

# two children burning CPU side by side, waited for: the worker itself uses almost none
BURNS_IN_CHILDREN = """        import os, time
        children = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                start = time.process_time()
                while time.process_time() - start < 4:
                    pass
                os._exit(0)
            children.append(pid)
        for pid in children:
            os.waitpid(pid, 0)
        return f"Value(data={self.data})\""""


@pytest.mark.skipif(not IS_ROOT, reason="as an ordinary user, workers run as that user")
def test_at_processes_as_root_a_worker_is_a_user_of_its_own(tmp_path):
    """As root, `--isolation processes` runs no learner code as root: each worker is a user of its own, with no
    group (it could otherwise leave the run's cgroup, outlive the run, and write the caches the grader trusts)."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, WHO))
    run = grade(submission, "--task", "2.2", "--isolation", level_here("processes"), tmp_path=tmp_path)
    said = [c["message"] for c in run.results["extra_data"]["results"] if "euid" in c["message"]]
    assert said and all(f"euid {os.geteuid()} " not in message for message in said), run.output[-2000:]
    assert all("groups []" in message for message in said), said
    uid = int(said[0].split("euid ")[1].split()[0])
    assert uid >= sandbox.FIRST_SANDBOX_UID, said


@pytest.mark.skipif(not IS_ROOT, reason="as an ordinary user there is no cgroup of the run's")
def test_at_processes_as_root_a_daemon_cannot_leave_the_runs_cgroup(tmp_path):
    """A daemon a worker leaves behind, which moves itself out of the run's cgroup, is still ended with the run."""
    import tempfile
    import time

    shared = Path(tempfile.mkdtemp(prefix="autograder-marker-"))  # a folder any user may write: the daemon's target
    shared.chmod(0o1777)
    marker = shared / "marker"
    try:
        submission = copy_of("solutions", tmp_path)
        engine = submission / "engine.py"
        engine.write_text(engine.read_text().replace(REPR, ESCAPES.replace("MARKER", repr(str(marker)))))
        running = frozenset(_sandbox_processes())
        run = grade(submission, "--task", "2.2", "--isolation", level_here("processes"), tmp_path=tmp_path)
        assert run.results["extra_data"]["memory_limit"] == "cgroup", run.output[-2000:]
        time.sleep(6)
        assert not marker.exists(), "a daemon left the run's cgroup and outlived the run"
        assert _sandbox_processes(running) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)


@pytest.mark.skipif(sys.platform != "linux", reason="a worker's children are counted on Linux")
def test_at_processes_the_cpu_time_of_a_workers_children_counts(tmp_path):
    """Two children burning 4 s of CPU each, side by side, inside a call of 3 s (2 s and the grace): the call is
    stopped at its CPU limit, as if the worker had burnt it itself."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    engine.write_text(engine.read_text().replace(REPR, BURNS_IN_CHILDREN))
    level = level_here("processes")
    run = grade(submission, "--task", "2.2", "--isolation", level, "--check-timeout", "2", tmp_path=tmp_path)
    assert run.status["2.2"] == "timed out", run.output[-3000:]
    stopped = [c["message"] for c in run.results["extra_data"]["results"] if c["status"] == "timed out"]
    assert any("stopped after the time limit" in message for message in stopped), stopped  # CPU, not the clock
