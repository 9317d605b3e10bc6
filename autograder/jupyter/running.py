"""The learner's code run in their own kernel as the grader runs it: a fresh package over the reference, under a CPU
time limit (`time_limit`, the workers' own rule), and the `%%answer` cell magic of the nbgrader notebooks."""

from __future__ import annotations

import itertools
import signal
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from autograder.course.regions import EXERCISES, has_sources, solution_files
from autograder.grading.limits import BACKSTOP
from autograder.grading.limits import CHECK_TIMEOUT as TEST_TIMEOUT
from autograder.worker.loading import SourcePackage, hybrid_value


def reference(module: str) -> types.ModuleType:
    """The reference module (the notebooks explore your code next to it, in your own kernel)."""
    import importlib

    return importlib.import_module(f"solutions.{module}")


def draw_dot(root) -> Any:
    """The drawing of any Value: the reference's `draw_dot`, or in a student edition (no reference) yours (task 3.2)."""
    if has_sources():
        return reference("graph").draw_dot(root)
    return execute_whole(EXERCISES, "graph").draw_dot(root)


_packages = itertools.count()


@contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the block once it has used `seconds` of CPU time, as the grader's workers count it (a
    busy machine slows the block but never spends its budget), or waited `BACKSTOP` times that long (code that
    sleeps, or waits for input). Where the timers exist (POSIX) and in the main thread only."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def used_up(signum, frame):
        raise TimeoutError(f"stopped after {seconds:g} s of CPU time: is there an endless loop?")

    def waited(signum, frame):
        raise TimeoutError(
            f"stopped after waiting {BACKSTOP * seconds:g} s: does it wait for something that never comes?"
        )

    previous = signal.signal(signal.SIGPROF, used_up), signal.signal(signal.SIGALRM, waited)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, BACKSTOP * seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGPROF, previous[0])
        signal.signal(signal.SIGALRM, previous[1])


def execute(source: str, filename: str, module: str, seconds: float = TEST_TIMEOUT) -> types.ModuleType:
    """Run a course module's source in a fresh package whose siblings (`from .engine import Value`) are the reference.

    It is the grader's own loader (`SourcePackage`, with its import guard), here in the learner's kernel.
    """
    known = sorted(path.stem for path in solution_files() if path.stem != module)
    package = SourcePackage(f"_notebook_{next(_packages)}", {module: (source, filename)}, True, reference, known)
    try:
        with time_limit(seconds):
            return package.module(module)
    except SystemExit as exc:
        raise RuntimeError(f"{filename} called sys.exit({exc.code!r}) while loading") from None


def execute_whole(root: Path, module: str, seconds: float = TEST_TIMEOUT) -> types.ModuleType:
    """A module of the folder `root` with every sibling it imports from that folder too: a student edition's way,
    where no reference sits underneath."""
    sources = {}
    for path in solution_files():
        mine = Path(root) / path.name
        if path.stem != "__init__" and mine.is_file():
            sources[path.stem] = (mine.read_text(encoding="utf-8"), str(mine))
    package = SourcePackage(f"_notebook_{next(_packages)}", sources, True)
    try:
        with time_limit(seconds):
            return package.module(module)
    except SystemExit as exc:
        raise RuntimeError(f"{root}/{module}.py called sys.exit({exc.code!r}) while loading") from None


def _methods(cls: type) -> frozenset[str]:
    kinds = (types.FunctionType, staticmethod, classmethod, property)
    return frozenset(name for name, attr in vars(cls).items() if isinstance(attr, kinds))


def public_names(mod: types.ModuleType, methods: frozenset[str] | None = None, hybrid: bool = True) -> dict[str, Any]:
    """The module's names (no modules, nothing starting with `_`), its own `Value` made a hybrid.

    The hybrid is the reference `Value` with `methods` taken from the module's
    class, as the grader builds it; `methods=None` takes every method the class defines.
    """
    names = {
        k: v
        for k, v in vars(mod).items()
        if not k.startswith("_") and k != "annotations" and not isinstance(v, types.ModuleType)
    }
    own_value = names.get("Value")
    if hybrid and isinstance(own_value, type) and own_value.__module__ == mod.__name__:
        names["Value"] = hybrid_value(reference("engine"), mod, _methods(own_value) if methods is None else methods)
    return names


def _answer_magic(ipython) -> Callable[[str, str], None]:
    def answer(line: str, cell: str) -> None:
        """%%answer FOLDER/MODULE.py: save this cell as the file the checks grade, then run it.

        Its names (functions, classes) become available in the notebook. Running it
        here uses the reference for the modules it imports (`from .engine import
        Value`) and for every method of `Value` the cell does not define: exactly what
        the grader does.
        """
        path = Path(line.strip())
        if path.suffix != ".py" or len(path.parts) != 2:
            raise ValueError(f"%%answer needs FOLDER/MODULE.py, like lesson03_code/graph.py, not {line.strip()!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(cell, encoding="utf-8")
        mod = execute(cell, str(path), path.stem)
        defined = [
            k for k, v in vars(mod).items() if not k.startswith("_") and getattr(v, "__module__", "") == mod.__name__
        ]
        ipython.user_ns.update(public_names(mod))
        print(f"saved {path}; defined {', '.join(defined) or 'nothing'}")

    return answer
