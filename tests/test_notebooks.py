"""Every chapter's notebook (tests/notebooks.py) runs in Jupyter and prints what the book prints.

The notebooks are executed with nbclient in one IPython kernel, started once for the
module; its namespace is reset between chapters (`%reset -f`), as tests/test_docs_examples.py
gives each page a fresh namespace in one process. Each code cell's output is compared with
the book's, as doctest compares it (same flags; warnings on stderr are not compared), so a
notebook that drops, splits or reorders an example fails here even though the chapter's
doctest passes. The generator itself is tested on small chapters written here.
"""

from __future__ import annotations

import doctest
import re
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from mkdocs.config import load_config
from mkdocs.structure.files import get_files
from mkdocs.structure.pages import Page
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests import notebook_hooks, notebooks
from tests.test_docs_examples import FLAGS, pycon_blocks

pytestmark = pytest.mark.meta

ROOT = notebooks.ROOT
CHAPTERS = notebooks.chapters()
# What a carved build task raises in a student release (tests/tasks.py, tests/conftest.py).
CARVED = re.compile(r"Task \d+\.\d+ \([^)]*\) is yours to write")
# Where a traceback says the code ran: the book's `<stdin>`, doctest's `<doctest ...>` and
# the kernel's cell file.
LOCATION = re.compile(
    r'File "(<stdin>|<doctest[^"\n]*>|[^"\n]*ipykernel_[^"\n]*)", line (\d+|\.\.\.)'
)
ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _param(path: Path):
    chapter = getattr(pytest.mark, f"ch{int(path.name[:2])}")
    return pytest.param(path, id=path.relative_to(ROOT).as_posix(), marks=chapter)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One IPython kernel of this Python (not whatever `python3` kernel Jupyter knows)."""
    specs = tmp_path_factory.mktemp("kernels")
    write_kernel_spec(specs / "minifx")
    manager = KernelManager(
        kernel_name="minifx", kernel_spec_manager=KernelSpecManager(kernel_dirs=[str(specs)])
    )
    assert manager.kernel_spec.argv[0] == sys.executable
    manager.start_kernel(cwd=str(ROOT))
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=120)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


# --- every chapter's notebook ------------------------------------------------------------


@pytest.mark.parametrize("path", [_param(p) for p in CHAPTERS])
def test_notebook_runs_as_the_book_prints(path: Path, kernel):
    nb = notebooks.notebook(path)
    expected = [cell for cell in notebooks.chapter_cells(path) if cell.kind == "code"]
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    assert len(code) == len(expected) + 1, "the setup cell, then one cell per book cell"
    runner = NotebookClient(nb, km=kernel[0], timeout=600)
    runner.kc = kernel[1]
    name = path.relative_to(ROOT).as_posix()
    with runner.setup_kernel():
        runner.execute_cell(nbformat.v4.new_code_cell("%reset -f"), -1)
        _run(runner, name, "the setup cell", *code[0])
        for (index, cell), book in zip(code[1:], expected):
            where = f"cell {index} (the pycon block at line {book.line})"
            _run(runner, name, where, index, cell)
            _check_output(name, where, cell, book)


def _run(runner: NotebookClient, name: str, where: str, index: int, cell) -> None:
    try:
        runner.execute_cell(cell, index)
    except CellExecutionError as error:
        _stop_at_a_carved_task(cell)
        shown = ANSI.sub("", str(error))
        pytest.fail(f"{name}: {where} of its notebook fails:\n{cell.source}\n{shown}")
    _stop_at_a_carved_task(cell)  # a cell that should raise may raise this instead


def _stop_at_a_carved_task(cell) -> None:
    """In a student release, a cell that reaches a carved build task raises its message:
    raised here, tests/conftest.py reports the test as waiting for that task."""
    for output in cell.outputs:
        if output.output_type == "error" and output.ename == "NotImplementedError":
            found = CARVED.search(output.evalue)
            if found:
                raise NotImplementedError(found[0])


def _check_output(name: str, where: str, cell, book: notebooks.Cell) -> None:
    want, got = book.want, _printed(cell.outputs)
    if book.exc_msg is not None:
        # IPython names the exception's class; doctest's message may name its module too.
        want = re.sub(r"^[\w.]*\.(?=\w+(:|\n))", "", book.exc_msg)
        got = "".join(_error_message(out) for out in cell.outputs if out.output_type == "error")
    # Two differences of where the code runs, not of what it does: a traceback names the
    # file and line it ran from, and a function defined in a doctest's namespace has no
    # module (its globals have no `__name__`), so it prints as `f` where Jupyter's is
    # `__main__.f`.
    want = LOCATION.sub('File "<cell>", line ...', want)
    got = LOCATION.sub('File "<cell>", line ...', got).replace("__main__.", "")
    checker = doctest.OutputChecker()
    assert checker.check_output(want, got, FLAGS), (
        f"{name}: {where} of its notebook does not print what the book prints:\n"
        f"{cell.source}\n" + checker.output_difference(doctest.Example("", want), got, FLAGS)
    )


def _printed(outputs: list) -> str:
    """What a cell printed to stdout and the value it showed, in order, as doctest sees it."""
    text = []
    for output in outputs:
        if output.output_type == "stream" and output.name == "stdout":
            text.append(output.text)
        elif output.output_type == "execute_result":
            text.append(output.data["text/plain"] + "\n")
    return "".join(text)


def _error_message(output) -> str:
    """The exception as doctest reads it: `Name: message`, then its notes (in the traceback)."""
    message = f"{output.ename}: {output.evalue}" if output.evalue else output.ename
    shown = ANSI.sub("", "\n".join(output.traceback))
    at = shown.rfind(message)
    return (shown[at:] if at >= 0 else message).rstrip("\n") + "\n"


# --- the notebooks hold the book's examples, and only them ---------------------------------


@pytest.mark.parametrize("path", [_param(p) for p in CHAPTERS])
def test_notebook_has_every_example_of_the_chapter(path: Path):
    """The code cells are the page's pycon examples, all of them, in page order."""
    parser = doctest.DocTestParser()
    book = [e.source for _, text in pycon_blocks(path) for e in parser.get_examples(text)]
    cells = [
        e.source for c in notebooks.chapter_cells(path) if c.kind == "code" for e in c.examples
    ]
    assert cells == book
    nbformat.validate(notebooks.notebook(path))


