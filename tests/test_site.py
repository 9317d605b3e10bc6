"""The course site, opened page by page in a real headless browser.

Builds the site once (`mkdocs build --strict` into a temporary folder), serves
it on 127.0.0.1, and opens every page in Debian's Chromium driven by
Playwright, checking what a learner would see: the maths typeset as MathML,
every figure drawn, the task headings, hints and commands, the syllabus's
numbers, the zoom of a figure, the search, no console error, and no request
to any host but 127.0.0.1.

Chromium is Debian's package (`apt-get install -y chromium`), never a browser
downloaded by `playwright install`. Without it the browser tests are skipped,
unless the environment variable CI is set: then they fail.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

from autograder import registry

REPO = Path(__file__).resolve().parent.parent
COURSE = REPO / "course"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
UNFINISHED = "This page is being written"  # the note of a stub page: exempt from the content checks

# Every number of the syllabus, as the page prints it (the code on the page computes each one).
NUMBERS: dict[int, list[str]] = {
    1: ["f(3.0) = 20.0", "f on 40 points from -5.0 to 4.75, step 0.25", "(f(x + h) - f(x)) / h = 14.00000009",
        "exact 6x - 4          = 14.0", "x = 0.6666666666666666", "slope ≈ 0.000000", "slope ≈ -22.000000",
        "d = 4.0", "∂d/∂a ≈ -3.000000", "∂d/∂b ≈ 2.000000", "∂d/∂c ≈ 1.000000"],
    2: ["Value(data=2.0)", "d = Value(data=4.0)", "spelled out: Value(data=4.0)", "Value(data=-6.0)",
        "made by '+'", "made by '*'", "a + 1 = Value(data=3.0)"],
    3: ["a = 2.0", "b = -3.0", "c = 10.0", "e = -6.0", "d = 4.0", "f = -2.0", "L = -8.0", "7 nodes", "6 edges",
        "data -8.0000 | grad 0.0000"],
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
    assert not loose, "Python blocks that never run (add exec=\"true\"):\n" + "\n".join(loose)


def test_one_page_per_lesson():
    pages = sorted(p.name for p in COURSE.glob("*.md") if p.name != "index.md")
    assert pages == sorted(Path(lesson.page).name for lesson in registry.LESSONS)


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
def built_site(tmp_path_factory, chromium) -> Path:
    site = tmp_path_factory.mktemp("site")
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                          cwd=REPO, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, f"mkdocs build --strict failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return site


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

    def __init__(self, browser, base: str, color_scheme: str = "light"):
        self.base = base
        self.outside: list[str] = []
        self.errors: list[str] = []
        self.context = browser.new_context(viewport={"width": 1280, "height": 900}, color_scheme=color_scheme)
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

    # figures: inline SVGs with a size, images decoded
    figures = page.eval_on_selector_all(
        "article .bp-figure svg",
        "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.width, r.height, e.querySelectorAll('*').length]; })")
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
        assert f"TODO(task {task.id})" in content or f"Also task {task.id}:" in content, f"task {task.id}: no stub shown"
        assert f"pytest autograder --task {task.id}" in text
    if lesson.tasks:
        assert f"pytest autograder --lesson {lesson.number}" in text
        assert page.locator("article .admonition.question").count() >= 1, "no 'your turn' box"

    if finished(lesson):
        assert figures or images, "a lesson page needs at least one figure"
        assert "Check yourself" in text and page.locator("article details.question").count() >= 1
        missing = [n for n in NUMBERS.get(lesson.number, []) if n not in text]
        assert not missing, f"syllabus numbers missing from the page: {missing}"

    assert not visit.errors, visit.errors
    assert not visit.outside, f"requests left 127.0.0.1: {visit.outside}"


def test_home_page_lists_every_lesson(visit):
    page = visit.open("")
    links = page.eval_on_selector_all("article table a", "els => els.map(e => e.getAttribute('href'))")
    for lesson in registry.LESSONS:
        assert any(link.rstrip("/").endswith(lesson.slug) for link in links), f"lesson {lesson.number} not linked"
    nav = page.eval_on_selector_all(".md-nav--primary > .md-nav__list > .md-nav__item > a",
                                    "els => els.map(e => e.textContent.trim())")
    assert nav[1:] == [f"{lesson.number} · {lesson.title}" for lesson in registry.LESSONS], nav
    assert not visit.errors and not visit.outside


def test_lesson_0_shows_a_fresh_clones_scorecard(visit):
    page = visit.open(page_path(registry.lesson(0)))
    text = page.text_content("article")
    assert "Scorecard: exercises/" in text
    assert "not started" in text and "Next: task 1.1" in text
    assert "What went wrong" in text and "failed" in text  # the example with a deliberate bug


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
            "article .bp-figure svg text",
            "els => els.slice(0, 5).map(e => getComputedStyle(e).fill)")
        body = page.eval_on_selector("article", "e => getComputedStyle(e).color")
        assert colours and all(c == body for c in colours), (colours, body)
        assert not v.errors and not v.outside
    finally:
        v.close()


def test_search_finds_a_lesson(visit):
    page = visit.open("")
    page.keyboard.press("/")  # Material's shortcut that focuses the search box
    box = page.locator("input.md-search__input")
    box.wait_for(state="visible", timeout=5000)
    box.fill("accumulation")
    hit = page.locator(".md-search-result__item a[href*='07-accumulation']").first
    hit.wait_for(state="visible", timeout=10000)
    assert not visit.errors and not visit.outside
