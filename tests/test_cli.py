"""The command line, grouped by reader: learners' verbs at the top, instructors' and maintainers' in groups of
their own (`export ...`, `batch`, `class-report`, `run ...`; `dev ...`), and the old flat names still working,
listed nowhere, and printed nowhere the project writes a command for someone to type."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from autograder.__main__ import READERS, commands, make_parser

from .conftest import REPO

# the fewest arguments each command accepts, as its reader types them after its name
ARGUMENTS = {
    "hint": ["1.1"],
    "reset": ["1.1"],
    "nbgrader-extensions": ["off"],
    "export nbgrader": ["--out", "x"],
    "export student-edition": ["--out", "x"],
    "batch": ["submissions"],
    "class-report": ["grades.results"],
}
OLD = {c.old: c for c in commands() if c.old}


def autograder(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def listed(help_text: str) -> dict[str, list[str]]:
    """The commands `--help` lists, section by section: {"learners": ["hint", ...], ...}."""
    sections, section = {}, None
    for line in help_text.splitlines():
        if re.fullmatch(r"for (\w+):", line):
            section = sections.setdefault(line[4:-1], [])
        elif section is not None and line.startswith("  ") and line.strip():
            section.append(re.split(r"\s{2,}", line.strip())[0])
        else:
            section = None
    return sections


def test_help_lists_the_commands_by_reader_learners_first():
    sections = listed(autograder("--help").stdout)
    assert list(sections) == ["learners", "instructors", "maintainers"]
    assert sections == {reader: [c.name for c in group] for reader, group in READERS.items()}
    assert {"hint", "watch", "reset", "doctor", "tasks"} <= set(sections["learners"])
    assert {f"export {t}" for t in ("gradescope", "prairielearn", "nbgrader", "student-edition", "classroom")} | {
        "batch",
        "class-report",
    } <= set(sections["instructors"])
    assert all(name.startswith("dev ") for name in sections["maintainers"]) and "dev build" in sections["maintainers"]


@pytest.mark.parametrize("command", commands(), ids=lambda c: c.name)
def test_each_command_answers_to_its_grouped_name(command):
    args = make_parser().parse_args([*command.name.split(), *ARGUMENTS.get(command.name, [])])
    assert args.run is command.run


@pytest.mark.parametrize("old", sorted(OLD))
def test_an_old_name_still_runs_the_same_command_with_the_same_options(old):
    command = OLD[old]
    given = ARGUMENTS.get(command.name, [])
    by_old, by_new = make_parser().parse_args([old, *given]), make_parser().parse_args([*command.name.split(), *given])
    assert by_old.run is command.run
    assert {k: v for k, v in vars(by_old).items() if k not in ("command", "verb")} == {
        k: v for k, v in vars(by_new).items() if k not in ("command", "verb")
    }


def test_old_names_are_listed_nowhere():
    """Not in --help, not in a group's --help, not among the choices a mistyped command is offered."""
    assert set(OLD) == {
        "build",
        "sync",
        "notebooks",
        "classroom",
        "nbgrader",
        "gradescope",
        "gradescope-run",
        "prairielearn",
        "prairielearn-run",
        "student-edition",
        "check-course",
    }
    shown = [name for names in listed(autograder("--help").stdout).values() for name in names]
    assert not set(OLD) & set(shown)
    for group in ("export", "run", "dev"):
        text = autograder(group, "--help").stdout
        verbs = re.findall(r"^    (\S+)", text, re.M)  # argparse lists a group's commands indented by four
        assert verbs == [c.name.split()[1] for c in commands() if c.name.startswith(f"{group} ")], text
    mistyped = autograder("frobnicate")
    assert mistyped.returncode == 2 and "invalid choice: 'frobnicate'" in mistyped.stderr
    offered = mistyped.stderr.split("choose from ")[1]
    assert not [old for old in OLD if re.search(rf"(^|, )'?{re.escape(old)}'?(,|\)|$)", offered.strip())], offered
    assert "dev" in offered and "export" in offered and "hint" in offered


def test_old_and_new_names_do_the_same_work():
    """What a maintainer's script or an old page runs: the same output, by either name."""
    for new, old in (
        (["dev", "sync", "--check"], ["sync", "--check"]),
        (["export", "classroom", "--check"], ["classroom", "--check"]),
    ):
        by_new, by_old = autograder(*new), autograder(*old)
        assert by_new.returncode == by_old.returncode == 0, by_new.stderr + by_old.stderr
        assert by_new.stdout == by_old.stdout


# `python -m autograder OLD` written for someone to type or for a script to run
OLD_COMMAND = re.compile(
    r"-m autograder (" + "|".join(map(re.escape, sorted(OLD, key=len, reverse=True))) + r")\b(?!-)"
)
# Left as they are, because the old names run as ever: what the reference's own files say (the task list's heading,
# solutions/__init__.py; exercises/ is generated from them): a change there changes the reference's fingerprint,
# which keys every page's committed results; and those results (course/_build/executed/), rewritten as they change.
KEPT = "Tasks in this file (the list is written by `python -m autograder build`):"
LEFT = ("solutions/", "exercises/", "course/_build/executed/")


def test_nothing_tells_anyone_to_type_an_old_name():
    """The README, CONTRIBUTING, the site's pages, the grader's messages and docstrings, the scripts it writes into
    a Gradescope or PrairieLearn bundle, the Classroom template, CI and the tests use the grouped names."""
    tracked = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout.split()
    found = []
    for name in tracked:
        if not name.endswith((".py", ".md", ".yml", ".sh", ".toml", ".ipynb", ".json")) and name != ".ci/run":
            continue
        if name == "tests/test_cli.py" or name.startswith(LEFT) or not (REPO / name).is_file():
            continue
        text = (REPO / name).read_text(encoding="utf-8").replace(KEPT, "")
        found += [f"{name}: {m[0]}" for m in OLD_COMMAND.finditer(text)]
    assert not found, "\n".join(found)


def test_a_student_edition_has_no_command_that_needs_the_reference():
    """A student edition ships no `solutions/`: its --help lists, and its parser has, only the commands that work
    without it (no maintainers' section, no export of a bundle, an edition or nbgrader's master notebooks)."""
    shown = listed(make_parser(edition=True).format_help())
    assert list(shown) == ["learners", "instructors"]
    kept = [c.name for c in commands(edition=True)]
    assert shown["learners"] + shown["instructors"] == kept
    assert not [c for c in commands(edition=True) if c.needs_reference]
    assert {"hint", "watch", "reset", "tasks", "grade", "batch", "class-report"} <= set(kept)
    assert not {"dev build", "dev sync", "export student-edition", "export gradescope", "run gradescope"} & set(kept)
    for gone in (["dev", "sync"], ["export", "student-edition", "--out", "x"], ["sync"], ["student-edition"]):
        with pytest.raises(SystemExit):
            make_parser(edition=True).parse_args(gone)
    assert make_parser(edition=False).parse_args(["dev", "sync"]).run  # the full course has them all
