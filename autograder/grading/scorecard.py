"""Write the results for people and machines: the terminal scorecard, the next step, Gradescope's results.json."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from autograder.course import registry
from autograder.grading import caches
from autograder.grading.results import Results, Status, TaskResult, TestResult
from autograder.kit.checks import HINT
from autograder.worker.wire import Level

CARD_WIDTH = 72  # the scorecard's columns: what the course wrote (a check's title, a hint) is wrapped to them

# in a student edition each task runs over the learner's own code for the tasks it needs (`blame.py`)
EDITION_WAITS = (
    "In this edition each task runs over your own code for the tasks it needs:\n"
    "a task's points come when the tasks it waits for pass. Fix the task Next: names first."
)


def hint_of(r: TestResult) -> str:
    """The hint for how a check failed: its failure's own (`CheckFailed(hint=...)`), else its marker's."""
    return next((line[len(HINT) :] for line in r.message.splitlines() if line.startswith(HINT)), "") or r.hint


def wrapped(line: str, indent: int, width: int = CARD_WIDTH) -> list[str]:
    """Prose the course wrote, broken at spaces into lines of `width` at most, the later ones `indent` spaces in.

    What a check reports (values, code, the learner's messages) is never wrapped: it is copied whole."""
    return textwrap.wrap(line, width, subsequent_indent=" " * indent, break_long_words=False, break_on_hyphens=False)


def heading(r: TestResult) -> list[str]:
    """A check's line under "What went wrong" (and atop an editor's failure): task, title, status and points."""
    task = f"{r.status.symbol} task {r.task} · "
    return wrapped(f"{task}{r.description} ({r.status}, {r.points} pt)", len(task))


def message_lines(r: TestResult) -> list[str]:
    """A check's message, less its own hint line (shown as the hint, once)."""
    return [line for line in r.message.splitlines() if not line.startswith(HINT)]


def page_link(task_id: str) -> str:
    return f"{registry.LESSON_OF[task_id].page}#{registry.task(task_id).anchor}"


def grade_command(task_id: str, impl_option: str = "") -> str:
    return f"pytest autograder --task {task_id}{impl_option}"


def next_lesson(tasks: list[TaskResult]) -> registry.Lesson | None:
    """The first graded lesson after the last one these tasks come from (bonus lessons are never "next")."""
    last = max((t.task.lesson for t in tasks), default=0)
    return next(
        (lesson for lesson in registry.LESSONS if lesson.tasks and not lesson.bonus and lesson.number > last), None
    )


def not_graded_here(tasks: list[TaskResult]) -> list[registry.Task]:
    """The graded tasks of the run's lessons that this run did not grade (`--task 1.1` leaves 1.2 and 1.3)."""
    ran = {t.task.id for t in tasks}
    lessons = sorted({t.task.lesson for t in tasks})
    return [task for n in lessons for task in registry.lesson(n).tasks if task.id not in ran and not task.bonus]


def scorecard(
    tasks: list[TaskResult],
    graded: str,
    impl_option: str = "",
    max_failures: int = 12,
    isolation: str = "",
    hide_hidden: bool = False,
    fresh_inputs: int | None = None,
    self_checked: bool = True,
    spawned_because: str = "",
    edition: bool = False,
    platform: str | None = None,
) -> str:
    """The text printed at the end of a grading run."""
    width = CARD_WIDTH
    out = [f" Scorecard: {graded} ".center(width, "=")]
    if any(t.task.runs_whole and t.status == Status.PASSED for t in tasks):
        out.append("★ Your engine, whole, reproduces 24.7041 / 138.8338 / 645.5773, matches PyTorch and trains.")
    for lesson in registry.LESSONS:
        mine = [t for t in tasks if t.task.lesson == lesson.number]
        if not mine:
            continue
        earned, points = sum(t.earned for t in mine), sum(t.points for t in mine)
        title = f"{lesson.title} (bonus)" if lesson.bonus else lesson.title
        out.append(f"Lesson {lesson.number:>2} · {title:<52}{earned:>4}/{points:<3}")
        for t in mine:
            out.append(f"  {t.status.symbol} {t.task.id:<5}{t.task.title:<40}{t.status:>12}{t.earned:>5}/{t.points:<3}")
            out.extend(f"         {line}" for line in not_run(t))  # every check that did not run says why
    graded_tasks = [t for t in tasks if not t.task.bonus]
    bonus_tasks = [t for t in tasks if t.task.bonus]  # scored apart: never part of Total or of full marks
    out.append("-" * width)
    if graded_tasks or not bonus_tasks:
        out.append(f"{'Total':<62}{sum(t.earned for t in graded_tasks):>4}/{sum(t.points for t in graded_tasks):<3}")
    if bonus_tasks:
        out.append(f"{'Bonus':<62}{sum(t.earned for t in bonus_tasks):>4}/{sum(t.points for t in bonus_tasks):<3}")
    out.extend(machine_lines(tasks, self_checked, spawned_because))
    if fresh_inputs is not None:
        out.append(f"Each visible check was also asked on numbers drawn for this run (seed {fresh_inputs}).")
    if edition and any(t.waits_for for t in tasks):
        out.append(EDITION_WAITS)
    if isolation and not platform:  # a platform's container is the sandbox: its instructor reads `platform_note`
        out.append(f"Your code ran in separate processes; isolation level: {isolation}")
        if Level(isolation).feedback_only:  # what this level cannot promise (guides/instructors/honest-grading.md)
            out.append("This is feedback: at this level your code could change files of the grader's, so the")
            out.append("grade that counts comes from a sandboxed run (Gradescope, or a batch run as root).")
    out.append("")
    out.extend(next_step(tasks, impl_option, hide_hidden))
    failures = [r for t in tasks for r in t.tests if shows_failure(r, hide_hidden)]
    if failures:
        tasks_by_id = {t.task.id: t for t in tasks}
        out.append("")
        out.append("What went wrong".center(width, "-"))
        for r in failures[:max_failures]:
            out.extend(heading(r))
            out.extend("    " + line for line in failure(r))
            skipped = [s for s in tasks_by_id[r.task].tests if s.skipped] if r.status == Status.TIMED_OUT else []
            if skipped:  # one line for every check the timeout skipped, not one entry each
                points = sum(s.points for s in skipped)
                out.append(f"    then:     {len(skipped)} later checks of task {r.task} skipped ({points} pt)")
        if len(failures) > max_failures:
            out.append(f"… and {len(failures) - max_failures} more; grade one task at a time with --task.")
    return "\n".join(line.rstrip() for line in out)


def next_step(
    tasks: list[TaskResult], impl_option: str = "", hide_hidden: bool = False, lesson_command: str | None = None
) -> list[str]:
    """Where the run leaves the learner, and the one thing to do next: the scorecard's, watch mode's, a platform's.

    The next task is the first graded one that is not done (a bonus task only once every graded task passes), or
    the task it waits for; never one that passes nor one this machine could not grade. Watch mode grades on every
    save, so it names no command to grade a task, and `lesson_command` is its own for the next lesson.
    """
    watching = lesson_command is not None
    lesson_command = lesson_command or "pytest autograder --lesson {number}{impl}"
    graded_tasks = [t for t in tasks if not t.task.bonus]
    bonus_tasks = [t for t in tasks if t.task.bonus]  # scored apart: never part of Total or of full marks
    todo = next((t for t in graded_tasks if t.status not in (Status.PASSED, Status.VOID)), None) or next(
        (t for t in bonus_tasks if t.status not in (Status.PASSED, Status.VOID)), None
    )
    left = not_graded_here(tasks)
    out = []
    if not tasks:
        out.append("Nothing was graded: no check ran (see the errors above).")
    elif todo is not None and todo.task.bonus and graded_tasks:
        out.append("Every graded task passes. Well done! The bonus tasks are there to go further.")
    elif todo is None and any(t.void_points for t in tasks):
        out.append("Every check that could be graded here passes.")
    elif todo is None and left:
        ids = ", ".join(t.task.id for t in tasks)
        out.append(f"Every task graded here passes ({ids}); the rest of the lesson was not graded in this run.")
    elif todo is None:
        only_bonus = bonus_tasks and not graded_tasks
        out.append("Every bonus task passes. Well done!" if only_bonus else "Every graded task passes. Well done!")
    then_run = "" if watching else ", then run: {}"
    if todo is None and left:
        out.append(f"Next: task {left[0].id} · {left[0].title} (not graded in this run)")
        out.append(f"      read {page_link(left[0].id)}" + then_run.format(grade_command(left[0].id, impl_option)))
    elif todo is None and tasks:
        after = next_lesson(tasks)
        if after:
            out.append(f"Next: lesson {after.number} · {after.title}")
            command = lesson_command.format(number=after.number, impl=impl_option)
            out.append(f"      read {after.page}, then run: {command}")
    elif todo is not None:
        target, why = todo.task, todo.status
        if todo.waits_for:  # the task it is blocked by comes first
            target, why = registry.task(todo.waits_for), f"task {todo.task.id} waits for it"
        out.append(f"Next: {'bonus task' if target.bonus else 'task'} {target.id} · {target.title} ({why})")
        out.append(f"      read {page_link(target.id)}" + then_run.format(grade_command(target.id, impl_option)))
        hint = check_hint(todo, hide_hidden) if target is todo.task else ""
        if hint:  # one check fails: its own hint first, the task's general ones after
            out.extend(wrapped(f"      hint: {hint}", 12))
        stuck = f"      stuck? python -m autograder hint {target.id}"
        if watching:
            out.append(f"{stuck}   alone: {grade_command(target.id, impl_option)}")
        else:
            out.append(f"{stuck} (the task's hints, a level at a time)" if hint else stuck)
    return out


def not_run(task: TaskResult) -> list[str]:
    """Why each check of a task that did not run did not, one line per reason: "3 checks wait for task 5.1 (...)".

    A task none of whose checks ran for one reason gets that reason alone ("waits for task 2.3 (...)"), and a
    task that is simply not started (every check hit its own stub) gets no line: its status says it all.
    """
    reasons: dict[str, int] = {}
    for t in task.tests:
        if t.status == Status.NOT_STARTED and t.waits_for:
            why = f"task {t.waits_for} ({registry.task(t.waits_for).title})"
        elif t.status in (Status.NOT_STARTED, Status.SKIPPED, Status.VOID):
            why = t.status
        else:
            continue
        reasons[why] = reasons.get(why, 0) + 1
    if task.status == Status.NOT_STARTED and set(reasons) == {Status.NOT_STARTED}:
        return []
    lines = []
    for why, n in reasons.items():
        checks = f"{n} check{'s' * (n != 1)}"
        if why == Status.NOT_STARTED:
            lines.append(f"{checks} not started: the stub still raises NotImplementedError")
        elif why == Status.SKIPPED:
            lines.append(f"{checks} skipped: an earlier check of this task timed out")
        elif why == Status.VOID:
            points = f"{task.void_points} pt not counted"
            lines.append(f"{checks} could not be graded here ({points}): see `python -m autograder doctor`")
        elif n == len(task.tests):
            lines.append(f"waits for {why}")
        else:
            lines.append(f"{checks} wait{'s' * (n == 1)} for {why}")
    return lines


# what a student edition's scorecard says where the course's asks the reference again (it has none to ask)
NO_REFERENCE_TO_ASK = [
    "This edition has no reference solution to check the machine with: a red line may be the",
    "machine's. If a check fails that you believe is right, see: python -m autograder doctor",
]


def machine_lines(tasks: list[TaskResult], self_checked: bool, spawned_because: str) -> list[str]:
    """What the machine did to this run: checks it could not grade, workers spawned instead of forked."""
    out = []
    void = sum(t.void_points for t in tasks)
    if void:
        out.append(f"{void} points could not be graded here: the reference solution fails those checks on this")
        out.append("machine too, so they count neither as earned nor as lost. See: python -m autograder doctor")
    if not self_checked and any(t.status.went_wrong for t in tasks):
        out += NO_REFERENCE_TO_ASK
    if spawned_because:
        out.append(f"Workers were spawned, not forked: {spawned_because}.")
    return out


def failure(r: TestResult) -> list[str]:
    """What went wrong in a check, under its heading: the message, the check's hint and the page that teaches it
    (a check the machine could not grade has no hint to give about the code). The scorecard indents it by 4."""
    if not r.counted:
        return message_lines(r)
    hint = wrapped(HINT + hint_of(r), len(HINT), CARD_WIDTH - 4)
    return [*message_lines(r), *hint, f"page:     {page_link(r.task)}"]


def check_lines(r: TestResult) -> list[str]:
    """One check alone, as a notebook's check cell shows it: its heading, and for one that did not pass, why."""
    points = f"{r.points} point{'s' * (r.points != 1)}"
    head = f"{r.status.symbol} task {r.task} · {registry.task(r.task).title}: {r.description}"
    if r.status == Status.PASSED:
        return [f"{head} ({points})"]
    score = "not counted" if not r.counted else f"0 of {points}"
    return [f"{head}: {r.status} ({score})", *("    " + line for line in failure(r))]


def shows_failure(r: TestResult, hide_hidden: bool = False) -> bool:
    """A check listed under "What went wrong": it ran and did not pass (a check a timeout skipped is counted apart)."""
    return r.status not in (Status.PASSED, Status.NOT_STARTED, Status.SKIPPED) and not (hide_hidden and r.hidden)


def check_hint(task: TaskResult, hide_hidden: bool = False) -> str:
    """The hint of the one check of `task` that went wrong (its marker's `hint=`), or "" unless exactly one did."""
    wrong = [r for r in task.tests if shows_failure(r)]
    if len(wrong) != 1 or (hide_hidden and wrong[0].hidden):
        return ""
    return hint_of(wrong[0])


def text(results: Results, hide_hidden: bool = False) -> str:
    """The scorecard of a run."""
    return scorecard(
        results.tasks,
        results.graded,
        results.impl_option,
        isolation=results.isolation,
        hide_hidden=hide_hidden,
        fresh_inputs=results.fresh_inputs,
        self_checked=results.self_checked,
        spawned_because=results.spawned_because,
        edition=results.edition,
        platform=results.platform,
    )


def platform_note(results: Results) -> str:
    """For a platform's instructor (Gradescope's stdout and extra_data, PrairieLearn's job log), never its
    learners: what the isolation level the grader ran at means in the platform's container."""
    level = Level(results.isolation)
    if level.namespaces:
        return f"Isolation level: {level}: each check ran in a sandbox of its own (bubblewrap's namespaces)."
    if level.own_user:
        return (
            f"Isolation level: {level}. The container allows no user namespaces, so each check ran in a process of "
            "a user of its own, which can write none of the grader's files; the container, one per submission, is "
            "the sandbox around them, and these results were written after every such process had ended. "
            "The grade counts."
        )
    return (
        f"Isolation level: {level}. The grader did not run as root, so the learner's code ran as the grader's own "
        "user and could have changed the grader's files: run the grading container as root for a grade that counts."
    )


def task_report(t: TaskResult) -> list[str]:
    """A task's part of a platform's results (Gradescope, PrairieLearn): its points, why checks did not run, each
    check's status, and for each that went wrong its message and hint (a hidden check: its name and status only)."""
    lines = [f"{t.status}: {t.earned}/{t.points} points" + (" (bonus, extra credit)" if t.task.bonus else "")]
    lines.extend(not_run(t))  # why the checks that did not run did not
    for r in t.tests:
        if r.skipped:  # counted once, in the line above
            continue
        lines.append(f"{r.status.symbol} {r.description} ({r.status})")
        if r.status != Status.PASSED and (not r.hidden or not r.counted):
            lines.extend("    " + line for line in message_lines(r))
            if r.status not in (Status.NOT_STARTED, Status.VOID):
                lines.append(f"    hint: {hint_of(r)} ({page_link(r.task)})")
    return lines


def task_tags(t: TaskResult) -> list[str]:
    """Gradescope tags of a task's test: bonus, and checks this machine could not grade (for the instructor)."""
    return ["bonus"] * t.task.bonus + [Status.VOID.value] * (t.void_points > 0)


VALUES = ("inputs:", "expected:", "got:", "printed:", "drawing:")  # the lines of a failure that hold values
WIDTH = 100  # characters of a value's line in watch mode


def explaining(r: TestResult, max_lines: int = 8) -> list[str]:
    """A failure's message for watch mode: every line that explains it (check, note, where) whole, the values cut
    to a line each, then the hint for how it failed."""
    lines = []
    message = message_lines(r)
    for line in message[:max_lines]:
        if line.startswith(VALUES) and len(line) > WIDTH:
            line = line[: WIDTH - 1] + "…"
        lines.append(line)
    if len(message) > max_lines:
        lines.append("…")
    if r.status != Status.NOT_STARTED and r.counted:  # a check the machine could not grade has no hint to give
        lines.append(f"hint:     {hint_of(r)}")
    return lines


def write_json(path: Path, data: dict, indent: int | None = 2) -> None:
    """`data` into `path` as JSON, whole or not at all (`caches.write_whole`), readable by others.

    `indent=None`: on one line, for a file only programs read while it grows (`plugin._save_progress`): Python
    encodes that at C speed, and indented JSON with its pure-Python encoder, several times slower.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    # a lone surrogate, whatever let it through, is written escaped: the results are always written
    text = (json.dumps(data, indent=indent, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace")
    caches.write_whole(path, text, mode=0o644)


def progress(
    results: Results,
    bar_width: int = 40,
    max_failures: int = 8,
    lesson_command: str = "python -m autograder watch --lesson {number}{impl}",
) -> str:
    """Watch mode's short report: tasks and lessons done with a bar, the next task, and what failed."""
    tasks = results.tasks
    graded, bonus = [t for t in tasks if not t.task.bonus], [t for t in tasks if t.task.bonus]
    done = sum(t.status == Status.PASSED for t in graded)
    lessons = sorted({t.task.lesson for t in graded})
    lessons_done = sum(all(t.status == Status.PASSED for t in graded if t.task.lesson == n) for n in lessons)
    filled = round(bar_width * done / len(graded)) if graded else 0
    line = (
        f"Progress [{'#' * filled}{'-' * (bar_width - filled)}] {done}/{len(graded)} graded tasks · "
        f"{lessons_done}/{len(lessons)} lessons · {results.score}/{results.max_score} points"
    )
    if bonus:
        line += f" · bonus, counted apart: {sum(t.status == Status.PASSED for t in bonus)}/{len(bonus)} tasks"
    out = [line]
    out.extend(next_step(tasks, results.impl_option, lesson_command=lesson_command))
    failures = [r for t in tasks for r in t.tests if r.status not in (Status.PASSED, Status.NOT_STARTED)]
    if failures:
        out.append(f"What failed ({len(failures)}):")
        same: dict[str, list] = {}  # one entry per message: a file that does not load fails every check alike
        for r in failures:
            same.setdefault(r.message, []).append(r)
        for group in list(same.values())[:max_failures]:
            r = group[0]
            if len(group) == 1:
                out.append(f"  {r.status.symbol} {r.task} · {r.description} ({r.status})")
            else:
                ids = ", ".join(sorted({g.task for g in group}, key=registry.sort_key))
                out.append(f"  {r.status.symbol} {len(group)} checks of task {ids} ({r.status})")
            out.extend("      " + text for text in explaining(r))
        if len(same) > max_failures:
            out.append(f"  … and {sum(len(g) for g in list(same.values())[max_failures:])} more")
    return "\n".join(line.rstrip() for line in out)
