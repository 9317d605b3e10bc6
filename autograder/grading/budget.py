"""A call's time on the trusted side: its CPU budget (`Budget`), and how the grader reads a process's CPU time.

A call's limit is CPU time: the worker's own alarm stops learner code that used
it, and the grader, which reads the worker's CPU time where the system says it
(`cpu_seconds`: Linux's /proc, macOS's `ps`, Windows' process times), kills
code that never returns to Python once it has. Wall-clock time is only a
backstop, `BACKSTOP` times the limit, for a call that uses no CPU at all.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from autograder.grading.limits import BACKSTOP


class Budget:
    """A call's time: `limit` seconds of the worker's CPU time, and `BACKSTOP` times that of wall-clock time.

    `wait()` says how long to wait for the answer before looking again, and raises TimeoutError once the call
    is out of time (`stopped_by`: "cpu" or "backstop"). `cpu()` reads the worker's CPU time (None where the
    system does not tell): the CPU is looked at only once the wall clock says the budget could be used up.
    `cores`: how many of the worker's processes may run at once (1 where it can start none), which use the CPU
    that much faster than the clock; `start`: the CPU time to count from, if not `cpu()` now.
    """

    def __init__(self, limit: float, cpu=lambda: None, cores: int = 1, start: float | None = None):
        self.limit, self.cpu, self.cores = limit, cpu, cores
        self.start = time.monotonic()
        self.backstop_seconds = BACKSTOP * limit
        self.backstop = self.start + self.backstop_seconds
        self.cpu_start = cpu() if start is None else start
        self.stopped_by = ""

    def used(self) -> float | None:
        now = self.cpu() if self.cpu_start is not None else None
        return None if now is None else now - self.cpu_start

    def wait(self) -> float:
        now = time.monotonic()
        if now >= self.backstop:
            self.stopped_by = "backstop"
            raise TimeoutError
        left = self.start + self.limit / self.cores - now  # nor can CPU time run faster than that
        if left > 0:
            return left
        used = self.used()
        if used is not None and used >= self.limit:
            self.stopped_by = "cpu"
            raise TimeoutError
        return min(self.backstop - now, max(0.05, self.limit - used) if used is not None else self.backstop - now)

    def overrun(self) -> bool:
        """Whether the call, answered, used more than its limit (processes of the worker's, side by side, can)."""
        if self.cores == 1 or time.monotonic() - self.start < self.limit / self.cores:
            return False
        used = self.used()
        return used is not None and used > self.limit


def cpu_seconds(pid: int, process: subprocess.Popen | None = None, tree: bool = False) -> float | None:
    """The CPU time (user and system) process `pid` has used so far, or None where this system does not say.

    `tree` (Linux): its children's too, those it has reaped and every process below it still there.
    """
    try:
        if sys.platform == "linux" and tree:
            return tree_seconds(pid)
        if sys.platform == "linux":
            with open(f"/proc/{pid}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()  # after the command's name, which may hold spaces
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if os.name == "nt" and process is not None:
            return _windows_cpu(int(process._handle))
        if sys.platform == "darwin":
            said = subprocess.run(["ps", "-o", "time=", "-p", str(pid)], capture_output=True, text=True, timeout=5)
            return _clock_seconds(said.stdout.strip())
    except (OSError, ValueError, IndexError, AttributeError, subprocess.SubprocessError):
        pass
    return None


def tree_seconds(pid: int, reaped_only: bool = False) -> float | None:
    """Linux: the CPU time of `pid` and of its children it has reaped (`reaped_only`), or of every process below
    it too (all of /proc is read: done only for a call that has run as long as its time could be used up)."""
    below: dict[int, list[int]] = {}
    used: dict[int, int] = {}
    for entry in [str(pid)] if reaped_only else os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            below.setdefault(int(fields[1]), []).append(int(entry))
            used[int(entry)] = sum(int(field) for field in fields[11:15])  # its own, and its reaped children's
    if pid not in used:
        return None
    total, todo, seen = 0, [pid], set()
    while todo:
        process = todo.pop()
        if process not in seen:  # a pid taken again while /proc was read cannot make a loop
            seen.add(process)
            total += used.get(process, 0)
            todo.extend(() if reaped_only else below.get(process, ()))
    return total / os.sysconf("SC_CLK_TCK")


def _clock_seconds(text: str) -> float:
    """`ps`'s time, `[[dd-]hh:]mm:ss.ss`, in seconds."""
    days, _, clock = text.rpartition("-")
    seconds = 0.0
    for part in clock.split(":"):
        seconds = seconds * 60 + float(part)
    return seconds + 86400 * int(days or 0)


def _windows_cpu(handle: int) -> float | None:
    import ctypes
    from ctypes import wintypes

    times = [wintypes.FILETIME() for _ in range(4)]  # creation, exit, kernel, user: in 100 ns steps
    if not ctypes.windll.kernel32.GetProcessTimes(wintypes.HANDLE(handle), *map(ctypes.byref, times)):
        return None
    return sum((t.dwHighDateTime << 32 | t.dwLowDateTime) for t in times[2:]) / 1e7
