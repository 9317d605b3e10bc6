"""The command line's commands, one module per reader: `learners.py`, `instructors.py`, `maintainers.py`.

Each module holds its commands' handlers and the functions that declare their arguments; `autograder/__main__.py`
names them in `READERS`, builds the parser and is the only module that imports this folder. The handlers keep the
leading underscore they had there (`_reset`, `_build`), so that none is mistaken for the module it imports
(`export.reset`, `export.build.build`). Here is what more than one reader's module needs: the arguments of a
command that takes none (`no_args`), and the check that a package of the instructors' extra is installed
(`missing_instructor_packages`: a learner's install has none, and `nbgrader-extensions on`, a learners' command,
needs one).
"""

from __future__ import annotations

import argparse
import sys

INSTRUCTOR_EXTRA = 'pip install -e ".[instructor]"'


def missing_instructor_packages(command: str, *modules: str) -> bool:
    """Say so when a package of the instructors' extra is not installed (a learner's install has none of them)."""
    import importlib.util

    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        print(
            f"`python -m autograder {command}` needs {' and '.join(missing)}, which the learner's install leaves out; "
            f"install the instructors' extra: {INSTRUCTOR_EXTRA}",
            file=sys.stderr,
        )
    return bool(missing)


def no_args(p: argparse.ArgumentParser) -> None:
    pass
