"""The book builds with `mkdocs build --strict`: no broken link, anchor or snippet path."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.meta
def test_book_builds_strict(book_build):
    """The build itself is the session's one (tests/conftest.py), shared with the browser test."""
    problems = [line for line in book_build.stderr.splitlines() if not line.startswith("INFO")]
    assert book_build.returncode == 0, "`mkdocs build --strict` failed:\n" + "\n".join(problems)
    assert (book_build.site / "index.html").is_file(), "the build wrote no index.html"
    # Build-task markers are dropped from the code a chapter includes, and every marker
    # from the API pages' source listings (tests/book_hooks.py); the guides that explain
    # them keep the ones they write.
    site = book_build.site
    marked = {
        page.parent.relative_to(site).as_posix()
        for page in site.rglob("index.html")
        if re.search(r"--8&lt;-- \[", page.read_text(encoding="utf-8"))
    }
    assert marked == {"student-guide", "instructors"}


@pytest.mark.meta
def test_search_indexes_the_api_docstrings_not_their_source(book_build):
    """A search result shows the text of its section: the API pages' "Source code in" listings
    stay out of the index (tests/book_hooks.py), so a method's result shows its docstring."""
    index = json.loads((book_build.site / "search" / "search_index.json").read_text("utf-8"))
    texts = [doc["text"] for doc in index["docs"] if doc["location"].startswith("api/")]
    assert any("Make every user of this node use" in text for text in texts)
    # A line of replace_all_uses_with's body, and the listings' summary line.
    assert not [text for text in texts if "changed = list(self.users)" in text]
    assert not [text for text in texts if "Source code in" in text]


@pytest.mark.meta
def test_every_snippet_include_in_the_chapters_is_intact():
    """`--8<-- "path:name"` exactly: a formatter once rewrote it as `--8 < --"path:name"`,
    which the strict build accepts and the page shows as text instead of the code."""
    broken = [
        f"{page.relative_to(ROOT)}:{number}: {line.strip()}"
        for page in sorted((ROOT / "chapters").rglob("*.md"))
        for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1)
        if re.search(r"--8\s*<\s*--", line)
        and not re.fullmatch(r'\s*--8<-- "[^"]+"\s*', line)  # an include
        and not re.search(r"--8<-- \[(start|end):[\w-]+\]", line)  # a section marker
        and not re.search(r"--8<-- \[(task|end-task):[\d.]+\]", line)  # a build-task marker
    ]
    assert not broken, "snippet includes that pymdownx.snippets will not expand:\n" + "\n".join(
        broken
    )


@pytest.mark.meta
def test_no_name_lost_its_underscores_to_markdown_emphasis(book_build):
    """Markdown reads `__torch_function__` outside backticks as a bold "torch_function"
    (a task box's title did, from its task marker). A bold or italic word with an
    underscore in it is such a name: write it in backticks, or escape the underscores."""
    emphasised = re.compile(r"<(strong|em)>(\w*_\w*)</\1>")
    found = [
        f"/{page.parent.relative_to(book_build.site).as_posix()}: {match[0]}"
        for page in sorted(book_build.site.rglob("index.html"))
        for match in emphasised.finditer(page.read_text(encoding="utf-8"))
    ]
    assert not found, "names drawn as Markdown emphasis:\n" + "\n".join(found)
