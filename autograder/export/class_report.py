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
import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import registry
from autograder.course.causes import CAUSES
from autograder.grading.results import Status
from autograder.grading.scorecard import page_link

MAX_FILE = 2_000_000  # bytes of one results file read (the grader's own are well under it)
MAX_LABEL = 160  # characters of a check's description shown
MAX_UNNAMED = 12  # checks listed apart per task when they fail with no named cause; the rest are counted together
STATES = ("passed", "failed", "waits", "not started", "could not be graded")
STATE_HEADINGS = {
    "passed": "pass",
    "failed": "fail on their own",
    "waits": "wait for another task",
    "not started": "not started",
    "could not be graded": "could not be graded",
}
GRADED_TASKS = [t.id for lesson in registry.LESSONS if not lesson.bonus for t in lesson.tasks]
ALL_TASKS = [t.id for lesson in registry.LESSONS for t in lesson.tasks]
STATUS_VALUES = {s.value for s in Status}
WENT_WRONG = {s.value for s in Status if s.went_wrong}
NOT_STARTED, PASSED, VOID = Status.NOT_STARTED.value, Status.PASSED.value, Status.VOID.value
TASKS = registry.TASKS
UNNAMED = "no named cause"


@dataclass
class Submission:
    """One submission, as the report needs it: each task's state and the causes (or unnamed checks) it failed on."""

    name: str
    kind: str  # "grader", "gradescope", "prairielearn"
    states: dict[str, str] = field(default_factory=dict)
    causes: dict[str, set[str]] = field(default_factory=dict)  # task -> cause ids, or "check:<label>"
    points: dict[int, list[int]] = field(default_factory=dict)  # lesson -> [earned, max] (graded tasks)


# --- reading -------------------------------------------------------------------------------------------------------


def results_files(paths: list[Path]) -> list[tuple[Path, Path]]:
    """Each results file under `paths`, with the path it was found under (files given are taken as they are)."""
    found = []
    for path in paths:
        if path.is_file():
            found.append((path, path.parent))
        elif path.is_dir():
            found += [(p, path) for p in sorted(path.rglob("results.json")) if p.is_file() and not p.is_symlink()]
        else:
            raise FileNotFoundError(f"{path}: no such file or folder")
    return found


def _label(text: object) -> str:
    text = text if isinstance(text, str) else ""
    text = "".join(ch if ch.isprintable() else " " for ch in text[: MAX_LABEL * 2]).strip()
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL] + "…"


def from_checks(name: str, kind: str, records: object) -> Submission:
    """A submission from its checks' records (the grader's own, or Gradescope's `extra_data.results`).

    Records the course does not know (a task, a status, points, a cause) are left out, not trusted. A task's
    state is `TaskResult.status`'s, read straight from the records, so that a class's files are read in seconds.
    """
    sub = Submission(name, kind)
    by_task: dict[str, list[dict]] = {}
    for r in records if isinstance(records, list) else ():
        if isinstance(r, dict) and r.get("task") in TASKS and r.get("status") in STATUS_VALUES:
            points = r.get("points")
            if type(points) is int and 0 <= points <= 1000:
                by_task.setdefault(r["task"], []).append(r)
    for tid, checks in by_task.items():
        statuses = {r["status"] for r in checks}
        if statuses & WENT_WRONG:
            state = "failed"
        elif NOT_STARTED in statuses:
            waiting = (r.get("waits_for") for r in checks if r["status"] == NOT_STARTED)
            state = "waits" if any(w in TASKS for w in waiting) else "not started"
        elif VOID in statuses:
            state = VOID
        else:
            state = "passed"
        sub.states[tid] = state
        if state == "failed":
            keys = set()
            for r in checks:
                if r["status"] in WENT_WRONG:
                    cause = r.get("cause")
                    if cause in CAUSES:
                        keys.add(cause)
                    else:
                        label = r.get("description") or str(r.get("nodeid", "")).rpartition("::")[2]
                        keys.add(f"check:{_label(label)}")
            sub.causes[tid] = keys
        task = TASKS[tid]
        if not task.bonus:
            lesson = sub.points.setdefault(task.lesson, [0, 0])
            lesson[0] += sum(r["points"] for r in checks if r["status"] == PASSED)
            lesson[1] += sum(r["points"] for r in checks if r["status"] != VOID)
    return sub


def from_prairielearn(name: str, data: dict) -> Submission:
    sub = Submission(name, "prairielearn")
    for t in data.get("tests") if isinstance(data.get("tests"), list) else ():
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        tid = t["name"].split(" ", 1)[0]
        status = t.get("message")
        if tid not in registry.TASKS or status not in STATUS_VALUES:
            continue
        status = Status(status)
        waits = t.get("waits_for") if t.get("waits_for") in registry.TASKS else ""
        if status == Status.PASSED:
            state = "passed"
        elif status.went_wrong:
            state = "failed"
        elif status == Status.VOID:
            state = "could not be graded"
        else:
            state = "waits" if waits else "not started"
        sub.states[tid] = state
        if state == "failed":
            causes = t.get("causes") if isinstance(t.get("causes"), list) else []
            sub.causes[tid] = {c for c in causes if c in CAUSES} or {f"check:{UNNAMED}"}
        task = registry.task(tid)
        earned, most = t.get("points"), t.get("max_points")
        if not task.bonus and type(earned) in (int, float) and type(most) in (int, float) and 0 <= earned <= most:
            lesson = sub.points.setdefault(task.lesson, [0, 0])
            lesson[0] += earned
            lesson[1] += most
    return sub


