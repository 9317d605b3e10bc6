"""A task's worker holds the reference of its prerequisites and no other task's code, the learner's included.

The registry's `prerequisites(task)` are the tasks of the earlier lessons and
the ones `registry.NEEDS` names. These tests prove both halves of that
promise: every task passes over its prerequisites alone (the declaration is
complete, so an honest learner is never charged for a task they have not
reached), and no other task's code is in reach of the graded code: not its
reference (so a task cannot pass by calling a sibling's reference: the corpus
entry `derives_by_hand_with_a_later_lessons_backward` shows what that used to
allow), nor the learner's own code of another task (whatever that code holds:
three functions calling each other in a circle once earned, each, what the
others did; corpus entry `calls_its_siblings_in_a_circle`). A learner's own
helper functions are theirs to share between tasks.
"""

from __future__ import annotations

import textwrap
from collections import defaultdict

import pytest

from autograder.course import regions, registry
from autograder.export import stubs
from autograder.grading.tasks import graded, reference_for
from autograder.worker.loading import Implementation

from .conftest import REPO, copy_of, grade

GRADED = [t for t in registry.TASKS if not registry.task(t).runs_whole]


def _body(region: regions.Region, text: str) -> str:
    return "\n".join(text.splitlines()[region.begin : region.end - 1])


@pytest.mark.parametrize("task_id", GRADED)
def test_the_reference_a_worker_holds_solves_its_prerequisites_and_nothing_else(task_id):
    needed = registry.prerequisites(task_id)
    sent = reference_for(task_id)
    for path in regions.solution_files():
        if path.stem == "__init__":
            continue
        text = path.read_text()
        for region in regions.parse(text, path.stem, str(path)):
            solved = _body(region, text)
            if text.count(solved) > 1:
                continue  # the same lines solve two regions: the text cannot tell which one was sent
            kept = task_id not in region.tasks and bool(needed & set(region.tasks))
            assert (solved in sent[path.stem]) == kept, (task_id, region.owner, region.tasks)


LEARNER_DERIVATIVES = textwrap.dedent("""
    def forward_difference(fn, x, h=1e-6):
        return "learner 1.1"

    def central_difference(fn, x, h=1e-5):
        return "learner 1.2"

    def partial_derivative(fn, args, i, h=1e-4):
        return "learner 1.3"
""")


def _setup(task_id: str, module: str, learner: str) -> dict:
    """What the grader sends the task's worker (`Grader.setup_for`), with `learner` as the learner's file."""
    return {
        "task": task_id,
        "module": module,
        "owners": sorted(regions.owners_of(task_id)),
        "prerequisite_owners": list(graded(task_id).prerequisite_owners),
        "sibling_owners": list(graded(task_id).sibling_owners),
        "learner": {module: [learner, f"{module}.py"]},
        "reference": reference_for(task_id),
    }


def test_a_sibling_that_is_not_a_prerequisite_is_a_stub_even_the_learners_own(monkeypatch):
    impl = Implementation(_setup("1.1", "derivatives", LEARNER_DERIVATIVES))
    assert impl.derivatives.forward_difference(None, 0) == "learner 1.1"
    for sibling, args in (("central_difference", (None, 0)), ("partial_derivative", (None, [0], 0))):
        with pytest.raises(NotImplementedError, match=r"task 1\.[23]"):
            getattr(impl.derivatives, sibling)(*args)
    monkeypatch.setitem(registry.NEEDS, "1.1", ("1.2",))  # declared: the reference's, under the learner's code
    reference_for.cache_clear(), graded.cache_clear()
    try:
        impl = Implementation(_setup("1.1", "derivatives", LEARNER_DERIVATIVES))
        assert impl.derivatives.central_difference(lambda x: x * x, 3.0) == pytest.approx(6.0)
        with pytest.raises(NotImplementedError, match=r"task 1\.3"):
            impl.derivatives.partial_derivative(None, [0], 0)
    finally:
        reference_for.cache_clear(), graded.cache_clear()


