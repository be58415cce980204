"""mkdocs hooks of the book (`hooks:` in mkdocs.yml): each chapter can be downloaded as a notebook.

`on_files` makes `notebooks/<chapter>.ipynb` for every chapter (tests/notebooks.py builds it
from the chapter's own Markdown), as a file of the site that mkdocs copies like any
other, so nothing generated is committed. `on_page_markdown` puts a link to it under the
chapter's title; mkdocs checks that link like the page's others.
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

# mkdocs loads a hook as a lone file; from the repository's root, `tests` is a package.
if str(Path(__file__).resolve().parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests import notebooks

LINK = (
    "*Run this chapter yourself:* [download it as a Jupyter notebook]({href})"
    '{{ download="{name}" title="Open it in your minifx checkout" }}'
)


def _notebook_uri(page_uri: str) -> str | None:
    """Where a chapter's notebook lives in the site, or None for a page that is no chapter."""
    if not notebooks.CHAPTER.fullmatch(page_uri):
        return None
    return f"notebooks/{Path(page_uri).stem}.ipynb"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    root = Path(config.config_file_path).parent
    for page in list(files.documentation_pages()):
        uri = _notebook_uri(page.src_uri)
        if uri:
            made = notebooks.notebook(Path(page.abs_src_path), root)
            files.append(File.generated(config, uri, content=nbformat.writes(made)))
    return files


def on_page_markdown(markdown: str, page: Page, **_) -> str:
    uri = _notebook_uri(page.file.src_uri)
    if uri is None:
        return markdown
    link = LINK.format(href=uri, name=Path(uri).name)
    # Right under the title, the page's first line; above everything if it has none.
    title, _, rest = markdown.partition("\n") if markdown.startswith("# ") else ("", "", markdown)
    return f"{title}\n\n{link}\n\n{rest}" if title else f"{link}\n\n{rest}"
