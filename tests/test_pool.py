"""The worker pool's states, one worker process at most per test and no grader (`autograder/grading/pool.py`).

A scripted stand-in plays the worker: it greets and acknowledges its setup as
the real one does, then misbehaves in one way. The worker's own half of the
plan (answers computed ahead) is tested on `autograder.worker.main.Worker`
with no process at all.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

from autograder.grading import budget, handle, launchers, pool, verdicts
from autograder.grading.tasks import graded
from autograder.worker import main as worker_main
from autograder.worker import wire

STAND_IN = r"""
import json, os, socket, struct, sys, time
sock = socket.socket(fileno=int(sys.argv[1]))
def send(obj):
    body = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(body)) + body)
def read():
    def exactly(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                sys.exit(0)
            data += chunk
        return data
    return json.loads(exactly(struct.unpack("!I", exactly(4))[0]))
how = sys.argv[2]
send({"pid": os.getpid(), "group": False})
read()
send({"ready": True})
if how == "answers nobody's question":
    send({"id": 7, "ok": "made up"})
if how == "dies idle":
    sys.exit(0)
if how == "dies with the request unread":
    import select
    select.select([sock], [], [])
    os._exit(3)
request = read()
if how == "answers":
    send({"id": request["id"], "ok": request["args"]})
elif how == "answers with another id":
    send({"id": request["id"] + 1, "ok": 1})
elif how == "answers an error in numbers":
    error = {"kind": 7, "exception": 7, "message": 7.5, "where": None, "load": "yes"}
    send({"id": request["id"], "error": error, "output": 3})
elif how == "sends a list":
    send([1, 2, 3])
elif how == "dies mid-call":
    os._exit(3)
elif how == "hangs":
    time.sleep(600)
elif how == "spins":
    while True:
        pass
elif how == "trickles":
    body = json.dumps({"id": request["id"], "ok": 1}).encode()
    for byte in struct.pack("!I", len(body)) + body:
        sock.sendall(bytes([byte]))
        time.sleep(0.3)
time.sleep(600)
"""


def stand_in(how: str, planned: int = 0) -> tuple[handle.Worker, subprocess.Popen]:
    grader_end, worker_end = socket.socketpair()
    process = subprocess.Popen(
        [sys.executable, "-c", STAND_IN, str(worker_end.fileno()), how], pass_fds=(worker_end.fileno(),)
    )
    worker_end.close()
    worker = handle.Worker("2.1", planned, process=process)
    worker.attach(grader_end, wire.encode({"op": "setup"}))
    return worker, process


def ask(worker: handle.Worker, limit: float = 5.0) -> dict:
    return worker.call({"op": "run", "args": [1, 2]}, limit)


def test_a_worker_that_answers_gets_its_answer_back_and_is_killed_at_the_end():
    worker, process = stand_in("answers")
    assert ask(worker) == {"ok": [1, 2], "output": ""}
    assert worker.ready and not worker.dead
    worker.finish(time.monotonic() + 1)
    assert process.poll() is not None


def test_an_answer_reaches_the_grader_in_the_types_it_reads():
    """A number where text belongs must not crash whatever words the verdict (it once stopped pytest's report)."""
    worker, _ = stand_in("answers an error in numbers")
    assert ask(worker) == {"error": {"kind": "raised", "exception": "7", "message": "7.5"}, "output": ""}


def test_a_worker_that_died_while_idle_never_started_the_call():
    worker, process = stand_in("dies idle")
    worker.come_up()
    process.wait(10)
    with pytest.raises(pool.Diverged, match="before this call"):
        ask(worker)
    assert worker.dead


def test_a_worker_that_dies_mid_call_costs_that_call():
    worker, _ = stand_in("dies mid-call")
    with pytest.raises(handle.WorkerGone, match="ended without an answer") as caught:
        ask(worker)
    assert type(caught.value) is handle.WorkerGone and not caught.value.timed_out


def test_a_worker_that_dies_with_the_request_unread_ended_too():
    """Its socket then reports a reset connection: that is an end, not something it sent."""
    worker, _ = stand_in("dies with the request unread")
    with pytest.raises(handle.WorkerGone, match="ended without an answer"):
        ask(worker)


def test_a_worker_that_may_have_been_running_ahead_is_not_charged_for_dying():
    """With planned calls after this one, the death may belong to a call nobody asked for: a fresh worker decides."""
    worker, _ = stand_in("dies mid-call", planned=3)
    with pytest.raises(pool.Diverged):
        ask(worker)


def test_a_worker_that_used_its_cpu_time_is_stopped_and_killed(monkeypatch):
    monkeypatch.setattr(budget, "BACKSTOP", 100.0)  # however busy this machine, the CPU limit comes first
    worker, process = stand_in("spins")
    with pytest.raises(handle.WorkerGone, match=r"did not finish in time \(0\.5 s of CPU time\)") as caught:
        ask(worker, limit=0.5)
    assert caught.value.timed_out and not caught.value.backstop
    assert process.poll() is not None, "the worker outlived its deadline"


def test_a_worker_that_waits_without_computing_is_stopped_by_the_backstop(monkeypatch):
    """It used none of its CPU time: the wall clock stops it, and says so (the grader asks the reference)."""
    monkeypatch.setattr(budget, "BACKSTOP", 5.0)
    worker, process = stand_in("hangs")
    with pytest.raises(handle.WorkerGone, match=r"no answer after 2\.5 s, 0\.\d s of it computing") as caught:
        ask(worker, limit=0.5)
    assert caught.value.timed_out and caught.value.backstop
    assert process.poll() is not None, "the worker outlived its deadline"


class FakeClock:
    """A CPU-time reader whose worker computes `rate` seconds per second of wall time (a busy machine: < 1)."""

    def __init__(self, rate: float):
        self.rate, self.start = rate, time.monotonic()

    def __call__(self) -> float:
        return (time.monotonic() - self.start) * self.rate


def spend(call: budget.Budget) -> str:
    while True:
        try:
            time.sleep(call.wait())
        except TimeoutError:
            return call.stopped_by


def test_a_budget_counts_cpu_time_not_wall_time(monkeypatch):
    monkeypatch.setattr(budget, "BACKSTOP", 5.0)
    assert spend(budget.Budget(0.2, FakeClock(1.0))) == "cpu"  # a quiet machine: the CPU limit, at once
    busy = budget.Budget(0.2, FakeClock(0.5))  # half the CPU: twice the wall time, still within the backstop
    assert spend(busy) == "cpu" and busy.used() >= 0.2
    starved = budget.Budget(0.2, FakeClock(0.1))  # a tenth: past BACKSTOP times the limit first
    assert spend(starved) == "backstop" and starved.used() < 0.2
    assert spend(budget.Budget(0.2)) == "backstop"  # where the CPU time cannot be read: the backstop alone


def test_cpu_time_is_read_for_any_process_here():
    spinner = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nend = time.process_time() + 0.3\nwhile time.process_time() < end: pass\ntime.sleep(600)",
        ]
    )
    try:
        while (used := budget.cpu_seconds(spinner.pid, spinner)) is None or used < 0.3:
            time.sleep(0.05)
        assert used < 60
    finally:
        spinner.kill()
        spinner.wait()
    assert budget._clock_seconds("1-02:03:04.50") == 86400 + 2 * 3600 + 3 * 60 + 4.5
    assert budget._clock_seconds("0:01.25") == 1.25


