"""The student edition ships no reference code in any form and no hidden checks, and still grades itself."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.course import registry
from autograder.course.edition_words import MENTIONS_REFERENCE, edition_page
from autograder.course.regions import parse
from autograder.export.edition import LEFT_OUT, readme, shared_readme_section
from autograder.export.recorded_examples import HOW_EXAMPLES_RUN_IN_EDITION
from autograder.grading.scorecard import NO_REFERENCE_TO_ASK
from autograder.jupyter.explorer import MATCHES_RECORDED

from .conftest import REPO, in_edition


def solution_lines() -> dict[str, str]:
    """The lines of code a learner writes (over 30 characters), as the reference has them, with their task."""
    answers = {}
    for path in (REPO / "solutions").glob("*.py"):
        lines = path.read_text().splitlines()
        for region in parse(path.read_text(), path.stem):
            answers |= {line.strip(): region.task for line in lines[region.begin : region.end - 1]}
    return {line: task for line, task in answers.items() if len(line) > 30}


def text_of(path: Path) -> str:
    """What a file says: a JSON file's (a notebook's) strings decoded, one a line; any other file as text, with a
    scenario's `impl.` and `impl.train.` taken away (`impl.train.sgd_step(...)` is a solution's `sgd_step(...)`)."""
    raw = path.read_text(errors="replace")
    if path.suffix in (".json", ".ipynb"):
        try:
            found, todo = [], [json.loads(raw)]
        except ValueError:
            return raw
        while todo:
            item = todo.pop()
            if isinstance(item, str):
                found.append(item)
            elif isinstance(item, (list, dict)):
                todo.extend(item.values() if isinstance(item, dict) else item)
        raw = "\n".join(found)
    return re.sub(r"\bimpl\.(?:\w+\.)?", "", raw)


def test_no_reference_code_in_any_form_and_no_hidden_check(edition):
    """No file of the edition holds a line of a task's solution, as the held-out check reads them (a line over 30
    characters): not the stubs, the data, the site, nor an oracle of the grader's (its checks, its kit, its
    worker's sweep). Lines a stub's docstring or a page teaches are the course's to show."""
    assert not [p for p in (edition / "solutions").rglob("*") if p.is_file()]
    assert not list(edition.rglob("*.pyc")) and not list(edition.rglob("*.pickle"))
    taught = "\n".join(p.read_text() for p in [*(REPO / "exercises").glob("*.py"), *(edition / "course").glob("*.md")])
    answers = {line: task for line, task in solution_lines().items() if line not in taught}
    found = {}
    for path in sorted(p for p in edition.rglob("*") if p.is_file() and ".git" not in p.parts):
        text = text_of(path)
        hits = sorted(f"task {task}: {line}" for line, task in answers.items() if line in text)
        if hits:
            found[str(path.relative_to(edition))] = hits
    assert found == {}, found
    for path in (edition / "course" / "_build" / "executed").glob("*.json"):  # what the pages' blocks printed (their
        printed = "\n".join(r["output"] for r in json.loads(path.read_text())["results"])  # code is the pages')
        assert not [line for line in solution_lines() if line in printed], path  # the recap prints the engine
    for test_file in (edition / "autograder" / "lessons").glob("test_*.py"):
        assert "pytest.mark.hidden" not in test_file.read_text(), test_file.name
    assert not (edition / "tests").exists()
    assert (edition / "exercises" / "engine.py").read_text() == (REPO / "exercises" / "engine.py").read_text()
    # the recap page, which shows the reference engine in the full course, says it is not there
    recap = (edition / "site" / "recap" / "index.html").read_text()
    assert "Not in this edition" in recap and "self.grad +=" not in recap


