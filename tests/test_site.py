"""The course site, opened page by page in a real headless browser.

Builds the site once (`mkdocs build --strict` into a temporary folder), serves
it on 127.0.0.1, and opens every page in Debian's Chromium driven by
Playwright, checking what a learner would see: the maths typeset as MathML,
every figure drawn, the task headings, hints and commands, the syllabus's
numbers, the zoom of a figure, the search, no console error, and no request
to any host but 127.0.0.1. Every page, on a 390 px phone and a 1280 px
desktop, light and dark, in one pass each: what fits, axe-core's WCAG 2.2 A
and AA rules, the contrast of every text, a focus ring on every control, no
figure text below 9 px, no table that scrolls sideways.

Chromium is Debian's package (`apt-get install -y chromium`), never a browser
downloaded by `playwright install`. Without it the browser tests are skipped,
unless the environment variable CI is set: then they fail. axe-core comes from
the npm registry at the version and hash of `tests/axe/package-lock.json`
(`npm ci`, into `.cache/axe-core`); without npm its test is skipped, unless CI
is set.
"""

from __future__ import annotations

import functools
import http.server
import json
import logging
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from autograder.course import registry

REPO = Path(__file__).resolve().parent.parent
COURSE = REPO / "course"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
UNFINISHED = "This page is being written"  # the note of a stub page: exempt from the content checks

# Every number of the syllabus, as the page prints it (the code on the page computes each one).
NUMBERS: dict[int, list[str]] = {
    1: [
        "f(3.0) = 20.0",
        "f on 40 points from -5.0 to 4.75, step 0.25",
        "(f(x + h) - f(x)) / h = 14.00000009",
        "exact 6x - 4          = 14.0",
        "x = 0.6666666666666666",
        "slope ≈ 0.000000",
        "slope ≈ -22.000000",
        "d = 4.0",
        "∂d/∂a ≈ -3.000000",
        "∂d/∂b ≈ 2.000000",
        "∂d/∂c ≈ 1.000000",
    ],
    2: [
        "Value(data=2.0)",
        "d = Value(data=4.0)",
        "spelled out: Value(data=4.0)",
        "Value(data=-6.0)",
        "made by '+'",
        "made by '*'",
        "a + 1 = Value(data=3.0)",
    ],
    3: [
        "a = 2.0",
        "b = -3.0",
        "c = 10.0",
        "e = -6.0",
        "d = 4.0",
        "f = -2.0",
        "L = -8.0",
        "7 nodes",
        "6 edges",
        "data -8.0000 | grad 0.0000",
    ],
    4: [
        "dL/dL = 1.0",
        "dL/df = 4.0",
        "dL/dd = -2.0",
        "dL/dc = -2.0",
        "dL/de = -2.0",
        "dL/da = 6.0",
        "dL/db = -4.0",
        "nudged: 6.0000000000",
        "nudged: -3.9999999999",
        "nudged: -1.9999999999",
        "nudged: 3.9999999999",
        "same as by hand: True",
        "a: 2.06",
        "b: -3.04",
        "c: 9.98",
        "f: -1.96",
        "L before: -8.0   L after one step: -7.286496",
        "predicted rise: 0.72",
    ],
    5: [
        "d car / d walker  = 8.0 = 2 × 4",
        "n = 0.8813735870195432",
        "o = tanh(n) = 0.7071",
        "do/dn = 1 - o² = 0.4999999999999998, that is 0.5",
        "y.grad = 6.0",
        "x1: grad -1.5",
        "w1: grad  1.0",
        "x2: grad  0.5",
        "w2: grad  0.0",
        "b: grad  0.5",
        "x1*w1: grad  0.5",
        "x2*w2: grad  0.5",
        "x1*w1 + x2*w2: grad  0.5",
    ],
    6: [
        "{'a': 0.0, 'b': 0.0, 'c': 0.0, 'e': 0.0, 'd': -2.0, 'f': 4.0, 'L': 1.0}",
        "{'a': 6.0, 'b': -4.0, 'c': -2.0, 'e': -2.0, 'd': -2.0, 'f': 4.0, 'L': 1.0}",
        "x1: -1.5  w1: 1.0  x2: 0.5  w2: 0.0  b: 0.5",
        "recursion limit: 1000",
        "in a fresh thread: RecursionError from",
        "MLP(2, [16, 16, 1]): 337 parameters, 69018 nodes: fine",
        "MLP(2, [32, 32, 1]): 1185 parameters, 241162 nodes: RecursionError",
        "limit 10,000, chain of 1,500: fine",
        "limit 10,000, chain of 15,000: RecursionError",
        "recursive search: RecursionError",
        "iterative backward(): fine",
        "grad of x0, 100,000 operations back: 1.0",
    ],
    7: [
        "b = 6.0   a.grad = 2.0",
        "a.grad = 1.0   (should be 2.0)",
        "Value: d(a·a)/da = 6.0",
        "d = -6.0, e = 1.0, f = -6.0",
        "df/da = -3.0   df/db = -8.0",
        "after two backward():  a.grad = 6.0   b.grad = -4.0",
    ],
    8: [
        "1 + a = Value(data=4.0)",
        "2 * a = Value(data=6.0)",
        "TypeError: Value ** takes an int or float exponent, not Value",
        "x =   0.0   relu(x) =  0.0   gradient 0.0",
        "o          0.7071067812      0.7071067812",
        "x1.grad   -1.5000000000     -1.5000000000",
        "w1.grad    1.0000000000      1.0000000000",
        "x2.grad    0.5000000000      0.5000000000",
        "w2.grad    0.0000000000      0.0000000000",
        "b.grad     0.5000000000      0.5000000000",
        "g.data = 24.7041",
        "a.grad = 138.8338",
        "b.grad = 645.5773",
        "within 1e-6: True",
    ],
    9: [
        "x1.grad: ours -1.5000000000   PyTorch -1.5000000000",
        "ours:    y = -20.0   dy/dx = 46.0",
        "PyTorch: y = -20.0   dy/dx = 46.0",
        "g       ours 24.7041  PyTorch 24.7041",
        "a.grad  ours 138.8338  PyTorch 138.8338",
        "b.grad  ours 645.5773  PyTorch 645.5773",
        "gradcheck(Tanh): True",
        "gradcheck(WrongTanh): False",
    ],
    10: [
        "tanhNeuron(3)",
        "reluNeuron(3)",
        "LinearNeuron(3)",
        "parameters: 16 = 4 neurons x (3 weights + 1 bias)",
        "16 + 20 + 5 = 41",
        "48 + 272 + 17 = 337",
        "params[0] is the first weight of the first neuron: True",
        "all zero: True",
    ],
    11: [
        "x = [2.0, 3.0, -1.0]   target +1",
        "x = [3.0, -1.0, 0.5]   target -1",
        "41 parameters",
        "loss   : Value(data=6.0054",
        "dL/dŷ = +3.1141   2(ŷ - y) = +3.1141",
        "loss before the step 6.0054, after 4.4483",
        "step  0  loss 6.0054",
        "step 59  loss 0.0097",
        "prediction +0.9440   target +1",
        "prediction -0.9891   target -1",
        "same history within 1e-12: True",
        "step 59  loss with zeroing 0.0097   without 4.0000",
        "lr 0.001  loss after 60 steps 3.8082",
        "lr 0.05   loss after 60 steps 0.0097",
        "lr 0.5    loss after 60 steps 3.9999",
    ],
    12: [
        "100 points; 50 labelled +1 and 50 labelled -1",
        "337 parameters",
        "score -2.0:  loss 3.0   dloss/dscore -1.0",
        "score +1.0:  loss 0.0   dloss/dscore +0.0",
        "untrained: loss 1.1706, accuracy 50%",
        "step  0: learning rate 1.000",
        "step 99: learning rate 0.109",
        "step  0  loss 1.1706  accuracy 50%",
        "step 99  loss 0.0136  accuracy 100%",
        "the trained model: accuracy 100% on the 100 training points",
        "test accuracy     99.5% on 200 held-out points",
    ],
    13: [
        "one step's graph has 69,018 Values",
        "one of them is c itself: True",
        "after del c, c still exists: True",
        "after gc.collect(), c still exists: False",
        "1.0 once per step",
        ", 1 thread",
        "python tests/benchmarks/bench_demo.py",
    ],
    14: [
        "scalar engine: 398 Values for one loss, 41 parameters",
        "down to (1, 4): [[12.0, 15.0, 18.0, 21.0]]",
        "G @ B.T:              [[1.0, 0.0, 0.5], [-3.0, 4.0, -0.5]]",
        "loss: scalar engine 6.0054027833   tensors 6.0054027833",
        "one loss: 398 Values, or 20 Tensors",
        "same history within 1e-12: True",
    ],
}


