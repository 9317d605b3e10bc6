"""The grader's time and memory limits, in one place (the plugin, the notebooks and nbgrader's settings read them)."""

from __future__ import annotations

CHECK_TIMEOUT = 10.0  # seconds per call into the learner's code; an endless loop costs one such wait per task
BACKSTOP = 10.0  # a call's wall-clock limit, in multiples of its CPU-time limit (a call that only waits)
KILL_GRACE = 1.0  # seconds past a call's own limit before its worker is killed (its alarm says where it was)
MEMORY_LIMIT_MB = 4096  # per worker; a worker with torch loaded uses well under 1 GB
START_UP = 60  # seconds for a grading run to start (imports, workers)
MAX_SOURCE = 1_000_000  # bytes of one learner file the grader reads
# One thread per numeric library in every process that runs beside others (workers, a batch's graders): their
# pools of one thread per core, times many processes, only fight for the cores (and a zygote must not have any).
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def lesson_budget(tests: int, per_check: float = CHECK_TIMEOUT) -> int:
    """Seconds one grading run of `tests` checks may take: each at its limit and a kill's grace, plus start-up."""
    return int(tests * (per_check + KILL_GRACE) + START_UP)
