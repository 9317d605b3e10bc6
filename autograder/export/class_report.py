"""What the class got wrong: one offline HTML page and a CSV, read from a folder of results however they were made.

`python -m autograder class-report RESULTS... --out report.html` reads every
`results.json` under the paths it is given (or the files themselves):

- the grader's own results (`batch`'s `grades.results/<submission>/results.json`, `--results-file`);
- Gradescope's `results.json` (each check's record is in `extra_data.results`): a folder per submission,
  as Gradescope's "Export Submissions" zip has them, with `submission_metadata.yml` at its top for names;
- PrairieLearn's `results.json` (one test per task, with its `causes` and `waits_for`).

It writes, per task, how many submissions pass it, fail it on their own, wait for another task, have not
started it, or could not be graded; per task, the causes the checks named (`course/causes.py`), with their
counts and share of the class, most frequent first, each with the lesson section to revisit; a failure with
no named cause is counted under its check. Two plots, drawn here as inline SVG: where the class stops (the
first task each submission has not passed) and the points per lesson. The page asks nothing of any other
host. Its size grows with tasks and causes, never with students, unless `--names` lists who made each
mistake. Every string read from a results file is hostile: checked against the course's own ids, capped and
escaped.
"""

from __future__ import annotations

import csv
import html
import io
import re
import statistics
from collections import Counter
from pathlib import Path

from autograder.course import registry
from autograder.export.class_results import (
    GRADED_TASKS,
    STATE_HEADINGS,
    STATES,
    Tally,
    cause_rows,
    collect,
    tally,
)
from autograder.grading.scorecard import page_link

# --- writing: the table and the page, from a `Tally` (`class_results.py` reads and counts) ---------------------

FORMULA = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA) else value


def write_csv(t: Tally, names: bool) -> str:
    """One table: a row per task (its states), then a row per task and cause; `names`: who, per cause."""
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(["task", "title", *STATES, "cause", "cause name", "submissions", "share", "revisit"] + ["who"] * names)
    for tid in t.tasks:
        task = registry.task(tid)
        w.writerow(
            [tid, task.title, *(t.states[tid][s] for s in STATES), "", "", "", "", page_link(tid)] + [""] * names
        )
    for r in cause_rows(t):
        who = ["; ".join(t.who.get((r["task"], r["key"]), []))] if names else []
        row = [r["task"], "", *[""] * len(STATES), r["cause"], r["name"], r["submissions"], f"{r['share']:.3f}"]
        w.writerow([_cell(v) for v in [*row, r["revisit"], *who]])
    return out.getvalue()


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _link(target: str, site: str) -> str:
    """A page section: a link into the published site when its address is given, else the page's file and anchor."""
    if not site:
        return f"<code>{_e(target)}</code>"
    page, _, anchor = target.partition("#")
    slug = Path(page).stem
    return f'<a href="{_e(site.rstrip("/"))}/{_e(slug)}/#{_e(anchor)}">{_e(slug)}#{_e(anchor)}</a>'


COLOURS = {
    "passed": "#2e7d32",
    "failed": "#c62828",
    "waits": "#ef6c00",
    "not started": "#9e9e9e",
    "could not be graded": "#5c6bc0",
}


def _stacked(counts: Counter, total: int, width: int = 220) -> str:
    """A bar of a task's states, each a share of `total`, drawn in SVG."""
    x, parts = 0.0, []
    for state in STATES:
        n = counts[state]
        if not n or not total:
            continue
        w = width * n / total
        parts.append(
            f'<rect x="{x:.1f}" y="0" width="{w:.1f}" height="14" fill="{COLOURS[state]}">'
            f"<title>{_e(STATE_HEADINGS[state])}: {n}</title></rect>"
        )
        x += w
    return f'<svg width="{width}" height="14" role="img" aria-label="states">{"".join(parts)}</svg>'


