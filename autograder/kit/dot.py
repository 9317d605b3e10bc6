"""DOT text as graphviz writes it, read by the grader in one pass: the nodes, edges and graph attributes it declares.

A drawing's DOT text is the learner's data. It is read here with no regular
expression: a pattern such as `^\\s*(ID)\\s*(\\[.*\\])?\\s*;?\\s*$` backtracks over
every way to share a run of spaces among its `\\s*`s, and a line of 800 spaces
took a second, one of 20,000 days. Each line is scanned once, character by
character, into tokens (quoted strings, HTML strings, identifiers, `->` and
punctuation), and a statement is read off its tokens: time in proportion to the
text, whatever it holds. A text longer than `MAX_DOT` is not read at all.

Only what graphviz's Python package writes is understood, one statement a line:
`name [key=value ...]`, `tail -> head [...]`, `graph [key=value]` and
`key=value`. A line that is anything else declares nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_DOT = 100_000  # characters of DOT text a check reads (a drawing of any graph the checks build is far smaller)
KEYWORDS = frozenset({"graph", "node", "edge", "digraph", "subgraph", "strict"})
PUNCTUATION = frozenset("[]=;,{}")
ID, ARROW = "id", "->"


class TooLong(ValueError):
    """A DOT text over `MAX_DOT` characters: the check does not read it."""


@dataclass
class Dot:
    nodes: dict[str, dict[str, str]] = field(default_factory=dict)  # name -> its attributes
    edges: set[tuple[str, str]] = field(default_factory=set)  # (tail, head)
    graph: dict[str, str] = field(default_factory=dict)  # the graph's own attributes (rankdir, ...)


def parse(source: str) -> Dot:
    """The statements of a DOT text; raises `TooLong` past `MAX_DOT` characters."""
    if len(source) > MAX_DOT:
        raise TooLong(f"a DOT text of {len(source)} characters (a check reads {MAX_DOT} at most)")
    dot = Dot()
    for line in source.split("\n"):  # graphviz ends a line with "\n" alone
        found = tokens(line)
        if found:
            _statement(found, dot)
    return dot


def tokens(line: str) -> list[tuple[str, str]] | None:
    """The tokens of one line, as (kind, text) with quoted strings unquoted; None if it holds anything else."""
    out, i, n = [], 0, len(line)
    while i < n:
        ch = line[i]
        if ch.isspace():
            i += 1
        elif ch == '"':  # a quoted string: a backslash escapes the character after it
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            if j >= n:
                return None  # never closed
            out.append((ID, line[i + 1 : j].replace('\\"', '"')))
            i = j + 1
        elif ch == "<":  # an HTML string: balanced angle brackets, kept as written
            depth, j = 0, i
            while j < n:
                depth += 1 if line[j] == "<" else -1 if line[j] == ">" else 0
                j += 1
                if depth == 0:
                    break
            if depth:
                return None
            out.append((ID, line[i:j]))
            i = j
        elif ch == "-" and line.startswith("->", i):
            out.append((ARROW, ARROW))
            i += 2
        elif ch in PUNCTUATION:
            out.append((ch, ch))
            i += 1
        elif _word(ch) or ch == "-" and i + 1 < n and _word(line[i + 1]):
            j = i + 1
            while j < n and _word(line[j]):
                j += 1
            out.append((ID, line[i:j]))
            i = j
        else:
            return None
    return out


def _word(ch: str) -> bool:
    return ch.isalnum() or ch in "_."


def _statement(toks: list[tuple[str, str]], dot: Dot) -> None:
    """Record what one line's tokens declare: a node, an edge, or graph attributes."""
    if toks[-1][0] == ";":
        toks = toks[:-1]
    if len(toks) == 3 and toks[0][0] == ID and toks[1][0] == "=" and toks[2][0] == ID:
        dot.graph[toks[0][1]] = toks[2][1]  # `rankdir=LR`
        return
    if len(toks) >= 3 and toks[0][0] == ID and toks[1][0] == ARROW and toks[2][0] == ID:
        tail, head, rest = toks[0][1], toks[2][1], toks[3:]
        if _attributes(rest) is not None:
            dot.edges.add((tail, head))
            dot.nodes.setdefault(tail, {})
            dot.nodes.setdefault(head, {})
        return
    if toks[0][0] != ID:
        return
    attributes = _attributes(toks[1:])
    if attributes is None:
        return
    name = toks[0][1]
    if name == "graph":
        dot.graph.update(attributes)
    elif name not in KEYWORDS:
        dot.nodes.setdefault(name, {}).update(attributes)


def _attributes(toks: list[tuple[str, str]]) -> dict[str, str] | None:
    """The `key=value` pairs of an attribute list `[...]` (or {} for none); None if the tokens are not one."""
    if not toks:
        return {}
    if toks[0][0] != "[" or toks[-1][0] != "]":
        return None
    pairs, inside, k = {}, toks[1:-1], 0
    while k < len(inside):
        if k + 2 < len(inside) and inside[k][0] == ID and inside[k + 1][0] == "=" and inside[k + 2][0] == ID:
            pairs[inside[k][1]] = inside[k + 2][1]
            k += 3
        else:
            k += 1  # a separator, or something no attribute is made of
    return pairs
