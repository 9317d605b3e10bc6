"""The course's command line: `python -m autograder COMMAND`.

The commands are grouped by who types them (`READERS`, which `--help` lists section by section):

- learners: `hint`, `watch`, `reset`, `tasks`, `doctor`, `grade` (the one runner, which batch runs for each
  submission) and `nbgrader-extensions off|on`;
- instructors: `export gradescope|prairielearn|nbgrader|student-edition|classroom`, `batch`, `class-report`,
  and `run gradescope|prairielearn`, what an exported bundle runs in the platform's container;
- maintainers: `dev build|sync|notebooks`, which regenerate what is made from the single source, and `dev check`,
  which says where the course's data (`autograder/course/data/`) and the markers, checks, pages and docstrings it
  names disagree, or what they leave out.

A command that needs the reference (`solutions/`), which a student edition does not ship, says so
(`Command.needs_reference`): the edition's `--help` lists it nowhere and its parser does not have it, so a class
is never shown a command that cannot work in its copy (the maintainers' commands and the exports, all of them).

The flat names the commands had before (`build`, `check-course`, `gradescope`, `gradescope-run`,
`student-edition`...) still work, so that nothing written with them breaks (a bundle already on Gradescope, a
script, an old page), but `--help` no longer lists them (`Command.old`).

This module lists the commands and parses them; each command's handler and its arguments live in
`autograder/commands/`, one module per reader (`learners.py`, `instructors.py`, `maintainers.py`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass

from autograder.commands import instructors, learners, maintainers, no_args

# ------------------------------------------------------------------ the commands, grouped by who types them


@dataclass(frozen=True)
class Command:
    """One command as its reader types it (`hint`, `export gradescope`, `dev build`), and what it does.

    `old` is the flat name it had before the commands were grouped by reader: still accepted, never listed.
    `needs_reference`: it reads `solutions/`, so a student edition (which has none) leaves it out."""

    name: str
    summary: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    old: str = ""
    needs_reference: bool = False


READERS: dict[str, tuple[Command, ...]] = {
    "learners": (
        Command("hint", "print a task's hints, one more level on each call", learners._hint_args, learners._hint),
        Command(
            "watch", "grade, then re-grade each file you save (Ctrl-C to stop)", learners._watch_args, learners._watch
        ),
        Command(
            "reset",
            "start a task over: put its stub back (your version is saved beside it)",
            learners._reset_args,
            learners._reset,
        ),
        Command("tasks", "list every task, its page and the command that grades it", no_args, learners._tasks),
        Command(
            "doctor",
            "check what grading needs on this machine, and say how to fix what is not",
            no_args,
            learners._doctor,
        ),
        Command(
            "grade", "grade a folder and print the scorecard (what batch runs)", learners._grade_args, learners._grade
        ),
        Command(
            "nbgrader-extensions",
            "nbgrader's Jupyter menus: off (learners), on (instructors)",
            learners._nbgrader_extensions_args,
            learners._nbgrader_extensions,
        ),
    ),
    "instructors": (
        Command(
            "export gradescope",
            "build the Gradescope autograder bundle (a zip)",
            instructors._gradescope_args,
            instructors._gradescope,
            old="gradescope",
            needs_reference=True,
        ),
        Command(
            "export prairielearn",
            "write PrairieLearn's grader, grading image and example question",
            instructors._prairielearn_args,
            instructors._prairielearn,
            old="prairielearn",
            needs_reference=True,
        ),
        Command(
            "export nbgrader",
            "write an nbgrader course: one master notebook per lesson",
            instructors._nbgrader_args,
            instructors._nbgrader,
            old="nbgrader",
            needs_reference=True,
        ),
        Command(
            "export student-edition",
            "copy the course for a class: no solution sources, no hidden checks",
            instructors._student_edition_args,
            instructors._student_edition,
            old="student-edition",
            needs_reference=True,
        ),
        Command(
            "export classroom",
            "write the learners' GitHub Classroom workflow (.github/classroom/)",
            instructors._classroom_args,
            instructors._classroom,
            old="classroom",
        ),
        Command(
            "batch", "grade a folder of submissions into a CSV gradebook", instructors._batch_args, instructors._batch
        ),
        Command(
            "class-report",
            "what the class got wrong: an HTML page and a CSV from results files",
            instructors._class_report_args,
            instructors._class_report,
        ),
        Command(
            "run gradescope",
            "grade the submission in Gradescope's container (its bundle runs this)",
            instructors._gradescope_run_args,
            instructors._gradescope_run,
            old="gradescope-run",
            needs_reference=True,
        ),
        Command(
            "run prairielearn",
            "grade the submission in PrairieLearn's container (its grader runs this)",
            instructors._prairielearn_run_args,
            instructors._prairielearn_run,
            old="prairielearn-run",
            needs_reference=True,
        ),
    ),
    "maintainers": (
        Command(
            "dev build",
            "regenerate every generated file (`--check`: only compare, as CI does)",
            maintainers._build_args,
            maintainers._build,
            old="build",
            needs_reference=True,
        ),
        Command(
            "dev check",
            "check the course's data against its markers, checks, pages and docstrings",
            no_args,
            maintainers._check_course,
            old="check-course",
            needs_reference=True,
        ),
        Command(
            "dev sync",
            "regenerate exercises/ from solutions/ (part of dev build)",
            maintainers._sync_args,
            maintainers._sync,
            old="sync",
            needs_reference=True,
        ),
        Command(
            "dev notebooks",
            "regenerate exercises/notebooks/ (part of dev build)",
            maintainers._notebooks_args,
            maintainers._notebooks,
            old="notebooks",
            needs_reference=True,
        ),
    ),
}

GROUPS = {  # a command of two words is a verb of its group: (what the group's --help says, what its verb names)
    # the verbs follow in brackets, those the parser lists: an edition's `export --help` names Classroom's alone
    "export": ("write what a class runs elsewhere", "TARGET"),
    "run": ("grade one submission inside a platform's container: what an exported bundle runs", "PLATFORM"),
    "dev": (
        "the maintainers' commands: regenerate what is made from the single source, check the course's data",
        "COMMAND",
    ),
}


def in_edition() -> bool:
    """A student edition: no reference (`solutions/`) to run the commands that need it."""
    from autograder.course.regions import has_sources

    return not has_sources()


def commands(edition: bool = False) -> list[Command]:
    """Every command, learners' first, then instructors', then maintainers' (in an edition: those it can run)."""
    return [command for group in READERS.values() for command in group if not (edition and command.needs_reference)]


