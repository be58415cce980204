"""The "Differences from torch.fx" page collects every chapter's box, included, not pasted."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.meta

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
BOX = '!!! note "Differences from torch.fx"'


def chapters_with_a_box() -> list[Path]:
    return sorted(p for p in CHAPTERS.glob("[0-9][0-9]-*.md") if BOX in p.read_text())


def test_there_are_boxes_to_collect():
    assert len(chapters_with_a_box()) >= 8


@pytest.mark.parametrize("chapter", chapters_with_a_box(), ids=lambda p: p.stem)
def test_each_box_is_a_section_the_page_includes(chapter: Path):
    text = chapter.read_text()
    section = re.search(
        r"\[start:differences\] -->\n(.*?)<!-- --8<-- \[end:differences\]", text, re.S
    )
    assert section and BOX in section.group(1), (
        f"{chapter.name}: put its '{BOX}' box between the lines "
        "'<!-- --8<-- [start:differences] -->' and '<!-- --8<-- [end:differences] -->', "
        "so chapters/differences.md can include it"
    )
    include = f'--8<-- "chapters/{chapter.name}:differences"'
    assert include in (CHAPTERS / "differences.md").read_text(), (
        f"chapters/differences.md does not include {chapter.name}'s box; add the line {include}"
    )