def lesson_pages() -> list[registry.Lesson]:
    return list(registry.LESSONS)


def finished(lesson: registry.Lesson) -> bool:
    return UNFINISHED not in (REPO / lesson.page).read_text()


# ---------------------------------------------------------------- the sources (no browser)


def test_every_python_block_runs_at_build_time():
    """A Python code block on a page is executed by markdown-exec (`exec="true"`), so it cannot rot."""
    fence = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,}|~{3,})\s*(?P<lang>python|py)\b(?P<opts>[^\n]*)$", re.M)
    loose = []
    for path in sorted(COURSE.glob("*.md")):
        for match in fence.finditer(path.read_text()):
            if not re.search(r'\bexec="(true|1|yes|on)"', match["opts"]):
                loose.append(f"{path.relative_to(REPO)}: {match[0].strip()}")
    assert not loose, 'Python blocks that never run (add exec="true"):\n' + "\n".join(loose)


FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})\s*(?:python|py)\b(?P<opts>[^\n]*)\n", re.M)
HIDDEN_LINE = re.compile(r"#\s*markdown-exec:\s*hide\s*$")


def code_blocks(path: Path) -> list[dict]:
    """The executed Python blocks of a page, in order: session, shown code, whether shown and collapsed, line."""
    text = path.read_text()
    lines = text.splitlines()
    blocks = []
    for match in FENCE.finditer(text):
        opts, indent = match["opts"], match["indent"]
        if not re.search(r'\bexec="(true|1|yes|on)"', opts):
            continue
        end = text.index(f"\n{indent}{match['ticks']}", match.end() - 1)
        body = [line[len(indent) :] for line in text[match.end() : end + 1].splitlines()]
        first = text.count("\n", 0, match.start())
        # the block sits in a collapsed box (`??? note`, not `???+`) when the nearest line above it
        # with less indentation opens one
        enclosing = next(
            (line for line in reversed(lines[:first]) if line.strip() and len(line) - len(line.lstrip()) < len(indent)),
            "",
        )
        session = re.search(r'\bsession="([^"]+)"', opts)
        blocks.append(
            {
                "session": session[1] if session else None,
                "code": "\n".join(line for line in body if not HIDDEN_LINE.search(line)),
                "shown": bool(re.search(r'\bsource="(above|below|tabbed-left|tabbed-right|material-block)"', opts)),
                "collapsed": bool(re.match(r"\s*\?\?\?(?!\+)", enclosing)),
                "line": first + 1,
            }
        )
    return blocks


def names_of(code: str) -> tuple[set[str], set[str]]:
    """The global names a piece of code binds, and those it reads without binding them (builtins aside)."""
    import builtins
    import symtable

    top = symtable.symtable(code, "<block>", "exec")
    bound = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    scopes = list(top.get_children())
    while scopes:
        scope = scopes.pop()
        used |= {s.get_name() for s in scope.get_symbols() if s.is_global() and s.is_referenced()}
        scopes.extend(scope.get_children())
    return bound, used - bound - set(dir(builtins))


def test_shown_code_runs_as_copied():
    """Copying a page's shown blocks in order gives code that runs: no name comes only from a hidden block.

    A block in the flow of the page may use what the shown blocks of the flow above it define; a block in a
    collapsed deep dive may also use what earlier deep dives define. Hidden blocks and lines marked
    `# markdown-exec: hide` (the site's own plumbing) define nothing a learner has.
    """
    problems = []
    for path in sorted(COURSE.glob("*.md")):
        flow: dict[str | None, set[str]] = {}  # session -> names the shown blocks in the flow define
        opened: dict[str | None, set[str]] = {}  # the same, with those of the collapsed blocks
        for block in code_blocks(path):
            if not block["shown"]:
                continue
            session = block["session"]
            known = (opened if block["collapsed"] else flow).get(session, set()) if session else set()
            bound, unbound = names_of(block["code"])
            missing = unbound - known
            if missing:
                where = "a collapsed block" if block["collapsed"] else "the flow"
                problems.append(f"{path.relative_to(REPO)}:{block['line']} ({where}) uses {sorted(missing)}")
            if session:
                opened.setdefault(session, set()).update(bound)
                if not block["collapsed"]:
                    flow.setdefault(session, set()).update(bound)
    assert not problems, "shown code that does not run when copied in order:\n" + "\n".join(problems)


EXTRA_PAGES = ("index.md", "recap.md")  # the pages that are not lessons


def test_one_page_per_lesson():
    pages = sorted(p.name for p in COURSE.glob("*.md") if p.name not in EXTRA_PAGES)
    assert pages == sorted(Path(lesson.page).name for lesson in registry.LESSONS)


def test_a_graphs_description_names_each_operation():
    """A graph's accessible description says which operation made each value: Graphviz quotes `*` and `+` but
    writes `label=tanh` and `label=exp` bare, and a power's exponent is part of its op."""
    sys.path.insert(0, str(COURSE / "_build"))
    import pagekit

    from solutions.engine import Value
    from solutions.graph import draw_dot

    a, b = Value(0.5, label="a"), Value(-2.0, label="b")
    e = a.exp()
    e.label = "e"
    n = e * b
    n.label = "n"
    o = n.tanh()
    o.label = "o"
    r = o.relu()
    r.label = "r"
    p = r**2
    p.label = "p"
    text = pagekit.describe_graph(draw_dot(p))
    assert "?" not in text, text
    for made in ("e = exp(a)", "o = tanh(n)", "r = ReLU(o)", "p = r**2"):
        assert f"; {made}: data " in text, (made, text)
    assert "; n = e * b: data " in text or "; n = b * e: data " in text, text  # the children of a node are a set


def all_pages() -> list[str]:
    """The path of every page of the site, as served: home, lessons, the rest, the guides (course/guides/)."""
    return (
        [""]
        + [page_path(lesson) for lesson in registry.LESSONS]
        + [p.stem + "/" for p in sorted(COURSE.glob("*.md")) if p.name in EXTRA_PAGES and p.name != "index.md"]
        + [p.relative_to(COURSE).with_suffix("").as_posix() + "/" for p in sorted((COURSE / "guides").rglob("*.md"))]
    )


