"""The student edition's words: each page's as the edition shows it, and the rule that keeps the reference out.

A page of the course says some things that only the full course can (the reference runs under the learner's code,
and is asked again when a check fails). Its data holds those sentences and what the edition says instead
(`[[edition]]`: a lesson's in `data/NN-slug.toml`, any other page's in `data/pages/NAME.toml`); `edition_page`
makes the edition's page from them, and nothing else rewrites a page.

The rule: the words an edition's page shares with the course never speak of the reference, which an edition does
not have; only a sentence written for the edition may (`shared_mentions`). `python -m autograder dev check` holds
every page the edition ships to it, and the edition's test holds the built edition to it.
"""

from __future__ import annotations

import re

from autograder.course import registry

# the site's pages an edition leaves out, with the folders of their assets: about the reference, the hidden checks,
# the graders that use them and the repository's tests, none of which an edition has
PAGES_LEFT_OUT = ("course/guides/instructors/", "course/guides/maintainers/", "course/assets/class-report")

# the reference solution by name; "reference count" and "reference cycle" are Python's memory, which lesson 13 teaches
MENTIONS_REFERENCE = re.compile(r"\breference(?![\s*]+(?:count|cycle))", re.I)


def page_data(name: str, lessons=None, pages=None) -> registry.Lesson | registry.Page:
    """What the data says of the page `course/NAME` (`12-classifier.md`, `guides/grading.md`): its lesson's or its
    page's (`.edition`, the sentences; `.data`, their file), or a page with none yet, naming the file they go in.
    `lessons` and `pages` default to the course's own (`dev check` passes those of the copy it checks)."""
    lessons = registry.LESSONS if lessons is None else lessons
    lesson = next((x for x in lessons if f"{x.slug}.md" == name), None)
    if lesson:
        return lesson
    pages = registry.pages() if pages is None else pages
    return next((p for p in pages if f"{p.name}.md" == name), None) or registry.Page(name.removesuffix(".md"))


def edition_page(name: str, text: str) -> str:
    """The page `course/NAME` as the edition shows it, from the sentences its data holds."""
    data = page_data(name)
    return edition_text(text, data.edition, f"course/{name}", data.data)


def edition_text(text: str, replaced, page: str = "the page", data: str = "its data", said=None) -> str:
    """A page's text with each (course, edition) sentence of `replaced` said the edition's way (an empty one leaves
    the words out, with the rest of their line when nothing else is on it: a table's row). `said(sentence)` is
    what goes in a sentence's place (by default, the sentence itself)."""
    for course, edition in replaced:
        pattern = registry.words(course).pattern
        if not edition:  # a row left out: its indentation and line break too
            pattern = rf"(?m)^[ \t]*{pattern}[ \t]*\n?|{pattern}"
        text, found = re.subn(pattern, lambda _, s=edition: said(s) if said else s, text, count=1)
        if not found:
            raise RuntimeError(f"{page} no longer says {course!r}: update [[edition]] in {data}")
    return text


def shared_mentions(text: str, replaced) -> list[tuple[int, str]]:
    """Where the words an edition's page shares with the course's (`text` less the sentences of `replaced`) name the
    reference: (line, that line)."""
    shared = edition_text(text, replaced, said=lambda sentence: "\n" * sentence.count("\n"))  # lines keep numbers
    lines = shared.splitlines()
    found = [shared.count("\n", 0, m.start()) for m in MENTIONS_REFERENCE.finditer(shared)]
    return [(i + 1, lines[i].strip()) for i in found]


def shipped(page: str) -> bool:
    """Whether the edition ships `course/PAGE` (`guides/grading.md` is, `guides/instructors/...` is not)."""
    return not f"course/{page}".startswith(PAGES_LEFT_OUT)