def test_bytes_trickled_in_do_not_stretch_the_deadline(monkeypatch):
    monkeypatch.setattr(budget, "BACKSTOP", 2.0)  # the whole answer takes 7 s to trickle in
    worker, process = stand_in("trickles")
    with pytest.raises(handle.WorkerGone) as caught:
        ask(worker, limit=1.0)
    assert caught.value.timed_out
    assert process.poll() is not None


@pytest.mark.parametrize("how", ["answers nobody's question", "answers with another id", "sends a list"])
def test_an_answer_nobody_asked_for_is_refused(how):
    worker, process = stand_in(how)
    with pytest.raises(handle.WorkerGone, match="not an answer") as caught:
        ask(worker)
    assert type(caught.value) is handle.WorkerGone
    assert worker.dead and process.poll() is not None


@pytest.mark.parametrize("how", ["answers nobody's question", "answers with another id"])
def test_garbage_from_a_worker_that_may_have_run_ahead_goes_to_a_fresh_worker(how):
    """Learner code may have written it during a planned call this run never makes: not charged here."""
    worker, process = stand_in(how, planned=3)
    with pytest.raises(pool.Diverged):
        ask(worker)
    assert worker.dead and process.poll() is not None


def test_a_worker_that_never_connects_is_the_machines_problem_not_a_timeout(monkeypatch):
    monkeypatch.setattr(pool, "POSIX_SOCKETS", False)  # the loopback, as on Windows
    monkeypatch.setattr(handle, "START_TIMEOUT", 1.0)
    monkeypatch.setattr(launchers, "python", lambda: [sys.executable, "-c", "import time; time.sleep(600)"])
    workers = pool.Pool(wire.PROCESSES, 0, [], "spawn")
    try:
        workers.prepare("2.1", {"op": "setup"})
        with pytest.raises(pool.StartFailed, match="never connected") as caught:
            workers.call("2.1", {"op": "load"}, 5.0)
        assert "python -m autograder doctor" in verdicts.start_failed(caught.value)
        assert workers.workers["2.1"].process.poll() is not None
    finally:
        workers.close()


