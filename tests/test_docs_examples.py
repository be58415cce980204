"""Every ```` ```pycon ```` block of the book runs, with `doctest`, exactly as printed.

One test per block, named `chapters/<page>.md:<line>`. Each block starts from empty
globals, so it must import what it uses. Blocks of chapter N's page carry the `chN` marker.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(?P<indent>[ \t]*)```pycon\b")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def pycon_blocks(path: Path) -> list[tuple[int, str]]:
    """The `(line, text)` of every pycon block of a Markdown page, indentation removed."""
    blocks, lines = [], path.read_text(encoding="utf-8").splitlines()
    start = indent = None
    for number, line in enumerate(lines, 1):
        match = FENCE.match(line)
        if start is None and match:
            start, indent, body = number, match["indent"], []
        elif start is not None and line.strip() == "```":
            blocks.append((start, "\n".join(body) + "\n"))
            start = None
        elif start is not None:
            body.append(line.removeprefix(indent))
    return blocks


def _chapter_marks(path: Path) -> list[pytest.MarkDecorator]:
    prefix = re.match(r"(\d+)-", path.name)
    return [getattr(pytest.mark, f"ch{int(prefix[1])}")] if prefix else []


def collect() -> list:
    params = []
    for path in sorted((ROOT / "chapters").rglob("*.md")):
        relpath = path.relative_to(ROOT).as_posix()
        for line, text in pycon_blocks(path):
            params.append(pytest.param(relpath, line, text, id=f"{relpath}:{line}", marks=_chapter_marks(path)))
    return params


BLOCKS = collect()


def test_the_book_has_examples():
    assert BLOCKS, "no ```pycon block found under chapters/; the chapters' examples are part of the tests"


@pytest.mark.parametrize(("relpath", "line", "text"), BLOCKS)
def test_example(relpath, line, text):
    test = doctest.DocTestParser().get_doctest(text, {}, f"{relpath}:{line}", str(ROOT / relpath), line)
    report = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    result = runner.run(test, out=report.append)
    assert result.attempted, f"{relpath}:{line}: the pycon block has no `>>>` example"
    assert not result.failed, (
        f"{relpath}:{line}: the example does not run as printed (each block starts from empty "
        f"globals, so it must import what it uses):\n"
    ) + "".join(report)