def test_pages_workflow_builds_strict_and_deploys():
    """.github/workflows/pages.yml: build with --strict, publish with GitHub's own Pages actions."""
    import yaml

    flow = yaml.safe_load((REPO / ".github" / "workflows" / "pages.yml").read_text())
    triggers = flow.get("on", flow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert triggers["push"]["branches"] == ["main"] and "workflow_dispatch" in triggers
    assert flow["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = flow["jobs"]["build"], flow["jobs"]["deploy"]

    def actions(job):
        return [step["uses"].partition("@") for step in job["steps"] if "uses" in step]

    used = [name for name, _, _ in actions(build)]
    for name in ("actions/checkout", "actions/configure-pages", "actions/upload-pages-artifact"):
        assert name in used, f"the build job does not use {name}"
    assert all(version for _, _, version in actions(build) + actions(deploy)), "an action without a version"
    built = next(step for step in build["steps"] if "mkdocs build" in step.get("run", ""))
    assert "--strict" in built["run"]
    site = re.search(r"--site-dir (\S+)", built["run"])[1]
    upload = next(step for step in build["steps"] if step.get("uses", "").startswith("actions/upload-pages-artifact"))
    assert upload["with"]["path"] == site, "the artifact is not the folder the site was built into"
    assert used.index("actions/checkout") < used.index("actions/upload-pages-artifact")
    assert deploy["needs"] == "build" and deploy["environment"]["name"] == "github-pages"
    assert [name for name, _, _ in actions(deploy)] == ["actions/deploy-pages"]


def test_build_cache_runs_only_what_changed(tmp_path, monkeypatch):
    """A warm build runs no block; an edited block runs again, after its session's earlier blocks are replayed."""
    sys.path.insert(0, str(COURSE / "_build"))
    try:
        import buildcache
    finally:
        sys.path.remove(str(COURSE / "_build"))
    monkeypatch.setattr(buildcache, "CACHE", tmp_path)
    monkeypatch.delenv("COURSE_SITE_RERUN", raising=False)

    def build(blocks: list[str]) -> tuple[list[str], int]:
        runner = buildcache.BlockRunner("context", {})
        return [runner.run(code, session="s") for code in blocks], runner.ran

    blocks = ["x = 2", "y = x * 10\nprint(y)", "print(x + y)"]
    assert build(blocks) == (["", "20\n", "22\n"], 3)
    assert build(blocks) == (["", "20\n", "22\n"], 0)  # warm: nothing runs
    edited = [blocks[0], "y = x * 100\nprint(y)", blocks[2]]
    assert build(edited) == (["", "200\n", "202\n"], 2)  # x came from the replayed first block
    assert buildcache.BlockRunner("other solutions", {}).run("x = 2", session="s") == ""
    assert len(list(tmp_path.glob("*/*"))) == 6


def test_a_page_never_shows_a_kept_output_beside_a_new_run(tmp_path, monkeypatch):
    """A measurement kept from an earlier build and a figure drawn from a new run of it never meet on a page.

    Editing a later block replays the earlier ones for their state; when a replay prints something else
    than the kept output (a timing), the page is rendered again with the whole session run afresh, and what
    is recorded for course/_build/executed/ is that one run.
    """
    sys.path.insert(0, str(COURSE / "_build"))
    try:
        import blocks
        import buildcache
    finally:
        sys.path.remove(str(COURSE / "_build"))
    monkeypatch.setattr(buildcache, "CACHE", tmp_path)
    monkeypatch.delenv("COURSE_SITE_RERUN", raising=False)
    monkeypatch.delenv("COURSE_SITE_CHECK", raising=False)
    measure = "import time\nt = time.perf_counter_ns()\nprint(t)"  # a new number on every run

    class Page:
        def __init__(self, blocks):
            self.blocks = blocks

        def render(self, config, files):
            self.content = [runner.run(code, session="s") for code in self.blocks]

    runner = buildcache.BlockRunner("context", {})
    Page([measure, "print(t)"]).render(None, None)
    runner = buildcache.BlockRunner("context", {})  # the next build: the figure's code was edited
    runner.page = "page.md"
    page = Page([measure, "print('figure of', t)"])
    page.render(None, None)
    kept, figure = page.content
    assert figure != f"figure of {kept}" and runner.diverged == {"s"}  # what the cache alone would show
    first, figure = blocks.render_afresh(runner, page, None, None)
    assert figure == f"figure of {first}", "the page shows a measurement and a figure of another run"
    assert runner.diverged == set() and runner.fresh == set()
    assert [r["output"] for r in runner.committed.used["page.md"]] == [first, figure]
    assert buildcache.BlockRunner("context", {}).run(measure, session="s") == first  # the cache keeps that run


def test_committed_results_come_first_and_a_check_runs_nothing(tmp_path, monkeypatch, caplog):
    """A block whose result is committed does not run; a block that runs says so on mkdocs' log as it starts;
    a check build (`build --check`) runs nothing and names each block whose result is missing; the record
    says which files of course/_build/executed/ to write and which to delete."""
    sys.path.insert(0, str(COURSE / "_build"))
    try:
        import buildcache
    finally:
        sys.path.remove(str(COURSE / "_build"))
    monkeypatch.setattr(buildcache, "CACHE", tmp_path / "cache")
    monkeypatch.delenv("COURSE_SITE_RERUN", raising=False)
    folder = tmp_path / "executed"

    def build(blocks: list[str], check: bool = False):
        monkeypatch.setenv("COURSE_SITE_CHECK", "1" if check else "0")
        committed = buildcache.Committed(folder)
        runner = buildcache.BlockRunner("context", {}, machine="this machine", committed=committed)
        runner.page = "p.md"
        with caplog.at_level(logging.INFO, logger="mkdocs.plugins.course"):
            outputs = [runner.run(code, session="s") for code in blocks]
        return outputs, runner.ran, committed.record({"python": "3"})

    blocks = ["x = 2", "print(x * 10)"]
    outputs, ran, record = build(blocks)
    assert (outputs, ran) == (["", "20\n"], 2)
    assert [r.getMessage() for r in caplog.records] == [f"course: running a block of p.md: {b}" for b in blocks]
    assert list(record["write"]) == ["p.json"] and record["delete"] == record["missing"] == []
    folder.mkdir()
    (folder / "p.json").write_text(record["write"]["p.json"])
    (folder / "gone.json").write_text('{"results": []}')
    shutil.rmtree(tmp_path / "cache")  # a fresh clone: the committed results only
    caplog.clear()
    assert build(blocks) == (["", "20\n"], 0, {"write": {}, "delete": ["gone.json"], "missing": []})
    assert not caplog.records
    outputs, ran, record = build(["x = 3", blocks[1]], check=True)
    assert ran == 0 and not caplog.records and list(record["write"]) == ["p.json"]
    assert record["missing"] == ["p.md: the block that starts `x = 3`", "p.md: the block that starts `print(x * 10)`"]


# ---------------------------------------------------------------- build, serve, browse


@pytest.fixture(scope="module")
def chromium():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing on CI: install Debian's chromium (apt-get install -y chromium)")
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install -y chromium); the browser tests need it")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if os.environ.get("CI"):
            raise
        pytest.skip("the Python package playwright is not installed")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def site_build(tmp_path_factory) -> tuple[Path, dict]:
    """The site, built without reading the committed results (course/_build/executed/): every block runs,
    or comes from what this machine ran before (.cache/site/; a clean clone on CI has none). Returns the
    site and what `python -m autograder dev build` would change in the committed results after this build."""
    site = tmp_path_factory.mktemp("site")
    record = site.parent / "record.json"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "COURSE_SITE_COMMITTED": "0", "COURSE_SITE_RECORD": str(record)}
    for name in ("COURSE_SITE_RERUN", "COURSE_SITE_CHECK"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return site, json.loads(record.read_text())


@pytest.fixture(scope="module")
def built_site(site_build, chromium) -> Path:
    return site_build[0]


def test_committed_results_are_up_to_date(site_build):
    """course/_build/executed/ holds a result for exactly the blocks and grader runs that a build which does not
    read it runs (from nothing on a clean clone): none missing, stale or left over.

    Their outputs are not compared byte for byte: the reference's graphs iterate sets of Values, so the order
    of nodes in a figure or a printed topological order can differ from one run to the next. What depends on
    the grader (lesson 0's grader runs, a block that names `autograder`) is: its committed key leaves the
    grader's sources out, so this is where a grader edit that changes what a page shows is caught.
    """
    _, wanted = site_build
    assert not wanted["delete"], f"results of pages that are gone: {wanted['delete']}"
    stale = []
    for name, text in wanted["write"].items():
        path = REPO / "course" / "_build" / "executed" / name
        committed = json.loads(path.read_text())["results"] if path.exists() else []
        fresh = json.loads(text)["results"]
        have = {r["key"]: r["output"] for r in committed}
        for result in fresh:
            kept = result.get("grader run") or result.get("code of")  # lesson 0's runs and the bug they show
            what = kept or result["code"].strip().splitlines()[0]
            if result["key"] not in have:
                stale.append(f"{name}: no result for `{what}`")
            elif (kept or "autograder" in result["code"]) and have[result["key"]] != result["output"]:
                stale.append(f"{name}: `{what}` prints something else now")
        if len(committed) > len(fresh):
            stale.append(f"{name}: {len(committed) - len(fresh)} results that no block uses")
    assert not stale, "run `python -m autograder dev build` and commit course/_build/executed/:\n" + "\n".join(stale)


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(built_site):
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=built_site))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


