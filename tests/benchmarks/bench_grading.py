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

Then, on one core (`taskset`, Linux), the CPU time of each whole process tree (the workers and zygotes included:
a cgroup's CPU accounting where the benchmark may make one, as root; else only what the command waited for):

- the floor again, on that core;
- a graded run of the reference from a fresh PrairieLearn bundle, as a platform's container starts it: `python -m
  autograder run prairielearn` in a new copy of the grader (the bytecode its export compiles, nothing in the
  grader's cache folders), the reference's files as the submission; at the machine's best level;
- the same with `--isolation user` in place of `run prairielearn` (`pytest autograder --fresh-inputs 1` in the fresh
  bundle: the level Gradescope and PrairieLearn run at), where this machine has it;
- a learner's run (`pytest autograder --impl solutions`, warm: Python's bytecode kept, as on a learner's machine).

`--one-core` times only these. `--where` runs the cold graded run once more and splits its CPU by process: the
grader, each zygote, the workers (their costliest apart), for a reader to see where the time goes.

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
    parser.add_argument("--one-core", action="store_true", help="time only the one-core CPU figures (see above)")
    parser.add_argument("--where", action="store_true", help="split one cold graded run's CPU by process (see above)")
    args = parser.parse_args()
    if args.where:
        where_cpu_goes()
        return
    if args.one_core:
        one_core(args.runs)
        return
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

    one_core(args.runs)


def cpu_of(cmd: list[str], cwd: Path = REPO, env: dict | None = None, processes: dict | None = None) -> float:
    """The CPU seconds of `cmd`'s whole process tree: a cgroup of its own (v1's cpuacct or v2) where this process
    may make one; else what `cmd` and the processes it waited for used (forked workers are not among them).

    `processes`: filled, where there is such a cgroup, with each process of the tree as last seen (its pid: CPU
    seconds, parent's pid, command line), looked at every few milliseconds while it runs: a process that ends
    between two looks is seen with less than it used, so their sum falls short of the total a little."""
    for folder, usage in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage"), ("/sys/fs/cgroup", "cpu.stat")):
        group = Path(folder) / f"bench-grading-{os.getpid()}"
        try:
            group.mkdir()
        except OSError:
            continue
        try:
            wrapped = ["sh", "-c", f'echo $$ > {group}/cgroup.procs && exec "$@"', "sh", *cmd]
            run = subprocess.Popen(wrapped, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while run.poll() is None:
                if processes is not None:
                    _look_at(group, processes)
                time.sleep(0.005 if processes is not None else 0.05)
            text = (group / usage).read_text()
            if usage == "cpu.stat":
                return int(dict(line.split() for line in text.splitlines())["usage_usec"]) / 1e6
            return int(text) / 1e9
        finally:
            time.sleep(0.2)  # the tree's last processes leave the group
            group.rmdir()
    return wall(cmd, cwd)[1]


def _look_at(group: Path, processes: dict) -> None:
    tick = os.sysconf("SC_CLK_TCK")
    try:
        pids = (group / "cgroup.procs").read_text().split()
    except OSError:
        return
    for pid in map(int, pids):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            line = Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ").strip()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after the name, which may hold anything
        seen = (int(fields[11]) + int(fields[12])) / tick
        before = processes.get(pid, (0.0, 0, ""))
        processes[pid] = (max(seen, before[0]), int(fields[1]), line or before[2])


def where_cpu_goes() -> None:
    """`--where`: one cold graded run (as `one_core`'s), its CPU split by process: the grader, each zygote, and
    the workers, with the costliest ones apart."""
    cores = sorted(os.sched_getaffinity(0))
    top, source, grade_root = fresh_bundle()
    processes: dict[int, tuple[float, int, str]] = {}
    try:
        run = [sys.executable, "-m", "autograder", "prairielearn-run", "--root", str(grade_root)]
        total = cpu_of(["taskset", "-c", str(cores[-1]), *run], cwd=source, processes=processes)
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if not processes:
        print("--where needs a CPU cgroup of its own (root on Linux)")
        return
    roles: dict[str, list[float]] = {}
    for cpu, parent, line in processes.values():
        if "autograder.worker zygote" in line:  # a zygote, or a worker it forked (which has its command line)
            parent_line = processes.get(parent, (0, 0, ""))[2]
            role = "workers" if "autograder.worker" in parent_line else f"zygote{' (torch)' * line.endswith('torch')}"
        elif " -m autograder grade " in f"{line} ":
            role = "grader (pytest, judgements, the reference's answers)"
        else:
            role = "other (" + " ".join(Path(w).name for w in line.split()[:3]) + ")"
        roles.setdefault(role, []).append(cpu)
    floor = cpu_of(["taskset", "-c", str(cores[-1]), sys.executable, "-c", "import torch, pytest"])
    print(f"\nWhere a cold graded run's {total:.2f} CPU s go (core {cores[-1]}; floor {floor:.2f} s)")
    for role, cpus in sorted(roles.items(), key=lambda kv: -sum(kv[1])):
        costliest = ", ".join(f"{c:.2f}" for c in sorted(cpus, reverse=True)[:5]) if len(cpus) > 1 else ""
        print(f"{role:<55}{sum(cpus):>7.2f}  {len(cpus):>3} processes", end="")
        print(f"; costliest {costliest}" if costliest else "")
    unseen = total - sum(cpu for cpu, _, _ in processes.values())
    print(f"{'not seen (processes that ended between two looks)':<55}{unseen:>7.2f}")


def fresh_bundle() -> tuple[Path, Path, Path]:
    """A new PrairieLearn bundle of this repository (its grader's source folder), and a /grade tree whose
    student folder holds the reference's files."""
    top = Path(tempfile.mkdtemp(prefix="bench-cold-"))
    export = [sys.executable, "-m", "autograder", "export", "prairielearn", "--out", str(top / "pl")]
    subprocess.run(export, cwd=REPO, check=True, capture_output=True)
    student = top / "grade" / "student"
    student.mkdir(parents=True)
    for path in (REPO / "solutions").glob("*.py"):
        if path.name != "__init__.py":
            shutil.copy(path, student)
    subprocess.run(["chmod", "-R", "go+rX", str(top)], check=True)  # `user`: the workers' own users read it
    return top, top / "pl" / "serverFilesCourse" / "backprop" / "source", top / "grade"


def one_core(runs: int) -> None:
    """The one-core CPU figures (see the module's docstring), each the median of `runs`, interleaved."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    pin = ["taskset", "-c", str(cores[-1])] if cores and shutil.which("taskset") else []
    python = [*pin, sys.executable]
    env = dict(os.environ)
    learner_env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}  # a learner's machine keeps it
    learner = [*python, "-m", "pytest", "autograder", "--impl", "solutions", "-p", "no:cacheprovider"]
    subprocess.run(learner, cwd=REPO, env=learner_env, capture_output=True, check=False)  # warm: bytecode, caches

    def cold(user: bool) -> float:
        top, source, grade_root = fresh_bundle()
        try:
            if user:
                run = ["-m", "pytest", "autograder", "--impl", str(grade_root / "student"), "--fresh-inputs", "1",
                       "--isolation", "user", "-p", "no:cacheprovider"]  # fmt: skip
            else:
                run = ["-m", "autograder", "run", "prairielearn", "--root", str(grade_root)]
            return cpu_of([*python, *run], cwd=source, env=env)
        finally:
            shutil.rmtree(top, ignore_errors=True)

    commands = {
        "floor: import torch, pytest": lambda: cpu_of([*python, "-c", "import torch, pytest"]),
        f"graded run, cold ({isolation.best_level()})": lambda: cold(user=False),
        "learner's run, warm": lambda: cpu_of(learner, env=learner_env),
    }
    if not isolation.why_not("user") and isolation.best_level() != "user":
        commands["graded run, cold (user)"] = lambda: cold(user=True)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, measure in commands.items():
            times[name].append(measure())
    cpu = {name: statistics.median(values) for name, values in times.items()}
    floor = cpu["floor: import torch, pytest"]
    where = f"core {cores[-1]}" if pin else "all cores (no taskset)"
    print(f"\nCPU seconds of each whole process tree on {where}, median of {runs} runs each, interleaved")
    print(f"{'command':<40}{'CPU s':>8}{'/ floor':>9}")
    for name, value in cpu.items():
        print(f"{name:<40}{value:>8.2f}{value / floor:>8.2f}x")


if __name__ == "__main__":
    main()