def test_stray_connections_cost_the_listener_nothing():
    """One that says nothing, one with a wrong token, one that hangs up: the worker's own is found at once."""
    listener = launchers.Listener()
    try:
        silent = socket.create_connection(("127.0.0.1", listener.port))
        wrong = socket.create_connection(("127.0.0.1", listener.port))
        wrong.sendall(b"x" * 40)
        gone = socket.create_connection(("127.0.0.1", listener.port))
        gone.close()
        ours = socket.create_connection(("127.0.0.1", listener.port))
        token = b"0123456789abcdef0123456789abcdef"
        ours.sendall(token + b"\n")
        started = time.monotonic()
        conn = listener.wait_for(token, time.monotonic() + 10)
        assert time.monotonic() - started < 2
        ours.sendall(b"hello")
        conn.settimeout(5)
        assert conn.recv(5) == b"hello"
        with pytest.raises(TimeoutError):
            listener.wait_for(b"f" * 32, time.monotonic() + 0.3)
        silent.close()
        wrong.close()
        ours.close()
    finally:
        listener.close()


def test_start_methods_by_platform(monkeypatch):
    monkeypatch.setattr(sys, "platform", "darwin")
    assert pool.start_method("auto") == "spawn"
    with pytest.raises(RuntimeError, match="Linux only"):
        pool.start_method("fork")
    monkeypatch.setattr(sys, "platform", "linux")
    assert pool.start_method("auto") == "fork"
    monkeypatch.delattr(pool.os, "fork")
    assert pool.start_method("auto") == "spawn"


# --- the worker's half: answers computed ahead ---------------------------------------------------------------------


class Scripted(worker_main.Worker):
    """The worker's loop logic with a handle() that records what it ran."""

    def __init__(self, plan):
        self.plan, self.ahead, self.asked, self.ran = list(plan), [], 0, []

    def handle(self, request):
        self.ran.append(request["n"])
        return {"ok": request["n"] * 10}


def test_the_worker_answers_a_planned_call_from_what_it_ran_ahead():
    worker = Scripted([{"n": 1}, {"n": 2}])
    worker._run_ahead()
    worker._run_ahead()
    assert worker.answer({"id": 0, "n": 1}) == {"ok": 10}
    assert worker.answer({"id": 1, "n": 2}) == {"ok": 20}
    assert worker.ran == [1, 2], "an answer computed ahead is not computed again"
    assert worker.answer({"id": 2, "n": 3}) == {"ok": 30}


def test_the_worker_says_diverged_once_it_ran_a_call_nobody_asked_for():
    worker = Scripted([{"n": 1}, {"n": 2}])
    worker._run_ahead()
    worker._run_ahead()
    assert worker.answer({"id": 0, "n": 1}) == {"ok": 10}
    assert worker.answer({"id": 1, "n": 5}) == {"diverged": True}


def test_a_worker_that_ran_nothing_extra_just_answers_a_request_off_the_plan():
    worker = Scripted([{"n": 1}, {"n": 2}])
    worker._run_ahead()
    assert worker.answer({"id": 0, "n": 7}) == {"diverged": True}  # it ran n=1 already
    fresh = Scripted([{"n": 1}, {"n": 2}])
    assert fresh.answer({"id": 0, "n": 7}) == {"ok": 70}
    assert not fresh._should_run_ahead(), "off the plan, it no longer runs ahead"


def test_the_worker_stops_running_ahead_after_a_call_that_timed_out():
    worker = Scripted([{"n": 1}, {"n": 2}])
    worker.ahead.append({"error": {"kind": "timed out"}})
    assert not worker._should_run_ahead()


BACKWARD = """
def probe(impl):
    import torch
    x = torch.ones(2, requires_grad=True)
    (x * x).sum().backward()
    return x.grad.tolist()
"""
SETUP = {"op": "setup", "task": "9.1", "module": "probe", "owners": [], "prerequisite_owners": []}


