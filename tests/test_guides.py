"""The site's guides (course/guides/): a section beside the lessons, for learners, instructors and maintainers.

- Each reader's pages sit in that reader's part of the nav, and a student edition leaves out exactly the parts it
  leaves the files of out (its nav names no page it does not ship, and every page it ships).
- A test or benchmark that the README, CONTRIBUTING.md or a guide cites as the evidence of a claim exists: the file,
  and the test function when one is named.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from autograder.export.edition import LEFT_OUT, LEFT_OUT_OF_NAV, edition_config

from .conftest import REPO

GUIDES = REPO / "course" / "guides"
PARTS = {"For instructors": "instructors", "For maintainers": "maintainers"}  # nav section -> folder of its pages


def pages_of(nav) -> list[str]:
    """Every page a nav (or a part of one) lists, in order."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in pages_of(value)]
    return [page for item in nav for page in pages_of(item)]


def section(nav: list, title: str):
    """The nav entries of the section `title`, at any depth (None when there is none)."""
    for item in nav:
        if isinstance(item, dict):
            for key, value in item.items():
                if key == title:
                    return value
                if isinstance(value, list) and (found := section(value, title)) is not None:
                    return found
    return None


def test_each_readers_pages_are_in_that_readers_part_of_the_guides_after_the_lessons():
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]
    guides = section(nav, "Guides")
    assert guides is not None and nav[-1] == {"Guides": guides}, "the guides are one section, after the lessons"
    listed = pages_of(guides)
    on_disk = sorted(p.relative_to(REPO / "course").as_posix() for p in GUIDES.rglob("*.md"))
    assert sorted(listed) == on_disk
    for title, folder in PARTS.items():
        assert sorted(pages_of(section(guides, title))) == [p for p in on_disk if p.startswith(f"guides/{folder}/")]
    assert "guides/grading.md" in pages_of(guides) and not any(
        "guides/grading.md" in pages_of(section(guides, title)) for title in PARTS
    )


def test_the_editions_nav_lists_exactly_the_pages_it_ships():
    assert set(LEFT_OUT_OF_NAV) == set(PARTS)
    nav = yaml.safe_load(edition_config((REPO / "mkdocs.yml").read_text()))["nav"]
    listed = pages_of(nav)
    shipped = sorted(
        p.relative_to(REPO / "course").as_posix()
        for p in (REPO / "course").rglob("*.md")
        if not p.relative_to(REPO).as_posix().startswith(LEFT_OUT)
    )
    assert sorted(listed) == shipped
    assert "guides/grading.md" in listed and not [
        p for p in listed if p.startswith(("guides/instructors/", "guides/maintainers/"))
    ]


# `tests/test_pool.py::test_a_zygote...`, `test_bad_submissions.py::test_...`, `python tests/benchmarks/bench_site.py`
CITED = re.compile(r"(?<![\w/])((?:tests/)?(?:benchmarks/)?(?:test|bench)_\w+\.py)(?:::(test_\w+))?")


def citations() -> list[tuple[str, str, str | None]]:
    """(where, file, test function or None) for every test or benchmark the prose names."""
    texts = [REPO / "README.md", REPO / "CONTRIBUTING.md", *sorted(GUIDES.rglob("*.md"))]
    return [
        (path.relative_to(REPO).as_posix(), match[1], match[2])
        for path in texts
        for match in CITED.finditer(path.read_text())
    ]


def test_every_test_and_benchmark_the_prose_cites_exists():
    cited = citations()
    assert len({(f, t) for _, f, t in cited if t}) >= 15  # the guides back their claims with tests by name
    missing = []
    for where, name, function in cited:
        name = name.removeprefix("tests/").removeprefix("benchmarks/")
        path = REPO / "tests" / ("benchmarks" if name.startswith("bench_") else "") / name
        if not path.is_file():
            missing.append(f"{where}: {name}")
        elif function and not re.search(rf"^def {function}\(", path.read_text(), re.M):
            missing.append(f"{where}: {name}::{function}")
    assert not missing, "cited but not found:\n" + "\n".join(missing)


def test_a_cited_test_always_names_its_file():
    """`::test_x` with no file before it cannot be checked (and was once cited in the wrong file)."""
    bare = [
        f"{path.relative_to(REPO)}: {m[0]}"
        for path in [REPO / "README.md", *GUIDES.rglob("*.md")]
        for m in re.finditer(r"(?<![\w.])::test_\w+", path.read_text())
    ]
    assert not bare, bare


def test_the_guides_link_a_screenshot_that_exists():
    """The class report's screenshots, kept in course/assets/, are shown where the instructors read about it."""
    page = GUIDES / "instructors" / "class-report.md"
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", page.read_text())
    assert len(images) == 2
    for image in images:
        assert (page.parent / image).resolve().is_file(), image
        assert Path(image).name.startswith("class-report")
