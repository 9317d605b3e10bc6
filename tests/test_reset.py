"""`python -m autograder reset`: a task starts over, and nothing else of the learner's file changes or is lost."""

from __future__ import annotations

import difflib
import subprocess
import sys

import pytest

from autograder.course import regions, registry
from autograder.course.regions import SOLUTIONS, all_regions
from autograder.export import reset
from tests.conftest import REPO

OWN = {r.task for r in all_regions()}


def solved(module: str, tasks: set[str]) -> str:
    """`module`'s file as a learner who did exactly `tasks` has it (the reference's code in their holes)."""
    path = SOLUTIONS / f"{module}.py"
    return regions.generate(path.read_text(), module, frozenset(tasks), str(path))


def run_reset(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", "reset", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_reset_puts_back_one_tasks_stub_keeps_the_others_and_the_saved_copy_restores_the_file(tmp_path):
    engine = tmp_path / "engine.py"
    # three tasks done, and lines of the learner's own outside any task (an import, a helper)
    before = (
        "import math  # mine\n" + solved("engine", {"2.1", "2.3", "2.4"}) + "\n\ndef helper():  # mine\n    return 1\n"
    )
    engine.write_text(before)
    done = run_reset("2.3", "--impl", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    after = engine.read_text()
    assert (
        after
        == "import math  # mine\n" + solved("engine", {"2.1", "2.4"}) + "\n\ndef helper():  # mine\n    return 1\n"
    )
    changed = [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and line[:3] not in ("+++", "---")
    ]
    removed = [line[1:] for line in changed if line.startswith("-")]
    added = [line[1:] for line in changed if line.startswith("+")]
    (region,) = [r for r in all_regions() if r.task == "2.3"]
    assert removed == SOLUTIONS.joinpath("engine.py").read_text().splitlines()[region.begin : region.end - 1]
    assert added == regions.stub_lines(region.tasks, region.indent)
    (copy,) = tmp_path.glob("engine.py.*.bak")
    assert str(copy) in done.stdout
    assert copy.read_bytes() == before.encode()
    copy.replace(engine)  # the learner takes their version back
    assert engine.read_text() == before


@pytest.mark.parametrize("module", sorted({r.module for r in all_regions()}))
def test_every_task_with_code_of_its_own_resets_alone_in_a_file_where_every_task_is_done(module, tmp_path):
    tasks = {r.task for r in all_regions() if r.module == module}
    path = tmp_path / f"{module}.py"
    for task_id in sorted(tasks, key=registry.sort_key):
        path.write_text(solved(module, tasks))
        reset.reset([task_id], tmp_path)
        assert path.read_text() == solved(module, tasks - {task_id}), task_id
    for copy in tmp_path.glob("*.bak"):
        assert copy.read_text() == solved(module, tasks)  # one copy per reset, none overwritten
    assert len(list(tmp_path.glob("*.bak"))) == len(tasks)


def test_reset_of_a_lesson_puts_back_every_stub_of_it(tmp_path):
    (tmp_path / "engine.py").write_text(solved("engine", {"2.1", "2.3", "2.4", "5.2"}))
    done = run_reset("--lesson", "2", "--impl", str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "engine.py").read_text() == solved("engine", {"5.2"})


def test_reset_refuses_where_the_task_cannot_be_found_and_changes_nothing(tmp_path):
    engine = tmp_path / "engine.py"
    text = solved("engine", {"2.3", "2.4"})
    assert '"""Return `self + other`' in text
    engine.write_text(text.replace('"""Return `self + other`', '"""My own words for `self + other`'))
    original = engine.read_bytes()
    done = run_reset("2.4", "2.3", "--impl", str(tmp_path))
    assert done.returncode == 1
    assert "task 2.3's code cannot be found" in done.stderr and "Value.__add__" in done.stderr
    assert "Nothing was changed" in done.stderr
    assert engine.read_bytes() == original and not list(tmp_path.glob("*.bak"))  # not even task 2.4's part


def test_a_task_that_only_revisits_another_tasks_code_says_which_to_reset(tmp_path):
    assert "7.1" not in OWN
    (tmp_path / "engine.py").write_text(solved("engine", OWN))
    done = run_reset("7.1", "--impl", str(tmp_path))
    assert done.returncode == 1
    assert "reset 5.1 and 5.2 and 5.3" in done.stderr, done.stderr


def test_reset_reads_lines_as_python_does_a_line_separator_in_a_string_stays_there(tmp_path):
    """U+2028 (and the other characters `str.splitlines` ends a line at) inside a string is not a line end for
    Python: after a reset the file still parses, and the string still holds it."""
    engine = tmp_path / "engine.py"
    text = solved("engine", {"2.1", "2.3"}) + '\n\nSEPARATORS = "a\u2028b\x0cc\x1dd\x85e"  # mine\n'
    engine.write_text(text, encoding="utf-8")
    compile(text, "engine.py", "exec")
    reset.reset(["2.3"], tmp_path)
    after = engine.read_text(encoding="utf-8")
    compile(after, "engine.py", "exec")
    assert 'SEPARATORS = "a\u2028b\x0cc\x1dd\x85e"  # mine' in after
    assert after == solved("engine", {"2.1"}) + '\n\nSEPARATORS = "a\u2028b\x0cc\x1dd\x85e"  # mine\n'