class Visit:
    """One browser context that records every request, console error and page error."""

    def __init__(
        self,
        browser,
        base: str,
        color_scheme: str = "light",
        viewport: tuple[int, int] = (1280, 900),
        touch: bool = False,
    ):
        self.base = base
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(
            viewport={"width": viewport[0], "height": viewport[1]}, color_scheme=color_scheme, has_touch=touch
        )
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("console", lambda msg: msg.type == "error" and self.errors.append(f"console: {msg.text}"))
        self.page.on("pageerror", lambda exc: self.errors.append(f"page error: {exc}"))

    def _route(self, route):
        url = route.request.url
        parsed = urlparse(url)
        if parsed.scheme in ("data", "blob") or (parsed.scheme == "http" and parsed.hostname == "127.0.0.1"):
            route.continue_()
        else:
            self.outside.append(url)
            route.abort()

    def open(self, path: str):
        response = self.page.goto(f"{self.base}/{path}", wait_until="load")
        assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
        return self.page

    def close(self):
        self.context.close()


@pytest.fixture
def visit(chromium, server):
    v = Visit(chromium, server)
    yield v
    v.close()


# Keeps the SVGs the screen shows: a figure drawn at two widths holds two, and course.css hides one of them.
SHOWN = "((els) => els.filter((e) => getComputedStyle(e).display !== 'none'))"


def page_path(lesson: registry.Lesson) -> str:
    return f"{lesson.slug}/"


@pytest.mark.parametrize("lesson", lesson_pages(), ids=lambda lesson: lesson.slug)
def test_lesson_page(visit, lesson):
    page = visit.open(page_path(lesson))
    text = page.inner_text("article")
    h1 = page.inner_text("article h1").rstrip("¶")
    assert h1 == f"Lesson {lesson.number} · {lesson.title}", h1

    # maths: every formula of the source became MathML that takes up space; no TeX left behind
    source = (REPO / lesson.page).read_text()
    assert page.locator(".arithmatex").count() == 0, "math left unconverted"
    if "$" in source:
        sizes = page.eval_on_selector_all("article math", "els => els.map(e => e.getBoundingClientRect().width)")
        assert sizes, "the page has formulas but no <math> element"
        assert all(width > 0 for width in sizes), f"empty formulas: {sizes}"

    # figures: inline SVGs with a size (the one this screen shows, of a figure drawn at two widths), images decoded
    figures = page.eval_on_selector_all(
        "article .bp-figure > svg",
        f"els => {SHOWN}(els).map(e => {{ const r = e.getBoundingClientRect();"
        " return [r.width, r.height, e.querySelectorAll('*').length]; })",
    )
    assert all(w > 0 and h > 0 and n > 5 for w, h, n in figures), f"figures without a size or content: {figures}"
    images = page.eval_on_selector_all("article img", "els => els.map(e => [e.src, e.complete && e.naturalWidth])")
    assert all(width for _, width in images), f"images that did not decode: {images}"

    # tasks: the heading with its anchor, the stub, the grader's own hints, the command
    for task in lesson.tasks:
        heading = page.locator(f"h3#{task.anchor}")
        assert heading.count() == 1, f"no heading #{task.anchor}"
        assert heading.inner_text().rstrip("¶") == f"Task {task.id} · {task.title}", heading.inner_text()
        content = page.text_content("article")
        for hint in task.hints:
            assert hint.replace("`", "") in content, f"task {task.id}: hint missing from the page: {hint}"
        stub_shown = f"TODO(task {task.id})" in content or f"Also task {task.id}:" in content
        assert stub_shown or task.runs_whole, f"task {task.id}: no stub shown"  # a capstone has no stub
        assert f"pytest autograder --task {task.id}" in text
    if lesson.tasks:
        assert f"pytest autograder --lesson {lesson.number}" in text
        assert page.locator("article .admonition.question").count() >= 1, "no 'your turn' box"

    if finished(lesson):
        assert figures or images, "a lesson page needs at least one figure"
        assert "Check yourself" in text and page.locator("article details.question").count() >= 1
        # text_content, not inner_text: a number may sit in a collapsed deep-dive, one click away
        everything = page.text_content("article")
        missing = [n for n in NUMBERS.get(lesson.number, []) if n not in text and n not in everything]
        assert not missing, f"syllabus numbers missing from the page: {missing}"

    assert not visit.errors, visit.errors
    assert not visit.outside, f"requests left 127.0.0.1: {visit.outside}"


def test_home_page_lists_every_lesson(visit):
    page = visit.open("")
    links = page.eval_on_selector_all("article table a", "els => els.map(e => e.getAttribute('href'))")
    for lesson in registry.LESSONS:
        assert any(link.rstrip("/").endswith(lesson.slug) for link in links), f"lesson {lesson.number} not linked"
    nav = page.eval_on_selector_all(
        ".md-nav--primary > .md-nav__list > .md-nav__item > a", "els => els.map(e => e.textContent.trim())"
    )
    lessons = [
        f"{lesson.number} · {lesson.title}" + (" (bonus)" if lesson.bonus else "") for lesson in registry.LESSONS
    ]
    assert nav[1 : len(lessons) + 1] == lessons, nav
    assert any(lesson.bonus for lesson in registry.LESSONS), "no bonus lesson to mark in the navigation"
    assert not visit.errors and not visit.outside


def test_lesson_0_shows_a_fresh_clones_scorecard(visit):
    page = visit.open(page_path(registry.lesson(0)))
    text = page.text_content("article")
    assert "Scorecard: exercises/" in text
    assert "not started" in text and "Next: task 1.1" in text
    assert "What went wrong" in text and "failed" in text  # the example with a deliberate bug
    # its hints would give task 1.1 away: each is left out whole, however many lines the grader wrapped it over
    hints = re.findall(r"hint: +(.*)\n(.*)", text[text.index("What went wrong") :])
    assert hints and all(h == "[left out here: it would give task 1.1 away]" for h, _ in hints), hints
    assert all(after.split()[0] == "page:" for _, after in hints), hints


def test_figure_zooms_on_click_and_closes(visit):
    page = visit.open(page_path(registry.lesson(3)))
    figure = page.locator("article .bp-graph").first
    figure.scroll_into_view_if_needed()
    figure.click()
    dialog = page.locator("dialog.bp-zoom[open] svg")
    dialog.wait_for(state="visible", timeout=3000)
    box = dialog.bounding_box()
    assert box and box["width"] > figure.bounding_box()["width"], "the zoomed figure is not larger"
    page.keyboard.press("Escape")
    page.locator("dialog.bp-zoom").wait_for(state="detached", timeout=3000)
    assert not visit.errors and not visit.outside


def test_dark_mode_figures_follow_the_text_colour(chromium, server):
    v = Visit(chromium, server, color_scheme="dark")
    try:
        page = v.open(page_path(registry.lesson(1)))
        assert page.get_attribute("body", "data-md-color-scheme") == "slate"
        colours = page.eval_on_selector_all(
            "article .bp-figure svg text", "els => els.slice(0, 5).map(e => getComputedStyle(e).fill)"
        )
        body = page.eval_on_selector("article", "e => getComputedStyle(e).color")
        assert colours and all(c == body for c in colours), (colours, body)
        assert not v.errors and not v.outside
    finally:
        v.close()


def test_lesson_13_output_figure_and_text_quote_one_measurement(visit):
    """Lesson 13's timings: one run, named machine, one thread, a warm-up; the figure and the prose quote it."""
    page = visit.open(page_path(registry.lesson(13)))
    text = page.inner_text("article")
    machine = re.search(r"^measured on: (.+)$", text, re.M)
    assert machine and re.search(r", \d+ cores? \(", machine[1]), "the output does not name the machine"
    assert re.search(r"^Python \S+, PyTorch \S+, 1 thread$", text, re.M)
    assert "median time per step, after a warm-up step:" in text
    times = {}
    for label in ("our engine, collector on", "our engine, once per step", "PyTorch, tensors"):
        found = re.search(rf"^\s*{re.escape(label)}:\s+(\S+) s \((\d+) steps\)$", text, re.M)
        assert found, f"no time for {label}"
        times[label], steps = found[1], int(found[2])
        assert steps >= (100 if label.startswith("PyTorch") else 5), f"{label}: only {steps} steps"
    on, once, tensors = times.values()

    figure = page.locator("article figure", has_text="One step of the lesson-12 demo")
    assert figure.count() == 1
    labels = figure.locator("svg:not(.bp-narrow) text").all_text_contents()
    assert all(f"{t} s" in labels for t in (on, once, tensors)), f"the bars say {labels}, the output {times}"
    assert all(f"{t} s" in figure.locator("svg").first.get_attribute("aria-label") for t in (on, once, tensors))
    assert machine[1] in figure.locator("figcaption").inner_text()

    prose = page.locator("article p", has_text="On this machine the collector made a step").inner_text()
    assert f"takes {once} s a step" in prose and f"PyTorch's {tensors} s" in prose, prose
    assert "about 0.035 s" not in text and "about 170 s" not in text  # no number the page does not measure


