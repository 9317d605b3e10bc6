"""Write the results for people and machines: the terminal scorecard, the next step, Gradescope's results.json."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from autograder.course import registry
from autograder.grading.results import SYMBOL, Results, TaskResult

def page_link(task_id: str) -> str:
    return f"{registry.LESSON_OF[task_id].page}#{registry.task(task_id).anchor}"


def grade_command(task_id: str, impl_option: str = "") -> str:
    return f"pytest autograder --task {task_id}{impl_option}"


def scorecard(tasks: list[TaskResult], graded: str, impl_option: str = "", max_failures: int = 12,
              isolation: str = "", hide_hidden: bool = False) -> str:
    """The text printed at the end of a grading run."""
    width = 72
    out = [f" Scorecard: {graded} ".center(width, "=")]
    for lesson in registry.LESSONS:
        mine = [t for t in tasks if t.task.lesson == lesson.number]
        if not mine:
            continue
        earned, points = sum(t.earned for t in mine), sum(t.points for t in mine)
        out.append(f"Lesson {lesson.number:>2} · {lesson.title:<52}{earned:>4}/{points:<3}")
        for t in mine:
            out.append(f"  {SYMBOL[t.status]} {t.task.id:<5}{t.task.title:<40}{t.status:>12}{t.earned:>5}/{t.points:<3}")
            if t.waits_for:
                out.append(f"         waits for task {t.waits_for} ({registry.task(t.waits_for).title})")
    total, max_total = sum(t.earned for t in tasks), sum(t.points for t in tasks)
    out.append("-" * width)
    out.append(f"{'Total':<62}{total:>4}/{max_total:<3}")
    if isolation:
        out.append(f"Your code ran in separate processes; isolation level: {isolation}")
    out.append("")
    todo = next((t for t in tasks if t.status != "passed"), None)
    if todo is None:
        out.append("Every graded task passes. Well done!")
        after = [lesson for lesson in registry.LESSONS
                 if lesson.tasks and lesson.number > max(t.task.lesson for t in tasks)] if tasks else []
        if after:
            out.append(f"Next: lesson {after[0].number} · {after[0].title}")
            out.append(f"      read {after[0].page}, then run: pytest autograder --lesson {after[0].number}{impl_option}")
    else:
        target, why = todo.task, todo.status
        if todo.waits_for:  # the task it is blocked by comes first
            target, why = registry.task(todo.waits_for), f"task {todo.task.id} waits for it"
        out.append(f"Next: task {target.id} · {target.title} ({why})")
        out.append(f"      read {page_link(target.id)}, then run: {grade_command(target.id, impl_option)}")
        out.append(f"      stuck? python -m autograder hint {target.id}")
    failures = [r for t in tasks for r in t.tests
                if r.status not in ("passed", "not started") and not (hide_hidden and r.hidden)]
    if failures:
        out.append("")
        out.append("What went wrong".center(width, "-"))
        for r in failures[:max_failures]:
            out.append(f"{SYMBOL[r.status]} task {r.task} · {r.description} ({r.status}, {r.points} pt)")
            out.extend("    " + line for line in r.message.splitlines())
            out.append(f"    hint:     {r.hint}")
            out.append(f"    page:     {page_link(r.task)}")
        if len(failures) > max_failures:
            out.append(f"… and {len(failures) - max_failures} more; grade one task at a time with --task.")
    return "\n".join(line.rstrip() for line in out)


def text(results: Results, hide_hidden: bool = False) -> str:
    """The scorecard of a run."""
    return scorecard(results.tasks, results.graded, results.impl_option, isolation=results.isolation,
                     hide_hidden=hide_hidden)


def gradescope_results(results: Results) -> dict:
    """Gradescope's results.json: one entry per task, numbered by task id; hidden checks show name and status only."""
    tasks, isolation = results.tasks, results.isolation
    card = text(results, hide_hidden=True)
    tests = []
    for t in tasks:
        lines = [f"{t.status}: {t.earned}/{t.points} points"]
        for r in t.tests:
            lines.append(f"{SYMBOL[r.status]} {r.description} ({r.status})")
            if r.status != "passed" and not r.hidden:
                lines.extend("    " + line for line in r.message.splitlines())
                if r.status != "not started":
                    lines.append(f"    hint: {r.hint} ({page_link(r.task)})")
        tests.append({
            "name": f"{t.task.id} {t.task.title}",
            "number": t.task.id,
            "score": t.earned,
            "max_score": t.points,
            "status": "passed" if t.status == "passed" else "failed",
            "output": "\n".join(lines),
        })
    return {
        "score": sum(t.earned for t in tasks),
        "max_score": sum(t.points for t in tasks),
        "output": card,
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"status": {t.task.id: t.status for t in tasks}, "isolation": isolation,
                       "results": [{**asdict(r), "message": "" if r.hidden else r.message}
                                   for t in tasks for r in t.tests]},
    }


def write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(path)
