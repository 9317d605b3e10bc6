"""`Lesson(n)`: what the learner notebooks of `exercises/notebooks/` explore. Your code for lesson n over the
reference for everything else, as the grader runs it, next to the reference itself; in a student edition (no
reference) your code whole, next to the reference's answers recorded when the edition was made (`EXAMPLES_FILE`).
Results are compared as what they show (`plain`, `difference`)."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import re
import sys
import tempfile
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from autograder.course import registry
from autograder.course.regions import REPO, SOLUTIONS, all_regions, has_sources, owners_of
from autograder.grading.options import impl_folder
from autograder.jupyter.check_cells import run_grader
from autograder.jupyter.running import execute, execute_whole, public_names, reference
from autograder.worker.loading import where_in
from autograder.worker.wire import stub_task

GRADER_DIR = Path(__file__).resolve().parent
EXAMPLES_FILE = GRADER_DIR / "reference_examples.json"  # a student edition's: the reference's answers to the examples


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
            same = MATCHES_RECORDED if edition else "✓ *Yours matches the reference.*"
            display(Markdown(same if where is None else f"✗ **Where yours differs:** {where}"))
        return example

    def grade(self) -> None:
        """Print the scorecard of this lesson: `pytest autograder --lesson N` on your folder."""
        from autograder.grading.scorecard import text

        with tempfile.TemporaryDirectory() as tmp:
            print(text(run_grader(self.root, self.lesson.number, Path(tmp) / "results.json")))


# a student edition's verdict: what it compares with is the reference's answer as recorded, not code it has
MATCHES_RECORDED = "✓ *Yours matches the reference's answer recorded for this edition.*"

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
