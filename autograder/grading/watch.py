"""Watch mode, as rustlings has it: `python -m autograder watch [--lesson N] [--impl DIR]`.

It grades once, then waits for saves in the graded folder; each save
re-grades only the tasks of the file that was saved (of the selected lessons)
and prints a short report: the verdict on that file, progress (tasks and
lessons done, a bar), the next task with its page and hint command, and what
failed. The grading is the one runner's (`runner.grade`), in this process, so
pytest, torch, the grading tests and the reference stay imported between
saves, and the zygotes stay up (`pool.Zygotes`): each save pays only for
forking the workers and running the checks. Code that hangs, crashes or does
not parse is the workers' business; this loop goes on. Ctrl-C stops it.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

import watchfiles

from autograder.course import registry
from autograder.course.regions import has_sources, module_of
from autograder.grading import pool, runner, scorecard
from autograder.grading.options import GradeOptions
from autograder.grading.results import Results

STEP_MS = 30  # a save is reported once the folder has been quiet this long (editors write in several steps)
IDLE_MS = 100  # the watcher wakes this often when nothing changes (its first wake says that it is in place)
CLEAR = "\033[2J\033[H"


def saved_modules(changes: Iterable[tuple[object, str]], folder: Path) -> list[str]:
    """The learner files (module names) among the changed paths: `.py` files directly in the graded folder."""
    names = set()
    for _, path in changes:
        path = Path(path)
        if path.suffix == ".py" and path.parent.resolve() == folder:
            names.add(path.stem)
    return sorted(names)


def tasks_of(modules: list[str], selected: list[str]) -> list[str]:
    """The selected tasks whose code is in one of `modules`."""
    if not has_sources():  # a student edition loads every learner file for every task
        return list(selected) if modules else []
    return [t for t in selected if module_of(t) in modules]


POLL_MS = 500
NO_EVENTS = {
    "nfs",
    "nfs4",
    "cifs",
    "smb3",
    "smbfs",
    "9p",
    "drvfs",
    "fuse.sshfs",
    "vboxsf",
    "prl_fs",
    "fuse.vmhgfs-fuse",
}


def polling_reason(folder: Path, mounts: str = "/proc/mounts") -> str:
    """Why saves in `folder` raise no file events ('' if they do, as far as can be told): a network or shared drive.

    There the kernel hears of no save made on the other side, so watch mode looks at the files instead, as
    rustlings and watchfiles do. Linux tells a folder's file system in /proc/mounts; elsewhere, `--poll`.
    """
    try:
        table = [line.split()[1:3] for line in Path(mounts).read_text().splitlines() if len(line.split()) > 2]
    except OSError:
        return ""
    path = str(folder.resolve())
    inside = [(where, kind) for where, kind in table if path == where or path.startswith(where.rstrip("/") + "/")]
    if not inside:
        return ""
    where, kind = max(inside, key=lambda entry: len(entry[0]))
    return f"{where} is a {kind} drive, where saves raise no file events" if kind in NO_EVENTS else ""


def this_run(fresh: Results) -> str:
    """What a grading run found, in words: the graded tasks and points, and the bonus apart (as the totals below)."""
    graded = [t for t in fresh.tasks if not t.task.bonus]
    bonus = [t for t in fresh.tasks if t.task.bonus]
    text = (
        f"{sum(t.status == 'passed' for t in graded)}/{len(graded)} graded tasks pass, "
        f"{fresh.score}/{fresh.max_score} points"
    )
    if bonus:
        text += (
            f"; bonus tasks, counted apart: {sum(t.status == 'passed' for t in bonus)}/{len(bonus)} pass, "
            f"{fresh.bonus}/{fresh.bonus_max} points"
        )
    return text


class Watch:
    """The latest verdict of every selected check, updated task by task as files are saved."""

    def __init__(self, options: GradeOptions, out: TextIO, poll: bool = False):
        self.options, self.out, self.poll = options, out, poll
        self.impl, self.lessons = options.impl, list(options.lessons)
        self.pool = pool.Zygotes()
        self.results: Results | None = None
        self.stop_asked: list[int] = []  # the signals that asked to stop (see `stopping`)

    def grade(self, tasks: list[str] = ()) -> Results:
        """Grade `tasks` (every selected task at first) and merge their verdicts into the ones kept."""
        try:
            fresh = runner.grade(
                self.options.replace(lessons=() if tasks else self.lessons, tasks=tasks), workers_pool=self.pool
            )
        except RuntimeError:
            if self.stop_asked:  # pytest took the Ctrl-C as the end of its run; for us it is the end of watching
                raise KeyboardInterrupt from None
            raise
        if self.results is None:
            self.results = fresh
        else:
            regraded = set(fresh.selected)
            self.results.tests = [r for r in self.results.tests if r.task not in regraded] + fresh.tests
        return fresh

    def report(self, what: str, fresh: Results) -> None:
        if self.out.isatty():
            self.out.write(CLEAR)
        self.say(f"[{time.strftime('%H:%M:%S')}] {what}{self.scope()}: {this_run(fresh)}")
        self.say(scorecard.progress(self.results))
        self.waiting()

    def scope(self) -> str:
        return f" (lesson {', '.join(map(str, self.lessons))})" if self.lessons else ""

    def waiting(self) -> None:
        self.say(f"Watching {self.results.graded} for saves (Ctrl-C to stop)")

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    @contextlib.contextmanager
    def stopping(self):
        """Ctrl-C and SIGTERM stop watching: both raise KeyboardInterrupt, and `stop_asked` remembers them."""
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def stop(signum, frame):
            self.stop_asked.append(signum)
            raise KeyboardInterrupt

        previous = {
            number: signal.signal(number, stop)
            for number in (signal.SIGINT, signal.SIGTERM)
            if signal.getsignal(number) is not signal.SIG_IGN
        }  # run in the background: Ctrl-C is not ours
        try:
            yield
        finally:
            for number, handler in previous.items():
                signal.signal(number, handler)

    def run(self) -> int:
        folder = self.options.folder()
        self.say(f"Grading {self.impl}" + (f" lesson {', '.join(map(str, self.lessons))}" if self.lessons else ""))
        why_poll = "asked for (--poll)" if self.poll else polling_reason(folder)
        if why_poll:
            self.say(f"Looking for saves every {POLL_MS / 1000:g} s: {why_poll}")
        saves = watchfiles.watch(
            folder,
            watch_filter=watchfiles.PythonFilter(),
            step=STEP_MS,
            rust_timeout=IDLE_MS,
            yield_on_timeout=True,
            force_polling=True if why_poll else None,  # None: watchfiles' own choice (it polls on WSL)
            poll_delay_ms=POLL_MS,
        )
        next(saves)  # the watcher is in place from here on: a save made during the first grading is not missed
        try:
            fresh = self.grade()
        except RuntimeError as exc:
            print(exc, file=sys.stderr)
            return 2
        self.report("every file graded", fresh)
        selected = list(self.results.selected)
        for batch in saves:
            modules = saved_modules(batch, folder)
            saved = ", ".join(f"{m}.py" for m in modules)
            tasks = tasks_of(modules, selected)
            if not tasks:
                if modules:
                    self.say(f"{saved} saved: no task of the selected lessons there")
                continue
            try:
                fresh = self.grade(tasks)
            except RuntimeError as exc:  # the grader itself failed: say so and keep watching
                self.say(f"grading {saved} failed: {exc}")
                self.waiting()
                continue
            self.report(f"{saved} saved", fresh)
        return 0


def watch(options: GradeOptions | None = None, out: TextIO = sys.stdout, poll: bool = False) -> int:
    """Grade, then re-grade on every save until Ctrl-C; 0 when stopped, 2 if the grader cannot run at all."""
    options = options or GradeOptions()
    if not options.folder().is_dir():
        print(f"--impl {options.impl}: no such folder ({options.folder()})", file=sys.stderr)
        return 2
    for number in options.lessons:
        if not any(lesson.number == number and lesson.tasks for lesson in registry.LESSONS):
            print(f"--lesson {number}: lesson {number} has no graded tasks", file=sys.stderr)
            return 2
    state = Watch(options, out, poll)
    with state.stopping():
        try:
            return state.run()
        except KeyboardInterrupt:
            state.say("\nStopped watching.")
            return 0
        finally:
            state.pool.close()