def test_every_chapter_has_a_notebook():
    names = [p.name for p in CHAPTERS]
    assert names and names[0].startswith("00-") and len(names) == len(set(names))
    assert all((ROOT / "chapters" / name).is_file() for name in names)


# --- the generator, on small chapters -------------------------------------------------------


def _cells(tmp_path: Path, text: str) -> list[notebooks.Cell]:
    page = tmp_path / "chapters" / "01-page.md"
    page.parent.mkdir(parents=True, exist_ok=True)
    page.write_text(textwrap.dedent(text), encoding="utf-8")
    return notebooks.chapter_cells(page, tmp_path)


def test_a_cell_ends_at_each_example_that_prints(tmp_path):
    cells = _cells(
        tmp_path,
        """\
        Some prose.

        ```pycon
        >>> x = 1
        >>> x + 1
        2
        >>> def f(y):
        ...     return y
        >>> f(3)
        3
        >>> z = 4
        ```
        """,
    )
    assert [c.kind for c in cells] == ["markdown", "code", "code", "code"]
    assert [c.source for c in cells[1:]] == [
        "x = 1\nx + 1",
        "def f(y):\n    return y\nf(3)",
        "z = 4",
    ]
    assert [c.want for c in cells[1:]] == ["2\n", "3\n", ""]
    assert cells[1].line == 3


def test_a_collapsed_answer_stays_collapsed(tmp_path):
    cells = _cells(
        tmp_path,
        """\
        !!! question "Predict, then check"
            What does `1 + 1` give?

        ??? success "Check"
            ```pycon
            >>> 1 + 1
            2
            ```
            Because integers add.

        After.
        """,
    )
    kinds = [(c.kind, c.hidden) for c in cells]
    assert kinds == [("markdown", False), ("code", True), ("markdown", False)]
    assert "> **Predict, then check**" in cells[0].source
    assert "> What does `1 + 1` give?" in cells[0].source
    assert "<details><summary>Check</summary>" not in cells[0].source  # nothing before the code
    assert cells[2].source.startswith("<details><summary>Check</summary>")
    assert "Because integers add.\n\n</details>" in cells[2].source
    assert cells[2].source.endswith("After.")
    nb = notebooks.notebook(tmp_path / "chapters" / "01-page.md", tmp_path)
    assert nb.cells[3].metadata.jupyter == {"source_hidden": True, "outputs_hidden": True}


def test_included_code_comes_from_the_file_without_task_markers(tmp_path):
    (tmp_path / "code.py").write_text(
        "# --8<-- [start:part]\n"
        "def f():\n"
        '    # --8<-- [task:1.1] "f" points=1 section=x\n'
        "    return 1\n"
        "    # --8<-- [end-task:1.1]\n"
        "# --8<-- [end:part]\n",
        encoding="utf-8",
    )
    cells = _cells(
        tmp_path,
        """\
        See [chapter 2](02-next.md) and ![a plot](figures/plot.png).

        ```python title="code.py"
        --8<-- "code.py:part"
        ```
        """,
    )
    assert cells[0].source == (
        "See [chapter 2](chapters/02-next.md) and ![a plot](chapters/figures/plot.png).\n\n"
        '```python title="code.py"\ndef f():\n    return 1\n```'
    )