def test_search_finds_a_lesson(visit):
    page = visit.open("")
    page.keyboard.press("/")  # Material's shortcut that focuses the search box
    box = page.locator("input.md-search__input")
    box.wait_for(state="visible", timeout=5000)
    hit = page.locator(".md-search-result__item a[href*='07-accumulation']").first
    # The index loads in a web worker; a query typed before it is ready may stay unanswered, so type again.
    for _ in range(6):
        box.fill("")
        box.type("accumulation", delay=20)
        try:
            hit.wait_for(state="visible", timeout=5000)
            break
        except Exception:  # noqa: BLE001 - playwright's TimeoutError: try once more
            continue
    assert hit.is_visible(), "search for 'accumulation' found no link to lesson 7"
    assert not visit.errors and not visit.outside


def test_neuron_playground_moves_with_its_sliders(visit):
    """Lesson 5's live neuron: its JavaScript redoes forward and backward on every slider move, as the engine does."""
    from solutions.engine import Value

    def reference(x1, w1, x2, w2, b):
        leaves = {name: Value(v) for name, v in dict(x1=x1, w1=w1, x2=x2, w2=w2, b=b).items()}
        x1w1, x2w2 = leaves["x1"] * leaves["w1"], leaves["x2"] * leaves["w2"]
        total = x1w1 + x2w2
        n = total + leaves["b"]
        o = n.tanh()
        o.backward()
        nodes = {**leaves, "x1*w1": x1w1, "x2*w2": x2w2, "x1*w1 + x2*w2": total, "n": n, "o": o}
        four = lambda x: f"{x:.4f}".replace("-0.0000", "0.0000")  # noqa: E731
        return {name: [four(v.data), four(v.grad)] for name, v in nodes.items()}

    page = visit.open(page_path(registry.lesson(5)))
    page.locator(".bp-neuron svg [data-node='o']").wait_for(timeout=5000)
    shown = lambda: page.eval_on_selector_all(  # noqa: E731
        ".bp-neuron [data-node]",
        "els => Object.fromEntries(els.map(e => [e.dataset.node,"
        " [e.querySelector('.bp-np-data').textContent, e.querySelector('.bp-np-grad').textContent]]))",
    )
    start = dict(x1=2.0, w1=-3.0, x2=0.0, w2=1.0, b=6.8813735870195432)  # the neuron printed on the page

    before = shown()
    assert before == reference(**start), before
    assert before["o"] == ["0.7071", "1.0000"] and before["w2"][1] == "0.0000" and before["x1"][1] == "-1.5000"
    spoken = page.locator(".bp-neuron [aria-live='polite']")
    assert spoken.count() == 1 and spoken.text_content() == "", "the live region speaks before anything moved"

    # a learner moves x2 away from 0 with the keyboard: o and the gradients change, w2 wakes up
    slider = page.locator(".bp-neuron input[name='x2']")
    slider.focus()
    for _ in range(25):
        page.keyboard.press("ArrowRight")
    x2 = float(slider.input_value())
    assert x2 > 0
    after = shown()
    assert after["o"][0] != before["o"][0] and after["w2"][1] != "0.0000", after
    assert after == reference(**{**start, "x2": x2}), after
    assert page.locator(".bp-neuron output").nth(2).text_content() == f"{x2:.4f}"

    # a screen reader hears, once the slider rests, what each thing to try asks about: o, its slope do/dn (the
    # grad of n) and every node's grad, as the picture shows them
    page.wait_for_function("e => e.textContent.includes('grads:')", arg=spoken.element_handle(), timeout=5000)
    heard = re.fullmatch(r"o = (\S+), do/dn = (\S+); grads: (.*)", spoken.text_content())
    assert heard, spoken.text_content()
    grads = dict(item.rsplit(" ", 1) for item in heard[3].split(", "))
    assert [heard[1], heard[2]] == [after["o"][0], after["n"][1]], heard[0]
    assert grads == {name: grad for name, (_, grad) in after.items() if name != "o"}, heard[0]
    assert spoken.get_attribute("aria-atomic") == "true"

    # dragging w1 to -1.5 (set and announced as the browser does) recomputes every node again
    page.eval_on_selector(
        ".bp-neuron input[name='w1']",
        "e => { e.value = '-1.5'; e.dispatchEvent(new Event('input', {bubbles: true})); }",
    )
    assert shown() == reference(**{**start, "x2": x2, "w1": -1.5})

    page.get_by_role("button", name="Reset").click()
    assert shown() == before
    assert not visit.errors, visit.errors
    assert not visit.outside


# ---------------------------------------------------------------- layout and contrast: phone and desktop, both schemes

SCREENS = {"phone": (390, 844), "desktop": (1280, 800)}
SCHEMES = ("light", "dark")
AA = 4.5  # WCAG AA contrast for text

# Colours as the browser computes them: parse, composite over what is behind, measure (WCAG's relative luminance).
# `background(e)`: the colour behind an element's text, its own and its ancestors' backgrounds over white;
# `paint(e, "fill")`: an SVG element's fill or stroke with its opacities; `opacity(e)`: its and its ancestors'.
COLOURS = r"""
  const rgba = (text) => {
    const m = text.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const [r, g, b, a] = m[1].split(/[ ,/]+/).filter(Boolean).map(Number);
    return [r, g, b, a === undefined || Number.isNaN(a) ? 1 : a];
  };
  const over = (top, under) => top.slice(0, 3).map((c, i) => c * top[3] + under[i] * (1 - top[3])).concat(1);
  const luminance = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => {
      v /= 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p)
      ; return (x + 0.05) / (y + 0.05); };
  const behind = new Map();
  const background = (e) => {  // the colour behind an element: its ancestors' backgrounds, over white
    if (!e || e.nodeType !== 1) return [255, 255, 255, 1];
    if (!behind.has(e)) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      behind.set(e, c && c[3] === 1 ? c : c && c[3] > 0 ? over(c, background(e.parentElement))
        : background(e.parentElement));
    }
    return behind.get(e);
  };
  const opacities = new Map();
  const opacity = (e) => {  // an opacity of 0 is a state the element is shown out of (the search, the skip link)
    if (!e || e.nodeType !== 1) return 1;
    if (!opacities.has(e)) opacities.set(e, (Number(getComputedStyle(e).opacity) || 1) * opacity(e.parentElement));
    return opacities.get(e);
  };
  const paint = (e, property) => {  // an SVG element's fill or stroke, with its opacity
    const style = getComputedStyle(e);
    const c = rgba(style[property]);
    if (!c) return null;
    c[3] *= Number(style[property + "Opacity"]) * Number(style.opacity);
    return c;
  };
"""