def _stops_plot(t: Tally) -> str:
    """Vertical bars: how many submissions stop at each task (the first they have not passed), failed part red."""
    bars = [tid for tid in GRADED_TASKS if t.stops[tid]] + ([""] if t.stops[""] else [])
    if not bars:
        return "<p>No submission.</p>"
    top = max(t.stops[b] for b in bars)
    bw, gap, h, left, bottom = 34, 10, 180, 40, 46
    width = left + len(bars) * (bw + gap) + 10
    out = [
        f'<svg class="plot" width="{width}" height="{h + bottom + 28}" role="img" aria-label="where the class stops">'
        '<g transform="translate(0,18)">'  # room above the tallest bar for its count
    ]
    out.append(f'<line x1="{left}" y1="{h + 5}" x2="{width - 5}" y2="{h + 5}" stroke="#555"/>')
    out.append(f'<text x="{left - 6}" y="{15}" text-anchor="end" font-size="11">{top}</text>')
    for i, b in enumerate(bars):
        n, failed = t.stops[b], t.stops_failed[b]
        x = left + i * (bw + gap)
        full = h * n / top
        red = h * failed / top
        label = b or "all passed"
        title = f"{label}: {n} stop here" + (f" ({failed} fail it on their own)" if b else "")
        out.append(f"<g><title>{_e(title)}</title>")
        out.append(
            f'<rect x="{x}" y="{h + 5 - full:.1f}" width="{bw}" height="{full - red:.1f}" '
            f'fill="{COLOURS["passed"] if not b else COLOURS["not started"]}"/>'
        )
        if red:
            out.append(
                f'<rect x="{x}" y="{h + 5 - red:.1f}" width="{bw}" height="{red:.1f}" fill="{COLOURS["failed"]}"/>'
            )
        out.append(f'<text x="{x + bw / 2}" y="{h + 5 - full - 4:.1f}" text-anchor="middle" font-size="11">{n}</text>')
        out.append(
            f'<text x="{x + bw / 2}" y="{h + 20}" text-anchor="middle" font-size="11" class="stop" '
            f'data-task="{_e(b)}" data-count="{n}">{_e(label if b else "done")}</text></g>'
        )
    out.append("</g></svg>")
    return "".join(out)


def _lessons_plot(t: Tally) -> str:
    """Horizontal bars: the class's mean share of each lesson's points, with the median marked."""
    lessons = sorted(t.lessons)
    if not lessons:
        return "<p>No points.</p>"
    bw, row, left = 360, 24, 250
    out = [
        f'<svg class="plot" width="{left + bw + 120}" height="{row * len(lessons) + 10}" role="img" '
        f'aria-label="points per lesson">'
    ]
    for i, n in enumerate(lessons):
        shares = t.lessons[n]
        mean, median = statistics.fmean(shares), statistics.median(shares)
        y = 5 + i * row
        title = registry.lesson(n).title
        out.append(
            f'<g class="lesson" data-lesson="{n}" data-mean="{mean:.4f}"><title>lesson {n}: mean {mean:.0%}, '
            f"median {median:.0%} of {len(shares)} submissions</title>"
            f'<text x="{left - 8}" y="{y + 14}" text-anchor="end" font-size="12">{n} · {_e(title[:34])}</text>'
            f'<rect x="{left}" y="{y + 3}" width="{bw}" height="14" fill="#eee"/>'
            f'<rect x="{left}" y="{y + 3}" width="{bw * mean:.1f}" height="14" fill="#1565c0"/>'
            f'<line x1="{left + bw * median:.1f}" y1="{y}" x2="{left + bw * median:.1f}" y2="{y + 20}" '
            f'stroke="#000" stroke-width="2"/>'
            f'<text x="{left + bw + 8}" y="{y + 14}" font-size="12">{mean:.0%}</text></g>'
        )
    out.append("</svg>")
    return "".join(out)


CSS = """
body{font:15px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1000px;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ccc}h3{margin:1.2em 0 .3em}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.25em .6em;border-bottom:1px solid #e4e4e4;text-align:left}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}code{font-size:.9em}
.key span{display:inline-block;width:.9em;height:.9em;margin:0 .3em 0 1em;vertical-align:-.1em}
.muted{color:#666}details{margin:.2em 0}
@media (prefers-color-scheme: dark){body{background:#181818;color:#ddd}svg text{fill:#ddd}a{color:#8ab4f8}}
"""


