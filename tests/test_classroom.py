"""The learners' GitHub Classroom workflow: a current template, one step per lesson, never run by this repository."""

from __future__ import annotations

import subprocess
import sys

import yaml

from autograder.course import registry

from .conftest import REPO

TEMPLATE = REPO / ".github/classroom/classroom.yml"


def test_the_course_repository_does_not_run_the_learners_workflow():
    workflows = sorted(p.name for p in (REPO / ".github/workflows").glob("*.yml"))
    assert "classroom.yml" not in workflows
    assert all("autograding" not in (REPO / ".github/workflows" / name).read_text() for name in workflows)


def test_the_committed_template_is_up_to_date():
    proc = subprocess.run(
        [sys.executable, "-m", "autograder", "export", "classroom", "--check"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_one_step_per_lesson_with_its_points(reference_run):
    steps = yaml.safe_load(TEMPLATE.read_text())["jobs"]["run-autograding-tests"]["steps"]
    graders = [s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-command-grader")]
    # Classroom has no extra credit: a bonus lesson gets no step
    graded_lessons = [lesson for lesson in registry.LESSONS if lesson.tasks and not lesson.bonus]
    assert [s["with"]["command"] for s in graders] == [
        f"pytest autograder --lesson {lesson.number}" for lesson in graded_lessons
    ]
    per_lesson = {}
    for task_id, (_, points) in reference_run.score_by_task.items():
        per_lesson[registry.task(task_id).lesson] = per_lesson.get(registry.task(task_id).lesson, 0) + points
    assert [s["with"]["max-score"] for s in graders] == [per_lesson[lesson.number] for lesson in graded_lessons]
    reporter = steps[-1]
    assert reporter["with"]["runners"].split(",") == [s["id"] for s in graders]
    assert set(reporter["env"]) == {f"{s['id'].upper()}_RESULTS" for s in graders}