def test_a_circle_of_siblings_earns_each_task_only_what_its_own_code_does(tmp_path):
    """Three functions of lesson 1 calling each other in a circle: each once passed the checks that the others' code
    passed for it (the validation of h, written in 1.3's code alone, earned 1.1 and 1.2 their points too)."""
    from .test_bad_submissions import CORPUS, _apply

    submission = copy_of("solutions", tmp_path)
    _apply(submission, next(bad for bad in CORPUS if bad.name == "calls_its_siblings_in_a_circle").edits)
    run = grade(submission, "--lesson", "1", tmp_path=tmp_path)
    earned = {t: score for t, (score, _) in run.score_by_task.items()}
    passed = [c["nodeid"].rpartition("::")[2] for c in run.results["extra_data"]["results"] if c["status"] == "passed"]
    assert earned == {"1.1": 0, "1.2": 0, "1.3": 1} and passed == ["test_partial_derivative_bad_step_or_index"], run
    assert "must do without it" in run.output, run.output[-3000:]


def test_a_value_method_of_a_task_that_is_not_a_prerequisite_is_a_stub_even_the_learners_own():
    """Task 2.3 (`__add__`): `__init__` (2.1, named in NEEDS) is the reference's; lesson 8's `__truediv__` a stub,
    whatever the learner wrote; a helper method of the learner's own is theirs."""
    learner = (
        (REPO / "solutions" / "engine.py")
        .read_text()
        .replace(
            "    def __truediv__(self, other: Value | float) -> Value:\n",
            '    def __truediv__(self, other: Value | float) -> Value:\n        return "learner 8.4"\n',
        )
    )
    assert '"learner 8.4"' in learner
    learner = learner.replace("        self.data = data\n", "        self.data = -data\n", 1)  # 2.1, the learner's
    helper = "    def _mine(self):\n        return 'a helper'\n\n"
    learner = learner.replace("    def __repr__(self)", helper + "    def __repr__(self)")
    impl = Implementation(_setup("2.3", "engine", learner))
    a = impl.Value(2.0)
    with pytest.raises(NotImplementedError, match=r"task 8\.4"):
        a / 2
    assert a._mine() == "a helper"
    assert a.data == 2.0 and (a + 1).data == 3.0  # the reference's __init__ under the learner's __add__


def _written_with(task_id: str) -> set[str]:
    """The tasks a learner has written along with `task_id`'s code: those sharing a region with it (6.1 and 6.2),
    and the prerequisites sharing a function with it (7.1's `__add__` holds 2.3's forward pass)."""
    mine = [r for r in regions.all_regions() if task_id in r.tasks]
    owners = {r.owner for r in mine}
    shared = {t for r in mine for t in r.tasks}
    needed = registry.prerequisites(task_id)
    return shared | {t for r in regions.all_regions() if r.owner in owners for t in r.tasks if t in needed}


def test_every_task_passes_over_its_prerequisites_alone(tmp_path):
    """Stubs everywhere except one task's code: that task gets full marks (the registry names all it needs).

    The learner's file holds that task's code and what is written with it (`_written_with`). A task's worker
    loads the learner's file of that task alone, so one submission can hold one solved task per file: the
    course takes as many runs as its fullest file has tasks.
    """
    by_file = defaultdict(list)
    for task_id in GRADED:
        by_file[regions.module_of(task_id)].append(task_id)
    rounds = max(len(tasks) for tasks in by_file.values())
    short: dict[str, list[str]] = {}  # task -> what its checks said where they did not pass
    for k in range(rounds):
        solved = frozenset(tasks[k] for tasks in by_file.values() if k < len(tasks))
        folder = tmp_path / f"round{k}"
        folder.mkdir()
        kept = set(solved).union(*map(_written_with, solved))
        for name, text in stubs.expected_files(keep=frozenset(kept)).items():
            (folder / name).write_text(text)
        run = grade(folder, "-p", "no:cacheprovider", tmp_path=tmp_path)
        by_task = defaultdict(list)
        for check in run.results["extra_data"]["results"]:
            by_task[check["task"]].append(check)
        for task_id in solved:
            checks = by_task[task_id]
            missed = [f"{c['status']}: {c['message'][:200]}" for c in checks if c["status"] != "passed"]
            short[task_id] = missed if checks else ["no check ran"]
    if any(short.values()):
        pytest.fail("\n".join(f"{t}: {sorted(set(why))}" for t, why in short.items() if why), pytrace=False)