# a learner-facing text that imports the reference by its name, and the solution markers' words
IMPORTS_SOLUTIONS = re.compile(r"\bfrom\s+solutions(?:\.\w+)*\s+import\b|\bimport\s+solutions\b")
MARKERS = ("BEGIN SOLUTION", "END SOLUTION")
# the grader's own code that must recognise the markers: `regions.py` is their one grammar (the course's grader
# and exports read the task regions through it, so an edition keeps the same module rather than a fork of it),
# and `check.py` says where a copy's markers disagree with its data; neither is a text a learner reads to learn
MARKER_READERS = ("autograder/course/regions.py", "autograder/course/check.py")


def learner_texts(edition: Path) -> dict[str, str]:
    """What a learner reads in the edition: its pages' Markdown, README, the built site's text (HTML without its
    tags, and its search index), the notebooks' cells and the lessons' check files (their docstrings)."""
    paths = [
        *(edition / "course").rglob("*.md"),
        edition / "README.md",
        *(edition / "exercises" / "notebooks").glob("*.ipynb"),
        *(edition / "autograder" / "lessons").glob("test_*.py"),
        *(edition / "site").rglob("*.html"),
        edition / "site" / "search" / "search_index.json",
    ]
    texts = {}
    for path in paths:
        text = text_of(path)
        if path.suffix == ".html":
            text = html.unescape(re.sub(r"<[^>]+>", "", text))
        texts[path.relative_to(edition).as_posix()] = text
    return texts


def test_the_edition_imports_what_the_learner_has_and_never_names_the_markers(edition):
    """No learner-facing text of the edition imports `solutions` (its pages import `exercises`, what a learner has),
    and no shipped file but the grader's marker readers (`MARKER_READERS`) holds a solution marker's words: not the
    recap, not the maintainers' CONTRIBUTING.md (left out), not the site's search index."""
    texts = learner_texts(edition)
    assert len([name for name in texts if name.startswith("course/") and name.endswith(".md")]) >= 17
    assert any(name.startswith("site/") for name in texts) and any(name.endswith(".ipynb") for name in texts)
    importing = {name: IMPORTS_SOLUTIONS.findall(text) for name, text in texts.items()}
    assert {name: found for name, found in importing.items() if found} == {}
    assert "from exercises.nn import Neuron" in texts["course/10-nn.md"]
    assert "from exercises.nn import" in texts["site/10-nn/index.html"]  # the site shows what the page says
    assert not (edition / "CONTRIBUTING.md").exists()
    named = sorted(
        path.relative_to(edition).as_posix()
        for path in edition.rglob("*")
        if path.is_file() and ".git" not in path.parts and any(m in text_of(path) for m in MARKERS)
    )
    assert named == sorted(MARKER_READERS)


def written_for_the_edition() -> list[str]:
    """Every sentence written for the student edition, in the words a reader sees: the pages' `[[edition]]` sentences
    (lessons' and other pages'), the edition's README around the section it shares with the course's, what its
    notebooks and its scorecard say in place of the course's."""
    said = [edition for lesson in registry.LESSONS for _, edition in lesson.edition]
    said += [edition for page in registry.pages() for _, edition in page.edition]
    course_readme = shared_readme_section((REPO / "README.md").read_text())
    said += readme("").split(course_readme)
    notebooks = [HOW_EXAMPLES_RUN_IN_EDITION, MATCHES_RECORDED]
    return [plain(s) for s in [*said, *notebooks, " ".join(NO_REFERENCE_TO_ASK)] if s.strip()]


