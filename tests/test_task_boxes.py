"""Task boxes (tests/task_boxes.py): the release shows a box before carved code, the reference
site (tests/book_hooks.py) the same box with the reference code collapsed under it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import markdown
import pytest

from tests import book_hooks, task_boxes, tasks
from tests.tasks import ROOT

pytestmark = pytest.mark.meta

PAGE = """## The tracer interface

Read this first.

```python title="minifx/proxy/proxy.py — class TracerBase"
--8<-- "minifx/proxy/proxy.py:create_proxy"
```

After the code.
"""
BOX = '!!! example "Task 1.2 · create_proxy and create_arg (5 points)"\n'


def task(task_id: str) -> tasks.Task:
    (found,) = [t for t in tasks.find_tasks(tasks.source_files(ROOT)) if t.id == task_id]
    return found


def test_the_box_says_what_to_implement_the_contract_a_hint_and_the_check():
    rendered = task_boxes.box(task("1.2"), task_boxes.functions_of(ROOT, task("1.2")), False)
    assert rendered.startswith(BOX)
    assert (
        "**Implement** `TracerBase.create_proxy`, `TracerBase.create_arg` in "
        "`minifx/proxy/proxy.py`" in rendered
    )
    assert "**Contract**: each function's signature and docstring" in rendered
    assert "[the section](01-proxy.md#the-tracer-interface)" in rendered
    assert "**Check**: `make grade TASK=1.2`" in rendered
    assert "collapsed" in rendered and "In this release" not in rendered
    carved = task_boxes.box(task("1.2"), {}, True)
    assert carved.startswith(BOX) and "In this release" in carved and "collapsed" not in carved


def test_nested_functions_are_named_with_their_enclosing_function():
    names = task_boxes.functions_of(ROOT, task("1.4"))
    assert names == {"minifx/proxy/proxy.py": ["_records.method", "_records_reflected.method"]}


def test_the_release_puts_the_box_before_the_code_and_leaves_the_code_open():
    boxed = task_boxes.task_boxes(PAGE, {"minifx/proxy/proxy.py:create_proxy": BOX})
    assert boxed == PAGE.replace("```python", BOX + "```python", 1)


def test_the_reference_page_shows_the_box_and_the_code_collapsed_under_it():
    page = book_hooks.with_task_boxes(PAGE, ROOT)
    before, box, after = page.partition(BOX)
    assert before == "## The tracer interface\n\nRead this first.\n\n"
    box_body, _, collapsed = after.partition('??? note "The reference code"\n\n')
    assert "make grade TASK=1.2" in box_body and "collapsed" in box_body
    assert collapsed == (
        '    ```python title="minifx/proxy/proxy.py — class TracerBase"\n'
        '    --8<-- "minifx/proxy/proxy.py:create_proxy"\n'
        "    ```\n"
        "\nAfter the code.\n"
    )


def test_a_task_included_twice_gets_its_box_once():
    twice = PAGE + "\n" + PAGE.split("\n\n", 2)[2]  # the same include again, further down
    released = task_boxes.task_boxes(twice, {"minifx/proxy/proxy.py:create_proxy": BOX})
    assert released.count(BOX) == 1
    assert released.index(BOX) < released.index("*More of task 1.2: its box is above.*")
    reference = book_hooks.with_task_boxes(twice, ROOT)
    assert reference.count(BOX) == 1
    assert reference.count('??? note "The reference code"') == 1
    assert reference.count('??? note "The reference code (more of task 1.2)"') == 1


def test_what_is_not_a_task_box_is_refused():
    with pytest.raises(ValueError, match="not a task box"):
        task_boxes.task_boxes(PAGE, {"minifx/proxy/proxy.py:create_proxy": "a note\n"})


def test_code_of_no_task_and_other_pages_stay_as_they_are():
    plain = PAGE.replace("proxy.py:create_proxy", "ir.py:grammar")
    assert book_hooks.with_task_boxes(plain, ROOT) == plain
    assert book_hooks.with_task_boxes("# Setup\n\nNo code.\n", ROOT) == "# Setup\n\nNo code.\n"


def test_every_chapter_with_tasks_shows_each_of_them_on_the_reference_site():
    for chapter in sorted({t.chapter for t in tasks.find_tasks(tasks.source_files(ROOT))}):
        (page,) = (ROOT / "chapters").glob(f"{chapter:02d}-*.md")
        shown = book_hooks.with_task_boxes(page.read_text(encoding="utf-8"), ROOT)
        for found in (
            t for t in tasks.find_tasks(tasks.source_files(ROOT)) if t.chapter == chapter
        ):
            assert f'!!! example "Task {found.id} · ' in shown, (
                f"{page.name} includes no code of task {found.id}"
            )
        assert shown.count('!!! example "Task') == shown.count('??? note "The reference code"')


def test_in_a_release_the_hook_boxes_only_the_tasks_left_in_the_reference(tmp_path: Path):
    shutil.copytree(ROOT / "minifx", tmp_path / "minifx")
    tasks.carve(tmp_path, [task("1.2")])
    page = PAGE + '\n```python\n--8<-- "minifx/proxy/proxy.py:torch_function"\n```\n'
    shown = book_hooks.with_task_boxes(page, tmp_path)
    assert "Task 1.2" not in shown  # the release boxed it already, before its carved code
    assert r'!!! example "Task 1.5 · \_\_torch_function\_\_ (5 points)"' in shown


def test_every_carved_task_is_seen_as_carved_and_gets_no_second_box(tmp_path: Path):
    shutil.copytree(ROOT / "minifx", tmp_path / "minifx")
    every = tasks.find_tasks(tasks.source_files(ROOT))
    assert not any(task_boxes.is_carved(ROOT, t) for t in every)
    tasks.carve(tmp_path, every)
    assert all(task_boxes.is_carved(tmp_path, t) for t in every)  # titles with ': ' too
    for page in sorted((ROOT / "chapters").glob("*.md")):
        text = page.read_text(encoding="utf-8")
        assert book_hooks.with_task_boxes(text, tmp_path) == text, page.name


def test_a_title_is_shown_as_written_not_as_markdown_emphasis():
    """Task 1.5 is "__torch_function__": as Markdown, the box's title would show a bold
    "torch_function"; its underscores at a word's edge are escaped, those inside a word
    (`create_proxy`) need not be."""
    rendered = markdown.markdown(task_boxes.box(task("1.5"), {}, False), extensions=["admonition"])
    title = re.search(r'<p class="admonition-title">(.*?)</p>', rendered)[1]
    assert title == "Task 1.5 · __torch_function__ (5 points)"
    assert task_boxes.box(task("1.2"), {}, False).startswith(BOX)
