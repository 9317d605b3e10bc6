"""Grade a whole class: every submission in its own grader process, in parallel, into one CSV gradebook.

`python -m autograder batch SUBMISSIONS_DIR --out grades.csv` grades each
sub-folder of SUBMISSIONS_DIR (laid out like `exercises/`), `--jobs` at a
time. Each submission is first copied (its regular `.py` files only) into a
private folder, then graded by `python -m autograder grade` (the one runner)
in a process of its own with a wall-time cap; the learner's code runs in that
grader's sandboxed workers, which cannot see the other submissions, the
gradebook or the grader. The grader saves its results after every check, so a
submission stopped at the wall time keeps the checks it finished, and its
log ends with where the grader was stuck; whatever processes a stopped grader
leaves are killed and reaped here. Only this process writes the gradebook:
one row per submission, as soon as it is done. Run the command again and it
resumes: submissions that already have a row are not graded again.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

from autograder.course import registry
from autograder.course.regions import REPO
from autograder.grading import isolation
from autograder.grading.limits import ONE_THREAD
from autograder.grading.options import GradeOptions, grader_command
from autograder.grading.results import Results, Status
from autograder.grading.verdicts import shown
from autograder.worker import sandbox

LOG_TAIL = 200_000  # bytes of each submission's grader output kept in its log
MAX_FILE = 1_000_000  # bytes of one submitted file copied for grading
STOP_GRACE = 5.0  # seconds a grader past its wall time has to write its results file before it is killed


@dataclass
class Outcome:
    name: str
    status: str  # graded, timed out, crashed
    seconds: float
    results: Results | None
    note: str = ""

    def row(self, max_score: int) -> dict[str, object]:
        per_lesson = {f"lesson {lesson.number}": 0 for lesson in _graded_lessons()}
        total = bonus = 0
        if self.results:
            total, bonus = self.results.score, self.results.bonus
            for test in self.results.tests:
                if not registry.task(test.task).bonus:
                    per_lesson[f"lesson {registry.task(test.task).lesson}"] += test.earned
        note = self.note
        if self.results:
            statuses = [t.status for t in self.results.tasks]
            counts = ", ".join(f"{statuses.count(s)} {s}" for s in Status if statuses.count(s)) + " (tasks)"
            note = f"{note}; {counts}" if note else counts
        status = self.status
        if self.results and self.results.void_points:  # not earned, and not left out of the maximum: named here
            status = f"{status}, {self.results.void_points} pt could not be graded here (grade it again)"
        return {
            "submission": self.name,
            "status": status,
            "total": total,
            "max": max_score,
            **per_lesson,
            "bonus": bonus,
            "seconds": round(self.seconds, 1),
            "note": note,
        }


def _graded_lessons() -> list[registry.Lesson]:
    """The lessons that count towards `total`; bonus points have a column of their own."""
    return [lesson for lesson in registry.LESSONS if lesson.tasks and not lesson.bonus]


def columns() -> list[str]:
    lessons = [f"lesson {lesson.number}" for lesson in _graded_lessons()]
    return ["submission", "status", "total", "max", *lessons, "bonus", "seconds", "note"]


def private_copy(folder: Path, into: Path) -> tuple[Path, list[str]]:
    """Copy the submission's regular `.py` files (no symbolic links, none too large); return the copy and what was "
    "left."""
    copy = into / folder.name
    copy.mkdir(parents=True)
    left = []
    for path in sorted(folder.iterdir()):
        info = path.lstat()
        if path.suffix != ".py" or path.name.startswith("."):
            continue
        if not stat.S_ISREG(info.st_mode):
            left.append(f"{shown(path.name, lines=False)} (not a regular file)")
        elif info.st_size > MAX_FILE:
            left.append(f"{shown(path.name, lines=False)} (over {MAX_FILE} bytes)")
        else:
            shutil.copyfile(path, copy / path.name, follow_symlinks=False)
    return copy, left


