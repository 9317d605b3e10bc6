"""The maintainers' recipe works: a new task is four hand-edited files and one `dev build`, then it is graded.

In a temporary copy of the repository the test adds task 1.4 (a second-order
difference) exactly as the recipe says (CONTRIBUTING, and the maintainers'
guide, course/guides/maintainers/changing.md): its entry in the lesson's data
(title, owner, hints, spec), its code in `solutions/`, its checks in the
lesson's grading tests, its heading on the page. After each step
`python -m autograder dev check` names what is still missing, file by file;
`python -m autograder dev build` writes every generated file (the spec into
the docstrings too), `dev check` and `dev build --check` are then clean, and
the grader grades the new task: full marks for the reference, "not started"
for the fresh stub.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from .conftest import REPO

DATA = """
[[task]]
id = "1.4"
title = "second_difference"
owners = ["second_difference"]
hints = '''
The slope of the slope: compare the steps on either side of x.

Add fn on both sides, take away twice the middle, divide by h squared; raise {raises}.
'''

[task.spec.second_difference]
raises.ValueError = "when `h` is not a positive number"
"""
SOLUTION = '''

def second_difference(fn: Callable[[float], float], x: float, h: float = 1e-4) -> float:
    """Estimate fn''(x) from a step either side, (fn(x + h) - 2 fn(x) + fn(x - h)) / h² (task 1.4)."""
    ### BEGIN SOLUTION (task 1.4)
    _check_step(h)
    return (fn(x + h) - 2 * fn(x) + fn(x - h)) / h**2
    ### END SOLUTION
'''
GRADING_TEST = '''

@scenario
def second_difference_of_a_cubic(impl, x):
    return impl.derivatives.second_difference(lambda t: t**3, x)


@pytest.mark.hidden
@pytest.mark.task("1.4", points=2, hint="(fn(x + h) - 2*fn(x) + fn(x - h)) / h**2")
def test_second_difference_of_a_cubic(learner):
    """the second difference of x³ is 6x"""
    for x in (0.5, -2.0):
        expect_close(learner.run(second_difference_of_a_cubic, x), 6 * x, "second_difference(x**3, x)", f"x = {x}",
                     rel=1e-4, abs_tol=1e-4)


@pytest.mark.task("1.4", points=1, hint="Check h first, as in task 1.1.")
def test_second_difference_bad_step(learner):
    """a zero or negative h raises ValueError"""
    for h, out in zip([0.0, -0.5], learner.run(bad_steps, "second_difference", [0.0, -0.5]), strict=True):
        expect_raised(out, "ValueError", f"second_difference(f, 3.0, h={h!r})")
'''
PAGE = """

### Task 1.4 · `second_difference` {#task-1-4}

<!-- course: task 1.4 -->
"""

HAND_EDITED = (
    "autograder/course/data/01-derivatives.toml",
    "solutions/derivatives.py",
    "autograder/lessons/test_01_derivatives.py",
    "course/01-derivatives.md",
)


def _copy_repository(target):
    files = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    for name in files:
        if (REPO / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, target / name)


def _edit(root, name, edit):
    path = root / name
    path.write_text(edit(path.read_text()))


def test_a_new_task_takes_four_files_and_one_build(tmp_path):
    root = tmp_path / "course"
    _copy_repository(root)
    env = {**os.environ, "PYTHONPATH": str(root), "PYTHONDONTWRITEBYTECODE": "1"}

    def run(*args):
        return subprocess.run([sys.executable, *args], cwd=root, env=env, capture_output=True, text=True, timeout=600)

    def missing() -> list[str]:
        """What `dev check` says is missing, one line each."""
        checked = run("-m", "autograder", "dev", "check")
        assert checked.returncode in (0, 1), checked.stderr
        return checked.stdout.splitlines() if checked.returncode else []

    _edit(root, HAND_EDITED[0], lambda text: text.replace("\n[[example]]", DATA + "\n[[example]]", 1))
    said = missing()
    assert any(line.startswith("solutions/derivatives.py: task 1.4 (second_difference) has no region") for line in said)
    assert any(line.startswith(f"{HAND_EDITED[2]}: task 1.4 (second_difference) has no check") for line in said)
    assert any(line.startswith(f"{HAND_EDITED[3]}: task 1.4 (second_difference) has no heading") for line in said)

    _edit(root, HAND_EDITED[1], lambda text: text + SOLUTION)
    said = missing()
    assert not any(line.startswith("solutions/derivatives.py: task 1.4") for line in said), said
    assert "solutions/derivatives.py: the docstring of second_difference does not end in its spec" in "\n".join(said)

    _edit(root, HAND_EDITED[2], lambda text: text + GRADING_TEST)
    assert not any(line.startswith(HAND_EDITED[2]) for line in missing())

    _edit(root, HAND_EDITED[3], lambda text: text + PAGE)
    assert [line for line in missing() if "docstring" not in line] == []  # what build writes is left

    stale = run("-m", "autograder", "dev", "build", "--check")
    assert stale.returncode == 1 and "exercises/derivatives.py" in stale.stdout + stale.stderr
    built = run("-m", "autograder", "dev", "build")
    assert built.returncode == 0, built.stdout + built.stderr
    clean = run("-m", "autograder", "dev", "build", "--check")
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert missing() == []
    stub = (root / "exercises/derivatives.py").read_text()
    assert 'raise NotImplementedError("task 1.4: second_difference")' in stub
    assert "Raises:\n        ValueError: when `h` is not a positive number.\n" in stub  # the data's spec
    assert "1.4 second_difference" in (root / "solutions/derivatives.py").read_text()  # the docstring's task list

    reference = run("-m", "pytest", "autograder", "--impl", "solutions", "--task", "1.4")
    assert reference.returncode == 0 and "Every task graded here passes (1.4)" in reference.stdout, reference.stdout[
        -3000:
    ]
    fresh = run("-m", "pytest", "autograder", "--task", "1.4")
    assert "1.4  second_difference" in fresh.stdout and "not started" in fresh.stdout, fresh.stdout[-3000:]
    hint = run("-m", "autograder", "hint", "1.4", "--all", "--impl", str(tmp_path))
    assert "raise `ValueError` when `h` is not a positive number." in hint.stdout, hint.stdout  # the hint quotes it
