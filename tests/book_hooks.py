"""mkdocs hooks of the book (`hooks:` in mkdocs.yml): build-task markers never reach a page.

The build track marks its tasks in the reference source with comment lines such as
`# --8<-- [task:1.5] "__torch_function__" points=5 section=...` and
`# --8<-- [end-task:1.5]` (see `tests/tasks.py`). pymdownx.snippets removes its own
section markers from the code it includes, but not these, so a reader would see them in
the middle of the code. A Markdown preprocessor that runs right after snippets drops them.
A page that shows a marker on purpose (the guides explain them) keeps it: before the
Markdown is converted, `on_page_markdown` hides the page's own markers from the
preprocessor, which puts them back after dropping the included ones.
"""

from __future__ import annotations

import re

from markdown import Extension, Markdown
from markdown.preprocessors import Preprocessor

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


def on_page_markdown(markdown: str, **_) -> str:
    return re.sub(r"(--8<-- )\[(?=(task|end-task):)", rf"\1{WRITTEN}", markdown)


def on_config(config):
    config.markdown_extensions.append(TaskMarkers())
    return config
