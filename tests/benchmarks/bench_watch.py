"""Benchmark: watch mode's time from saving a file to seeing its new verdict, next to the import floor.

    python tests/benchmarks/bench_watch.py [--saves 9] [--runs 5]

Starts `python -m autograder watch --lesson 2 --impl COPY` on a temporary copy
of solutions/, then saves engine.py again and again, each time with task 2.3
broken or mended in turn, and times each save until the watcher prints the
new verdict. Prints the median, fastest and slowest of those times, and the
median of `python -c "import torch, pytest"` measured in the same run (what
a grading process pays before it can start). The target (issue 9): 0.5 s or
less from save to verdict. Nothing is asserted: the machine's load moves
every figure.
"""

from __future__ import annotations

import argparse
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
VERDICT = re.compile(r"^\[\d\d:\d\d:\d\d\] engine\.py saved \(lesson 2\): (\d+)/(\d+) tasks pass")
RIGHT = "Value(self.data + other.data, "  # task 2.3's forward
WRONG = "Value(self.data - other.data, "


def floor(runs: int) -> float:
    cmd = [sys.executable, "-c", "import torch, pytest"]
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        subprocess.run(cmd, check=True)
        times.append(time.perf_counter() - start)
    return statistics.median(times[1:])  # the first warms the file cache


def save_to_verdict(saves: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "submission"
        shutil.copytree(REPO / "solutions", work, ignore=shutil.ignore_patterns("__pycache__"))
        engine = work / "engine.py"
        right = engine.read_text()
        if RIGHT not in right:
            raise SystemExit(f"bench_watch: {RIGHT!r} is no longer in solutions/engine.py; update the benchmark")
        wrong = right.replace(RIGHT, WRONG, 1)
        proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "watch", "--lesson", "2", "--impl", str(work)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        lines: queue.Queue[tuple[float, str]] = queue.Queue()

        def read() -> None:
            for line in proc.stdout:
                lines.put((time.perf_counter(), line))

        threading.Thread(target=read, daemon=True).start()

        def next_line(pattern: re.Pattern, timeout: float = 120) -> tuple[float, re.Match]:
            end = time.monotonic() + timeout
            while True:
                try:
                    at, line = lines.get(timeout=max(0.0, end - time.monotonic()))
                except queue.Empty:
                    proc.kill()
                    raise SystemExit(f"bench_watch: no line matching {pattern.pattern!r} in {timeout} s") from None
                if match := pattern.search(line):
                    return at, match

        try:
            next_line(re.compile(r"^Watching "))  # the first grading is done
            times = []
            for n in range(saves):
                text = wrong if n % 2 == 0 else right
                time.sleep(0.3)  # let the watcher settle: a learner does not save twice in 50 ms
                start = time.perf_counter()
                engine.write_text(text)
                at, match = next_line(VERDICT)
                if (match[1] == match[2]) != (text is right):
                    raise SystemExit(f"bench_watch: unexpected verdict {match[0]!r} after save {n + 1}")
                times.append(at - start)
            return times
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=9, help="saves timed (default 9)")
    parser.add_argument("--runs", type=int, default=5, help="runs of the import floor (default 5)")
    args = parser.parse_args()
    base = floor(args.runs)
    times = save_to_verdict(args.saves)
    median = statistics.median(times)
    print(f"import floor (python -c 'import torch, pytest'), median of {args.runs}: {base:6.3f} s")
    print(
        f"watch --lesson 2, save to verdict, median of {args.saves}:        {median:6.3f} s "
        f"(fastest {min(times):.3f}, slowest {max(times):.3f}; {median / base:.2f}x the floor)"
    )


if __name__ == "__main__":
    main()