def grade_one(folder: Path, results_dir: Path, timeout: float, options: GradeOptions) -> Outcome:
    """Grade one submission with the runner, in a grader process of its own; keep what it found if it is stopped.

    `options`: the batch's (limits, isolation, folders to hide); the submission, its result files and its drawn
    seed are this submission's."""
    own = results_dir / folder.name  # a folder of its own: no name can make another submission's file names
    own.mkdir(exist_ok=True)
    partial, gradescope, log = own / "results.json", own / "gradescope.json", own / "grader.log"
    for path in (partial, gradescope):
        path.unlink(missing_ok=True)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="autograder-batch-") as tmp:
        copy, left = private_copy(folder, Path(tmp))
        command = grader_command(
            options.replace(
                impl=copy,
                results_file=partial,
                results_json=gradescope,
                fresh_inputs=secrets.randbelow(2**31),  # a graded run: answers known from the page are worth nothing
            )
        )
        with open(log, "wb") as out:
            with _children:
                proc = subprocess.Popen(
                    command,
                    cwd=REPO,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                    env={**os.environ, **ONE_THREAD},  # graders side by side: no thread pool per core each
                )
                _graders.add(proc.pid)
            try:
                code, status = proc.wait(timeout=timeout), None
            except subprocess.TimeoutExpired:
                code, status = None, "timed out"
                _ask_where(proc)
                _ask_to_stop(proc)
            finally:
                if os.name == "posix":
                    try:
                        os.killpg(proc.pid, signal.SIGKILL)  # the grader; its workers die with it
                    except ProcessLookupError:
                        pass
                proc.wait()
                with _children:
                    _graders.discard(proc.pid)
                _clear_leftovers()
                for base in isolation.memory_cgroup_bases():  # a grader stopped here could not remove its own
                    isolation.remove_cgroups_of_ended_graders(base, pid=proc.pid)
    seconds = time.monotonic() - start
    _keep_tail(log)
    results = _read(partial)
    skipped = f"; not graded: {', '.join(left)}" if left else ""
    if status == "timed out":
        kept = (
            f"; kept the {sum(t.status != 'not started' for t in results.tests)} checks it finished" if results else ""
        )
        return Outcome(
            folder.name, status, seconds, results, f"the grader did not finish within {timeout:g} s{kept}{skipped}"
        )
    if results is None or not results.complete:
        return Outcome(folder.name, "crashed", seconds, results, f"the grader exited with code {code}{skipped}")
    return Outcome(folder.name, "graded", seconds, results, skipped.removeprefix("; "))


# Linux: a process whose parent dies goes to the nearest "subreaper" above it. Batch is one while it grades, so the
# processes a killed grader leaves (its workers, dying) are killed and reaped here, not left as zombies to an init
# that may never reap them (a container's). Every child of this process that is not a running grader is a leftover.
_graders: set[int] = set()
_children = threading.Lock()  # held while a grader starts (its pid is known) and while leftovers are reaped
_adopting = False  # only while batch() is the subreaper: a caller's own child processes are never touched


@contextlib.contextmanager
def adopting_leftovers():
    global _adopting
    if sys.platform != "linux":
        yield
        return
    import ctypes

    prctl = ctypes.CDLL(None).prctl
    prctl(sandbox.PR_SET_CHILD_SUBREAPER, 1)
    _adopting = True
    try:
        yield
    finally:
        _clear_leftovers()
        _adopting = False
        prctl(sandbox.PR_SET_CHILD_SUBREAPER, 0)


def _clear_leftovers(timeout: float = 5.0) -> None:
    """Kill and reap this process's children that are not running graders (those a grader left when it ended)."""
    if not _adopting:
        return
    end = time.monotonic() + timeout
    while True:
        with _children:
            left = [pid for pid in _child_pids() if pid not in _graders]
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
        if not left or time.monotonic() > end:
            return
        time.sleep(0.01)


