"""The trusted side of the workers: one process per task, and calls into it that are a request and an answer.

Shape, chosen so that nothing races: nothing runs in the background. The
grader's one thread starts each task's worker early (`Pool.prepare`), writes
it its setup and its *plan* (the calls earlier runs made, in order), and goes
on collecting tests while the worker runs that plan ahead on its own. A call
(`Pool.call`) sends one request and reads one answer, with a deadline, on the
worker's socket, which only its `Worker` ever touches. An answer computed
ahead comes back at once; the worker sends it only for a request identical to
the planned one (it could answer anything anyway, so nothing is lost in
trust), and the grader checks that each answer carries the id of the request
it made.

The rooms: `handle` is the grader's side of one worker (its socket, its calls, how they fail), `budget` a
call's CPU time, `launchers` how workers start on each platform (zygotes, spawning, the loopback); this module
holds the pool that starts one per task and routes each call to it.

A call's time limit is CPU time (`Budget`): the worker's own CPU-time alarm stops learner code that used
its budget, and the grader, which reads the worker's CPU time where the system lets it, kills code that never
returns to Python once it has. Wall-clock time is only a backstop, `BACKSTOP` times the limit, for a call
that uses no CPU at all (it waits on something) or a machine too busy to run it: a call stopped there is
`WorkerGone` with `backstop` set, which the grader asks of the reference before it charges anyone.

A zygote forks only while it is single-threaded; one that refuses (`wire.REFUSED`) turns the pool to
spawning its workers, and `Pool.spawned_because` says why.

Failure is charged where it belongs. A worker that never comes up raises
`StartFailed` (the machine's problem, never the learner's); one that ends or
passes its deadline while running a call the grader asked for raises
`WorkerGone`; one that may have been running a planned call nobody asked for
yet, or that ended while idle, raises `Diverged`: the grader asks a fresh
worker, with no plan, so a learner is charged only for what a plain run
would charge.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

from autograder.grading import isolation
from autograder.grading.handle import Diverged, ForkRefused, Lost, StartFailed, Worker, WorkerGone
from autograder.grading.launchers import (
    POSIX_SOCKETS,
    ForkLauncher,
    LoopbackLauncher,
    SpawnLauncher,
    Zygotes,
    start_method,
)
from autograder.worker import wire

# what the pool's callers catch and name, from the rooms that define them
__all__ = ["Diverged", "Lost", "Pool", "StartFailed", "WorkerGone", "Zygotes", "start_method"]


class Pool:
    """The workers of one grading run: one per task, started early, each called synchronously.

    Workers start through the launcher of the start method (`ForkLauncher`, `SpawnLauncher`, `LoopbackLauncher`);
    a zygote that refuses to fork turns the pool to spawning, for good.
    """

    def __init__(
        self,
        level: str,
        memory_mb: int,
        hidden: list[str],
        start: str = "auto",
        zygotes: Zygotes | None = None,
        cgroup: str | None = None,
    ):
        # `cgroup`: the run's memory cgroup (`isolation.memory_cgroup`), under which each worker makes its own
        self.options = {"level": wire.Level(level), "memory_mb": memory_mb, "cgroup": cgroup}
        # `sandbox`: every worker process starts inside bubblewrap, which shows it nothing of `hidden`
        self.sandbox = tuple(isolation.sandbox_command(hidden, cgroup)) if wire.Level(level).namespaces else ()
        self.spawned_because = ""  # why a run that would fork spawns its workers (its zygote had threads)
        self.workers: dict[str, Worker] = {}
        self._all: list[Worker] = []
        self._own_zygotes = zygotes is None  # a shared set outlives the run: its caller closes it
        self._zygotes = Zygotes() if zygotes is None else zygotes
        self._cwd = tempfile.mkdtemp(prefix="autograder-worker-")
        self.launcher = ForkLauncher(self._zygotes, self.sandbox, self.options)
        if start_method(start) == "spawn" or self._zygotes.refused:
            self.spawn_instead(self._zygotes.refused)
        self._planned = 0  # workers given a plan so far
        self._cores = max(1, os.cpu_count() or 1)

    @property
    def start(self) -> str:
        """How this run's workers start now: "fork" or "spawn"."""
        return self.launcher.name

    def spawn_instead(self, because: str = "") -> None:
        """From now on, spawn workers (on an inherited socket where the system can pass one, else the loopback)."""
        self.spawned_because = self._zygotes.refused = because
        if POSIX_SOCKETS:
            self.launcher = SpawnLauncher(self.sandbox, self.options, self._cwd)
        else:
            self.launcher = LoopbackLauncher(self.options, self._cwd)

    def prepare(self, task: str, setup: dict, preload: tuple[str, ...] = (), plan: list[dict] = ()) -> None:
        """Start the task's worker now, with its setup and the calls it may run ahead (`plan`)."""
        nice = 0
        if plan:  # runs ahead in the order the run will ask, behind the grader's own work: one tier per core
            nice, self._planned = min(19, 1 + self._planned // self._cores), self._planned + 1
        worker = self.launcher.launch(task, preload, {**setup, "plan": list(plan)}, len(plan), nice)
        self._keep(task, worker)
        for other in self._all:  # room in their sockets now: the setups that did not fit go on
            other.flush(wait=False)

    def _keep(self, task: str, worker: Worker) -> None:
        if not self.options["level"].own_user and sys.platform == "linux":  # it may start processes: count theirs
            worker.tree, worker.cores = True, self._cores
        if task in self.workers and self.workers[task] is not worker:
            self.workers[task].kill()
        self.workers[task] = worker
        self._all.append(worker)

    def call(self, task: str, request: dict, limit: float) -> dict:
        worker = self.workers[task]
        try:
            return worker.call(request, limit)
        except ForkRefused as exc:  # its zygote has threads: this worker and every later one are spawned
            if self.start == "fork":
                self.spawn_instead(str(exc))
            fresh = self.launcher.launch(task, *worker.relaunch)
        except StartFailed:
            if not worker.retry:
                raise
            fresh = self.launcher.relaunch(worker)  # its zygote may have been killed since it last forked
        self._keep(task, fresh)
        return fresh.call(request, limit)

    def ended(self, task: str) -> bool:
        return self.workers[task].dead

    def stop(self, task: str) -> None:
        """Kill the task's worker now: nothing it runs will be asked for (a later call gets a fresh worker)."""
        if task in self.workers:
            self.workers[task].kill()

    def close(self) -> None:
        """Kill every worker of the run, and the zygotes unless they are shared; return when they are all gone."""
        end = time.monotonic() + 2.0  # workers that have not greeted yet have run no learner code: a short wait
        for worker in self._all:
            worker.finish(end)
        if self._own_zygotes:
            self._zygotes.close()
        self.launcher.close()
        isolation.remove_cgroup(self.options["cgroup"])  # its workers are gone: their cgroups are empty
        try:
            os.rmdir(self._cwd)
        except OSError:
            pass
