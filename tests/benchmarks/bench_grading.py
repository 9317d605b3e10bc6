"""Benchmark: how long grading takes, against the bare cost of importing torch and pytest, measured in the same run.

    python tests/benchmarks/bench_grading.py [--runs 5]

Prints the median wall time of `python -c "import torch, pytest"` (the floor:
no grading run can start faster), of `pytest autograder --impl solutions`
(everything) and of `pytest autograder --impl solutions --lesson 2` (one
lesson), each in seconds, as the difference from the floor and as the ratio
to it. The targets (issue 9): everything within 1.5 s of the floor, one lesson
within 0.5 s. Nothing is asserted: the machine's load moves every figure.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def wall(cmd: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, cwd=REPO, check=False, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    grade = [sys.executable, "-m", "pytest", "autograder", "--impl", "solutions"]
    commands = {
        "floor: import torch, pytest": [sys.executable, "-c", "import torch, pytest"],
        "everything (--impl solutions)": grade,
        "one lesson (--lesson 2)": [*grade, "--lesson", "2"],
    }
    for cmd in commands.values():
        wall(cmd)  # warm the file cache
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):  # interleaved, so that a burst of load on the machine hits every command alike
        for name, cmd in commands.items():
            times[name].append(wall(cmd))
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians["floor: import torch, pytest"]
    print(f"median of {args.runs} runs each, interleaved")
    print(f"{'command':<32}{'seconds':>9}{'- floor':>9}{'/ floor':>9}")
    for name, median in medians.items():
        print(f"{name:<32}{median:>9.2f}{median - floor:>+9.2f}{median / floor:>8.2f}x")


if __name__ == "__main__":
    main()
