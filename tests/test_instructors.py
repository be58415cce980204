"""The instructor guide's planning tables stay true to the course: every exercise of the
manifest and every build task has its time and difficulty, under its own title."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests import tasks as build_tasks
from tests.grading import load_manifest

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
GUIDE = (ROOT / "chapters" / "instructors.md").read_text(encoding="utf-8")
ROW = re.compile(r"^\| (\d+\.\d+) (.+?) \| (★{1,3}) \| [^|]+ \|", re.M)


def _section(title: str) -> dict[str, str]:
    """`{id: title}` of the rows of one `### <title>` table of the guide."""
    start = GUIDE.index(f"### {title}")
    end = GUIDE.find("\n### ", start + 1)
    return {m[1]: m[2] for m in ROW.finditer(GUIDE[start : end if end > 0 else None])}


def test_every_exercise_has_its_time_and_difficulty():
    rows = _section("Exercises: time and difficulty")
    want = {e.id: e.title for e in load_manifest()}
    assert rows == want, (
        "chapters/instructors.md, 'Exercises: time and difficulty', must have one row per "
        f"exercise of tests/graders/points.toml, `| <id> <title> | ★.. | <time> |`: {rows} != {want}"
    )


def test_every_build_task_has_its_time_difficulty_and_points():
    rows = _section("Build tasks: time and difficulty")
    tasks = build_tasks.find_tasks(build_tasks.source_files(ROOT))
    got = {id_: title.replace("`", "") for id_, title in rows.items()}
    want = {t.id: t.title for t in tasks}
    assert got == want, (
        "chapters/instructors.md, 'Build tasks: time and difficulty', must have one row per "
        f"build task (tests/tasks.py), `| <id> <title> | ★.. | <time> | <points> |`: {got} != {want}"
    )
    for task in tasks:
        assert re.search(rf"^\| {re.escape(task.id)} .* \| {task.points:g} \|$", GUIDE, re.M), (
            f"chapters/instructors.md: task {task.id} is worth {task.points:g} points"
        )