def read(path: Path, name: str) -> Submission | None:
    """One results file, whichever grader wrote it; None if it is none of them."""
    try:
        if path.stat().st_size > MAX_FILE:
            return None
        data = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if "graded" in data and "tests" in data:
        return from_checks(name, "grader", data["tests"])
    extra = data.get("extra_data")
    if isinstance(extra, dict) and "results" in extra:
        return from_checks(name, "gradescope", extra["results"])
    if "gradable" in data:
        return from_prairielearn(name, data)
    if "tests" in data and "score" in data:  # Gradescope's file of a grader that could not run: nothing graded
        return Submission(name, "gradescope")
    return None


def gradescope_names(root: Path) -> dict[str, str]:
    """Submitters' names by submission folder, from Gradescope's `submission_metadata.yml` (if PyYAML is there)."""
    meta = root / "submission_metadata.yml"
    if not meta.is_file():
        return {}
    try:
        import yaml

        data = yaml.safe_load(meta.read_text())
    except Exception:  # noqa: BLE001 - no PyYAML, or a file it cannot read: the folders' names stand
        return {}
    names = {}
    for folder, info in (data or {}).items() if isinstance(data, dict) else ():
        submitters = info.get(":submitters") if isinstance(info, dict) else None
        people = [s.get(":name") for s in submitters or () if isinstance(s, dict)]
        people = [p for p in people if isinstance(p, str)]
        if people:
            names[str(folder)] = ", ".join(people)
    return names


def collect(paths: list[Path]) -> tuple[list[Submission], int]:
    """Every submission under `paths`, and how many results files could not be read."""
    subs, unread, meta = [], 0, {}
    for path, root in results_files(paths):
        rel = path.parent.relative_to(root).parts if path.parent != root else (path.stem,)
        folder = rel[0] if rel else path.stem
        if root not in meta:
            meta[root] = gradescope_names(root)
        name = _label(meta[root].get(folder) or "/".join(rel))
        sub = read(path, name)
        if sub is None:
            unread += 1
        else:
            subs.append(sub)
    return subs, unread


# --- counting ------------------------------------------------------------------------------------------------------


@dataclass
class Tally:
    submissions: int
    states: dict[str, Counter]  # task -> state -> count
    causes: dict[str, Counter]  # task -> cause key -> count
    who: dict[tuple[str, str], list[str]]  # (task, cause key) -> names
    stops: Counter  # first task not passed -> count ("" = none: every graded task passed)
    stops_failed: Counter  # of those, the ones that failed it on their own
    lessons: dict[int, list[float]]  # lesson -> each submission's share of its points
    kinds: Counter
    tasks: list[str]


def tally(subs: list[Submission]) -> Tally:
    seen = {t for s in subs for t in s.states}
    tasks = [t for t in ALL_TASKS if t in seen]
    states = {t: Counter() for t in tasks}
    causes = {t: Counter() for t in tasks}
    who: dict[tuple[str, str], list[str]] = {}
    stops, stops_failed, lessons = Counter(), Counter(), {}
    for s in subs:
        for tid, state in s.states.items():
            states[tid][state] += 1
        for tid, keys in s.causes.items():
            for key in keys:
                causes[tid][key] += 1
                who.setdefault((tid, key), []).append(s.name)
        stop = next((t for t in GRADED_TASKS if s.states.get(t, "passed") not in ("passed", VOID)), "")
        stops[stop] += 1
        if stop and s.states[stop] == "failed":
            stops_failed[stop] += 1
        for lesson, (earned, most) in s.points.items():
            if most:
                lessons.setdefault(lesson, []).append(earned / most)
    for counter in causes.values():  # unnamed checks past the first MAX_UNNAMED of a task: counted together
        unnamed = [k for k, _ in counter.most_common() if k.startswith("check:")]
        for key in unnamed[MAX_UNNAMED:]:
            counter[f"check:{UNNAMED} (other checks)"] += counter.pop(key)
    return Tally(len(subs), states, causes, who, stops, stops_failed, lessons, Counter(s.kind for s in subs), tasks)


def cause_rows(t: Tally) -> list[dict]:
    """One row per task and cause, most frequent first within each task (tasks in course order)."""
    rows = []
    for tid in t.tasks:
        for key, count in sorted(t.causes[tid].items(), key=lambda kv: (-kv[1], kv[0])):
            if key.startswith("check:"):
                cid, name, revisit = "", f"{UNNAMED}: failed check “{key[6:]}”", page_link(tid)
            else:
                cid, name, revisit = key, CAUSES[key].name, page_link(CAUSES[key].task)
            rows.append(
                {
                    "task": tid,
                    "cause": cid,
                    "name": name,
                    "submissions": count,
                    "share": count / t.submissions if t.submissions else 0.0,
                    "revisit": revisit,
                    "key": key,
                }
            )
    return rows


# --- writing -------------------------------------------------------------------------------------------------------

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
