"""The learner's machines, on this one: simulated macOS and Windows, and Python wherever it lives.

Each grades the reference to full marks and the stubs to zero on a lesson or
two (the whole course runs once elsewhere in the suite, and in CI as an
unprivileged user). The simulations are in `tests/platforms/`, one folder
each, with what each one takes away; the real macOS and Windows runs are in
`.github/workflows/ci.yml`.
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from autograder.grading.isolation import best_level

from .conftest import REPO, copy_of, grade

PLATFORMS = REPO / "tests" / "platforms"
LESSONS = ("--lesson", "2", "--lesson", "9")  # the Value class, and PyTorch in the worker
AS_ROOT = best_level() != "processes"


def full_marks(run) -> None:
    assert run.returncode == 0, run.output[-3000:]
    assert set(run.status.values()) == {"passed"}, run.output[-3000:]
    assert run.results["score"] == run.results["extra_data"]["max_score"] > 0


def zero(run) -> None:
    assert set(run.status.values()) == {"not started"}, run.output[-3000:]
    assert run.results["score"] == 0


def probe(env: dict, code: str, python: str = sys.executable) -> str:
    return subprocess.run(
        [python, "-c", code], cwd=REPO, env={**os.environ, **env}, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.mark.parametrize("platform", ["macos", "windows"])
def test_a_simulated_platform_grades_the_reference_to_full_marks_and_the_stubs_to_zero(platform, tmp_path):
    env = {"PYTHONPATH": str(PLATFORMS / platform)}
    how = "from autograder.grading import isolation, launchers as start; "
    how += "print(start.start_method(), start.POSIX_SOCKETS, isolation.best_level())"
    expected = {"macos": "spawn True processes", "windows": "spawn False processes"}[platform]
    assert probe(env, how) == expected, "the simulation did not take"
    reference = grade("solutions", *LESSONS, tmp_path=tmp_path, env=env)
    full_marks(reference)
    assert reference.results["extra_data"]["isolation"] == "processes"
    zero(grade("exercises", *LESSONS, tmp_path=tmp_path, env=env))


@pytest.mark.parametrize("platform", ["macos", "windows"])
def test_an_endless_loop_on_a_simulated_platform_costs_its_own_check(platform, tmp_path):
    """Without SIGALRM (Windows) only the grader's deadline stops it; either way it is 'timed out', charged once."""
    submission = copy_of("solutions", tmp_path)
    engine = submission / "engine.py"
    source = engine.read_text()
    looped = source.replace(
        "    def __repr__(self) -> str:\n", "    def __repr__(self) -> str:\n        while True:\n            pass\n", 1
    )
    assert looped != source
    engine.write_text(looped)
    env = {"PYTHONPATH": str(PLATFORMS / platform)}
    run = grade(submission, "--lesson", "2", "--check-timeout", "2", tmp_path=tmp_path, env=env)
    assert run.status["2.2"] == "timed out", run.output[-3000:]
    assert {t: s for t, s in run.status.items() if t != "2.2"} == {"2.1": "passed", "2.3": "passed", "2.4": "passed"}


def environment_in(folder: Path) -> str:
    """A virtual environment in `folder` with this course installed, its pure-Python packages its own.

    The big ones (torch, numpy) come from the packages of the interpreter running this suite (a maintainer's
    virtual environment, or the system's), named in a .pth file; graphviz, which lesson 3 imports, is
    installed into the environment, so that a sandbox that hid the folder would show.
    """
    import site as running

    venv.EnvBuilder(with_pip=False, symlinks=True).create(folder)
    python = str(folder / "bin" / "python")
    site = probe({}, "import sysconfig; print(sysconfig.get_paths()['purelib'])", python)
    graphviz = Path(__import__("graphviz").__file__).parent
    subprocess.run(["cp", "-r", str(graphviz), site], check=True)
    (Path(site) / "backprop_course.pth").write_text("\n".join([str(REPO), *running.getsitepackages()]) + "\n")
    return python


@pytest.mark.parametrize("where", ["/tmp", "/var/tmp", "repository"])
def test_python_under_tmp_or_in_the_repository_grades_in_full(where, tmp_path):
    """The sandbox's private /tmp, and the hidden repository, must not hide the interpreter's own packages."""
    import shutil
    import tempfile

    parent = REPO if where == "repository" else Path(tempfile.mkdtemp(dir=where))
    folder = parent / ".venv-test" if where == "repository" else parent / "venv"
    try:
        python = environment_in(folder)
        located = probe({}, "import graphviz; print(graphviz.__file__)", python)
        assert located.startswith(str(folder)), located
        full_marks(grade("solutions", "--lesson", "3", "--lesson", "9", tmp_path=tmp_path, python=python))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        if where != "repository":
            shutil.rmtree(parent, ignore_errors=True)


@pytest.fixture
def python_under_closed_root(monkeypatch):
    """Linux, as root, with pyenv's Python under /root, which other users may not enter."""
    from autograder.grading import isolation
    from autograder.worker import sandbox

    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "interpreter_paths", lambda: ["/root/.pyenv/versions/3.11.7/lib/python3.11"])
    monkeypatch.setattr(isolation, "blocking_ancestor", lambda path: "/root")
    return isolation


