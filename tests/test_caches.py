"""The grader's caches on disk (`autograder/grading/caches.py`): one folder per isolation level and user, each file
sealed by the run that wrote it, and a learner's feedback cache (`processes`) never read by a graded run."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from autograder.grading import caches, grader, isolation, reference
from autograder.grading.reference import answers_digest, shipped_answers
from autograder.worker.wire import PROCESSES

from .conftest import REPO, copy_of, grade, level_here

ANSWERS = {"a scenario's key": 42}


@pytest.fixture
def root(tmp_path, monkeypatch):
    monkeypatch.setattr(caches, "_MEMORY", {})  # every GradingCache below reads from disk, as a new run does
    return tmp_path / "grading"


def reread(level: str, root, graded: bool = False) -> dict:
    caches._MEMORY.clear()
    return caches.GradingCache(level, graded, root).load("answers")


def written(level: str, root) -> caches.GradingCache:
    cache = caches.GradingCache(level, root=root)
    cache.load("answers").update(ANSWERS)
    cache.save("answers")
    return cache


@pytest.mark.parametrize("level", ["sandbox", PROCESSES])
def test_a_runs_cache_is_read_by_the_next_run_at_its_level_only(root, level):
    cache = written(level, root)
    assert cache.folder.name == f"{level}-{os.geteuid()}" and oct(cache.folder.stat().st_mode)[-3:] == "700"
    assert oct((cache.folder / "answers.json").stat().st_mode)[-3:] == "600"
    assert reread(level, root) == ANSWERS
    other = "sandbox" if level == PROCESSES else PROCESSES
    assert reread(other, root) == {}


def test_a_graded_run_at_processes_neither_reads_nor_writes_the_learners_feedback_cache(root):
    written(PROCESSES, root)
    assert reread(PROCESSES, root, graded=True) == {}
    caches._MEMORY.clear()
    graded = caches.GradingCache(PROCESSES, graded=True, root=root)
    graded.load("answers")["a graded run's answer"] = 1
    graded.save("answers")
    assert reread(PROCESSES, root) == ANSWERS
    written("sandbox", root)  # where no learner code could write, a graded run reads as any other
    assert reread("sandbox", root, graded=True) == ANSWERS


def test_a_file_written_after_the_run_that_sealed_it_is_refused(root):
    """What a process the learner's code left running writes after the grader exits is never read."""
    cache = written(PROCESSES, root)
    path = cache.folder / "answers.json"
    path.write_text('{"a scenario\'s key": 41}')
    assert reread(PROCESSES, root) == {}
    cache.seal("answers")  # sealed again by a grader's run: read again
    assert reread(PROCESSES, root) == {"a scenario's key": 41}
    (cache.folder / "answers.seal").write_text("[1, 2, 3, 4]")
    assert reread(PROCESSES, root) == {}


def test_links_and_files_others_may_write_are_refused(root, tmp_path):
    cache = written(PROCESSES, root)
    path = cache.folder / "answers.json"
    path.chmod(0o620)
    cache.seal("answers")
    assert reread(PROCESSES, root) == {}, "a file the group may write"
    path.chmod(0o600)
    cache.seal("answers")
    assert reread(PROCESSES, root) == ANSWERS
    elsewhere = tmp_path / "elsewhere.json"
    path.replace(elsewhere)
    path.symlink_to(elsewhere)
    assert reread(PROCESSES, root) == {}, "a symbolic link"
    path.unlink()
    elsewhere.replace(path)
    cache.seal("answers")
    moved = tmp_path / "folder"
    cache.folder.replace(moved)
    cache.folder.symlink_to(moved)
    assert reread(PROCESSES, root) == {}, "a folder that is a symbolic link"


def test_a_learner_poisoning_their_feedback_cache_fools_only_their_own_runs(tmp_path):
    """Poisoned reference answers, sealed as a grader would: a learner's run at `processes` reads them; a graded run
    at `processes` and a run at the machine's best level do not."""
    best = isolation.best_level()
    if best == PROCESSES:
        pytest.skip("needs a stronger level than processes to compare with (root on Linux)")
    level_here(PROCESSES)
    submission = copy_of("solutions", tmp_path)
    honest = grade(submission, "--task", "8.1", tmp_path=tmp_path)
    assert set(honest.status.values()) == {"passed"}, honest.output[-3000:]
    # the same answers, as the reference gives them: what the run computed, or what the course ships
    known = {**shipped_answers(), **caches.GradingCache(best).load("answers")}
    assert known, "the run kept no answers"
    feedback = caches.GradingCache(PROCESSES)
    poisoned = {key: "poisoned" for key in known}
    runs = {}
    for name, args in (
        ("fooled", ["--isolation", PROCESSES]),
        ("graded", ["--isolation", PROCESSES, "--fresh-inputs", "1"]),
        ("best level", []),
    ):
        feedback.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        feedback.store("answers", poisoned)  # again each time: as root, a run at processes forgets every cache
        runs[name] = set(grade(submission, "--task", "8.1", *args, tmp_path=tmp_path).status.values())
    assert runs["fooled"] != {"passed"}, "the poisoned cache was not read: this proves nothing"
    assert runs["graded"] == {"passed"}
    assert runs["best level"] == {"passed"}


def shipped(tmp_path, monkeypatch, sources: str, answers: dict) -> None:
    """`answers` as the course's shipped answers, said to come from `sources`."""
    path = tmp_path / "shipped_answers.json"
    path.write_text(json.dumps({"sources": sources, "answers": answers}))
    monkeypatch.setattr(reference, "SHIPPED", path)
    shipped_answers.cache_clear()


class Run:
    """What `Reference` asks of a `Grader`, with nothing computed and no cache."""

    shipping = None
    new_answers = False
    drawing = False

    def __init__(self):
        self.cache: dict = {}

    def known_answers(self) -> dict:
        return self.cache

    answer = grader.Grader.answer


def test_the_shipped_answers_are_used_as_they_are_and_only_when_they_are_these_sources(tmp_path, monkeypatch):
    """A cold run (a platform's fresh container) computes no answer the course ships: it imports no PyTorch."""
    try:
        shipped(tmp_path, monkeypatch, answers_digest(), {"key": [1.5, "shipped"]})

        def never():
            raise AssertionError("an answer the course ships was computed again")

        assert Run().answer("key", never) == [1.5, "shipped"]
        run = Run()
        assert run.answer("another key", lambda: (2, 3)) == [2, 3] and run.new_answers  # not shipped: computed, kept
        shipped(tmp_path, monkeypatch, "the digest of older sources", {"key": "stale"})
        assert Run().answer("key", lambda: "computed") == "computed"
    finally:
        shipped_answers.cache_clear()


def test_the_shipped_answers_are_this_courses_and_spare_a_cold_run_pytorch(tmp_path):
    """The committed file is up to date (`python -m autograder dev build` writes it), and with it a run that grades
    lesson 9 from nothing cached never imports PyTorch in the pytest process (its workers do)."""
    assert not reference.shipped_answers_stale(), "run python -m autograder dev build"
    script = (
        "import sys; from autograder.grading import caches, runner;"  # a cache folder of its own: nothing in it
        "caches.GradingCache.__init__.__defaults__ = (False, caches.Path(sys.argv[1]));"
        "results = runner.grade('solutions', lessons=(9,));"
        "print(results.score, results.max_score, 'torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "cache")], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == out[1] and out[2] == "False", out
