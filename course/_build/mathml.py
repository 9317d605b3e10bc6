"""The pages' math as MathML, at build time: the browser needs no script and no font from elsewhere.

`convert_math` converts what `pymdownx.arithmatex` (generic mode) leaves in the HTML with `latex2mathml`. A long
inline formula is cut into pieces after its operators, and a display formula into its equations and after its
relations, so that they wrap on a phone.
"""

from __future__ import annotations

import html
import re

from mkdocs.exceptions import PluginError

MATH = re.compile(
    r'<span class="arithmatex">\\\((?P<inline>.*?)\\\)</span>'
    r'|<div class="arithmatex">\\\[(?P<block>.*?)\\\]</div>',
    re.S,
)


SIGN = re.compile(r"(<mo(?: [^>]*)?>(?P<before>[^<]*)</mo>|<mrow>|<math[^>]*>)<mo>(&#x02212;|&#x0002B;)</mo>")
PRIME = re.compile(r"<msup>(<mi>[^<]*</mi>)<mi>(&#x02032;|&#x02033;|&#x02034;)</mi></msup>")
CLOSING = {")", "]", "}", "|", "&#x00029;", "&#x0005D;", "&#x0007D;", "&#x0007C;", "&#x02016;", "&#x0232A;"}


def _sign(match: re.Match) -> str:
    if match["before"] in CLOSING:  # after a closing bracket a minus subtracts
        return match[0]
    return f'{match[1]}<mo form="prefix">{match[3]}</mo>'


CELL = re.compile(r"<mtd((?: [^>]*)?)>((?:(?!<mtd|</mtd>).)+)</mtd>", re.S)  # a cell with content, innermost


def _convert(tex: str, display: str, where: str) -> str:
    from latex2mathml.converter import convert

    try:
        mathml = convert(tex, display=display)
    except Exception as exc:
        raise PluginError(f"{where}: cannot convert the math {tex!r}: {exc}") from exc
    # A minus (or plus) that opens a group or follows another operator is a sign, not a
    # subtraction: say so, or the browser spaces it like a binary operator ("x = − 3").
    mathml = SIGN.sub(_sign, mathml)
    # f' as a full-size prime after the f (a prime as a superscript comes out tiny in most fonts)
    mathml = PRIME.sub(r'\1<mo lspace="0em" rspace="0em">\2</mo>', mathml)
    # One <mrow> per table cell, so that course.css can push a right-aligned cell's content to the right.
    mathml = CELL.sub(r"<mtd\1><mrow>\2</mrow></mtd>", mathml)
    # Keep the source for copy and paste, and for screen readers that prefer it.
    return mathml.replace("<math ", f'<math alttext="{html.escape(tex, quote=True)}" ', 1)


BREAK_AFTER = re.compile(r"(=|\+|-|<|>|\\(?:pm|mp|approx|le|leq|ge|geq|ne|neq|to)(?![a-zA-Z]))")
AFTER_OPERATOR = re.compile(BREAK_AFTER.pattern + r"\s*$")
OPENING, CLOSING_TEX = "{([", "})]"
LONG_INLINE = 32  # characters of TeX; shorter formulas never need a line break


def _inline_pieces(tex: str) -> list[str]:
    """Split inline TeX after its top-level relations and binary operators, where TeX may break a line.

    Chromium never breaks a line inside one <math>, so a long inline formula would push the page
    sideways on a phone; as a row of <math> pieces it wraps like text.
    """
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        if tex.startswith(("\\left", "\\right"), i):  # \left( and \right) nest like braces
            depth += 1 if tex.startswith("\\left", i) else -1
            i += len("\\left" if tex.startswith("\\left", i) else "\\right") + 1
            continue
        if tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in OPENING + CLOSING_TEX:
            i += 2  # \{ and \} are symbols, not groups
            continue
        depth += (tex[i] in OPENING) - (tex[i] in CLOSING_TEX)
        match = BREAK_AFTER.match(tex, i)
        if match and depth == 0:
            before = tex[start:i].strip()
            binary = before and not AFTER_OPERATOR.search(before)  # not a sign after another operator
            if binary and tex[match.end() :].strip():
                pieces.append(tex[start : match.end()])
                start = match.end()
            i = match.end()
            continue
        i += 1
    return [*pieces, tex[start:]]


