"""A chapter of the book as a Jupyter notebook, made from the chapter's own Markdown.

The chapters are the one source: the book's pages, the tested ```` ```pycon ```` examples
(tests/test_docs_examples.py) and the notebooks all come from `chapters/NN-*.md`. The
mkdocs hook `tests/notebook_hooks.py` puts each chapter's notebook in the site with a
download link; `tests/test_notebooks.py` executes every one of them.

A chapter becomes cells like this:

- prose becomes Markdown cells; code included with pymdownx.snippets
  (`--8<-- "path:section"`) is resolved from the real files, as the book does, with the
  build-task markers dropped (tests/book_hooks.py);
- each pycon block becomes code cells, split so that a cell ends at an example that
  prints something: that is the cell's output in the notebook, the expected output of
  the book, until the reader runs it;
- an admonition (`!!! note "Title"`) becomes a quotation headed by its title, a
  collapsed one (`??? success "Check"`) an HTML `<details>`; the code cells inside a
  collapsed one are collapsed too, so a "predict, then check" answer stays hidden until
  the reader opens it;
- a relative link points into `chapters/`, since the notebook runs from the root of a
  minifx checkout (its first code cell makes sure of that).

Usage: `python -m tests.notebooks OUT_DIR` writes every chapter's notebook to OUT_DIR.
"""

from __future__ import annotations

import argparse
import ast
import doctest
import html
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import markdown
import nbformat
from nbformat import v4

from tests.book_hooks import TASK_MARKER

ROOT = Path(__file__).resolve().parent.parent
# The chapters that become notebooks: `chapters/00-why-capture.md` to `09-limits.md`.
CHAPTER = re.compile(r"\d\d-[\w-]+\.md")
PYCON = re.compile(r"^(?P<indent>[ \t]*)```pycon\b")  # as tests/test_docs_examples.py reads it
FENCE = re.compile(r"^[ \t]*(?P<fence>`{3,}|~{3,})")
ADMONITION = re.compile(
    r'^(?P<indent>[ \t]*)(?P<mark>!!!|\?\?\?\+?|===)\s*(?P<kind>[\w-]*)\s*(?:"(?P<title>[^"]*)")?\s*$'
)
INCLUDE = re.compile(r'^[ \t]*--8<-- "[^"]+"\s*$')
# `[text](target)` or `![alt](target)` with a relative target: a page, a figure.
RELATIVE_LINK = re.compile(r"(\]\()(?![a-z][\w+.-]*:|/|#)")
# An image with attr_list attributes, `![alt](src){ width="480" }`: Jupyter's Markdown
# has no attribute lists and would show `{ width="480" }` as text, so it becomes <img>.
IMAGE_WITH_ATTRIBUTES = re.compile(
    r'!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)\{(?P<attributes>(?:\s*[\w-]+="[^"]*")+)\s*\}'
)

SETUP = """\
# Setup: the examples import minifx, examples/ and exercises/ from a minifx checkout, so
# this finds the checkout's root above the current folder and runs from there. Values
# print with repr(), as the book (and doctest, which tests the book) prints them.
%config PlainTextFormatter.pprint = False
import os as _os, pathlib as _pathlib, sys as _sys
_root = next((p for p in [_pathlib.Path.cwd(), *_pathlib.Path.cwd().parents]
              if (p / "minifx" / "__init__.py").is_file()), None)
if _root is None:
    raise RuntimeError("open this notebook inside a minifx checkout (see its first cell)")
if str(_root) not in _sys.path:
    _sys.path.insert(0, str(_root))
_os.chdir(_root)
del _os, _pathlib, _sys, _root"""

INTRO = """\
*This notebook is the chapter `{name}` of the minifx book, made from the page's own
source, whose examples are tested. Save it in your minifx checkout (the folder with
`Makefile` and `minifx/`) and run it with the course's Python (`.venv`, which `make test`
installs) as the kernel. Each code cell shows the output the book prints until you run
it; a collapsed cell is the answer to a question just above it: predict, then open it
and run it.*"""


@dataclass
class Cell:
    """One cell of a chapter's notebook.

    Attributes:
        kind: `"markdown"` or `"code"`.
        source: The cell's text (for a code cell, the examples without `>>>` and `...`).
        line: The chapter's line where the cell's pycon block starts (code cells).
        examples: The doctest examples of a code cell, whose last one may print.
        hidden: Whether a code cell sits in a collapsed admonition and starts collapsed.
    """

    kind: str
    source: str
    line: int = 0
    examples: list[doctest.Example] = field(default_factory=list)
    hidden: bool = False

    @property
    def want(self) -> str:
        """What the book prints for this cell: its last example's output or traceback."""
        return self.examples[-1].want if self.examples else ""

    @property
    def exc_msg(self) -> str | None:
        """The exception the last example raises, as doctest reads it, or None."""
        return self.examples[-1].exc_msg if self.examples else None