def test_an_images_attributes_are_not_shown_as_text(tmp_path):
    """The book sizes its charts with attr_list (`{ width="480" }`), which Jupyter's
    Markdown does not know: the notebook writes the image as HTML instead."""
    cells = _cells(
        tmp_path,
        """\
        ![Speedup at batch 1 & 16](figures/plot.png){ width="480" }
        """,
    )
    assert cells[0].source == (
        '<img src="chapters/figures/plot.png" alt="Speedup at batch 1 &amp; 16" width="480">'
    )


def test_an_expected_error_is_the_cells_output(tmp_path):
    page = tmp_path / "chapters" / "01-page.md"
    _cells(
        tmp_path,
        """\
        ```pycon
        >>> int("x")
        Traceback (most recent call last):
          ...
        ValueError: invalid literal for int() with base 10: 'x'
        ```
        """,
    )
    cell = notebooks.notebook(page, tmp_path).cells[-1]
    assert cell.metadata.tags == ["raises-exception"]
    assert cell.outputs[0].output_type == "error"
    assert (cell.outputs[0].ename, cell.outputs[0].evalue) == (
        "ValueError",
        "invalid literal for int() with base 10: 'x'",
    )


def test_a_cell_that_reaches_a_carved_task_says_which(kernel):
    cell = nbformat.v4.new_code_cell(
        'raise NotImplementedError("Task 1.2 (create_proxy) is yours to write: read 1.4")'
    )
    runner = NotebookClient(nbformat.v4.new_notebook(cells=[cell]), km=kernel[0], timeout=60)
    runner.kc = kernel[1]
    with runner.setup_kernel(), pytest.raises(NotImplementedError, match=r"^Task 1\.2 \("):
        _run(runner, "chapters/01-page.md", "cell 0", 0, cell)


def test_a_failing_cell_is_named_with_its_chapter_and_error(kernel):
    cell = nbformat.v4.new_code_cell("x = 1\n1 / 0")
    runner = NotebookClient(nbformat.v4.new_notebook(cells=[cell]), km=kernel[0], timeout=60)
    runner.kc = kernel[1]
    with runner.setup_kernel(), pytest.raises(pytest.fail.Exception) as failed:
        _run(runner, "chapters/01-page.md", "cell 3 (the pycon block at line 7)", 0, cell)
    message = str(failed.value)
    assert message.startswith("chapters/01-page.md: cell 3 (the pycon block at line 7) of its")
    assert "1 / 0" in message and "ZeroDivisionError: division by zero" in message


def test_an_output_other_than_the_books_fails():
    (book,) = notebooks.code_cells(">>> 1 + 1\n2\n", 5, hidden=False)
    ran = nbformat.v4.new_code_cell(book.source)
    ran.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": "2"})]
    _check_output("chapters/01-page.md", "cell 2", ran, book)
    ran.outputs = [nbformat.v4.new_output("stream", name="stdout", text="3\n")]
    with pytest.raises(AssertionError, match="does not print what the book prints"):
        _check_output("chapters/01-page.md", "cell 2", ran, book)


def test_the_same_chapter_makes_the_same_notebook():
    """The site's notebooks change only when their chapters do (cell ids are not random)."""
    path = CHAPTERS[0]
    assert nbformat.writes(notebooks.notebook(path)) == nbformat.writes(notebooks.notebook(path))


# --- the book offers them (tests/notebook_hooks.py) -----------------------------------------


def test_the_book_has_each_chapters_notebook_and_a_link_to_it():
    config = load_config(str(ROOT / "mkdocs.yml"))
    files = config.plugins.on_files(get_files(config), config=config)  # the book's hooks
    for path in CHAPTERS:
        made = files.get_file_from_path(f"notebooks/{path.stem}.ipynb")
        assert made is not None, f"no notebook for {path.name} in the site"
        assert made.content_string == nbformat.writes(notebooks.notebook(path))
        page = Page(None, files.get_file_from_path(path.name), config)
        text = notebook_hooks.on_page_markdown(path.read_text(encoding="utf-8"), page=page)
        title, blank, link = text.splitlines()[:3]
        assert title.startswith("# ") and not blank
        assert f"](notebooks/{path.stem}.ipynb)" in link
    others = [f for f in files.documentation_pages() if f.src_uri not in {p.name for p in CHAPTERS}]
    assert others, "the book has pages that are no chapter"
    for file in others:
        page = Page(None, file, config)
        assert (
            notebook_hooks.on_page_markdown("# Title\n\nText.\n", page=page) == "# Title\n\nText.\n"
        )