def backward_in_a_worker(workers: pool.Pool) -> dict:
    workers.prepare("9.1", {**SETUP, "learner": {}, "reference": None, "scenarios": {}}, ("torch",))
    request = {"op": "run", "file": "probe", "name": "probe", "args": [], "kwargs": {}, "source": BACKWARD}
    return workers.call("9.1", {**request, "timeout": 30}, 31)


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_the_zygote_is_single_threaded_after_its_real_preload():
    workers = pool.Pool("processes", 0, [], "fork")
    try:
        assert backward_in_a_worker(workers)["ok"] == [2.0, 2.0]  # its preload is done: it has forked
        zygote = workers._zygotes.get(("torch",))
        assert len(os.listdir(f"/proc/{zygote.process.pid}/task")) == 1
        assert workers.start == "fork" and not workers.spawned_because
    finally:
        workers.close()


NUMPY_PROBE = """
def probe(impl):
    import sys
    return "numpy" in sys.modules
"""


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_lesson_14s_workers_fork_with_numpy_imported_once_by_their_zygote():
    """tensor.py imports numpy: each of lesson 14's workers importing it again cost a run ~0.4 s of CPU."""
    preload = graded("14.1").preload
    assert preload == ("numpy",)
    workers = pool.Pool("processes", 0, [], "fork")
    try:
        workers.prepare("14.1", {**SETUP, "task": "14.1", "learner": {}, "reference": None, "scenarios": {}}, preload)
        request = {"op": "run", "file": "probe", "name": "probe", "args": [], "kwargs": {}, "source": NUMPY_PROBE}
        assert workers.call("14.1", {**request, "timeout": 30}, 31)["ok"] is True  # before any learner code
        assert len(os.listdir(f"/proc/{workers._zygotes.get(preload).process.pid}/task")) == 1
        assert workers.start == "fork" and not workers.spawned_because
    finally:
        workers.close()


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_a_zygote_that_ran_autograd_refuses_to_fork_and_the_run_spawns_saying_why(machine_fault, monkeypatch):
    """As on a machine with a GPU: autograd's device threads, started in the zygote, break every forked child."""
    monkeypatch.syspath_prepend(str(machine_fault("gpu-zygote")))  # the workers' PYTHONPATH is this sys.path
    workers = pool.Pool("processes", 0, [], "fork")
    try:
        assert backward_in_a_worker(workers)["ok"] == [2.0, 2.0]
        assert workers.start == "spawn"
        assert "threads after importing torch" in workers.spawned_because
    finally:
        workers.close()


PROBE = "def probe(impl, x):\n    return x + 1\n"


def probe_call(workers: pool.Pool, task: str) -> dict:
    setup = {**SETUP, "task": task, "learner": {}, "reference": None, "scenarios": {}}
    if task not in workers.workers:
        workers.prepare(task, setup)
    request = {"op": "run", "file": "probe", "name": "probe", "args": [41], "kwargs": {}, "source": PROBE}
    return workers.call(task, {**request, "timeout": 30}, 31)


@pytest.mark.parametrize("how", ["fork", "spawn", "loopback"])
def test_each_launcher_starts_a_worker_that_answers_and_is_gone_at_the_end(how):
    if how == "fork" and pool.start_method() != "fork":
        pytest.skip("workers fork on Linux only")
    if how == "spawn" and not launchers.POSIX_SOCKETS:
        pytest.skip("a socket is inherited on POSIX only")
    workers = pool.Pool("processes", 0, [], "fork" if how == "fork" else "spawn")
    if how == "loopback":  # Windows' way, which works anywhere
        workers.launcher = launchers.LoopbackLauncher(workers.options, workers._cwd)
    try:
        assert probe_call(workers, "0.1")["ok"] == 42
        assert probe_call(workers, "0.2")["ok"] == 42
        pids = [worker.pid for worker in workers._all]
        assert len(set(pids)) == 2  # a worker per task
    finally:
        workers.close()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_a_zygote_that_died_after_forking_is_started_again_once():
    workers = pool.Pool("processes", 0, [], "fork")
    try:
        assert probe_call(workers, "0.1")["ok"] == 42
        zygote = workers._zygotes.get(())
        zygote.process.kill()
        zygote.process.wait()
        zygote.process.poll = lambda: None  # it looks alive: only its next fork can tell
        assert probe_call(workers, "0.2")["ok"] == 42
        assert workers._zygotes.get(()) is not zygote
        assert workers.start == "fork"
    finally:
        workers.close()


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_a_zygote_that_never_forked_is_not_tried_again():
    """Its first fork failed: the machine's problem (a broken install), said once, not retried for ever."""
    workers = pool.Pool("processes", 0, [], "fork")
    try:
        zygote = workers._zygotes.get(())
        zygote.process.kill()
        zygote.process.wait()
        zygote.process.poll = lambda: None
        with pytest.raises(pool.StartFailed):
            probe_call(workers, "0.1")
    finally:
        workers.close()
