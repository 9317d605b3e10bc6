"""The pages' Python blocks, cached: markdown-exec's Python formatter routed through `buildcache.BlockRunner`.

A block whose code, session and sources are unchanged is not run again, so a warm build runs nothing. A page on
which a replayed block printed something else than its kept output is rendered again with that session run afresh
(`render_afresh`). What depends on the grader (a block that names `autograder`) is committed by what it prints:
the grader's sources key the local cache only (`BlockRunner.depends`).
"""

from __future__ import annotations

from pathlib import Path

import buildcache
import grader_runs
from settings import SiteSettings

from autograder.course.regions import has_sources

BUILD = Path(__file__).resolve().parent


def _block_context() -> str:
    """What every block's output depends on besides its own code and its session's earlier code (the same
    on every machine: the key of the committed results)."""
    return buildcache.sha(
        "blocks v1",  # raise it when a change of the runner changes what blocks print
        buildcache.solutions_fingerprint(),
        (BUILD / "pagekit.py").read_text(),
    )


def student_edition(settings: SiteSettings) -> bool:
    """A student edition's site: built in the edition (no solution sources), or for it (`COURSE_EDITION`)."""
    return bool(settings.edition) or not has_sources()


def install_block_runner(settings: SiteSettings, committed: buildcache.Committed) -> buildcache.BlockRunner:
    """Route markdown-exec's Python blocks through a BlockRunner, via markdown-exec's table of formatters."""
    import markdown_exec

    # a block that names the grader (lesson 0 prints its statuses) depends on the grader's sources too: they key
    # this machine's cache, not the committed results (which a grader edit that prints the same leaves alone); a
    # block that asks whether it is built for a student edition (the recap) prints other things there: its
    # committed result is the edition's own (the edition's other blocks print what the course's do)
    grader = {"autograder": lambda: grader_runs.grader_digest(settings)}
    edition = {"COURSE_EDITION": lambda: "student edition" if student_edition(settings) else ""}
    runner = buildcache.BlockRunner(
        _block_context(), grader, machine=buildcache.machine(), committed=committed, variants=edition, settings=settings
    )

    def python(**kwargs):
        return markdown_exec.base_format(language="python", run=runner.run, **kwargs)

    markdown_exec.formatters["python"] = markdown_exec.formatters["py"] = python
    return runner


def render_afresh(runner: buildcache.BlockRunner, page, config, files) -> str:
    """Render the page again with its diverged sessions run afresh, so that all its outputs come from one run.

    A block replayed for its state printed something else than its kept output (a timing, the order of a
    set): the page would show the kept output next to blocks computed from the new run.
    """
    sessions = set(runner.diverged)
    runner.afresh(sessions)
    try:
        page.render(config, files)
    finally:
        runner.fresh -= sessions
    return page.content