# Measures one page as it is shown. Returns a list of problems, each a string:
# - the page scrolls sideways, or a figure leaves the text column;
# - a formula (any <math>) is cut: outside the column with nothing to scroll it into view, or inside a
#   scroll box it cannot be scrolled to, or in a box that scrolls without the shade that says so;
# - a text colour below 4.5:1 on what is behind it: the neuron playground's text on its records and ops, the
#   graphs' op outlines and node text, the "output" label, lesson 12's points on their region;
# - on a desktop, a graph drawn below 0.7 of its size (pagekit keeps them readable).
LAYOUT = (
    r"""(aa) => {
"""
    + COLOURS
    + r"""
  const problems = [];
  const root = document.scrollingElement;
  if (root.scrollWidth > root.clientWidth)
    problems.push(`the page is ${root.scrollWidth} px wide on ${root.clientWidth}`);
  const article = document.querySelector("article");
  const column = article.getBoundingClientRect();
  const name = (e) =>
    (e.getAttribute("alttext") || e.className.baseVal || e.className || e.tagName).toString().slice(0, 60);

  for (const e of article.querySelectorAll("svg, img")) {
    if (e.parentElement.closest("svg")) continue;
    const box = e.getBoundingClientRect();
    if (box.width > 0 && (box.right > column.right + 0.5 || box.left < column.left - 0.5))
      problems.push(`figure ${name(e.parentElement)} at ${Math.round(box.left)}..${Math.round(box.right)}
          , column ${column.left}..${column.right}`);
  }

  const check = (what, fg, bg) => {
    if (!fg || !bg) return problems.push(`${what}: no colour to measure`);
    const r = ratio(over(fg, bg), bg);
    if (r < aa) problems.push(`${what}: contrast ${r.toFixed(2)} < ${aa}`);
  };

  // formulas: visible, or in a box that scrolls to them and shows that it does
  for (const m of article.querySelectorAll("math")) {
    if (m.parentElement.closest("math")) continue;
    const contents = document.createRange();
    contents.selectNodeContents(m);  // not the <math> box: a display formula's box is the column's width
    const box = contents.getBoundingClientRect();
    if (!box.width) continue;  // in a closed <details> or an unselected tab
    let scroller = m.parentElement;
    while (scroller !== article && getComputedStyle(scroller).overflowX === "visible")
      scroller = scroller.parentElement;
    if (scroller === article) {
      if (box.right > column.right + 1 || box.left < column.left - 1) problems.push(`formula cut: ${name(m)}`);
      continue;
    }
    const s = scroller.getBoundingClientRect(), style = getComputedStyle(scroller);
    const left = s.left - scroller.scrollLeft, right = left + scroller.scrollWidth;
    if (box.left < left - 1 || box.right > right + 1)
      problems.push(`formula out of reach of its scroll box: ${name(m)}`);
    if (style.overflowY === "hidden" && (box.top < s.top - 1 || box.bottom > s.bottom + 1))
        problems.push(`formula cut at top or bottom: ${name(m)}`);
    if (scroller.scrollWidth > scroller.clientWidth + 1) {
      const shaded = style.backgroundImage.includes("radial-gradient") && style.backgroundAttachment.includes("local");
      if (!["auto", "scroll"].includes(style.overflowX) || !shaded)
          problems.push(`formula scrolls without showing it: ${name(m)}`);
    }
  }

  // the neuron playground's text on what it is drawn on: names, keys, values and grads on their record, ops on
  // their ellipse
  for (const text of document.querySelectorAll(".bp-neuron-node :is(text, tspan)")) {
    if (![...text.childNodes].some((n) => n.nodeType === 3 && n.data.trim())) continue;
    const shape = text.closest("g").querySelector(text.matches(".bp-neuron-optext") ? ".bp-neuron-op"
        : ".bp-neuron-record");
    const what = text.dataset.sign ? `grad (${text.dataset.sign})` : text.textContent.trim();
    check(`playground ${what}`, paint(text, "fill"), over(paint(shape, "fill"), background(shape.closest("svg"))));
  }
  for (const op of document.querySelectorAll(".bp-neuron .bp-neuron-op"))
      check("playground op outline", paint(op, "stroke"), background(op.closest("svg")));
  // the graphs' op outlines on the page, and each node's text on its shape
  for (const node of article.querySelectorAll(".bp-graph svg g.node")) {
    const page = background(node.closest("figure"));
    const shape = node.querySelector("ellipse, polygon");
    if (!shape) continue;
    if (shape.tagName === "ellipse") check(`op outline ${node.textContent.trim()}`, paint(shape, "stroke"), page);
    const behind = over(paint(shape, "fill") || [0, 0, 0, 0], page);
    for (const text of node.querySelectorAll("text")) check(`graph text ${text.textContent}`
        , paint(text, "fill"), behind);
  }
  // the label under a block's output
  for (const block of article.querySelectorAll(".language-python.highlight + .language-text.highlight")) {
    const label = getComputedStyle(block, "::after");
    if (label.content === "none") continue;
    const code = block.querySelector("pre > code");
    check("output label", rgba(label.color), background(code));
    const [lineHeight, fontSize] = [parseFloat(label.lineHeight) || 0, parseFloat(label.fontSize)];
    const labelTop = block.getBoundingClientRect().bottom - parseFloat(label.bottom)
      - (Math.max(lineHeight, fontSize) + fontSize) / 2;  // the top of its letters
    const range = document.createRange();
    range.selectNodeContents(code);
    const rects = [...range.getClientRects()].filter((r) => r.width > 0);
    if (rects.length && Math.max(...rects.map((r) => r.bottom)) > labelTop + 1)
        problems.push("the output label covers the output");
  }
  // lesson 12's points on the region around them
  for (const svg of article.querySelectorAll(".bp-plot svg")) {
    if (!svg.querySelector('[id*="QuadContourSet"]')) continue;
    const page = background(svg.closest("figure"));
    svg.scrollIntoView({block: "center"});
    for (const point of svg.querySelectorAll('[id*="PathCollection"] use')) {
      const p = point.getBoundingClientRect();
      const x = p.left + p.width / 2, y = p.top + p.height / 2;
      if (x < 0 || y < 0 || x > innerWidth || y > innerHeight) continue;
      // a filled region: a contour line (fill none) a point sits on is not what is behind it
      const region = document.elementsFromPoint(x, y)
        .find((e) => e.closest('[id*="QuadContourSet"]') && e.tagName === "path" && paint(e, "fill"));
      if (region) check("a point on its region", paint(point, "fill"), over(paint(region, "fill"), page));
    }
  }
  return problems;
}"""
)


def zoom_check(page, touch: bool) -> list[str]:
    """Zoom the page's most shrunken figure: the copy must be larger than the column (at its natural size at
    least, in a dialog that scrolls), and the captions say tap or click as the device does."""
    figures = page.locator("article .bp-figure")
    if not figures.count():
        return []
    scales = page.eval_on_selector_all(
        "article .bp-figure",
        "els => els.map(f => [...f.querySelectorAll(':scope > svg')].find(e => getComputedStyle(e).display !== 'none'))"
        ".map(e => e.getBoundingClientRect().width / (e.width.baseVal.value || 1))",
    )
    problems = []
    verb, other = ("tap", "click") if touch else ("click", "tap")
    notes = page.eval_on_selector_all(
        "article .bp-figure.bp-scaled figcaption", "els => els.map(e => getComputedStyle(e, '::after').content)"
    )
    if any(verb not in note or other in note for note in notes):
        problems.append(f"captions say {notes}, not '{verb}'")
    index = min(range(len(scales)), key=scales.__getitem__)
    figure = figures.nth(index)
    figure.scroll_into_view_if_needed()
    svg = "[...e.querySelectorAll(':scope > svg')].find(s => getComputedStyle(s).display !== 'none')"
    natural = page.evaluate(f"e => {svg}.width.baseVal.value", figure.element_handle())
    column = page.evaluate("() => document.querySelector('article').getBoundingClientRect().width")
    shown = figure.evaluate(f"e => {svg}.getBoundingClientRect().width")
    figure.click()
    zoomed = page.locator("dialog.bp-zoom[open] .bp-figure > svg").filter(visible=True)
    zoomed.wait_for(state="visible", timeout=3000)
    width = zoomed.evaluate("e => e.getBoundingClientRect().width")
    dialog = page.eval_on_selector(
        "dialog.bp-zoom",
        "d => [d.scrollWidth, d.clientWidth, getComputedStyle(d).overflowX, d.getAttribute('aria-label')]",
    )
    if width < natural - 1:
        problems.append(f"zoomed figure {width:.0f} px, below its natural {natural:.0f} px")
    if scales[index] < 0.99 and width <= column:  # a figure shrunk to the column
        problems.append(f"zoomed figure {width:.0f} px is not larger than the column ({column:.0f} px)")
    if width < 1.5 * shown:
        problems.append(f"zoomed figure {width:.0f} px is hardly larger than on the page ({shown:.0f} px)")
    if dialog[0] > dialog[1] and dialog[2] not in ("auto", "scroll"):
        problems.append("the zoom dialog is wider than the screen and does not scroll")
    if verb not in dialog[3]:
        problems.append(f"the zoom dialog says {dialog[3]!r}")
    page.keyboard.press("Escape")
    page.locator("dialog.bp-zoom").wait_for(state="detached", timeout=3000)
    return problems


