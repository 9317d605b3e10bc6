"""Shared helpers of the project's own test suite: run the grader as a learner would, read its results."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@dataclass
class GradingRun:
    returncode: int
    output: str
    results: dict

    @property
    def status(self) -> dict[str, str]:
        return self.results["extra_data"]["status"]

    @property
    def score_by_task(self) -> dict[str, tuple[int, int]]:
        return {t["number"]: (t["score"], t["max_score"]) for t in self.results["tests"]}


def grade(
    impl: str | Path,
    *args: str,
    tmp_path: Path,
    env: dict | None = None,
    python: str = sys.executable,
    cwd=REPO,
    timeout: float = 600,
) -> GradingRun:
    """Run `pytest autograder --impl IMPL --results-json ...` in a subprocess, from the repository root.

    `env` adds to the environment (a simulated platform's PYTHONPATH); `python` is another interpreter; `timeout`:
    the seconds the run may take before the test fails.
    """
    results = tmp_path / f"results-{len(list(tmp_path.glob('results-*.json')))}.json"
    proc = subprocess.run(
        [python, "-m", "pytest", "autograder", "--impl", str(impl), "--results-json", str(results), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
    )
    output = proc.stdout + proc.stderr
    assert results.exists(), f"the grader wrote no results (exit {proc.returncode}):\n{output[-3000:]}"
    return GradingRun(proc.returncode, output, json.loads(results.read_text()))


def level_here(level: str) -> str:
    """`level`, if this machine gives it; else the test is skipped, saying why (`--isolation processes` as root
    needs a Python that the workers' own users can reach: not one under a closed /root)."""
    from autograder.grading import isolation

    why = isolation.why_not(level)
    if why:
        pytest.skip(f"--isolation {level} is not possible here: {why}")
    return level


def copy_of(folder: str, tmp_path: Path, name: str = "submission") -> Path:
    """A copy of solutions/ or exercises/ to break or fill in."""
    target = tmp_path / name
    shutil.copytree(REPO / folder, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target


@pytest.fixture(scope="session")
def session_tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("grading")


@pytest.fixture(scope="session")
def trained_classifier():
    """Lesson 12's demo run, trained once for the whole suite (about a minute): the model and its history.

    Tests read it and must leave its parameters as they found them.
    """
    from solutions import classifier

    X, y = classifier.moons()
    model = classifier.classifier_model()
    return model, classifier.train_classifier(model, X, y, steps=100)


@pytest.fixture(scope="session")
def reference_run(session_tmp) -> GradingRun:
    """The reference graded once for the whole suite."""
    return grade("solutions", tmp_path=session_tmp)


@pytest.fixture(scope="session")
def fresh_run(session_tmp) -> GradingRun:
    """A fresh clone's exercises/ graded once for the whole suite."""
    return grade("exercises", tmp_path=session_tmp)


@pytest.fixture
def machine_fault():
    """`machine_fault(mode)`: a folder to put on PYTHONPATH that gives this machine a fault of a learner's
    (`tests/platforms/faults`: `gpu`, `gpu-zygote`, ...), reachable by the workers at every isolation level."""
    made = []

    def make(mode: str = "") -> Path:
        folder = Path(tempfile.mkdtemp(prefix="machine-fault-"))
        shutil.copy(REPO / "tests" / "platforms" / "faults" / "sitecustomize.py", folder)
        (folder / "mode").write_text(mode)
        for path in (folder, *folder.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)  # a worker at `user` is another user
        made.append(folder)
        return folder

    yield make
    for folder in made:
        shutil.rmtree(folder, ignore_errors=True)


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (Linux, from /proc): only what a test started itself, never another grader's."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    parent = int(f.read().rsplit(b")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


class Starved:
    """A busy machine, made on purpose: every process below `pid` but `pid` itself is stopped for `stop` seconds
    of each `period` (SIGSTOP, then SIGCONT), so the grader's workers get that share less of the wall clock
    whatever the number of cores. Linux only."""

    def __init__(self, pid: int, share: float = 0.2, period: float = 0.25):
        import threading

        self.pid, self.run, self.stop = pid, period * share, period * (1 - share)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._starve, daemon=True)
        self.thread.start()

    def _starve(self) -> None:
        import signal

        while not self.done.wait(self.run):
            stopped = []
            for pid in descendants(self.pid):
                try:
                    os.kill(pid, signal.SIGSTOP)
                    stopped.append(pid)
                except OSError:
                    pass
            self.done.wait(self.stop)
            for pid in stopped:
                try:
                    os.kill(pid, signal.SIGCONT)
                except OSError:
                    pass

    def end(self) -> None:
        self.done.set()
        self.thread.join()


PYENV_VERSIONS = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"


def pyenv_python(minor: int) -> Path:
    """pyenv's CPython 3.`minor` (these machines hold 3.10 to 3.13): a stand-in for a platform image's Python."""
    found = sorted(PYENV_VERSIONS.glob(f"3.{minor}.*/bin/python3.{minor}"))
    if not found:
        pytest.skip(f"no Python 3.{minor} under {PYENV_VERSIONS} to stand in for a platform image's")
    return found[-1]


def pip_environment() -> dict:
    """The environment for a pip that installs what a platform image would: this machine's pip settings (its
    wheel folder stands in for PyTorch's CPU index, which it cannot reach), and an index it cannot reach given
    up at once rather than retried for minutes."""
    return {**os.environ, "PIP_RETRIES": "0", "PIP_DEFAULT_TIMEOUT": "15", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def autograder_command(*args: str) -> None:
    """Run `python -m autograder ARGS` from the repository root, as a maintainer or instructor types it."""
    subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, check=True, capture_output=True)


# --- a student edition, made once for the whole suite (`test_edition.py`, `test_regressions.py`) ---------------


@pytest.fixture(scope="session")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("edition") / "course"
    autograder_command("export", "student-edition", "--out", str(out))
    return out


@pytest.fixture(scope="session")
def python(edition, tmp_path_factory) -> str:
    """The Python of a virtual environment that holds the edition and its dependencies, never the full course.

    The dependencies are this machine's, reached through a `.pth` line naming its site-packages: a folder on the
    path, whose own `.pth` files (the full course's editable install among them) are not read.
    """
    venv = tmp_path_factory.mktemp("venv") / "edition"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "machine.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    python = str(venv / "bin" / "python")
    install = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "-e", str(edition)]
    subprocess.run(install, check=True, capture_output=True)
    kernel = [python, "-m", "ipykernel", "install", "--prefix", str(venv), "--name", "edition"]
    subprocess.run(kernel, check=True, capture_output=True)
    return python


def in_edition(edition, *command: str, **kwargs) -> subprocess.CompletedProcess:
    """Run a command inside the edition, in its own virtual environment (`command[0]` is its `python`)."""
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSAFEPATH", "PYTEST_ADDOPTS")},
        "PYTHONDONTWRITEBYTECODE": "1",
        "JUPYTER_PATH": str(Path(command[0]).parent.parent / "share" / "jupyter"),  # the edition's kernel
    }
    return subprocess.run(command, cwd=edition, env=env, capture_output=True, text=True, timeout=900, **kwargs)


def pytest_configure(config: pytest.Config) -> None:
    # the suite's longest tests (a dozen grading runs or more each): CI runs them; `pytest tests -m "not slow"` leaves
    # them out of a quick pass
    config.addinivalue_line("markers", "slow: a test that makes many grading runs (over a minute on a busy machine)")
