"""Watch mode: `python -m autograder watch` re-grades each file the learner saves and keeps going through bad ones."""

from __future__ import annotations

import io
import queue
import re
import signal
import subprocess
import sys
import threading
import time

import pytest

from autograder.grading import results, runner, watch
from autograder.grading.options import GradeOptions
from tests.conftest import REPO, copy_of

LESSON_FILE = re.compile(r"test_(\d+)_\w+\.py")
VERDICT = re.compile(
    r"^\[\d\d:\d\d:\d\d\] (?P<what>.+?) \(lesson 2\): (?P<passed>\d+)/(?P<tasks>\d+) graded tasks pass"
)


class Watcher:
    """`python -m autograder watch` in a subprocess, its output read line by line as it comes."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "autograder", "watch", *args],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            # a test run in the background ignores Ctrl-C; the watcher must get it as a learner's terminal sends it
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))

    def until(self, pattern: re.Pattern, timeout: float = 60, report: bool = True) -> tuple[re.Match, list[str]]:
        """The next line matching `pattern`, and the report that follows it (up to the 'Watching' line)."""
        end = time.monotonic() + timeout
        match = None
        block: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=max(0.0, end - time.monotonic()))
            except queue.Empty:
                self.stop()
                pytest.fail(f"no line matching {pattern.pattern!r} in time; output:\n" + "\n".join(self.seen))
            self.seen.append(line)
            if match is None:
                match = pattern.search(line)
                if match and not report:
                    return match, block
            elif line.startswith("Watching "):
                return match, block
            else:
                block.append(line)

    def stop(self) -> int:
        """Press Ctrl-C; the exit code, once every line it printed is in `seen`."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            code = self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise
        self.reader.join(timeout=5)
        while not self.lines.empty():
            self.seen.append(self.lines.get())
        return code


def test_watch_regrades_each_saved_file_and_keeps_going_through_broken_ones(tmp_path):
    work = copy_of("exercises", tmp_path)
    solved = (REPO / "solutions" / "engine.py").read_text()
    add_forward = "        ### BEGIN SOLUTION (task 2.3)\n"
    assert add_forward in solved
    watcher = Watcher("--lesson", "2", "--impl", str(work), "--check-timeout", "2")
    try:
        first, report = watcher.until(VERDICT)
        assert first["what"] == "every file graded" and first["passed"] == "0"
        tasks = first["tasks"]
        assert any(line.startswith("Next: task 2.1") for line in report)
        assert any("python -m autograder hint 2.1" in line for line in report)

        (work / "engine.py").write_text(solved)
        solved_run, report = watcher.until(VERDICT)
        assert (solved_run["what"], solved_run["passed"]) == ("engine.py saved", tasks)
        assert report[0].startswith("Progress [") and f"{tasks}/{tasks} graded tasks · 1/1 lessons" in report[0]

        (work / "engine.py").write_text(solved.replace(add_forward, add_forward + "        x = (\n", 1))
        broken, report = watcher.until(VERDICT)
        assert broken["passed"] == "0"
        assert any("SyntaxError" in line for line in report)

        (work / "engine.py").write_text(solved.replace(add_forward, add_forward + "        while True: pass\n", 1))
        looping, report = watcher.until(VERDICT)
        assert int(looping["passed"]) == int(tasks) - 1
        assert any("2.3" in line and "timed out" in line for line in report)

        (work / "graph.py").write_text((work / "graph.py").read_text() + "\n")
        watcher.until(re.compile(r"graph\.py saved: no task of the selected lessons there"), timeout=10, report=False)

        (work / "engine.py").write_text(solved)
        fixed, _ = watcher.until(VERDICT)
        assert fixed["passed"] == tasks
    finally:
        code = watcher.stop()
    assert code == 0
    assert watcher.seen[-1] == "Stopped watching."


def test_each_lessons_grading_tests_live_in_its_own_file():
    """`--lesson N` collects only `test_NN_*.py` (plugin's pytest_ignore_collect): no task's test may live elsewhere."""
    for path in sorted((REPO / "autograder" / "lessons").glob("test_*.py")):
        number = int(LESSON_FILE.fullmatch(path.name)[1])
        tasks = re.findall(r"mark\.task\(\s*\"(\d+)\.\d+\"", path.read_text())
        assert tasks, f"{path.name} grades no task"
        assert {int(t) for t in tasks} == {number}, f"{path.name} grades tasks of other lessons: {sorted(set(tasks))}"


def test_a_save_replaces_the_verdicts_of_the_saved_files_tasks_only(monkeypatch):
    def run(task: str, status: str) -> results.TestResult:
        return results.TestResult(
            f"{task}::check", "a check", task, 1, "a hint", status=status, message=f"{task} {status}"
        )

    runs = iter(
        [
            results.Results("exercises/", "", "none", [run("1.1", "failed"), run("2.1", "failed")], ["1.1", "2.1"]),
            results.Results("exercises/", "", "none", [run("2.1", "passed")], ["2.1"]),
        ]
    )
    asked = []
    monkeypatch.setattr(runner, "grade", lambda options, **kwargs: asked.append(list(options.tasks)) or next(runs))
    out = io.StringIO()
    state = watch.Watch(GradeOptions(), out)
    state.pool.close()  # never used: runner.grade is replaced
    state.grade()
    state.grade(watch.tasks_of(["engine"], state.results.selected))
    assert asked == [[], ["2.1"]]
    assert {t.task.id: t.status for t in state.results.tasks} == {"1.1": "failed", "2.1": "passed"}
    state.report("engine.py saved", state.results)
    assert "Progress [" in out.getvalue() and "1/2 graded tasks" in out.getvalue() and "1.1 failed" in out.getvalue()