class _Parser(argparse.ArgumentParser):
    """argparse's parser, except that a mistyped command is answered with the commands --help lists only."""

    def _check_value(self, action, value):
        if isinstance(action, argparse._SubParsersAction) and value not in action.choices:
            shown = [name for name in action.choices if name in getattr(action, "listed", action.choices)]
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from {', '.join(shown)})")
        super()._check_value(action, value)


def _listing(edition: bool) -> str:
    """The commands as --help lists them, one section per reader (the old flat names are accepted, not listed)."""
    width = max(len(c.name) for c in commands()) + 2
    sections = ["Grading itself is `pytest autograder` (--lesson N, --task L.N). The course's other commands:"]
    for reader, group in READERS.items():
        group = [c for c in group if c in commands(edition)]
        if group:  # an edition has no maintainers' section
            sections.append("\n".join([f"for {reader}:"] + [f"  {c.name:<{width}}{c.summary}" for c in group]))
    sections.append("`python -m autograder COMMAND --help` shows a command's options.")
    return "\n\n".join(sections)


def make_parser(edition: bool | None = None) -> argparse.ArgumentParser:
    """The command line; `edition` (a student edition: by default, whether `solutions/` is missing) leaves out the
    commands that need the reference."""
    edition = in_edition() if edition is None else edition
    parser = _Parser(
        prog="python -m autograder",
        usage="%(prog)s COMMAND [options]",
        description=__doc__.splitlines()[0] + "\n\n" + _listing(edition),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    top = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", help=argparse.SUPPRESS, prog=parser.prog
    )
    top.listed = []
    groups: dict[str, argparse._SubParsersAction] = {}
    for command in commands(edition):
        group, _, verb = command.name.rpartition(" ")
        if group and group not in groups:
            about, metavar = GROUPS[group]
            verbs = [c.name.rpartition(" ")[2] for c in commands(edition) if c.name.startswith(group + " ")]
            sub = top.add_parser(group, description=f"{about} ({', '.join(verbs)})")
            groups[group] = sub.add_subparsers(dest="verb", required=True, metavar=metavar, prog=sub.prog)
            groups[group].listed = []
            top.listed.append(group)
        into = groups[group] if group else top
        p = into.add_parser(verb, help=command.summary, description=command.summary)
        into.listed.append(verb)
        command.arguments(p)
        p.set_defaults(run=command.run)
        if command.old:  # the name it had before: works as ever, listed nowhere
            p = top.add_parser(command.old, description=f"{command.summary} (now: `{command.name}`)")
            command.arguments(p)
            p.set_defaults(run=command.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = make_parser().parse_args(argv)
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
