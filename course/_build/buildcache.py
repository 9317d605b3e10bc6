"""What the site build remembers between runs, under `.cache/site/` (gitignored).

The environment variable `COURSE_SITE_CACHE` names another folder; with
`COURSE_SITE_RERUN=1` every block runs and the cache is neither read nor written
(a test builds that way with Unix-only modules hidden, whose output must not be kept).

- `solutions_fingerprint()` and `tree_digest()`: digests of the sources a page's
  output depends on.
- `BlockRunner`: runs the pages' Python blocks for markdown-exec and keeps what
  each block printed, keyed by the block's code, the code of the blocks before
  it in the same session and the fingerprint of `solutions/`. A warm build runs
  no block at all; after an edit only the edited block and the rest of its
  session run again.
"""

from __future__ import annotations

import hashlib
import io
import linecache
import os
import sys
import time
import traceback
import types
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
CACHE = Path(os.environ.get("COURSE_SITE_CACHE") or REPO / ".cache" / "site")
TIMINGS = CACHE / "build-times.json"  # each page's build cost in the last build, for tests/benchmarks/bench_site.py
SHIPPED_FINGERPRINT = "FINGERPRINT"  # a student edition's solutions/ ships bytecode and this file instead
KEEP_DAYS = 14  # entries unused for this long are stale: their code or the solutions changed since


def tree_digest(folder: Path) -> str:
    """sha256 of every .py file under `folder`, with its path, in a fixed order."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*.py")):
        if "__pycache__" not in path.parts:
            digest.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def solutions_fingerprint(folder: Path = REPO / "solutions") -> str:
    """What the reference code is, as a digest: of its sources, or the one shipped where only bytecode is."""
    if any(folder.glob("*.py")):
        return tree_digest(folder)
    shipped = folder / SHIPPED_FINGERPRINT
    if shipped.exists():
        return shipped.read_text().strip()
    raise FileNotFoundError(f"{folder} has neither Python sources nor a {SHIPPED_FINGERPRINT} file")


def _sha(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


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


class BlockRunner:
    """The `run` function of markdown-exec's Python formatter, with a cache in front of it.

    Sessions are global to a build, as in markdown-exec. A block found in the cache is not run, so
    its session's globals miss what it defined: the first block of that session that has to run
    replays the skipped blocks first, silently.
    """

    def __init__(self, context: str, depends: dict[str, Callable[[], str]]):
        self.context = context  # what every block's output depends on: solutions/, pagekit, Python
        self.depends = depends  # a name in a block's code -> the digest of what that name brings in
        self.digests: dict[str, str] = {}
        self.rerun = os.environ.get("COURSE_SITE_RERUN", "") not in ("", "0")
        self.chains: dict[str, str] = {}
        self.globals: dict[str, dict] = {}
        self.skipped: dict[str, list[str]] = {}
        self.ran = 0  # blocks run in this build (not found in the cache)
        self.number = 0  # blocks executed, replays included: names each one's module

    def key(self, code: str, session: str) -> str:
        extra = [self._digest(name) for name in self.depends if name in code]
        key = _sha(self.chains.get(session, self.context) if session else self.context, code, *extra)
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
        cached = None if self.rerun else read(key)
        if cached is not None:
            if session:
                self.skipped.setdefault(session, []).append(code)
            return cached
        from markdown_exec import ExecutionError, code_block

        scope = self.globals.setdefault(session, {}) if session else {}
        try:
            for earlier in self.skipped.pop(session, []):
                self._exec(earlier, scope, session)
            output = self._exec(code, scope, session)
        except Exception as exc:
            tb = exc.__traceback__  # from the block's own frame on: the runner's frames are noise to a writer
            while tb.tb_next and not tb.tb_frame.f_code.co_filename.startswith("<code block"):
                tb = tb.tb_next
            trace = "".join(traceback.format_exception(type(exc), exc, tb))
            raise ExecutionError(code_block("python", trace, **extra)) from exc
        self.ran += 1
        if not self.rerun:
            write(key, output)
        return output

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
