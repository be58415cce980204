"""Each chapter of stages 1-4 says which files are the code of its stage, and what the rest are for.

Issue 17 asks that the files a chapter walks through hold its idea and nothing else, and that
the chapter say in one sentence what each module beside them is for. `TEACHING_PATH` in
`tests/test_size.py` lists the files (and keeps them short); this test keeps each chapter's
section "The code of this stage" in step with that list and with the stage's directory.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.test_size import TEACHING_PATH

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = {1: "01-proxy.md", 2: "02-graph.md", 3: "03-codegen.md", 4: "04-interpreter.md"}
STAGES = {1: "proxy", 2: "graph", 3: "codegen", 4: "interpreter"}


def code_of_this_stage(stage: int) -> str:
    """The text of the chapter's section `## The code of this stage`, up to the next section."""
    text = (ROOT / "chapters" / CHAPTERS[stage]).read_text(encoding="utf-8")
    found = re.search(r"^## The code of this stage\n(.*?)(?=^## )", text, re.S | re.M)
    assert found, f"chapters/{CHAPTERS[stage]} has no section '## The code of this stage'"
    return found.group(1)


@pytest.mark.parametrize("stage", sorted(CHAPTERS))
def test_the_chapter_names_each_file_of_its_teaching_path(stage):
    section = code_of_this_stage(stage)
    unnamed = [path for path in TEACHING_PATH[stage] if Path(path).name not in section]
    assert not unnamed, (
        f"chapters/{CHAPTERS[stage]}, 'The code of this stage', does not name {unnamed}, "
        "which tests/test_size.py's TEACHING_PATH lists: name them, or correct the list."
    )


@pytest.mark.parametrize("stage", sorted(CHAPTERS))
def test_the_chapter_says_what_each_module_beside_the_path_is_for(stage):
    section = code_of_this_stage(stage)
    modules = sorted((ROOT / "minifx" / STAGES[stage]).glob("*.py"))
    unnamed = [m.name for m in modules if m.name != "__init__.py" and m.name not in section]
    assert not unnamed, (
        f"chapters/{CHAPTERS[stage]}, 'The code of this stage', never mentions {unnamed}: "
        "add a sentence that says what each is for."
    )


def test_the_teaching_path_of_a_stage_lives_in_that_stage():
    for stage, paths in TEACHING_PATH.items():
        assert all(p.startswith(f"minifx/{STAGES[stage]}/") for p in paths), (stage, paths)
