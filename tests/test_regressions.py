"""The student's regressions: one classic bug at a time, graded as a learner grades it (one task, one lesson as the
Classroom workflow does, then everything), in the student edition and in the full course.

A red line means the learner's code, in every run: every task that goes wrong is the buggy one, every other task
passes or waits for it, pytest's outcomes say the same (a check that waits is skipped, not failed: the closing line
counts what the scorecard shows), and in the edition, where every task runs over the learner's own code for the
others, `Next:` names the buggy task whichever part of the course the run graded (`grading/blame.py`,
`grading/settle.py`). In the full course a task runs over the reference of its prerequisites, so a partial run that
does not grade the buggy task may find nothing wrong at all; it still never reddens a correct task.
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from autograder.course.regions import parse

from .conftest import REPO, grade, in_edition

pytestmark = pytest.mark.slow  # about 35 grading runs (ten in full, a minute's CPU each; the rest partial)


@dataclass(frozen=True)
class Bug:
    edits: tuple[tuple[str, str], ...]  # what the learner got wrong in engine.py: (the reference's text, theirs)
    culprit: str  # the task Next: names
    runs: tuple[tuple[str, ...], ...]  # partial runs that grade checks running through the bug


BUGS = {
    "mul-without-out-grad": Bug(  # `__mul__`'s backward forgets the incoming gradient
        (
            ("self.grad += other.data * out.grad", "self.grad += other.data"),
            ("other.grad += self.data * out.grad", "other.grad += self.data"),
        ),
        "5.3",
        (("--task", "5.1"), ("--lesson", "8"), ("--task", "10.2")),
    ),
    "add-assigns": Bug(  # `=` for `+=` in `__add__`'s backward: a Value used twice loses a contribution
        (
            (
                "            self.grad += out.grad\n            other.grad += out.grad\n",
                "            self.grad = out.grad\n            other.grad = out.grad\n",
            ),
        ),
        "7.1",
        (("--lesson", "8"), ("--task", "11.3")),
    ),
    "tanh-one-minus-t": Bug(  # tanh's derivative written 1 - t
        (("(1 - t**2) * out.grad", "(1 - t) * out.grad"),),
        "5.1",
        (("--lesson", "11"), ("--task", "10.2")),
    ),
    "pow-wrong-rule": Bug(  # the power rule without its - 1: 8.2's headline divides, and division runs `**`
        (
            (
                "self.grad += other * self.data ** (other - 1) * out.grad",
                "self.grad += other * self.data**other * out.grad",
            ),
        ),
        "8.2",
        (("--lesson", "8"), ("--task", "8.4")),
    ),
    "backward-forward-order": Bug(  # the closures called leaves first: 6.2's backward is 6.1's, and 6.1 is named
        (("for v in reversed(topo):", "for v in topo:"),),
        "6.1",
        (("--task", "6.2"), ("--lesson", "6")),
    ),
}
WRONG = {"failed", "error", "timed out", "skipped"}


def submission_with(bug: Bug, folder: Path) -> tuple[Path, set[str]]:
    """A copy of the reference with the bug in it, and the tasks whose code the bug is in (a region may be shared:
    `__add__`'s backward is task 5.2's and 7.1's)."""
    shutil.copytree(REPO / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    engine = folder / "engine.py"
    text = engine.read_text()
    buggy = set()
    for right, wrong in bug.edits:
        assert text.count(right) == 1, right
        line = text[: text.index(right)].count("\n") + 1
        buggy |= {t for r in parse(text, "engine") if r.begin < line < r.end for t in r.tasks}
        text = text.replace(right, wrong)
    engine.write_text(text)
    assert bug.culprit in buggy
    return folder, buggy


def closing_counts(output: str) -> dict[str, int]:
    """pytest's closing line, `3 failed, 115 passed, 39 waiting in 13.2s`, as counts."""
    line = next(line for line in reversed(output.splitlines()) if re.search(r"\d+ \w+.* in [\d.]+s", line))
    return {word: int(n) for n, word in re.findall(r"(\d+) (\w+)", line.split(" in ")[0])}


def outcomes(junit: Path) -> dict[str, int]:
    """How many checks pytest reported failed (or in error) and skipped, as its JUnit XML says (an editor's view)."""
    cases = list(ET.parse(junit).getroot().iter("testcase"))
    return {
        "failed": sum(any(e.tag in ("failure", "error") for e in case) for case in cases),
        "skipped": sum(any(e.tag == "skipped" for e in case) for case in cases),
    }


def check_run(data: dict, output: str, returncode: int, junit: Path, buggy: set[str], what: str) -> str | None:
    """The invariants of one run; returns the task its `Next:` names, if it names one."""
    results = data["extra_data"]["results"]
    red = {task for task, status in data["extra_data"]["status"].items() if status in WRONG}
    assert red <= buggy, (what, red, output[-3000:])
    for r in results:  # every other check passes or waits for the bug
        if r["task"] not in buggy and r["status"] != "passed":
            assert r["status"] == "not started" and r["waits_for"] in buggy, (what, r)
    waiting = sum(r["status"] == "not started" and bool(r["waits_for"]) for r in results)
    counts = closing_counts(output)  # pytest's outcomes tell the scorecard's story: a check that waits is skipped
    assert counts.get("failed", 0) == sum(r["status"] == "failed" for r in results), (what, counts)
    assert counts.get("waiting", 0) == waiting, (what, counts)
    assert outcomes(junit) == {"failed": sum(r["status"] in WRONG for r in results), "skipped": waiting}, what
    assert returncode == (0 if all(r["status"] == "passed" for r in results) else 1), (what, returncode)
    named = re.search(r"^Next: task (\d+\.\d+) · ", output, re.MULTILINE)
    return named[1] if named else None


@pytest.mark.parametrize("name", BUGS)
def test_in_the_edition_a_bug_is_red_where_it_is_and_next_names_it_in_every_run(name, edition, python, tmp_path):
    bug = BUGS[name]
    submission, buggy = submission_with(bug, tmp_path / "submission")
    named = {}
    for n, args in enumerate([*bug.runs, ()]):
        out = tmp_path / f"results-{n}.json"
        junit = tmp_path / f"junit-{n}.xml"
        command = [python, "-m", "pytest", "autograder", "--impl", str(submission), "--results-json", str(out)]
        run = in_edition(edition, *command, "--junitxml", str(junit), *args)
        what = " ".join(args) or "everything"
        named[what] = check_run(json.loads(out.read_text()), run.stdout, run.returncode, junit, buggy, what)
    assert set(named.values()) == {bug.culprit}, named


@pytest.mark.parametrize("name", BUGS)
def test_in_the_full_course_a_bug_is_red_where_it_is_in_every_run(name, tmp_path):
    bug = BUGS[name]
    submission, buggy = submission_with(bug, tmp_path / "submission")
    junit = tmp_path / "junit.xml"
    for args in bug.runs:
        run = grade(submission, "--junitxml", str(junit), *args, tmp_path=tmp_path)
        check_run(run.results, run.output, run.returncode, junit, buggy, " ".join(args))
    run = grade(submission, "--junitxml", str(junit), tmp_path=tmp_path)
    assert check_run(run.results, run.output, run.returncode, junit, buggy, "everything") == bug.culprit
