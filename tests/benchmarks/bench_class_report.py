"""Benchmark: the class report over a class of synthetic results files, in seconds.

    python tests/benchmarks/bench_class_report.py [--submissions 1000] [--results grades.results]

Makes `--submissions` results files in the grader's own format (batch's `grades.results/<submission>/
results.json`), shaped like a real run of the whole course: every check of the course (from `--results`, a
batch's results folder, if given; otherwise the reference's checks read from `pytest autograder --collect-only`),
each submission stopping at a random task, with classic causes on some failures. Then times
`python -m autograder class-report` over them (one process, one core), and prints the time, the files' total
size and the report's. Nothing is asserted: the machine's load moves every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autograder.course import causes, registry  # noqa: E402


def template(results: Path | None) -> list[dict]:
    """The checks of one whole-course results file: a real one's, or made from the course's tasks."""
    if results:
        first = next(results.rglob("results.json"))
        return json.loads(first.read_text())["tests"]
    checks = []
    for lesson in registry.LESSONS:
        for task in lesson.tasks:
            for n in range(8):  # about the course's count of checks per task
                checks.append(
                    {
                        "nodeid": f"autograder/lessons/test_{lesson.number:02d}.py::task {task.id}::test_{n}",
                        "description": f"check {n} of task {task.id}",
                        "task": task.id,
                        "points": 1 + n % 3,
                        "hint": "a hint of about this length, as the markers give them, for the learner to read",
                        "hidden": n >= 6,
                        "status": "passed",
                        "message": "",
                        "settled": True,
                        "seconds": 0.01,
                        "waits_for": "",
                        "cause": "",
                    }
                )
    return checks


def make(folder: Path, n: int, checks: list[dict], seed: int = 0) -> int:
    rng = random.Random(seed)
    tasks = [t.id for lesson in registry.LESSONS for t in lesson.tasks]
    ids = sorted(causes.CAUSES)
    size = 0
    for i in range(n):
        stop = rng.randrange(len(tasks) + 1)
        tests = []
        for c in checks:
            c = dict(c)
            k = tasks.index(c["task"])
            if k < stop:
                c["status"], c["message"], c["cause"], c["waits_for"] = "passed", "", "", ""
            elif k == stop:
                c["status"], c["message"] = "failed", "check:    x\nexpected: 1.0\ngot:      2.0\n" * 4
                c["cause"] = rng.choice(ids) if rng.random() < 0.6 else ""
            else:
                c["status"], c["message"], c["cause"] = "not started", "the stub still raises NotImplementedError", ""
            tests.append(c)
        data = {"graded": f"s{i}", "impl_option": "", "isolation": "sandbox", "tests": tests, "selected": tasks}
        (folder / f"s{i:04d}").mkdir(parents=True)
        text = json.dumps(data, indent=2)
        (folder / f"s{i:04d}" / "results.json").write_text(text)
        size += len(text)
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=1000)
    parser.add_argument("--results", type=Path, default=None, help="a batch's results folder to copy the checks of")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-class-report-") as tmp:
        folder = Path(tmp) / "grades.results"
        checks = template(args.results)
        size = make(folder, args.submissions, checks)
        out = Path(tmp) / "report.html"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "autograder", "class-report", str(folder), "--out", str(out)],
            check=True,
            env=env,
            cwd=REPO,
            stdout=subprocess.DEVNULL,
        )
        seconds = time.perf_counter() - start
        print(
            f"{args.submissions} results files ({len(checks)} checks each, {size / 1e6:.0f} MB): class-report took "
            f"{seconds:.2f} s (the whole command, Python's start included); report {out.stat().st_size / 1e3:.0f} kB, "
            f"CSV {out.with_suffix('.csv').stat().st_size / 1e3:.0f} kB"
        )


if __name__ == "__main__":
    main()