def write_html(t: Tally, names: bool, site: str, unread: int) -> str:
    kinds = ", ".join(f"{n} {k}" for k, n in sorted(t.kinds.items()))
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        'img-src data:">',
        "<title>What the class got wrong</title>",
        f"<style>{CSS}</style></head><body>",
        "<h1>What the class got wrong</h1>",
        f'<p id="summary"><b data-submissions="{t.submissions}">{t.submissions}</b> submissions '
        f'<span class="muted">({_e(kinds)} results{f"; {unread} files could not be read" if unread else ""})</span>.'
        " A task <i>fails on its own</i> when its own checks fail; it <i>waits</i> when its code runs through "
        "another task that fails (that one is charged).</p>",
        "<h2>Where the class stops</h2>",
        "<p>The first graded task each submission has not passed: in red those who fail it on their own, "
        "in grey those who have not started it or wait for another task.</p>",
        _stops_plot(t),
        "<h2>Points per lesson</h2><p>The bar is the class's mean share of the lesson's points; the black "
        "line is the median.</p>",
        _lessons_plot(t),
        "<h2>Tasks</h2>",
        '<p class="key">'
        + "".join(f'<span style="background:{COLOURS[s]}"></span>{_e(STATE_HEADINGS[s])}' for s in STATES)
        + "</p>",
        '<table id="tasks"><thead><tr><th>task</th>'
        + "".join(f'<th class="n">{_e(STATE_HEADINGS[s])}</th>' for s in STATES)
        + "<th></th></tr></thead><tbody>",
    ]
    for tid in t.tasks:
        c = t.states[tid]
        out.append(
            f'<tr data-task="{_e(tid)}"><td>{_e(tid)} {_e(registry.task(tid).title)}</td>'
            + "".join(f'<td class="n" data-state="{_e(s)}">{c[s]}</td>' for s in STATES)
            + f"<td>{_stacked(c, t.submissions)}</td></tr>"
        )
    out.append("</tbody></table>")
    out.append(
        "<h2>Causes</h2><p>For each task, what its checks named in the failures, most frequent first, "
        "and the lesson section to revisit. A failure the grader could not name is counted under its "
        "check.</p>"
    )
    rows = cause_rows(t)
    if not rows:
        out.append("<p>No task failed.</p>")
    by_task: dict[str, list[dict]] = {}
    for r in rows:
        by_task.setdefault(r["task"], []).append(r)
    for tid, task_rows in by_task.items():
        out.append(
            f"<h3>{_e(tid)} {_e(registry.task(tid).title)} <span class='muted'>— "
            f"{t.states[tid]['failed']} fail it on their own</span></h3>"
        )
        out.append(
            '<table class="causes"><thead><tr><th>cause</th><th class="n">submissions</th>'
            '<th class="n">share of the class</th><th>revisit</th></tr></thead><tbody>'
        )
        for r in task_rows:
            ident = f" <code>{_e(r['cause'])}</code>" if r["cause"] else ""
            who = ""
            if names:
                people = t.who.get((tid, r["key"]), [])
                who = f"<details><summary>who</summary>{_e(', '.join(people))}</details>"
            out.append(
                f'<tr data-task="{_e(tid)}" data-cause="{_e(r["cause"] or "unnamed")}"><td>{_e(r["name"])}{ident}'
                f'{who}</td><td class="n">{r["submissions"]}</td><td class="n">{r["share"]:.0%}</td>'
                f"<td>{_link(r['revisit'], site)}</td></tr>"
            )
        out.append("</tbody></table>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def report(paths: list[Path], out: Path, csv_out: Path | None = None, names: bool = False, site: str = "") -> Tally:
    """Read the results under `paths`; write the page to `out` and the table to `csv_out` (default: beside it)."""
    if site and not re.match(r"^https?://[^\s\"'<>]+$", site):
        raise ValueError(f"--site must be an http(s) address, not {site!r}")
    subs, unread = collect(paths)
    t = tally(subs)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(write_html(t, names, site, unread), encoding="utf-8")
    (csv_out or out.with_suffix(".csv")).write_text(write_csv(t, names), encoding="utf-8", newline="")
    return t
