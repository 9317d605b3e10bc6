"""The machine is never the learner's fault: faults of the environment, injected, never cost the reference a point.

Each test gives this machine a fault a learner's machine has (`tests/platforms/faults`: PyTorch's CUDA build
on a machine with a GPU, workers that cannot import torch) or makes it busy on purpose (`Starved`), grades
the reference, and checks that no point is lost and no message blames "your code": a check the reference
cannot pass here is void ("could not be graded here"), and time limits count CPU time, not the wall clock.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from autograder.grading import pool

from .conftest import REPO, Starved, copy_of, grade

VOID = "could not be graded"


def no_point_lost(run) -> None:
    """Every check passed or could not be graded; what could be graded earned full marks; nothing blames the code."""
    assert set(run.status.values()) <= {"passed", VOID}, run.output[-3000:]
    assert run.results["score"] == run.results["extra_data"]["max_score"], run.output[-3000:]
    for result in run.results["extra_data"]["results"]:
        if result["status"] == VOID:
            assert result["message"].startswith("could not be graded here"), result
            assert "python -m autograder doctor" in result["message"]


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_a_gpu_machine_grades_the_reference_in_full(machine_fault, tmp_path):
    """PyTorch's CUDA build with a GPU: the zygote runs no autograd, so every forked worker can."""
    run = grade("solutions", "--lesson", "9", tmp_path=tmp_path, env={"PYTHONPATH": str(machine_fault("gpu"))})
    assert set(run.status.values()) == {"passed"}, run.output[-3000:]
    assert not run.results["extra_data"]["spawned_because"]


@pytest.mark.skipif(pool.start_method() != "fork", reason="workers fork on Linux only")
def test_a_zygote_with_threads_spawns_its_workers_and_the_scorecard_says_why(machine_fault, tmp_path):
    run = grade("solutions", "--lesson", "9", tmp_path=tmp_path, env={"PYTHONPATH": str(machine_fault("gpu-zygote"))})
    assert set(run.status.values()) == {"passed"}, run.output[-3000:]
    assert "threads after importing torch" in run.results["extra_data"]["spawned_because"]
    assert "Workers were spawned, not forked: the process that forks workers had" in run.output


@pytest.mark.parametrize("fault", ["gpu-unseen", "no-torch-in-workers"])
def test_a_fault_the_reference_cannot_pass_either_costs_no_point(fault, machine_fault, tmp_path):
    """Autograd broken in every forked worker (no thread shows it), or no torch in the workers: lesson 9 cannot be
    graded here. The reference loses nothing, and neither does a learner: their checks are void too."""
    env = {"PYTHONPATH": str(machine_fault(fault))}
    if fault == "gpu-unseen" and pool.start_method() != "fork":
        pytest.skip("workers fork on Linux only")
    run = grade("solutions", "--lesson", "9", "--lesson", "2", tmp_path=tmp_path, env=env)
    no_point_lost(run)
    assert {run.status["9.1"], run.status["9.2"]} == {VOID}, run.output[-3000:]
    assert {run.status["2.3"], run.status["2.4"]} == {"passed"}  # the rest of the course is graded as ever
    void = sum(r["points"] for r in run.results["extra_data"]["results"] if r["status"] == VOID)
    assert run.results["extra_data"]["could_not_be_graded"] == void > 0
    assert f"{void} points could not be graded here" in run.output
    stubs = grade("exercises", "--lesson", "9", tmp_path=tmp_path, env=env)
    assert set(stubs.status.values()) <= {"not started", VOID}, stubs.output[-3000:]
    assert stubs.results["score"] == 0


def test_a_wrong_answer_still_costs_its_points_when_the_reference_passes(tmp_path):
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    engine.write_text(source.replace("other.grad += self.data * out.grad", "other.grad += out.grad"))
    run = grade(submission, "--task", "5.3", tmp_path=tmp_path)
    assert run.status == {"5.3": "failed"}, run.output[-3000:]
    assert run.results["extra_data"]["could_not_be_graded"] == 0


@pytest.mark.skipif(sys.platform != "linux", reason="stops and resumes processes through /proc")
def test_a_busy_machine_costs_the_reference_nothing(tmp_path):
    """The workers get a fifth of the wall clock: checks that use a second of CPU take five, and still pass.

    With a wall-clock limit (the grader's before), a limit of 1 s per call failed the checks below here.
    """
    results = tmp_path / "results.json"
    command = [sys.executable, "-m", "pytest", "autograder", "--impl", "solutions", "--results-json", str(results)]
    command += ["--lesson", "6", "--lesson", "12", "--check-timeout", "1"]
    grader = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    starved = Starved(grader.pid, share=0.2)
    try:
        output = grader.communicate(timeout=900)[0]
    finally:
        starved.end()
        grader.kill()
    import json

    data = json.loads(results.read_text())
    assert set(data["extra_data"]["status"].values()) == {"passed"}, output[-3000:]
    assert data["score"] == data["extra_data"]["max_score"]