def plain(text: str) -> str:
    """Words as a reader sees them, in Markdown or on the site: no code or emphasis marks, links as their text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return " ".join(re.sub(r"[`*]", "", text).split())


def foreign_mentions(text: str, written: list[str]) -> list[str]:
    """The mentions of the reference in `text` that no sentence of `written` holds: each with two words either side
    (or four after, at a sentence's start; four before, at its end) must be words of one of them."""
    text = plain(text)
    found = []
    for mention in MENTIONS_REFERENCE.finditer(text):
        before = text[: mention.start()].split()
        after = text[mention.start() :].split()
        windows = [before[-2:] + after[:3], after[:5], before[-4:] + after[:1]]
        if not any(" ".join(w) in s for w in windows for s in written):
            found.append(" ".join(before[-6:] + after[:6]))
    return found


def test_the_edition_names_the_reference_only_in_sentences_written_for_it(edition):
    """What a learner of the edition reads (its pages' Markdown, the built site with what its blocks printed, the
    notebooks, the README, each check's title, hint and inputs) names the reference only in a sentence written for
    the edition (`written_for_the_edition`): never in words it shares with the course, which a new page cannot
    forget, since `dev check` holds the course's pages to the same rule. Python's "reference count" and "reference
    cycle" (lesson 13) are not the reference."""
    written = written_for_the_edition()
    texts = learner_texts(edition)
    for path in (edition / "autograder" / "lessons").glob("test_*.py"):  # what the scorecard says of each check
        texts[path.relative_to(edition).as_posix()] = "\n".join(check_words(path.read_text()))
    assert sum("reference" in t for t in texts.values()) >= 10  # the edition's own sentences say it
    found = {name: foreign_mentions(text, written) for name, text in texts.items()}
    assert {name: f for name, f in found.items() if f} == {}
    assert "reference counting" in plain(texts["site/13-further/index.html"])  # lesson 13's is Python's
    site = {name: text for name, text in texts.items() if name.startswith("site/")}
    assert not [name for name, text in site.items() if re.search(r"\bsolutions/|--impl solutions", text)]
    # the rule finds the course's words where the edition would show them
    assert foreign_mentions("A later lesson runs your new code on top of the *reference* version of", written)
    assert not foreign_mentions("This edition has no `reference` code, so", written)


def check_words(source: str) -> list[str]:
    """What the grader shows of a lesson file's checks: every string its check functions and their markers hold
    (titles, hints, inputs, labels), not its module's or helpers' docstrings, which a maintainer reads."""
    import ast

    tree = ast.parse(source)
    checks = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")]
    return [
        node.value
        for check in checks
        for node in ast.walk(check)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_the_edition_lists_no_command_that_needs_the_reference(edition):
    """`python -m autograder --help` in the edition lists the learners' commands and the instructors' that work
    without `solutions/`: no maintainers' command, no export (of a bundle, an edition, nbgrader's masters)."""
    env = {**os.environ, "PYTHONPATH": str(edition)}
    shown = subprocess.run(
        [sys.executable, "-m", "autograder", "--help"], cwd=edition, env=env, capture_output=True, text=True
    )
    assert shown.returncode == 0 and "for learners:" in shown.stdout, shown.stderr
    assert "dev " not in shown.stdout and "export student-edition" not in shown.stdout, shown.stdout
    assert "solutions/" not in shown.stdout and "for maintainers" not in shown.stdout
    export = subprocess.run(
        [sys.executable, "-m", "autograder", "export", "--help"], cwd=edition, env=env, capture_output=True, text=True
    )
    assert "(classroom)" in export.stdout and "Gradescope" not in export.stdout.replace("\n", " "), export.stdout
    assert "solutions" not in (edition / "pyproject.toml").read_text()


def test_the_edition_is_a_course_of_its_own(edition, python, reference_run, tmp_path):
    """In an environment that holds only the edition: the stubs grade to zero, the site builds strictly from the
    results it ships (running nothing), and a learner's correct files grade to full marks and match the reference's
    recorded answers in every notebook."""
    found = in_edition(edition, python, "-c", "import autograder; print(autograder.__file__); import solutions")
    assert found.stdout.startswith(str(edition)) and "No module named 'solutions'" in found.stderr, found
    visible = [r for r in reference_run.results["extra_data"]["results"] if not r["hidden"]]
    fresh = tmp_path / "fresh.json"
    in_edition(edition, python, "-m", "pytest", "autograder", "--results-json", str(fresh))
    data = json.loads(fresh.read_text())
    assert data["score"] == 0 and len(data["extra_data"]["results"]) == len(visible)
    assert set(data["extra_data"]["status"].values()) == {"not started"}

    site = in_edition(edition, python, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"))
    assert site.returncode == 0 and "course: running" not in site.stderr, site.stderr[-3000:]
    assert "1.1  forward_difference" in (tmp_path / "site" / "00-welcome" / "index.html").read_text()

    stubs = tmp_path / "stubs"
    shutil.copytree(edition / "exercises", stubs)
    try:
        for path in (REPO / "solutions").glob("*.py"):  # the learner's correct files, where the learner keeps them
            shutil.copy(path, edition / "exercises" / path.name)
        solved = tmp_path / "solved.json"
        in_edition(edition, python, "-m", "pytest", "autograder", "--results-json", str(solved))
        data = json.loads(solved.read_text())
        full = (
            data["extra_data"]["max_score"] + data["extra_data"]["bonus_max"]
        )  # full marks, and the bonus as extra credit
        assert data["score"] == full == sum(r["points"] for r in visible), data["output"][-3000:]
        notebooks = sorted((edition / "exercises" / "notebooks").glob("*.ipynb"))
        run = in_edition(
            edition,
            python,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "notebook",
            "--execute",
            "--ExecutePreprocessor.kernel_name=edition",
            "--output-dir",
            str(tmp_path / "notebooks"),
            *map(str, notebooks),
        )
        assert run.returncode == 0, run.stderr[-3000:]
        compared = 0
        for notebook in notebooks:
            said = _markdown_outputs(tmp_path / "notebooks" / notebook.name)
            verdicts = [line for line in said if "the reference" in line and line.startswith(("✓", "✗"))]
            assert all(v == MATCHES_RECORDED for v in verdicts), (notebook, said)
            assert not [line for line in said if "raised" in line or "solutions/" in line], (notebook, said)
            compared += len(verdicts)
        assert compared >= 10  # every example of every notebook (lesson 13's has none)
    finally:
        shutil.rmtree(edition / "exercises")
        shutil.copytree(stubs, edition / "exercises")


def _markdown_outputs(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]
    return ["".join(o["data"]["text/markdown"]) for o in outputs if "text/markdown" in o.get("data", {})]


def test_the_edition_describes_itself(edition, reference_run):
    """Its README and lesson 0 show the edition's commands and its own fresh scorecard (no hidden checks in it)."""
    results = reference_run.results["extra_data"]["results"]
    visible = sum(r["points"] for r in results if r["task"] == "1.1" and not r["hidden"])
    assert visible < sum(r["points"] for r in results if r["task"] == "1.1")  # the two scorecards differ
    line = re.compile(rf"1\.1 +forward_difference +not started +0/{visible}\b")
    readme = (edition / "README.md").read_text()
    assert "--impl solutions" not in readme and "student edition" in readme and line.search(readme)
    assert "mkdocs serve" in readme and "site/" not in readme  # a clone has no site/: .gitignore drops it
    welcome = (edition / "site" / "00-welcome" / "index.html").read_text()
    assert line.search(html.unescape(re.sub(r"<[^>]+>", "", welcome))), "lesson 0 shows another scorecard"
    assert "earliest one to fix" in welcome and not PROMISE.search(" ".join(welcome.split()))  # the edition's page


def test_the_edition_ships_its_site_built_and_the_learners_workflow(edition):
    assert (edition / "site" / "08-operations" / "index.html").is_file()
    assert (edition / ".github" / "workflows" / "classroom.yml").is_file()
    assert not (edition / ".github" / "workflows" / "ci.yml").exists()


# what a page says when it promises that the reference runs under the learner's code (so a bug is charged once)
PROMISE = re.compile(
    r"costs? (?:you )?points (?:once|in lesson \d+ only)|on the reference engine|over the reference(?:'s)? "
    r"(?:`\w+`|engine|other pieces)|does\s+not\s+count\s+against\s+you",
    re.S,
)


def test_every_page_that_promises_a_bug_is_charged_once_says_otherwise_in_the_edition():
    """The edition's pages say what happens there instead (the earliest failing task first), wherever the course's
    promise the reference underneath."""
    promised = 0
    for page in shipped_pages():
        name = page.relative_to(REPO / "course").as_posix()
        text = " ".join(page.read_text().split())  # a sentence may break across lines
        promised += len(PROMISE.findall(text))
        edition_text = " ".join(edition_page(name, page.read_text()).split())
        assert not PROMISE.findall(edition_text), name
    assert promised >= 5  # lessons 0, 10, 12 and 14 say it, and the learners' guide


def shipped_pages() -> list[Path]:
    """The site's pages that a student edition ships (the instructors' and maintainers' guides stay behind)."""
    pages = sorted((REPO / "course").rglob("*.md"))
    return [p for p in pages if not p.relative_to(REPO).as_posix().startswith(LEFT_OUT)]


def test_the_edition_keeps_the_learners_guide_and_leaves_the_instructors_and_maintainers_out(edition):
    """Its site has the learners' page of the guides; no page, nav entry or screenshot of the instructors' and
    maintainers' guides, which are about what the edition does not have (the reference, hidden checks, tests)."""
    assert (edition / "site" / "guides" / "grading" / "index.html").is_file()
    assert (REPO / "course" / "guides" / "instructors" / "honest-grading.md").is_file()  # the course has them
    assert not (edition / "site" / "guides" / "instructors").exists()
    assert not (edition / "site" / "guides" / "maintainers").exists()
    assert not list((edition / "course").rglob("class-report*.png"))
    config = (edition / "mkdocs.yml").read_text()
    assert "For instructors" not in config and "For maintainers" not in config and "guides/grading.md" in config
    guide = html.unescape(re.sub(r"<[^>]+>", "", (edition / "site" / "guides" / "grading" / "index.html").read_text()))
    assert "--impl solutions" not in guide and "This edition has no reference code" in guide
    home = (edition / "site" / "index.html").read_text()
    assert "guides/instructors" not in home and "guides/grading/" in home  # the nav, as the edition has it


def test_the_learners_guide_says_otherwise_as_its_data_says_and_leaves_the_reference_row_out():
    """The guide's sentences are in `autograder/course/data/pages/guides/grading.toml`; an empty `edition` leaves a
    table's row out with its line, so the table goes on."""
    text = (REPO / "course" / "guides" / "grading.md").read_text()
    edition = edition_page("guides/grading.md", text)
    assert "`pytest autograder --impl solutions`" in text and "`pytest autograder --impl solutions`" not in edition
    assert "| one task | `pytest autograder --task 8.2` |\n| any folder laid out like" in edition
    assert "This edition has no reference code, so the checks of a task" in edition
    with pytest.raises(
        RuntimeError, match=r"update \[\[edition\]\] in autograder/course/data/pages/guides/grading\.toml"
    ):
        edition_page("guides/grading.md", text.replace("points once, where it is", "points once"))


def test_a_changed_promise_stops_the_export():
    """A page whose promise was reworded is not shipped with the course's wording: the export says what to update."""
    with pytest.raises(RuntimeError, match="no longer says"):
        edition_page("10-nn.md", "The grader runs your classes on the reference engine.")


def test_the_editions_readme_shares_the_section_the_courses_readme_marks_for_it():
    """No slicing at a heading: the README declares, in its own markup, the section both READMEs have."""
    from autograder.export.edition import readme, shared_readme_section

    course = (REPO / "README.md").read_text()
    shared = shared_readme_section(course)
    assert shared.startswith("## Quick start") and "<!--" not in shared
    assert shared in readme("(its scorecard)")
    with pytest.raises(RuntimeError, match="marks no section"):
        shared_readme_section(course.replace("<!-- edition: end -->", ""))
