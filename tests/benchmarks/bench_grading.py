"""Benchmark: how long grading the reference takes, against the bare cost of importing torch and pytest.

    python tests/benchmarks/bench_grading.py [--runs 5]

Prints the median wall time of `pytest autograder --impl solutions` and of
`python -c "import torch, pytest"`, measured in the same run, and their ratio.
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
    commands = {
        "import torch, pytest": [sys.executable, "-c", "import torch, pytest"],
        "grade the reference": [sys.executable, "-m", "pytest", "autograder", "--impl", "solutions"],
        "grade a fresh clone": [sys.executable, "-m", "pytest", "autograder"],
    }
    medians = {}
    for name, cmd in commands.items():
        wall(cmd)  # warm the file cache
        medians[name] = statistics.median(wall(cmd) for _ in range(args.runs))
        print(f"{name:<22} median of {args.runs}: {medians[name]:6.2f} s")
    base = medians["import torch, pytest"]
    for name in list(commands)[1:]:
        print(f"{name:<22} / import torch, pytest = {medians[name] / base:.2f}x")


if __name__ == "__main__":
    main()