def test_the_user_level_needs_python_where_other_users_can_reach_it(python_under_closed_root, monkeypatch):
    """pyenv under a closed /root: without a mount namespace a worker's own user could not import anything."""
    isolation = python_under_closed_root
    assert "/root" in isolation.why_not("user")
    with pytest.raises(RuntimeError, match="--isolation user is not possible here: Python lives under /root"):
        isolation.level_for("user")
    monkeypatch.setattr(isolation, "blocking_ancestor", lambda path: None)
    assert isolation.why_not("user") == ""


def test_processes_as_root_needs_python_where_its_workers_own_users_can_reach_it(python_under_closed_root, monkeypatch):
    """As root, each worker at `processes` becomes a user of its own: with Python under a closed /root it could
    import nothing, so as root the level is refused, saying why and what to do; an ordinary user's runs need
    nothing of the kind. Where no level is left, grading says so rather than running learner code as root."""
    isolation = python_under_closed_root
    assert "users of their own, and Python lives under /root" in isolation.why_not("processes")
    with pytest.raises(RuntimeError, match="--isolation processes is not possible here: as root"):
        isolation.level_for("processes")
    monkeypatch.setitem(isolation.PROBES, isolation.Level.SANDBOX, lambda: "bubblewrap is not installed")
    with pytest.raises(RuntimeError, match="no isolation level is possible here"):
        isolation.level_for("auto")
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert isolation.why_not("processes") == "" and isolation.best_level() == "processes"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(isolation, "blocking_ancestor", lambda path: None)
    assert isolation.why_not("processes") == ""


def test_the_sandbox_shows_python_and_the_worker_and_covers_what_is_hidden_inside_them(monkeypatch, tmp_path):
    """Bubblewrap's file system, as `sandbox_command` asks for it: whatever Python imports from stays reachable
    for a worker's own user (a closed home's folders opened), the repository is not there at all, and a grader
    or reference installed among Python's packages is covered."""
    from autograder.grading import isolation
    from autograder.worker import sandbox

    home = tmp_path / "closed-home"
    packages = home / "py" / "lib" / "site-packages"
    (packages / "solutions").mkdir(parents=True)
    home.chmod(0o700)
    monkeypatch.setattr(sandbox, "interpreter_paths", lambda: [str(packages), str(REPO)])
    command = isolation.sandbox_command([str(REPO), str(packages / "solutions")], None)
    args = " ".join(command)
    assert f"--ro-bind {packages} {packages}" in args
    assert f"--perms 0755 --dir {home} " in args and f"--perms 0755 --dir {home / 'py' / 'lib'} " in args
    assert f"--tmpfs {packages / 'solutions'}" in args and f"--remount-ro {packages / 'solutions'}" in args
    assert f"--ro-bind {REPO} " not in args and str(REPO / "solutions") not in args  # the repository: not there
    worker = REPO / "autograder" / "worker"
    assert f"--ro-bind {worker} {worker}" in args  # the worker's own code, and nothing else of the grader's
    assert not any(arg.startswith(str(REPO / "autograder" / "grading")) for arg in command)
    assert "--bind" not in command and command[-4:] == ["/", "--chdir", "/", "--"]
    assert "--cap-drop ALL" in args and "--unshare-net" in command and "--die-with-parent" in command
    cgroup = "/sys/fs/cgroup/memory/grader/autograder-1"
    assert "--bind /sys/fs/cgroup/memory/grader /sys/fs/cgroup/memory/grader" in " ".join(
        isolation.sandbox_command([], cgroup)
    )


def test_an_installed_grader_is_covered_but_its_worker_code_stays_reachable(monkeypatch, tmp_path):
    """`pip install .` puts the grader and the reference among Python's packages: both are covered, and the
    worker's own code is bound back into the covered grader (then made read-only), as bubblewrap runs it."""
    import shutil

    from autograder.grading import isolation
    from autograder.worker import sandbox

    packages = tmp_path / "site-packages"
    grader, reference = packages / "autograder", packages / "solutions"
    (grader / "worker").mkdir(parents=True)
    (grader / "grading").mkdir()
    reference.mkdir()
    for path in (grader / "__init__.py", grader / "worker" / "sandbox.py", grader / "grading" / "plugin.py"):
        path.write_text("# the grader's\n")
    (reference / "engine.py").write_text("# the reference\n")
    monkeypatch.setattr(sandbox, "interpreter_paths", lambda: [str(packages)])
    monkeypatch.setattr(sandbox, "__file__", str(grader / "worker" / "sandbox.py"))
    command = isolation.sandbox_command([str(grader), str(reference)], None)
    at = {arg: i for i, arg in enumerate(command)}
    assert at[str(grader / "worker")] > command.index("--tmpfs") and command[-5:-3] == ["--remount-ro", "/"]
    assert command.index(str(grader)) < at[str(grader / "worker")] < len(command) - command[::-1].index(str(grader))
    if not (sys.platform == "linux" and os.geteuid() == 0 and shutil.which("bwrap")):
        return  # the command line is all there is to check without root and bubblewrap
    look = f"cat {grader}/worker/sandbox.py; ls {grader} {reference}; touch {grader}/x 2>/dev/null || echo read-only"
    shown = subprocess.run([*command, "/bin/sh", "-c", look], capture_output=True, text=True, timeout=30)
    assert shown.returncode == 0, shown.stderr
    assert "# the grader's" in shown.stdout and "read-only" in shown.stdout, shown.stdout
    assert "plugin.py" not in shown.stdout and "grading" not in shown.stdout and "engine.py" not in shown.stdout
