"""`python -m autograder doctor`: the machine's problems named, with their fixes (`autograder/grading/doctor.py`)."""

from __future__ import annotations

import io
import subprocess
import sys

from autograder.grading import doctor, launchers, pool, watch

from .conftest import REPO


def test_doctor_finds_nothing_wrong_on_a_working_machine():
    proc = subprocess.run([sys.executable, "-m", "autograder", "doctor"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "a worker starts and answers" in proc.stdout
    assert "the reference passes real checks (plain, PyTorch with a backward pass, a drawing)" in proc.stdout
    assert "Nothing stops grading here." in proc.stdout


def test_a_worker_that_cannot_start_is_a_problem_with_its_reason_and_a_fix(monkeypatch):
    broken = [sys.executable, "-c", "import sys; sys.exit('ModuleNotFoundError: no module named autograder')"]
    monkeypatch.setattr(launchers, "python", lambda: broken)
    monkeypatch.setattr(doctor, "CHECKS", (doctor.workers_start,))
    out = io.StringIO()
    assert doctor.main(out) == 1
    text = out.getvalue()
    assert "PROBLEM  a worker process could not run" in text
    assert "no module named autograder" in text
    assert "pip install -e ." in text


def test_doctor_names_pythondontwritebytecode_and_how_to_unset_it(monkeypatch):
    monkeypatch.setattr(doctor, "CHECKS", (doctor.bytecode,))
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    out = io.StringIO()
    assert doctor.main(out) == 0  # slower, never broken
    assert (
        "note  PYTHONDONTWRITEBYTECODE is set" in out.getvalue() and "unset PYTHONDONTWRITEBYTECODE" in out.getvalue()
    )
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE")
    out = io.StringIO()
    doctor.main(out)
    assert "ok  Python keeps the bytecode" in out.getvalue()


def test_watch_polls_on_network_and_shared_drives(tmp_path):
    mounts = tmp_path / "mounts"
    mounts.write_text("/dev/sda1 / ext4 rw 0 0\nserver:/home /home nfs4 rw 0 0\nC:\\134 /mnt/c 9p rw 0 0\n")
    assert watch.polling_reason(REPO, str(mounts)) == ""
    assert "nfs4" in watch.polling_reason(tmp_path.__class__("/home/learner/course"), str(mounts))
    assert "9p" in watch.polling_reason(tmp_path.__class__("/mnt/c/Users/me/course"), str(mounts))
    assert watch.polling_reason(REPO, str(tmp_path / "no such file")) == ""


def test_a_sandbox_that_cannot_filter_system_calls_says_so(monkeypatch):
    """Where libseccomp is missing, workers at `sandbox` could make any system call: doctor names the fix."""
    import pytest

    from autograder.grading import isolation
    from autograder.worker import sandbox

    if isolation.best_level() == "processes":
        pytest.skip("only a grader that runs as root shuts its workers in")
    assert isolation.can_filter_syscalls()
    monkeypatch.setattr(sandbox, "allow_only_what_workers_need", lambda: False)
    finding = doctor.isolation_level()
    assert finding.verdict == "note" and "any system call" in finding.what and "libseccomp" in finding.fix


def test_root_without_bubblewrap_grades_at_user_level_and_doctor_names_the_fix(monkeypatch):
    """The `sandbox` level is bubblewrap's: where `bwrap` is missing, root gets `user`, and doctor says why."""
    import os
    import shutil
    import sys

    from autograder.grading import isolation

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(isolation, "blocking_ancestor", lambda path: None)
    monkeypatch.setattr(shutil, "which", lambda name: None)
    monkeypatch.setattr(isolation, "_bubblewrap_says", None)
    assert isolation.best_level() == "user"
    finding = doctor.isolation_level()
    assert finding.verdict == "note" and "apt-get install bubblewrap" in finding.fix, finding


def test_as_root_on_linux_the_suite_has_bubblewrap_to_test_the_sandbox_level():
    """The walls of `sandbox` are tested only where it runs: as root, the test install must include bubblewrap
    (`.ci/run` installs it), or every sandbox test would quietly test `user` instead."""
    import os
    import shutil
    import sys

    import pytest

    if sys.platform != "linux" or os.geteuid() != 0:
        pytest.skip("the sandbox level is for a grader that runs as root on Linux")
    assert shutil.which("bwrap"), "install bubblewrap (apt-get install bubblewrap) to test the sandbox level"


def doctor_output(env_path) -> subprocess.CompletedProcess:
    env = {**__import__("os").environ, "PYTHONPATH": str(env_path)}
    return subprocess.run(
        [sys.executable, "-m", "autograder", "doctor"], cwd=REPO, capture_output=True, text=True, env=env
    )


def test_doctor_grades_the_reference_for_real_and_names_autograd_after_fork(machine_fault):
    """A machine where forked workers cannot run autograd (no thread shows it): doctor says what, and the fix."""
    import pytest

    if pool.start_method() != "fork":
        pytest.skip("workers fork on Linux only")
    proc = doctor_output(machine_fault("gpu-unseen"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "PROBLEM  the reference fails a check of task 9.1 here" in proc.stdout
    assert "autograd's threading in combination with fork-based multiprocessing" in proc.stdout
    assert "--workers spawn" in proc.stdout


def test_doctor_says_why_workers_are_spawned(machine_fault):
    import pytest

    if pool.start_method() != "fork":
        pytest.skip("workers fork on Linux only")
    proc = doctor_output(machine_fault("gpu-zygote"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the reference passes real checks" in proc.stdout
    assert "workers spawned: the process that forks workers had" in proc.stdout
