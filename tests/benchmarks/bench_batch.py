"""Benchmark: batch grading's throughput at several `--jobs` values, in submissions per minute.

    python tests/benchmarks/bench_batch.py [--submissions 8] [--jobs 1 2 4]

Grades the same folder of submissions (copies of the reference) with `python -m autograder batch` at each
`--jobs` value, and prints, for each: the wall time, submissions per minute, and the machine's CPU time per
submission (from /proc/stat on Linux: every process's, so run it on a quiet machine). Each graded submission
is a graded run (`--fresh-inputs`), as Gradescope's. Nothing is asserted: the machine's load moves every
figure. Throughput that grows with `--jobs` up to the cores, and CPU per submission that stays flat, is
what batch should show.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def machine_cpu() -> float | None:
    """Seconds of CPU time every process of the machine has used since it started (Linux), or None."""
    try:
        with open("/proc/stat") as f:
            fields = f.readline().split()[1:]
    except OSError:
        return None
    busy = sum(int(x) for i, x in enumerate(fields[:8]) if i not in (3, 4))  # all but idle and iowait
    return busy / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=8)
    parser.add_argument("--jobs", type=int, nargs="+", default=sorted({1, 2, os.cpu_count() or 1}))
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-batch-"))
    try:
        folder = root / "submissions"
        for n in range(args.submissions):
            shutil.copytree(REPO / "solutions", folder / f"s{n:02d}", ignore=shutil.ignore_patterns("__pycache__"))
        print(f"{args.submissions} submissions (copies of the reference), {os.cpu_count()} cores")
        print(f"{'--jobs':>6}{'seconds':>10}{'per minute':>12}{'CPU s each':>12}")
        for jobs in args.jobs:
            out = root / f"grades-{jobs}.csv"
            cpu, start = machine_cpu(), time.perf_counter()
            command = [sys.executable, "-m", "autograder", "batch", str(folder), "--out", str(out)]
            subprocess.run([*command, "--jobs", str(jobs), "--quiet"], cwd=REPO, check=True, capture_output=True)
            seconds = time.perf_counter() - start
            used = (machine_cpu() - cpu) / args.submissions if cpu is not None else float("nan")
            print(f"{jobs:>6}{seconds:>10.1f}{60 * args.submissions / seconds:>12.1f}{used:>12.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
