"""The pages' committed results (`course/_build/executed/`) are keyed by what their code prints, not by the grader.

A block that names `autograder`, and lesson 0's grader runs, depend on the grader's sources: those key this
machine's cache only, so an edit of the grader that prints the same leaves the committed results alone, and
`python -m autograder dev build` runs them again to see whether what they print changed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BUILD = REPO / "course" / "_build"


def _buildcache():
    sys.path.insert(0, str(BUILD))
    try:
        import buildcache
    finally:
        sys.path.remove(str(BUILD))
    return buildcache


def test_a_grader_edit_keeps_the_committed_key_and_a_recording_build_runs_the_block_again(tmp_path, monkeypatch):
    buildcache = _buildcache()
    monkeypatch.setattr(buildcache, "CACHE", tmp_path)
    for name in ("COURSE_SITE_RERUN", "COURSE_SITE_CHECK", "COURSE_SITE_RECORD"):
        monkeypatch.delenv(name, raising=False)
    code = "print('autograder', 6 * 7)"
    runs = []

    def runner(grader: str) -> buildcache.BlockRunner:
        made = buildcache.BlockRunner("context", {"autograder": lambda: runs.append(grader) or grader})
        made.page = "page.md"
        return made

    before = runner("grader v1")
    assert before.run(code) == "autograder 42\n"
    [recorded] = before.committed.used["page.md"]
    committed = buildcache.Committed(tmp_path / "none")
    committed.outputs = {recorded["key"]: "kept\n"}

    after = runner("grader v2")  # pool.py changed: a plain build reads the committed result
    after.committed = committed
    assert after.run(code) == "kept\n" and after.ran == 0
    assert after.committed.used["page.md"][0]["key"] == recorded["key"]

    monkeypatch.setenv("COURSE_SITE_RECORD", str(tmp_path / "record.json"))
    recording = runner("grader v2")  # `python -m autograder dev build`: this grader has not run the block yet
    recording.committed = committed
    assert recording.run(code) == "autograder 42\n" and recording.ran == 1
    again = runner("grader v2")  # and the next such build finds it in this machine's cache
    again.committed = committed
    assert again.run(code) == "autograder 42\n" and again.ran == 0


def test_a_change_of_pool_py_alone_leaves_the_committed_results_clean(tmp_path):
    """`python -m autograder dev build --check` in a copy of the course whose grading/pool.py gained a line."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    copy = tmp_path / "course"
    for name in listed:
        if (REPO / name).is_file():
            (copy / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, copy / name)
    pool = copy / "autograder" / "grading" / "pool.py"
    pool.write_text(pool.read_text() + "\n# a refactor that changes nothing a page shows\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("COURSE_SITE") and k != "PYTHONSAFEPATH"}
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "dev", "build", "--check"],
        cwd=copy,
        env={**env, "PYTHONPATH": str(copy), "COURSE_SITE_CACHE": str(tmp_path / "cache")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
