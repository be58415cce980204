"""mkdocs hooks of the book (`hooks:` in mkdocs.yml): build-task markers never reach a page.

The build track marks its tasks in the reference source with comment lines such as
`# --8<-- [task:1.5] "__torch_function__" points=5 section=...` and
`# --8<-- [end-task:1.5]` (see `tests/tasks.py`). pymdownx.snippets removes its own
section markers from the code it includes, but not these, so a reader would see them in
the middle of the code. A Markdown preprocessor that runs right after snippets drops them.
A page that shows a marker on purpose (the guides explain them) keeps it: before the
Markdown is converted, `on_page_markdown` hides the page's own markers from the
preprocessor, which puts them back after dropping the included ones.

The hook also shows the build track on the reference site: where a chapter includes code
of a task, the task's box (`tests/task_boxes.py`, the renderer the student release uses)
goes before it and the reference code is collapsed under it. A student release boxed its
carved tasks already; there the hook boxes only the tasks still in the reference.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

# mkdocs loads this file by its path, with only tests/ on sys.path: the project's root
# makes `tests.*` importable, as in the test suite (mkdocs restores sys.path afterwards).
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests import task_boxes, tasks  # noqa: E402

TASK_MARKER = re.compile(r"^\s*# --8<-- \[(task|end-task):\d+\.\d+\]")
# Stands for the `[` of a marker written in the page itself (a private-use character).
WRITTEN = "\ue000"
# pymdownx.snippets registers its preprocessor at priority 32; a lower one runs after it.
AFTER_SNIPPETS = 31


class _DropTaskMarkers(Preprocessor):
    def run(self, lines: list[str]) -> list[str]:
        kept = [line for line in lines if not TASK_MARKER.match(line)]
        return [line.replace(WRITTEN, "[") for line in kept]


class TaskMarkers(Extension):
    """Remove build-task marker lines from the Markdown, after the snippets are pasted in."""

    def extendMarkdown(self, md: Markdown) -> None:
        md.preprocessors.register(_DropTaskMarkers(md), "drop_task_markers", AFTER_SNIPPETS)


def on_page_markdown(markdown: str, page, config, **_) -> str:
    markdown = re.sub(r"(--8<-- )\[(?=(task|end-task):)", rf"\1{WRITTEN}", markdown)
    if "/" in page.file.src_uri:  # the chapters lie at the top; their links assume it
        return markdown
    return with_task_boxes(markdown, Path(config.config_file_path).parent)


def with_task_boxes(markdown: str, root: Path) -> str:
    """`markdown` (a page at the top of the book) with a task box before each include of a
    task's code in the reference under `root`, and that code collapsed under the box."""
    if '--8<-- "minifx/' not in markdown:
        return markdown
    found = tasks.find_tasks(tasks.source_files(root))
    reference = [task for task in found if not task_boxes.is_carved(root, task)]
    boxes = task_boxes.boxes_for(root, reference, carved=False)
    return task_boxes.task_boxes(markdown, boxes, collapse=True)


# The API pages' "Source code in ..." listings (mkdocstrings) stay out of the search index:
# indexed, they are the text a result shows, so a search for a method's name answered with
# its whole source instead of its docstring.
SOURCE_LISTING = '<details class="mkdocstrings-source">'


# In those listings, the comment of every snippet or task marker (`# --8<-- [start:x]`),
# highlighted: it is emptied, the line left blank, so that the line numbers stay the file's.
LISTED_MARKER = re.compile(r'<span class="c1"># --8&lt;-- \[[^\]<]*\][^<]*</span>')


def on_page_content(html: str, **_) -> str:
    if SOURCE_LISTING not in html:
        return html
    html = LISTED_MARKER.sub("", html)
    return html.replace(
        SOURCE_LISTING, '<details class="mkdocstrings-source" data-search-exclude="source">'
    )


def on_config(config):
    config.markdown_extensions.append(TaskMarkers())
    return config
