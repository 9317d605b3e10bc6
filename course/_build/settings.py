"""The site build's settings: the environment variables that steer it, read once into `SiteSettings`.

The variables stay the interface: `python -m autograder dev build`, `export student-edition` and the tests set
them for a build (`autograder/export/build.py`, `autograder/export/edition.py`, `tests/test_site.py`, ...).
`hooks.on_config` reads them once per build (`SiteSettings.from_environment()`) and hands that object to the
modules that need it; nothing else under course/_build/ reads the environment.

One variable is not here: `COURSE_SITE_CACHE`, another folder for the local cache, is read with the grader's own
caches (`autograder.grading.caches.SITE`), which owns that folder.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


def _flag(environ: Mapping[str, str], name: str) -> bool:
    """A variable that is set to anything but "" or "0"."""
    return environ.get(name, "") not in ("", "0")


@dataclass(frozen=True)
class SiteSettings:
    rerun: bool = False
    """`COURSE_SITE_RERUN=1`: every block and grader run runs, and nothing is read or written (a test builds that
    way with Unix-only modules hidden, whose output must not be kept)."""

    committed: bool = True
    """`COURSE_SITE_COMMITTED=0` makes it False: the committed results (course/_build/executed/) are not read (a
    build from nothing, or from what this machine ran: the site test compares what it gets with them)."""

    check: bool = False
    """`COURSE_SITE_CHECK=1`: nothing runs; a result missing from the committed folder is reported
    (`python -m autograder dev build --check`)."""

    record: str = ""
    """`COURSE_SITE_RECORD=FILE`: at the end of the build, write to FILE what the committed folder should hold
    (`buildcache.Committed.record`), for `python -m autograder dev build`."""

    edition: str = ""
    """`COURSE_EDITION=FOLDER`: the site is built for the student edition in FOLDER (`export student-edition`):
    lesson 0's grader runs take that edition's grader, and a block that names `COURSE_EDITION` (the recap) has
    its own committed result. The pages' blocks read the variable themselves."""

    solutions: str = ""
    """`COURSE_SITE_SOLUTIONS=FOLDER`: the reference to plant lesson 0's deliberate bug in where the course has none
    of its own: `export student-edition` builds the edition's site with the course's `solutions/`, so that the
    edition's lesson 0 shows its own grader's answer to that bug (kept with the pages' results it ships)."""

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> SiteSettings:
        environ = os.environ if environ is None else environ
        return cls(
            rerun=_flag(environ, "COURSE_SITE_RERUN"),
            committed=environ.get("COURSE_SITE_COMMITTED", "1") != "0",
            check=_flag(environ, "COURSE_SITE_CHECK"),
            record=environ.get("COURSE_SITE_RECORD", ""),
            edition=environ.get("COURSE_EDITION", ""),
            solutions=environ.get("COURSE_SITE_SOLUTIONS", ""),
        )

    @property
    def read_committed(self) -> bool:
        """Whether the build reads the committed results at all."""
        return self.committed and not self.rerun

    @property
    def recording(self) -> bool:
        """A build for `python -m autograder dev build`: what depends on the grader is run (or read from this
        machine's cache), not read from the committed results, so that they are rewritten where what it prints
        changed."""
        return bool(self.record) and not self.check