@dataclass
class _Box:
    """An admonition (or content tab) the parser is inside of."""

    body_indent: int
    mark: str
    title: str

    @property
    def collapsed(self) -> bool:
        return self.mark == "???"

    @property
    def details(self) -> bool:
        return self.mark.startswith("???")

    @property
    def quoted(self) -> bool:
        return self.mark == "!!!"


def code_cells(text: str, line: int, hidden: bool) -> list[Cell]:
    """A pycon block's examples as code cells, each ending at an example that prints.

    Jupyter shows what a cell prints and its last expression's value, so a cell may end
    only at an example with output (doctest's `want` or a traceback).
    """
    cells, examples = [], []
    for example in doctest.DocTestParser().get_examples(text):
        examples.append(example)
        if example.want or example.exc_msg is not None:
            cells.append(_code_cell(examples, line, hidden))
            examples = []
    if examples:
        cells.append(_code_cell(examples, line, hidden))
    return cells


def _code_cell(examples: list[doctest.Example], line: int, hidden: bool) -> Cell:
    source = "".join(example.source for example in examples).rstrip("\n")
    return Cell("code", source, line, list(examples), hidden)


class _Parser:
    """Walks a chapter's lines once, turning them into cells (see the module docstring)."""

    def __init__(self, snippets: markdown.preprocessors.Preprocessor) -> None:
        self.snippets = snippets
        self.cells: list[Cell] = []
        self.text: list[str] = []  # the Markdown cell being written
        self.boxes: list[_Box] = []
        self.fence: str | None = None  # the fence of the code block we are in, if any

    def parse(self, lines: list[str]) -> list[Cell]:
        number = 0
        while number < len(lines):
            number = self.line(lines, number)
        self.close_boxes(0)
        self.flush()
        return self.cells

    def line(self, lines: list[str], number: int) -> int:
        """Read the line at `number` (0-based) and return the number of the next one."""
        line = lines[number]
        if self.fence is None and line.strip():
            self.close_boxes(len(line) - len(line.lstrip()))
        if self.fence is None and (pycon := PYCON.match(line)):
            return self.pycon(lines, number, pycon["indent"])
        if self.fence is None and (box := ADMONITION.match(line)):
            self.open_box(box)
        elif INCLUDE.match(line):
            for included in self.snippets.run([line]):
                if not TASK_MARKER.match(included):
                    self.write(included)
        else:
            self.track_fence(line)
            self.write(line)
        return number + 1

    def track_fence(self, line: str) -> None:
        found = FENCE.match(line)
        if found and self.fence is None:
            self.fence = found["fence"]
        elif found and line.strip() == self.fence:
            self.fence = None

    def pycon(self, lines: list[str], start: int, indent: str) -> int:
        """Turn the pycon block starting at `start` into code cells; return the line after it."""
        end = start + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        body = "".join(line.removeprefix(indent) + "\n" for line in lines[start + 1 : end])
        hidden = any(box.collapsed for box in self.boxes)
        self.flush()
        self.cells.extend(code_cells(body, start + 1, hidden))
        return end + 1

    def open_box(self, box: re.Match) -> None:
        title = box["title"] if box["title"] is not None else box["kind"].capitalize()
        opened = _Box(len(box["indent"]) + 4, box["mark"], title)
        if opened.details:
            self.write_raw(f"<details><summary>{title}</summary>", "")
        self.boxes.append(opened)
        if not opened.details:
            self.write_raw(f"**{title}**", "")

    def close_boxes(self, indent: int) -> None:
        """Close the admonitions that a line indented by `indent` is no longer part of."""
        while self.boxes and indent < self.boxes[-1].body_indent:
            box = self.boxes.pop()
            if box.details:
                blank = [""] if self.text and self.text[-1] else []
                self.write_raw(*blank, "</details>", "")

    def write(self, line: str) -> None:
        """Add a line of the chapter, outside its admonitions' indentation, to the text."""
        indent = self.boxes[-1].body_indent if self.boxes else 0
        line = line[min(indent, len(line) - len(line.lstrip())) :]
        if self.fence is None and not FENCE.match(line):
            line = RELATIVE_LINK.sub(r"\1chapters/", line)
            line = IMAGE_WITH_ATTRIBUTES.sub(_html_image, line)
        self.write_raw(line)

    def write_raw(self, *lines: str) -> None:
        quote = "".join("> " for box in self.boxes if box.quoted)
        self.text.extend((quote + line).rstrip() for line in lines)

    def flush(self) -> None:
        """End the Markdown cell; the admonitions it is inside go on in the next one."""
        closing = ["", *("</details>" for box in self.boxes if box.details)]
        source = _drop_empty_details("\n".join(self.text + closing)).strip()
        if source:
            self.cells.append(Cell("markdown", source))
        self.text = []
        for box in list(self.boxes):
            if box.details:
                self.text.extend([f"<details><summary>{box.title}</summary>", ""])