def test_aligned_equations_line_up(visit):
    """In an align*, the contents of a column's cells share their aligned edge: the = signs sit one under the other."""
    edges = """els => els.map(t => [...t.querySelectorAll(':scope > mtr')].map(row => [...row.children].map(cell => {
      if (!cell.children.length) return null;
      const range = document.createRange();
      range.selectNodeContents(cell);
      const box = range.getBoundingClientRect();
      return cell.getAttribute('columnalign') === 'right' ? box.right : box.left;
    })))"""
    for lesson in (1, 4, 11):
        page = visit.open(page_path(registry.lesson(lesson)))
        tables = page.eval_on_selector_all("article mtable[columnspacing]", edges)
        assert tables, f"lesson {lesson}: no aligned equations"
        for rows in tables:
            for column in zip(*rows, strict=False):
                filled = [edge for edge in column if edge is not None] or [0]
                assert max(filled) - min(filled) < 1, f"lesson {lesson}: a column of an align* is ragged: {column}"


def test_lesson_0_shows_the_status_table_first(visit):
    page = visit.open(page_path(registry.lesson(0)))
    tabs = page.locator("article .tabbed-set", has=page.locator("text=How this table is made"))
    assert tabs.locator(".tabbed-labels > label").first.inner_text() == "Status"
    assert tabs.locator("table").is_visible(), "the table of statuses is not the tab shown"


# ---------------------------------------------------------------- every page, both widths, both schemes: one pass
#
# One browser context per screen and scheme opens every page once and runs every check on it (the audit fixture);
# each test below reads one kind of problem from that pass: what fits (above), axe-core's WCAG 2.2 A and AA rules,
# the contrast of every text, a focus ring on every control, the size of every figure's text and the width of
# every table, what the figures' descriptions say, and on a desktop the code lines.

SMALLEST_TEXT_PX = 9  # no text of a figure is drawn smaller than this, the neuron playground's included

# The text of every figure the screen shows, each run of it at its size on screen (font size times the SVG's
# scale; a superscript or a minus sign of a plot's 10⁻³ is a <tspan> of its own), the playground's included;
# and every table whole: in the column (a scroll box of the theme's may reach the screen's edges), nothing
# to scroll sideways to.
READING = r"""(smallest) => {
  const problems = [];
  const article = document.querySelector("article");
  const column = article.getBoundingClientRect();
  const shown = (e) => e.checkVisibility({visibilityProperty: true}) && e.getBoundingClientRect().width > 0;
  for (const svg of article.querySelectorAll("svg")) {
    if (svg.parentElement.closest("svg") || !shown(svg)) continue;
    const small = new Set();
    for (const text of svg.querySelectorAll("text, tspan")) {
      const own = [...text.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join("").trim();
      const matrix = own && text.getScreenCTM();
      if (!matrix) continue;
      const px = parseFloat(getComputedStyle(text).fontSize) * Math.hypot(matrix.a, matrix.b);
      if (px < smallest - 0.05) small.add(`${own} ${px.toFixed(1)} px`);
    }
    const where = svg.closest(".bp-figure, .bp-neuron") || svg;
    if (small.size)
      problems.push(`${where.className}: ${small.size} texts below ${smallest} px: ${[...small].slice(0, 4)}`);
  }
  for (const table of article.querySelectorAll("table")) {
    if (table.closest("svg") || !shown(table)) continue;
    let box = table.parentElement;
    while (box !== article && !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) box = box.parentElement;
    const edges = box === article ? column : {left: 0, right: document.documentElement.clientWidth};
    const shownBox = table.getBoundingClientRect();
    const heads = [...table.rows[0].cells].map((c) => c.textContent.trim()).join(" | ").slice(0, 60);
    if (box !== article && box.scrollWidth > box.clientWidth + 1)
      problems.push(`a table scrolls sideways, ${box.scrollWidth} px in ${box.clientWidth}: ${heads}`);
    else if (shownBox.right > edges.right + 1 || shownBox.left < edges.left - 1)
      problems.push(`a table is cut at the edge: ${heads}`);
  }
  return problems;
}"""

# Each graph's description (its aria-label, what a screen reader reads) names every operation the graph shows.
DESCRIBED = r"""() => [...document.querySelectorAll("article .bp-graph > svg")].flatMap((svg) => {
  const label = svg.getAttribute("aria-label") || "";
  const ops = new Set([...svg.querySelectorAll("g.node")].filter((g) => g.querySelector("ellipse"))
    .map((g) => g.textContent.trim()));
  const missing = [...ops].filter((op) => !label.includes(op));
  return missing.length || label.includes("?(")
    ? [`a graph of ${[...ops].join(" ")} is described as: ${label.slice(0, 120)}...`] : [];
})"""

# Every text the page lays out, on what is behind it: 4.5:1, or 3:1 for large text (24 px, or 18.66 px bold); the
# code's every token (a highlighted line of a stub has a background of its own), the figures' text, the header,
# the navigation, the search box's placeholder; also what is hidden until a tap or a key shows it (the phone's
# drawer and its table of contents, the search, the skip link; the audit opens every <details> first).
# Returns each failing pair of colours once, with how often it occurs.
TEXT_CONTRAST = (
    r"""(aa) => {
"""
    + COLOURS
    + r"""
  const found = new Map();
  const measure = (e, fg, bg, large, text) => {
    const need = large ? 3 : aa;
    const r = ratio(over(fg, bg), bg);
    if (r >= need - 0.005) return;
    const key = `${fg}|${bg}|${need}`;
    const kind = `${e.tagName.toLowerCase()}${e.classList.length ? "." + [...e.classList].join(".") : ""}`;
    const what = `"${text.slice(0, 30)}" (${kind.slice(0, 50)}): ${r.toFixed(2)} < ${need}`;
    if (!found.has(key)) found.set(key, {what, count: 0});
    found.get(key).count += 1;
  };
  const owners = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) if (n.data.trim()) owners.add(n.parentElement);
  for (const e of owners) {
    if (!e || e.closest("script, style, noscript, template, title, desc, [disabled]")) continue;
    if (!e.checkVisibility() || ![...e.getClientRects()].some((r) => r.width > 1 && r.height > 1)) continue;
    const style = getComputedStyle(e);
    const svg = e instanceof SVGElement;
    const fg = rgba(svg ? style.fill : style.color);
    if (!fg) continue;  // no fill, or a pattern
    fg[3] *= (svg ? Number(style.fillOpacity) : 1) * opacity(e);
    const px = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const text = [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.data).join("").trim();
    measure(e, fg, background(e), !svg && (px >= 24 || (bold && px >= 18.66)), text);
  }
  for (const input of document.querySelectorAll("input[placeholder], textarea[placeholder]")) {
    if (input.value || !input.checkVisibility()) continue;
    const fg = rgba(getComputedStyle(input, "::placeholder").color);
    if (fg) { fg[3] *= opacity(input); measure(input, fg, background(input), false, input.placeholder); }
  }
  return [...found.values()].map(({what, count}) => (count > 1 ? `${what} (×${count})` : what));
}"""
)

# Every control the keyboard reaches (links, buttons, inputs, sliders, summaries, figures, code that scrolls),
# focused as a keyboard focuses it: an outline of 2 px or more, with 3:1 or more on what is around it.
FOCUS_RINGS = (
    r"""() => {
"""
    + COLOURS
    + r"""
  const problems = [];
  const controls = 'a[href], button, input:not([type="hidden"]), select, textarea, summary, [tabindex]';
  for (const e of document.querySelectorAll(controls)) {
    if (e.tabIndex < 0 || e.disabled || !e.checkVisibility({visibilityProperty: true})) continue;
    const box = e.getBoundingClientRect();
    if (box.width < 1 || box.height < 1) continue;
    e.focus({preventScroll: true});
    if (document.activeElement !== e) continue;
    const style = getComputedStyle(e);
    const colour = rgba(style.outlineColor), around = background(e.parentElement);
    const contrast = colour && style.outlineStyle !== "none" ? ratio(over(colour, around), around) : 0;
    if (!e.matches(":focus-visible") || parseFloat(style.outlineWidth) < 2 || contrast < 3) {
      const name = (e.getAttribute("aria-label") || e.textContent || e.name || "").trim().slice(0, 30);
      const kind = `${e.tagName.toLowerCase()}${e.classList.length ? "." + e.classList[0] : ""}`;
      problems.push(`${kind} "${name}": outline ${style.outlineStyle} ${style.outlineWidth}, ${contrast.toFixed(2)}:1`);
    }
  }
  document.activeElement?.blur();
  return problems;
}"""
)

