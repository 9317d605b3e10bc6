"""Run learner code in child processes, so that nothing it does can stop the grader or raise a score.

Each grading test runs in a forked child with a memory limit and two time
limits: pytest-timeout's alarm inside the child (which says where the code was
stuck), and a hard kill from the parent a few seconds later (for code that
never returns to Python, such as `10 ** 10 ** 10`). The child sends back only
its test's reports and status; a child that dies (`os._exit`, a crash, the
memory limit) is recorded as such by the parent, which alone keeps the score.

Before the tests, each learner file is imported once in a child ("probed"):
a file that hangs, crashes or exits at import is then failed at once in every
test that needs it, instead of costing each of them the full time limit.

Inside the child, the grader's own objects are snapshotted before the test
and compared after it: a submission that monkeypatches the grader, the
reference, pytest or the oracles (math, builtins, torch) gets an error for that
test rather than the points. Learner files also cannot import the grader or the
reference (see `loading.guarded_builtins`).

Needs `os.fork` (Linux, macOS); elsewhere the tests run in the grader's process.
"""

from __future__ import annotations

import gc
import json
import os
import select
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

CAN_FORK = hasattr(os, "fork")
KILL_GRACE = 2.0  # seconds the parent waits past the test's own time limit before it kills the child
MAX_SECTION = 10_000  # characters of captured output kept per report section

WATCHED_MODULES = ("builtins", "math", "random", "operator", "functools", "itertools", "json", "pytest", "torch",
                   "graphviz")
WATCHED_PREFIXES = ("autograder", "solutions", "_pytest.runner", "_pytest.python", "_pytest.outcomes", "pluggy")


def _limit_memory(megabytes: int) -> None:
    if megabytes:
        import resource

        limit = megabytes * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        return f"was killed by signal {name}" + (" (out of memory?)" if sig == signal.SIGKILL else "")
    return f"exited with code {os.WEXITSTATUS(status)} (sys.exit or os._exit?)"


def run_in_children(works: list[Callable[[], dict]], timeout: float, memory_mb: int
                    ) -> Iterator[tuple[int, dict | None, str]]:
    """Run each `work()` in order in a forked child; yield (index, its JSON-able result, '') as each one ends.

    A work that kills its child or runs past `timeout` yields (index, None, what
    happened); a fresh child then goes on with the next one.
    """
    start = 0
    while start < len(works):
        read_fd, write_fd = os.pipe()
        gc.freeze()  # the child's collections leave the parent's objects alone: no copy-on-write of the whole heap
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: never returns
            code = 0
            try:
                os.close(read_fd)
                _limit_memory(memory_mb)
                for work in works[start:]:
                    line = json.dumps(work()).encode() + b"\n"
                    view = memoryview(line)
                    while view:
                        view = view[os.write(write_fd, view):]
            except BaseException:  # noqa: BLE001 - whatever happens, the child must end here
                code = 70
            finally:
                os._exit(code)
        os.close(write_fd)
        index, buffer, problem = start, b"", ""
        try:
            while index < len(works):
                while b"\n" not in buffer:
                    chunk, in_time = _read_some(read_fd, timeout)
                    if not in_time:
                        problem = f"did not finish within {timeout:g} s and was stopped"
                        break
                    if not chunk:
                        break
                    buffer += chunk
                if b"\n" not in buffer:
                    break
                line, buffer = buffer.split(b"\n", 1)
                yield index, json.loads(line), ""
                index += 1
        finally:
            os.close(read_fd)
            if index < len(works):
                os.kill(pid, signal.SIGKILL)
            _, status = os.waitpid(pid, 0)
        if index < len(works):
            yield index, None, problem or f"ended without a result: the process {describe_exit(status)}"
            index += 1
        start = index


def _read_some(fd: int, timeout: float) -> tuple[bytes, bool]:
    """One read from a pipe, waiting at most `timeout`; return (data, in time). Empty data: end of file."""
    ready, _, _ = select.select([fd], [], [], timeout)
    if not ready:
        return b"", False
    return os.read(fd, 1 << 16), True


# --- integrity of the grader's own objects -------------------------------------------------------------------------

def _watched() -> dict[str, object]:
    modules = {}
    for name, module in list(sys.modules.items()):
        grading_tests = name.startswith(("autograder.test_", "autograder.conftest"))
        if module is not None and (name in WATCHED_MODULES or name.startswith(WATCHED_PREFIXES)) and not grading_tests:
            modules[name] = module
    return modules


def snapshot() -> dict[str, dict[str, int]]:
    """The identity of every object in the watched modules, and in the classes they define."""
    shot = {}
    for name, module in _watched().items():
        try:
            items = dict(vars(module))
        except TypeError:
            continue
        shot[name] = {k: id(v) for k, v in items.items()}
        for k, v in items.items():
            if isinstance(v, type) and getattr(v, "__module__", None) == name:
                shot[f"{name}.{k}"] = {a: id(b) for a, b in vars(v).items()}
    return shot


def _namespace(key: str) -> dict:
    if key in sys.modules:
        return vars(sys.modules[key])
    owner, _, cls = key.rpartition(".")
    module = sys.modules.get(owner)
    target = getattr(module, cls, None) if module else None
    return vars(target) if isinstance(target, type) else {}


def tampered(before: dict[str, dict[str, int]]) -> list[str]:
    """The watched names whose object changed since `before`."""
    changed = []
    for key, ids in before.items():
        now = _namespace(key)
        for attr, ident in ids.items():
            if attr in ("__dict__", "__weakref__", "__doc__"):
                continue
            if id(now.get(attr)) != ident:
                changed.append(f"{key}.{attr}")
    return changed


# --- probing learner files -----------------------------------------------------------------------------------------

def probe(root: Path, module: str, timeout: float, memory_mb: int) -> tuple[str, bool] | None:
    """Import one learner file in a child; return (why it failed, timed out) or None when it loads."""
    from .loading import LearnerCodeError, load_module

    def work() -> dict:
        try:
            load_module(root, module)
        except LearnerCodeError as exc:
            return {"failure": str(exc), "timed_out": exc.timed_out}
        return {}

    ((_, result, problem),) = run_in_children([work], timeout, memory_mb)
    shown = f"{root.name}/{module}.py"
    if result is None:
        return f"importing {shown} {problem}", "finish within" in problem
    return (result["failure"], result["timed_out"]) if result else None
