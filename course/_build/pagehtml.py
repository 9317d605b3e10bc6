"""A page's HTML finished for its figures and tables: the ids inside each figure's SVG numbered per page, and the
cells of a table inside `<div class="bp-cards" markdown>` given their column's heading, for the card layout a
phone shows (course.css).
"""

from __future__ import annotations

import html
import re

FIGURE_IDS = re.compile(r"bpf[0-9a-f]{10}-")


def number_figures(content: str) -> str:
    """Give each figure's SVG ids a prefix unique on the page (pagekit names them by content, so a cached
    figure keeps its ids; the same figure twice on a page would repeat them). A figure drawn at two widths
    holds two SVGs: the second one's ids get a letter more."""
    head, *figures = content.split('<figure class="bp-figure')

    def number(n: int, part: str) -> str:
        svgs = {}  # each SVG's own prefix, in order: its number on the page
        return FIGURE_IDS.sub(lambda m: f"bpf{n}{'ab'[svgs.setdefault(m[0], len(svgs))]}-", part)

    return head + "".join('<figure class="bp-figure' + number(n, part) for n, part in enumerate(figures, start=1))


CARDS = re.compile(r'(?P<before><div class="bp-cards">(?:(?!<table>|</div>).)*)(?P<table><table>.*?</table>)', re.S)


def cards(content: str) -> str:
    """A table inside `<div class="bp-cards" markdown>` becomes a card per row on a phone (course.css): each cell
    gets its column's heading (`data-label`, shown before it) and its content in a span (the other column of
    the card's line), and every part its table role, which a screen reader would lose when the cells are laid
    out as blocks."""

    def table(match: re.Match) -> str:
        text = match["table"]
        heads = [
            html.unescape(re.sub(r"<[^>]+>", "", h)).strip() for h in re.findall(r"<th\b[^>]*>(.*?)</th>", text, re.S)
        ]

        def row(tr: re.Match) -> str:
            labels = iter(heads)
            cells = re.sub(
                r"<td\b([^>]*)>(.*?)</td>",
                lambda td: (
                    f'<td role="cell" data-label="{html.escape(next(labels, ""), quote=True)}"{td[1]}>'
                    f"<span>{td[2]}</span></td>"
                ),
                tr[0],
                flags=re.S,
            )
            return re.sub(r"<th\b", '<th role="columnheader"', cells.replace("<tr>", '<tr role="row">', 1))

        text = re.sub(r"<tr>.*?</tr>", row, text, flags=re.S)
        for part in ("thead", "tbody"):
            text = text.replace(f"<{part}>", f'<{part} role="rowgroup">')
        return match["before"] + text.replace("<table>", '<table role="table">', 1)

    return CARDS.sub(table, content)