# Where a display formula may start a new line: between the equations of a list (`\qquad`, `\quad`,
# or `,\;` after a comma), each kept whole when it fits; then, inside an equation, after a relation.
EQUATION_GAP = re.compile(r"\\qquad|\\quad|(?<=,)\s*\\;")
RELATION = re.compile(r"(=|\\approx|\\(?:long)?(?:right|left)arrow|\\to|\\(?:le|ge|ne)q?)(?![a-zA-Z])")
GAPS = {"\\qquad": "bp-gap2", "\\quad": "bp-gap1"}  # course.css widths of the space between two equations


def _top_level(tex: str, pattern: re.Pattern, after: bool) -> list[tuple[str, str]]:
    """Split `tex` where `pattern` matches outside braces, \\left...\\right and environments.

    Returns (piece, separator) pairs; with `after` the match stays at the end of its piece
    (a relation), otherwise it is the separator (a gap) and leaves the piece.
    """
    pieces, depth, start, i = [], 0, 0, 0
    while i < len(tex):
        for word, step in (("\\left", 1), ("\\right", -1), ("\\begin", 1), ("\\end", -1)):
            if tex.startswith(word, i) and not tex[i + len(word) : i + len(word) + 1].isalpha():
                depth += step
                i += len(word)
                break
        else:
            if tex[i] == "\\" and i + 1 < len(tex) and tex[i + 1] in OPENING + CLOSING_TEX:
                i += 2
                continue
            match = pattern.match(tex, i) if depth == 0 else None
            if match and tex[start:i].strip() and tex[match.end() :].strip():
                end = match.end() if after else i
                pieces.append((tex[start:end], "" if after else match[0].strip()))
                start = i = match.end()
                continue
            depth += (tex[i] in OPENING) - (tex[i] in CLOSING_TEX)
            i += 1
    return [*pieces, (tex[start:], "")]


def _display(tex: str, where: str) -> str:
    """A display formula as a centred paragraph of pieces that wraps to the column.

    Chromium never breaks a line inside one <math>, and a phone's column is narrower than
    many display formulas: so each equation of a list is a box of its own (kept whole when it
    fits on the line), and an equation wider than the column breaks after a relation. Each
    piece is typeset in display style. What cannot be broken (an aligned table, a long
    fraction) scrolls inside its box, which course.css shades on the side that has more.
    """
    if "\\begin" in tex and not EQUATION_GAP.search(tex):
        return f'<div class="bp-math">{_convert(tex, "block", where)}</div>'
    out = []
    for equation, gap in _top_level(tex, EQUATION_GAP, after=False):
        pieces = [p.strip() for p, _ in _top_level(equation.strip(), RELATION, after=True)]
        maths = []
        for n, piece in enumerate(pieces):
            mathml = _convert(piece, "block", where).replace('display="block"', 'displaystyle="true"', 1)
            if n < len(pieces) - 1:  # the relation that ends a piece still sits between two terms
                mathml = re.sub(r"<mo>([^<]*)</mo>((?:</mrow>)*</math>)$", r'<mo form="infix">\1</mo>\2', mathml)
            maths.append(mathml)
        out.append(f'<span class="bp-eq">{"<wbr>".join(maths)}</span>')
        if gap:
            out.append(f'<span class="{GAPS.get(gap, "bp-gap0")}"> </span>')
    return f'<div class="bp-math">{"".join(out)}</div>'


def _mathml(match: re.Match, where: str) -> str:
    block = match["block"] is not None
    tex = html.unescape(match["block"] if block else match["inline"]).strip()
    if block:  # limits under lim, sum, ... as TeX does in display math
        tex = re.sub(r"\\(lim|sum|prod|max|min)(?!\\limits)(?=\s*_)", r"\\\1\\limits", tex)
        return _display(tex, where)
    pieces = _inline_pieces(tex) if len(tex) > LONG_INLINE else [tex]
    if len(pieces) == 1:
        return _convert(tex, "inline", where)
    # the operator that ends a piece is still the binary one between two terms: keep its spacing
    last_operator = re.compile(r"<mo>([^<]*)</mo>((?:</mrow>)*</math>)$")
    mathml = [last_operator.sub(r'<mo form="infix">\1</mo>\2', _convert(p.strip(), "inline", where)) for p in pieces]
    return f'<span class="bp-imath">{"<wbr>".join(mathml)}</span>'


def convert_math(content: str, where: str) -> str:
    """The page's HTML with each formula arithmatex left in it converted to MathML (`where`: the page, for errors)."""
    return MATH.sub(lambda m: _mathml(m, where), content)
