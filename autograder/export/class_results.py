"""The class report's reading and counting: every results file it is given, whoever wrote it (the grader, Gradescope,
PrairieLearn), read as hostile input into a `Submission`, then counted per task and cause (`Tally`).

`class_report.py` writes the page and the table from the `Tally`.
"""

from __future__ import annotations

import json
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
