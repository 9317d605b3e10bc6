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
- with `--user NAME` (as root): an ordinary user's floor and full runs, with and without their plans: NAME's
  own clone `~NAME/course` and its `.venv`, as `.ci/run`'s learner pass makes them (update that clone first),
  run by NAME in a clean environment: the `processes` level, with that user's feedback cache;
- with `--baseline REV`: the full run, the stubs and the many failures of another commit (a git worktree of it,
  under the system's temporary folder), for "within 10 % of today" and the cost of those re-asks.

Each figure is the median wall time, then the median CPU time the command and every process it waited for used
(workers included; less moved by the machine's load). Commands are interleaved, so that a burst of load on the
machine hits each alike. Nothing is asserted: the
machine's load moves every figure. The ratios that matter are printed at the end.
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from autograder.grading import caches, isolation  # noqa: E402 - after the path: the benchmark runs as a script


def wall(cmd: list[str], cwd: Path = REPO, before=None) -> tuple[float, float]:
    """The wall time of `cmd`, and the CPU time it and every process it waited for used (less moved by load)."""
    if before:
        before()
    start, cpu = time.perf_counter(), os.times()
    subprocess.run(cmd, cwd=cwd, check=False, capture_output=True)
    end = os.times()
    return (
        time.perf_counter() - start,
        end.children_user + end.children_system - cpu.children_user - cpu.children_system,
    )


def forget_plans() -> None:
    (caches.GradingCache(isolation.best_level()).folder / "plans.json").unlink(missing_ok=True)


def as_user(name: str) -> tuple[list[str], Path, Path]:
    """How to run a command as `name`, in a clean environment with their `.venv` on; their clone; their cache."""
    import pwd  # POSIX only, as `runuser` is

    home = Path(pwd.getpwnam(name).pw_dir)
    venv = home / "course" / ".venv"
    prefix = ["runuser", "-u", name, "--", "env", "-i", f"HOME={home}", f"PATH={venv}/bin:/usr/bin:/bin"]
    uid = pwd.getpwnam(name).pw_uid
    return prefix, home / "course", home / "course" / ".cache" / "grading" / "*" / f"processes-{uid}"


def forget_plans_of(folders: str):
    def forget() -> None:
        for folder in glob.glob(folders):
            subprocess.run(["rm", "-f", f"{folder}/plans.json"], check=False)

    return forget


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
    parser.add_argument("--user", metavar="NAME", help="also time an ordinary user's runs (as root; see above)")
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
    stubs = [*grade[:4], "--impl=exercises", *grade[6:]]
    broken = [*grade[:4], f"--impl={many_failures()}", *grade[6:]]
    commands["stubs (exercises/)"] = (stubs, REPO, None)
    commands["many failures"] = (broken, REPO, None)
    if args.user:
        run_as, clone, feedback = as_user(args.user)
        as_learner = [*run_as, "python", "-m", "pytest", "autograder", "--impl", "solutions", "-p", "no:cacheprovider"]
        commands[f"{args.user}: floor"] = ([*run_as, "python", "-c", "import torch, pytest"], clone, None)
        commands[f"{args.user}: everything, plans"] = (as_learner, clone, None)
        commands[f"{args.user}: everything, no plans"] = (as_learner, clone, forget_plans_of(str(feedback)))
    if args.baseline:
        tree = Path(tempfile.gettempdir()) / f"bench-baseline-{args.baseline}"
        if not tree.exists():
            subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.baseline], cwd=REPO, check=True)
        commands[f"baseline {args.baseline}: everything"] = (grade, tree, None)
        commands[f"baseline {args.baseline}: stubs"] = (stubs, tree, None)
        commands[f"baseline {args.baseline}: many failures"] = (broken, tree, None)
    for cmd, cwd, before in commands.values():
        wall(cmd, cwd, before)  # warm the file cache, the answers and the plans
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(args.runs):
        for name, (cmd, cwd, before) in commands.items():
            times[name].append(wall(cmd, cwd, before))
    medians = {name: statistics.median(t for t, _ in values) for name, values in times.items()}
    cpu = {name: statistics.median(c for _, c in values) for name, values in times.items()}
    floor = medians["floor: import torch, pytest"]
    print(f"median of {args.runs} runs each, interleaved")
    print(f"{'command':<40}{'seconds':>9}{'- floor':>9}{'/ floor':>9}{'CPU s':>8}")
    for name, median in medians.items():
        print(f"{name:<40}{median:>9.2f}{median - floor:>+9.2f}{median / floor:>8.2f}x{cpu[name]:>8.2f}")
    fork = medians["everything, fork, plans"]
    print(f"spawn / fork:              {medians['everything, spawn, plans'] / fork:.2f}x")
    print(f"no plans / plans:          {medians['everything, fork, no plans'] / fork:.2f}x")
    print(f"graded run / learner's:    {medians['graded run (--fresh-inputs 1)'] / fork:.2f}x")
    print(f"many failures / reference: {medians['many failures'] / fork:.2f}x")
    if args.user:
        theirs = medians[f"{args.user}: everything, plans"]
        over = theirs - medians[f"{args.user}: floor"]
        print(f"{args.user} (processes) / root ({isolation.best_level()}): {theirs / fork:.2f}x;", end=" ")
        print(f"above each one's floor: {over:.2f} s against {fork - floor:.2f} s;", end=" ")
        print(f"CPU {cpu[f'{args.user}: everything, plans']:.2f} s against {cpu['everything, fork, plans']:.2f} s")
    if args.baseline:
        for what, today in (("everything", fork), ("stubs", None), ("many failures", None)):
            today = today or medians["stubs (exercises/)" if what == "stubs" else what]
            print(f"today / baseline, {what + ':':<15}{today / medians[f'baseline {args.baseline}: {what}']:.2f}x")


if __name__ == "__main__":
    main()
