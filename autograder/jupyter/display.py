"""What the learner's kernel shows: graphviz graphs and matplotlib figures as SVG pictures, and the drawings
`pytest autograder --draw DIR` made (`show_graph_diff`)."""

from __future__ import annotations

import io
from pathlib import Path

from autograder.grading.drawing import dot_to_svg


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