def _child_pids() -> list[int]:
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()  # after the name, which may hold anything
            except OSError:
                continue
            if int(fields[1]) == me:
                found.append(int(entry))
    return found


def _ask_where(proc: subprocess.Popen) -> None:
    """Before it is killed, a grader past its wall time writes every thread's stack into its log (`grade` registers
    the signal): what an instructor, or a bug report, needs to see why it never finished."""
    if hasattr(signal, "SIGUSR1"):
        os.kill(proc.pid, signal.SIGUSR1)
        try:
            proc.wait(timeout=1)
        except subprocess.TimeoutExpired:
            pass


def _ask_to_stop(proc: subprocess.Popen) -> None:
    """Before it is killed, a grader past its wall time writes its results file as it stands (`grade` saves it at
    most once a second while checks run, and at once when asked to stop: SIGTERM)."""
    if os.name == "posix" and proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass


def _read(path: Path) -> Results | None:
    try:
        return Results.from_json(json.loads(path.read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _keep_tail(log: Path) -> None:
    size = log.stat().st_size
    if size > LOG_TAIL:
        with open(log, "rb") as f:
            f.seek(size - LOG_TAIL)
            tail = f.read()
        log.write_bytes(b"[... earlier output cut ...]\n" + tail)


FORMULA = ("=", "+", "-", "@", "\t", "\r")  # what makes a spreadsheet read a cell as a formula


def cell(value: object) -> object:
    """A gradebook cell: text that a spreadsheet would read as a formula is kept as text (a leading quote)."""
    return "'" + value if isinstance(value, str) and value.startswith(FORMULA) else value


def uncell(text: str) -> str:
    """The text `cell` kept."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA) else text


def finished(csv_path: Path) -> set[str]:
    """The submissions that already have a row."""
    if not csv_path.exists():
        return set()
    with open(csv_path, newline="") as f:
        return {uncell(row["submission"]) for row in csv.DictReader(f) if row.get("submission")}


def batch(
    submissions: Path,
    out: Path,
    jobs: int,
    timeout: float,
    options: GradeOptions,
    progress: bool = True,
) -> list[Outcome]:
    """Grade every sub-folder of `submissions` not yet in `out` with `options` (their limits and isolation); append
    a row for each as it is done."""
    if not submissions.is_dir():
        raise FileNotFoundError(f"{submissions} is not a folder of submissions")
    folders = sorted(p for p in submissions.iterdir() if p.is_dir() and not p.name.startswith("."))
    done = finished(out)
    todo = [f for f in folders if f.name not in done]
    results_dir = out.with_suffix(".results")
    results_dir.mkdir(parents=True, exist_ok=True)
    full_marks = _full_marks()
    options = options.replace(hide=(*options.hide, submissions.resolve(), out.resolve().parent))
    new_file = not out.exists() or out.stat().st_size == 0
    lock = threading.Lock()
    outcomes = []
    with adopting_leftovers(), open(out, "a", newline="") as f, ThreadPoolExecutor(max_workers=jobs) as pool:
        writer = csv.DictWriter(f, fieldnames=columns())
        if new_file:
            writer.writeheader()
            f.flush()
        futures = [pool.submit(grade_one, folder, results_dir, timeout, options) for folder in todo]
        bar = _progress(len(folders), len(done), progress)
        for future in as_completed(futures):
            outcome = future.result()
            with lock:
                writer.writerow({k: cell(v) for k, v in outcome.row(full_marks).items()})
                f.flush()
            outcomes.append(outcome)
            bar.update(1)
            bar.set_postfix_str(f"{shown(outcome.name, 80, lines=False)}: {outcome.status}")  # a folder's name
        bar.close()
    return outcomes


def _full_marks() -> int:
    """The maximum score: the points of every grading test, as pytest collects them."""
    from autograder.grading.runner import catalogue

    return catalogue().max_score


def _progress(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(
        total=total, initial=initial, unit="submission", disable=not enabled, file=sys.stderr, dynamic_ncols=True
    )
