"""Every ```` ```pycon ```` block of the book runs, with `doctest`, exactly as printed.

One test per page, named `chapters/<page>.md`. A page's blocks run in order in one
namespace, as a reader typing them into one Python session would: a block may use what an
earlier block of the same page imported or defined. Chapter N's page carries the `chN` marker.
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
        blocks = pycon_blocks(path)
        if blocks:
            params.append(pytest.param(relpath, blocks, id=relpath, marks=_chapter_marks(path)))
    return params


PAGES = collect()


@pytest.mark.meta
def test_the_book_has_examples():
    assert PAGES, (
        "no ```pycon block found under chapters/; the chapters' examples are part of the tests"
    )


class AsInAShell(doctest.OutputChecker):
    """Compares output as a Python shell prints it: doctest names the code it runs
    `<doctest name[n]>` where a shell says `<stdin>`, and the book shows what a reader sees
    (a trace error's `File "<stdin>", line 2, in clip`)."""

    def check_output(self, want: str, got: str, optionflags: int) -> bool:
        return super().check_output(want, as_in_a_shell(got), optionflags)

    def output_difference(self, example: doctest.Example, got: str, optionflags: int) -> str:
        return super().output_difference(example, as_in_a_shell(got), optionflags)


def as_in_a_shell(output: str) -> str:
    return re.sub(r"<doctest [^>]*\]>", "<stdin>", output)


@pytest.mark.parametrize(("relpath", "blocks"), PAGES)
def test_examples_of_page(relpath, blocks):
    namespace: dict = {}
    for line, text in blocks:
        test = doctest.DocTestParser().get_doctest(
            text, namespace, f"{relpath}:{line}", str(ROOT / relpath), line
        )
        report = []
        runner = doctest.DocTestRunner(checker=AsInAShell(), optionflags=FLAGS)
        result = runner.run(test, out=report.append, clear_globs=False)
        assert result.attempted, f"{relpath}:{line}: the pycon block has no `>>>` example"
        assert not result.failed, (
            f"{relpath}:{line}: the example does not run as printed (blocks of a page share one "
            f"namespace, in page order):\n"
        ) + "".join(report)
        namespace = test.globs