OPEN_DETAILS = "() => document.querySelectorAll('article details:not([open])').forEach((d) => { d.open = true; })"

# axe-core's rules of WCAG 2.0, 2.1 and 2.2, levels A and AA: the serious and critical violations. Light, all of
# them; dark, the ones whose outcome depends on the colours (the page, its layout and its markup are the same in
# both schemes, and axe takes a second or more a page).
AXE_RULES = {
    "light": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa"]},
    "dark": {"type": "rule", "values": ["color-contrast", "link-in-text-block"]},
}
AXE_RUN = r"""async (runOnly) => {
  const result = await axe.run(document, {runOnly, resultTypes: ["violations"]});
  return result.violations.filter((v) => ["serious", "critical"].includes(v.impact)).map((v) => {
    const node = v.nodes[0], why = (node.failureSummary || "").split("\n").slice(1, 2).join("").trim();
    return `${v.id} (${v.impact}, ${v.nodes.length}×): ${v.help}; ${node.target.join(" ")}: ${why}`;
  });
}"""

AXE_PINS = REPO / "tests" / "axe"  # package.json and package-lock.json: axe-core's version and the hash npm checks
AXE_HOME = REPO / ".cache" / "axe-core"  # where `npm ci` installs it, here and in .ci/run


def install_axe(npm: str) -> Path:
    """axe-core's script, installed by `npm ci` from the npm registry at the version and hash of the lock file
    (once: again only when the lock file changes)."""
    script = AXE_HOME / "node_modules" / "axe-core" / "axe.min.js"
    lock = (AXE_PINS / "package-lock.json").read_text()
    installed = AXE_HOME / "package-lock.json"
    if script.exists() and installed.exists() and installed.read_text() == lock:
        return script
    AXE_HOME.mkdir(parents=True, exist_ok=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(AXE_PINS / name, AXE_HOME / name)
    command = [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"]
    proc = subprocess.run(command, cwd=AXE_HOME, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and script.exists(), f"npm ci of axe-core failed:\n{proc.stdout}\n{proc.stderr}"
    return script


@pytest.fixture(scope="module")
def axe_core() -> Path | None:
    """axe-core's script, or None where npm is missing (never on CI: .ci/run installs it)."""
    npm = shutil.which("npm")
    if not npm:
        if os.environ.get("CI"):
            pytest.fail("npm is missing on CI: install Debian's npm (apt-get install -y npm) for axe-core")
        return None
    return install_axe(npm)


class Audit:
    """What one pass over every page found, by kind: {kind: {page: [problem, ...]}}."""

    def __init__(self, screen: str, scheme: str):
        self.screen, self.scheme = screen, scheme
        self.found: dict[str, dict[str, list[str]]] = {}
        self.errors: list[str] = []
        self.outside: list[str] = []

    def add(self, kind: str, page: str, problems: list[str]) -> None:
        if problems:  # each problem once, with how often it occurs
            self.found.setdefault(kind, {})[page] = [
                f"{x} (×{problems.count(x)})" if problems.count(x) > 1 else x for x in dict.fromkeys(problems)
            ]

    def report(self, kind: str) -> str:
        pages = self.found.get(kind, {})
        return f"{self.screen}, {self.scheme}:\n" + "\n".join(f"{p}: {x}" for p, x in pages.items())


@pytest.fixture(scope="module", params=[(s, c) for s in SCREENS for c in SCHEMES], ids="-".join)
def audit(request, chromium, server, axe_core) -> Audit:
    """Every page on a 390 px phone (touch) or a 1280 px desktop, light or dark, each check run on it once."""
    screen, scheme = request.param
    width, height = SCREENS[screen]
    visit = Visit(chromium, server, color_scheme=scheme, viewport=(width, height), touch=screen == "phone")
    if axe_core:
        visit.context.add_init_script(path=str(axe_core))
    result = Audit(screen, scheme)
    try:
        for path in all_pages():
            page, name = visit.open(path), path or "home"
            page.wait_for_timeout(50)  # the neuron playground picks its layout after load
            layout = page.evaluate(LAYOUT, AA)
            if screen == "desktop":
                scales = page.eval_on_selector_all(
                    "article .bp-graph > svg",
                    f"els => {SHOWN}(els).map(e => e.getBoundingClientRect().width / e.width.baseVal.value)",
                )
                layout += [f"graph drawn at {scale:.2f} of its size" for scale in scales if scale < 0.7]
                result.add("code", name, page.evaluate(CLIPPED_CODE))
            result.add("layout", name, layout + zoom_check(page, touch=screen == "phone"))
            result.add("reading", name, page.evaluate(READING, SMALLEST_TEXT_PX))
            result.add("described", name, page.evaluate(DESCRIBED))
            page.evaluate(OPEN_DETAILS)  # what one click shows: the hints, the deep dives, their code
            result.add("contrast", name, page.evaluate(TEXT_CONTRAST, AA))
            if axe_core:
                result.add("axe", name, page.evaluate(AXE_RUN, AXE_RULES[scheme]))
            page.keyboard.press("Tab")  # from now on focus is the keyboard's: :focus-visible
            result.add("focus", name, page.evaluate(FOCUS_RINGS))
        result.errors, result.outside = list(visit.errors), list(visit.outside)
    finally:
        visit.close()
    return result


def test_every_page_fits_reads_and_zooms(audit):
    """On every page, on a 390 px phone (touch) and a 1280 px desktop, light and dark: no sideways scrolling,
    no figure outside the column, no formula cut (what scrolls is shaded), the contrast of the figures' marks,
    and a zoomed figure larger than the column. No console error, no request to another host."""
    assert "layout" not in audit.found, audit.report("layout")
    assert not audit.errors, audit.errors
    assert not audit.outside, audit.outside


def test_every_page_passes_axe(audit, axe_core):
    """axe-core (from the npm registry, tests/axe/) over every page: no serious or critical violation of
    WCAG 2.2's A and AA rules (in dark mode, of those that depend on the colours)."""
    if axe_core is None:
        pytest.skip("npm is not installed (apt-get install -y npm): axe-core, from the npm registry, did not run")
    assert "axe" not in audit.found, audit.report("axe")


def test_all_text_has_contrast(audit):
    """Every text shown, every token of the code included, at 4.5:1 on its background (3:1 large): axe-core
    leaves out what it cannot read for sure, this measures each element the page paints text with."""
    assert "contrast" not in audit.found, audit.report("contrast")


def test_every_control_shows_a_focus_ring(audit):
    """Every link, button, slider, summary and figure the keyboard reaches shows a ring of 2 px at 3:1."""
    assert "focus" not in audit.found, audit.report("focus")


def test_every_figure_reads_and_every_table_fits(audit):
    """No figure's text, the playground's and the plots' superscripts included, below 9 CSS px; no table that
    scrolls sideways or leaves the column."""
    assert "reading" not in audit.found, audit.report("reading")


def test_every_graph_description_names_its_operations(audit):
    assert "described" not in audit.found, audit.report("described")


# On a desktop: every line of every code block fits its box (nothing to scroll to, no instruction hidden).
CLIPPED_CODE = r"""() => [...document.querySelectorAll("article pre > code")]
  .filter((code) => code.getBoundingClientRect().width && code.scrollWidth > code.clientWidth + 1)
  .map((code) => {
    const longest = code.textContent.split("\n").reduce((a, b) => (b.length > a.length ? b : a), "");
    return `${code.scrollWidth} px in ${code.clientWidth}: ${longest.trim().slice(0, 80)}`;
  })"""


def test_no_code_line_is_clipped_on_a_desktop(audit):
    """At 1280 px every line of the stubs and of the pages' code fits its box: the stubs' docstrings and TODO
    lines are wrapped where they are generated, the pages' code (set-up commands, the reference's listing) is
    written to the column, and lesson 0's grader runs keep to the scorecard's 72 columns (the grader wraps a
    check's title and hint there)."""
    if audit.screen != "desktop":
        pytest.skip("code scrolls sideways on a phone: its lines are checked at 1280 px")
    assert "code" not in audit.found, audit.report("code")
