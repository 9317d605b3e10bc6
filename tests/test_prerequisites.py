"""A task's worker holds the reference of its prerequisites and nothing else of it.

The registry's `prerequisites(task)` are the tasks of the earlier lessons and
the ones `registry.NEEDS` names. These tests prove both halves of that
promise: every task passes over its prerequisites alone (the declaration is
complete, so an honest learner is never charged for a task they have not
reached), and no other task's reference is in reach of the graded code (so a
task cannot pass by calling a sibling's reference: the corpus entries
`calls_its_siblings_in_a_circle` and `derives_by_hand_with_a_later_lessons_backward`
show what that used to allow).
"""

from __future__ import annotations

import textwrap
from collections import defaultdict

import pytest

from autograder.course import regions, registry
from autograder.export import stubs
from autograder.grading.tasks import graded, reference_for
from autograder.worker.loading import Implementation

from .conftest import REPO, grade

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
        "learner": {module: [learner, f"{module}.py"]},
        "reference": reference_for(task_id),
    }


def test_a_sibling_that_is_not_a_prerequisite_is_the_learners_own(monkeypatch):
    impl = Implementation(_setup("1.1", "derivatives", LEARNER_DERIVATIVES))
    assert impl.derivatives.central_difference(None, 0) == "learner 1.2"
    assert impl.derivatives.partial_derivative(None, [0], 0) == "learner 1.3"
    monkeypatch.setitem(registry.NEEDS, "1.1", ("1.2",))  # declared: the reference's, under the learner's code
    reference_for.cache_clear(), graded.cache_clear()
    try:
        impl = Implementation(_setup("1.1", "derivatives", LEARNER_DERIVATIVES))
        assert impl.derivatives.central_difference(lambda x: x * x, 3.0) == pytest.approx(6.0)
        assert impl.derivatives.partial_derivative(None, [0], 0) == "learner 1.3"
    finally:
        reference_for.cache_clear(), graded.cache_clear()


def test_a_value_method_of_a_task_that_is_not_a_prerequisite_is_the_learners_own():
    """Task 2.3 (`__add__`): `__init__` (2.1, named in NEEDS) is the reference's; lesson 8's `__truediv__` is the
    learner's."""
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
    impl = Implementation(_setup("2.3", "engine", learner))
    a = impl.Value(2.0)
    assert a / 2 == "learner 8.4"
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