def _html_image(image: re.Match) -> str:
    alt = html.escape(image["alt"])
    return f'<img src="{image["src"]}" alt="{alt}" {image["attributes"].strip()}>'


def _drop_empty_details(text: str) -> str:
    return re.sub(r"<details><summary>[^\n]*</summary>\s*</details>", "", text)


def snippet_preprocessor(root: Path) -> markdown.preprocessors.Preprocessor:
    """pymdownx.snippets' preprocessor as mkdocs.yml configures it, for files under `root`."""
    md = markdown.Markdown(
        extensions=["pymdownx.snippets"],
        extension_configs={"pymdownx.snippets": {"base_path": [str(root)], "check_paths": True}},
    )
    return md.preprocessors["snippet"]


def chapter_cells(path: Path, root: Path = ROOT) -> list[Cell]:
    """The cells of the notebook of the chapter at `path` (intro and setup not included)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return _Parser(snippet_preprocessor(root)).parse(lines)


def notebook(path: Path, root: Path = ROOT) -> nbformat.NotebookNode:
    """The notebook of the chapter at `path`: its cells after an intro and a setup cell."""
    cells = [_nbformat_cell(cell) for cell in chapter_cells(path, root)]
    # The intro and the setup go right after the chapter's title.
    title = ""
    if cells and cells[0].cell_type == "markdown" and cells[0].source.startswith("# "):
        title, _, cells[0].source = cells[0].source.partition("\n")
        cells[0].source = cells[0].source.strip()
    intro = INTRO.format(name=path.name)
    head = [v4.new_markdown_cell(f"{title}\n\n{intro}".strip()), v4.new_code_cell(SETUP)]
    nb = v4.new_notebook(cells=head + [cell for cell in cells if cell.source])
    for number, cell in enumerate(nb.cells):
        cell.id = f"cell-{number}"  # not random: the same chapter makes the same notebook
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata.language_info = {"name": "python"}
    return nb


def _nbformat_cell(cell: Cell) -> nbformat.NotebookNode:
    if cell.kind == "markdown":
        return v4.new_markdown_cell(cell.source)
    made = v4.new_code_cell(cell.source, outputs=_expected_outputs(cell))
    if cell.hidden:
        made.metadata.jupyter = {"source_hidden": True, "outputs_hidden": True}
    if cell.exc_msg is not None:
        made.metadata.tags = ["raises-exception"]  # nbclient runs on past it
    return made


def _expected_outputs(cell: Cell) -> list[nbformat.NotebookNode]:
    """The book's output of a cell, as Jupyter would show it: a value, a print, an error."""
    if cell.exc_msg is not None:
        name, _, value = cell.exc_msg.rstrip("\n").partition(": ")
        lines = cell.want.rstrip("\n").splitlines() + cell.exc_msg.rstrip("\n").splitlines()
        return [
            v4.new_output("error", ename=name.rpartition(".")[2], evalue=value, traceback=lines)
        ]
    if not cell.want:
        return []
    if _ends_in_a_value(cell.source):
        return [v4.new_output("execute_result", {"text/plain": cell.want.rstrip("\n")})]
    return [v4.new_output("stream", name="stdout", text=cell.want)]


def _ends_in_a_value(source: str) -> bool:
    """Whether a cell's last statement is an expression other than a `print(...)` call."""
    try:
        last = ast.parse(source).body[-1]
    except (SyntaxError, IndexError):
        return False
    if not isinstance(last, ast.Expr):
        return False
    call = last.value
    return not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "print")


def chapters(root: Path = ROOT) -> list[Path]:
    """The chapters that have notebooks, in order."""
    return sorted(p for p in (root / "chapters").glob("*.md") if CHAPTER.fullmatch(p.name))


def main(argv: list[str]) -> int:
    """Write every chapter's notebook into the folder the command line names."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.notebooks",
        description="Write each chapter of the book as a Jupyter notebook into OUT_DIR.",
    )
    parser.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="folder to write into")
    out = parser.parse_args(argv).out_dir
    out.mkdir(parents=True, exist_ok=True)
    for chapter in chapters():
        target = out / f"{chapter.stem}.ipynb"
        nbformat.write(notebook(chapter), target)
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
