"""Grade a whole class: every submission folder in its own process, in parallel, into one CSV gradebook.

`python -m autograder batch SUBMISSIONS_DIR --out grades.csv` grades each
sub-folder of SUBMISSIONS_DIR (laid out like `exercises/`) with
`pytest autograder --impl FOLDER` in a separate process with a wall-time and
memory cap, `--jobs` at a time. Each submission's results.json and log are
kept in `grades.results/`; its CSV row is written as soon as it is done. Run
the command again and it resumes: submissions that already have a row are not
graded again. A submission that times out or crashes the grader gets a row
that says so, with 0 points.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import REPO

LOG_TAIL = 200_000  # bytes of each submission's grader output kept in its log


@dataclass
class Outcome:
    name: str
    status: str  # graded, timed out, crashed
    seconds: float
    results: dict | None
    note: str = ""

    def row(self, max_score: int) -> dict[str, object]:
        lessons = [lesson for lesson in registry.LESSONS if lesson.tasks]
        per_lesson = {f"lesson {lesson.number}": 0 for lesson in lessons}
        total = 0
        if self.results:
            for test in self.results["tests"]:
                per_lesson[f"lesson {registry.task(test['number']).lesson}"] += test["score"]
                total += test["score"]
        note = self.note
        if self.results and not note:
            statuses = list(self.results.get("extra_data", {}).get("status", {}).values())
            note = ", ".join(f"{statuses.count(s)} {s}" for s in ("passed", "not started", "failed", "error",
                                                                  "timed out") if statuses.count(s)) + " (tasks)"
        return {"submission": self.name, "status": self.status, "total": total, "max": max_score,
                **per_lesson, "seconds": round(self.seconds, 1), "note": note}


def columns() -> list[str]:
    lessons = [f"lesson {lesson.number}" for lesson in registry.LESSONS if lesson.tasks]
    return ["submission", "status", "total", "max", *lessons, "seconds", "note"]


def _limit(memory_mb: int):
    def apply() -> None:
        os.setsid()  # its own process group: everything it starts is stopped with it
        if memory_mb:
            import resource

            limit = memory_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return apply


def grade_one(folder: Path, results_dir: Path, timeout: float, memory_mb: int, test_timeout: float) -> Outcome:
    """Grade one submission in a child `pytest autograder` process."""
    results = results_dir / f"{folder.name}.json"
    log = results_dir / f"{folder.name}.log"
    results.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "autograder", "--impl", str(folder.resolve()),
               "--results-json", str(results), "--timeout", str(test_timeout), "-p", "no:cacheprovider"]
    start = time.monotonic()
    with open(log, "wb") as out:
        proc = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                preexec_fn=_limit(memory_mb) if os.name == "posix" else None)
        try:
            code = proc.wait(timeout=timeout)
            status = None
        except subprocess.TimeoutExpired:
            code, status = None, "timed out"
        finally:
            if os.name == "posix":
                try:
                    os.killpg(proc.pid, signal.SIGKILL)  # whatever the submission left running
                except ProcessLookupError:
                    pass
            proc.wait()
    seconds = time.monotonic() - start
    _keep_tail(log)
    if status == "timed out":
        return Outcome(folder.name, status, seconds, None, f"the grader did not finish within {timeout:g} s")
    try:
        data = json.loads(results.read_text())
        data["tests"], data["score"]  # noqa: B018 - the shape the gradebook needs
    except (OSError, ValueError, KeyError, TypeError):
        return Outcome(folder.name, "crashed", seconds, None, f"the grader exited with code {code} and no results")
    return Outcome(folder.name, "graded", seconds, data)


def _keep_tail(log: Path) -> None:
    size = log.stat().st_size
    if size > LOG_TAIL:
        with open(log, "rb") as f:
            f.seek(size - LOG_TAIL)
            tail = f.read()
        log.write_bytes(b"[... earlier output cut ...]\n" + tail)


def finished(csv_path: Path) -> set[str]:
    """The submissions that already have a row."""
    if not csv_path.exists():
        return set()
    with open(csv_path, newline="") as f:
        return {row["submission"] for row in csv.DictReader(f) if row.get("submission")}


def batch(submissions: Path, out: Path, jobs: int, timeout: float, memory_mb: int, test_timeout: float,
          progress: bool = True) -> list[Outcome]:
    """Grade every sub-folder of `submissions` not yet in `out`; append a row for each as it is done."""
    if not submissions.is_dir():
        raise FileNotFoundError(f"{submissions} is not a folder of submissions")
    folders = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    done = finished(out)
    todo = [f for f in folders if f.name not in done]
    results_dir = out.with_suffix(".results")
    results_dir.mkdir(parents=True, exist_ok=True)
    full_marks = _full_marks(results_dir)
    new_file = not out.exists() or out.stat().st_size == 0
    lock = threading.Lock()
    outcomes = []
    with open(out, "a", newline="") as f, ThreadPoolExecutor(max_workers=jobs) as pool:
        writer = csv.DictWriter(f, fieldnames=columns())
        if new_file:
            writer.writeheader()
            f.flush()
        futures = [pool.submit(grade_one, folder, results_dir, timeout, memory_mb, test_timeout) for folder in todo]
        bar = _progress(len(folders), len(done), progress)
        for future in as_completed(futures):
            outcome = future.result()
            with lock:
                writer.writerow(outcome.row(full_marks))
                f.flush()
            outcomes.append(outcome)
            bar.update(1)
            bar.set_postfix_str(f"{outcome.name}: {outcome.status}")
        bar.close()
    return outcomes


def _full_marks(results_dir: Path) -> int:
    """The maximum score: the points of every grading test, read off a collection-only run."""
    path = results_dir / ".max_score.json"
    subprocess.run([sys.executable, "-m", "pytest", "autograder", "--collect-only", "-q", "-p", "no:cacheprovider",
                    "--results-json", str(path)], cwd=REPO, capture_output=True, check=False)
    try:
        return json.loads(path.read_text())["max_score"]
    except (OSError, ValueError, KeyError):
        return 0


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="submission", disable=not enabled, file=sys.stderr,
                dynamic_ncols=True)
