"""The last grading run, kept for `python -m autograder hint`: which check of a task failed, and its own hint.

After every run the grader writes `.cache/last-run.json`: the folder it graded, a digest of each learner file it
read (as it read them, before any worker started), the files each graded task's worker loaded, and the run's
`Results` (`results.py`). `hint L.N` reads it to show first the hint of the one check of the task that went wrong,
as the scorecard's `Next:` lines do (`scorecard.check_hint`), every check that went wrong.

It decides no verdict, no grade and no cache: only which hint comes first. It is still read as hostile data (at
the `processes` level the learner's code can write it): capped in size, every field checked for its type, its
strings escaped with `verdicts.shown` before they are printed, and anything unexpected means "no last run".
Results of another folder, of files changed since, or of a task that passed change nothing either.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from autograder.course import registry
from autograder.grading import caches
from autograder.grading.limits import MAX_SOURCE
from autograder.grading.results import Results, Status, TestResult, current
from autograder.grading.scorecard import hint_of, shows_failure
from autograder.grading.verdicts import MAX_MESSAGE, shown

PATH = caches.CACHE / "last-run.json"
MAX_FILE = 20_000_000  # bytes: a whole course's results are well under 2 MB
MAX_DESCRIPTION = 300  # characters of a check's description, as `hint` prints it


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def save(results: Results, root: Path, files: dict[str, str | None], task_files: dict[str, list[str]], path=None):
    """Keep this run for `hint`; a folder that cannot be written only costs the hint its first line."""
    path = PATH if path is None else path
    try:
        data = {"root": str(root.resolve()), "files": files, "task_files": task_files, "results": results.to_json()}
        text = json.dumps(data, ensure_ascii=False).encode("utf-8", "backslashreplace")
        path.parent.mkdir(parents=True, exist_ok=True)
        caches.write_whole(path, text)  # two runs at once (watch mode and a terminal): the last one wins, whole
    except (OSError, ValueError, TypeError):  # what cannot be kept only costs `hint` its first lines
        pass


def _read(path: Path, cap: int) -> bytes | None:
    """The bytes of `path` if it is a regular file (no symbolic link, no pipe to block on) of at most `cap` bytes."""
    try:
        return caches.read_regular(path, cap)
    except (OSError, caches.NotRegular):
        return None


def _current(root: Path, module: str) -> str | None:
    """The digest of `root/module.py` now, as the grader recorded it (None: missing, or not a file it reads)."""
    data = _read(root / f"{module}.py", MAX_SOURCE)
    return None if data is None else digest(data)


def _load(path: Path) -> dict | None:
    text = _read(path, MAX_FILE)
    try:
        data = json.loads(text) if text is not None else None
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def _check(record: object, task_id: str) -> TestResult | None:
    """One check of the file as a `TestResult` of `task_id`, or None when it is of another task or malformed."""
    if not isinstance(record, dict) or record.get("task") != task_id:
        return None
    fields = {"nodeid": str, "description": str, "hint": str, "status": str, "message": str}
    if not all(isinstance(record.get(name), kind) for name, kind in fields.items()):
        return None
    if record["status"] not in set(Status) - {Status.IN_PROGRESS}:  # "in progress" is a task's status, never a check's
        return None
    points, hidden = record.get("points"), record.get("hidden", False)
    if not isinstance(points, int) or isinstance(points, bool) or not isinstance(hidden, bool):
        return None
    return TestResult(
        shown(record["nodeid"], MAX_DESCRIPTION, lines=False),
        shown(record["description"], MAX_DESCRIPTION, lines=False),
        task_id,
        points,
        shown(record["hint"], MAX_MESSAGE, lines=False),
        hidden=hidden,
        status=current(record)["status"],
        message=shown(record["message"]),
    )


def failed_checks(task_id: str, root: Path, path: Path | None = None) -> list[tuple[str, str]]:
    """(description, hint) of each check of `task_id` that went wrong in the last run of `root`, made safe to print,
    one per hint; none when there is no such run (none, another folder's, files changed since, unreadable), when
    the task passed, or for a check whose hint is one of the task's own levels."""
    data = _load(PATH if path is None else path)
    if data is None or data.get("root") != str(root.resolve()):
        return []
    files, task_files, results = data.get("files"), data.get("task_files"), data.get("results")
    if not (isinstance(files, dict) and isinstance(task_files, dict) and isinstance(results, dict)):
        return []
    modules = task_files.get(task_id)
    if not isinstance(modules, list) or not modules or not all(isinstance(m, str) and m in files for m in modules):
        return []
    if any(_current(root, module) != files[module] for module in modules):
        return []  # the task's code changed since that run: what failed then may not fail now
    if results.get("complete") is not True or not isinstance(results.get("tests"), list):
        return []
    checks = [c for c in (_check(record, task_id) for record in results["tests"]) if c is not None]
    found: dict[str, str] = {}  # hint -> the first check that gave it
    for check in checks:
        hint = hint_of(check)
        if shows_failure(check) and hint and hint not in registry.task(task_id).hints:
            found.setdefault(hint, check.description)
    return [(description, hint) for hint, description in found.items()]
