"""Benchmark: how long grading takes, against baselines measured in the same run.

    python tests/benchmarks/bench_grading.py [--runs 5] [--baseline REV]

Prints the median wall time of:

- `python -c "import torch, pytest"`: the floor, no grading run can start faster;
- `pytest autograder --impl solutions` with forked workers (Linux's default), with their call plans (what the
  last run asked, run ahead by the workers) and without (the plans file deleted before each such run);
- the same with spawned workers (macOS' and Windows' default);
- one lesson (`--lesson 2`);
- a graded run (`--fresh-inputs 1`: every visible check asked again on drawn numbers, as batch and Gradescope do);
- the stubs (`exercises/`: every check not started, none asked again of the reference);
- a submission with many failures (the reference with every `+=` of its engine made `=`): each failed check is
  asked again of the reference, to tell the machine's faults from the code's;
- with `--baseline REV`: the full run, the stubs and the many failures of another commit (a git worktree of it,
  under the system's temporary folder), for "within 10 % of today" and the cost of those re-asks.

Commands are interleaved, so that a burst of load on the machine hits each alike. Nothing is asserted: the
machine's load moves every figure. The ratios that matter are printed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autograder.grading import caches  # noqa: E402 - after the path: the benchmark runs as a script


def wall(cmd: list[str], cwd: Path = REPO, before=None) -> float:
    if before:
        before()
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=False, capture_output=True)
    return time.perf_counter() - start


def forget_plans() -> None:
    (caches.ROOT / caches.fingerprint() / "plans.json").unlink(missing_ok=True)


def many_failures() -> Path:
    """A copy of the reference whose engine forgets to accumulate (`=` for every `+=`): many tasks fail."""
    folder = Path(tempfile.mkdtemp(prefix="bench-many-failures-")) / "submission"
    shutil.copytree(REPO / "solutions", folder, ignore=shutil.ignore_patterns("__pycache__"))
    engine = folder / "engine.py"
    engine.write_text(engine.read_text().replace(".grad += ", ".grad = "))
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", metavar="REV", help="also time the full run of this commit")
    args = parser.parse_args()
    grade = [sys.executable, "-m", "pytest", "autograder", "--impl", "solutions", "-p", "no:cacheprovider"]
    commands = {
        "floor: import torch, pytest": ([sys.executable, "-c", "import torch, pytest"], REPO, None),
        "everything, fork, plans": ([*grade, "--workers", "fork"], REPO, None),
        "everything, fork, no plans": ([*grade, "--workers", "fork"], REPO, forget_plans),
        "everything, spawn, plans": ([*grade, "--workers", "spawn"], REPO, None),
        "one lesson (--lesson 2)": ([*grade, "--lesson", "2"], REPO, None),
        "graded run (--fresh-inputs 1)": ([*grade, "--fresh-inputs", "1"], REPO, None),
    }
    learner = [*grade[:4], "--impl=exercises", *grade[6:]]
    broken = [*grade[:4], f"--impl={many_failures()}", *grade[6:]]
    commands["stubs (exercises/)"] = (learner, REPO, None)
    commands["many failures"] = (broken, REPO, None)
    if args.baseline:
        tree = Path(tempfile.gettempdir()) / f"bench-baseline-{args.baseline}"
        if not tree.exists():
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.baseline], cwd=REPO, check=True)
        commands[f"baseline {args.baseline}: everything"] = (grade, tree, None)
        commands[f"baseline {args.baseline}: stubs"] = (learner, tree, None)
        commands[f"baseline {args.baseline}: many failures"] = (broken, tree, None)
    for cmd, cwd, before in commands.values():
        wall(cmd, cwd, before)  # warm the file cache, the answers and the plans
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (cmd, cwd, before) in commands.items():
            times[name].append(wall(cmd, cwd, before))
    medians = {name: statistics.median(values) for name, values in times.items()}
    floor = medians["floor: import torch, pytest"]
    print(f"median of {args.runs} runs each, interleaved")
    print(f"{'command':<40}{'seconds':>9}{'- floor':>9}{'/ floor':>9}")
    for name, median in medians.items():
        print(f"{name:<40}{median:>9.2f}{median - floor:>+9.2f}{median / floor:>8.2f}x")
    fork = medians["everything, fork, plans"]
    print(f"spawn / fork:              {medians['everything, spawn, plans'] / fork:.2f}x")
    print(f"no plans / plans:          {medians['everything, fork, no plans'] / fork:.2f}x")
    print(f"graded run / learner's:    {medians['graded run (--fresh-inputs 1)'] / fork:.2f}x")
    print(f"many failures / reference: {medians['many failures'] / fork:.2f}x")
    if args.baseline:
        for what, today in (("everything", fork), ("stubs", None), ("many failures", None)):
            today = today or medians["stubs (exercises/)" if what == "stubs" else what]
            print(f"today / baseline, {what + ':':<15}{today / medians[f'baseline {args.baseline}: {what}']:.2f}x")


if __name__ == "__main__":
    main()
