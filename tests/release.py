"""Make a student release: the repository at HEAD without `solutions/`.

Usage (from the repository root; `make student-release` runs it):

    python -m tests.release ../minifx-student
    python -m tests.release ../minifx-student --tasks ch1        # `make student-release TASKS=ch1`

The release is `git archive HEAD` unpacked into a new folder, with `solutions/` removed
and each chapter's collapsed solution replaced by a note, so that its book builds
(`make book`) and its exercises grade (`make grade`) with no solution anywhere in it.

With `--tasks` (`all`, `chN`, or task ids such as `1.2,5.1`), the chosen build tasks
(tests/tasks.py) are carved out of the release's minifx: each of their function bodies
raises `NotImplementedError` naming the task, the section to read and the check to run;
everything else stays the reference. `make grade TRACK=build` grades them there.
"""

from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from tests import task_boxes
from tests import tasks as build_tasks

ROOT = Path(__file__).resolve().parent.parent
# A chapter's solution: `??? success "Solution"`, then its indented body.
SOLUTION = re.compile(r'^\?\?\? success "Solution"\n(?:\n|    .*\n)*', re.M)
NOTE = (
    '!!! info "Solution"\n\n'
    "    Solutions are not part of the student release; `make grade` tells you how your\n"
    "    version does.\n\n"
)


def strip_solutions(markdown: str) -> str:
    """`markdown` with every collapsed solution replaced by a note that says why."""
    return SOLUTION.sub(NOTE, markdown)


def release(out: Path, root: Path = ROOT, tasks: str = "") -> list[build_tasks.Task]:
    """Write the student release of `root`'s HEAD into the new folder `out`, with the build
    tasks that `tasks` names carved out (see `tests.tasks.select`); the carved tasks.

    Raises:
        TaskError: If `tasks` names no task, or the markers are broken (before writing).
    """
    if out.exists():
        raise FileExistsError(f"{out} exists; remove it or choose another folder")
    chosen = build_tasks.select(build_tasks.find_tasks(build_tasks.source_files(root)), tasks)
    archive = subprocess.run(
        ["git", "archive", "--format=tar", "HEAD"], cwd=root, capture_output=True, check=True
    ).stdout
    out.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        # The "data" filter refuses links and paths that leave `out`; Pythons before
        # 3.10.12 / 3.11.4 lack it, and `git archive` of our own HEAD makes neither.
        if hasattr(tarfile, "data_filter"):
            tar.extractall(out, filter="data")
        else:
            tar.extractall(out)
    shutil.rmtree(out / "solutions")
    for page in (out / "chapters").rglob("*.md"):
        text = page.read_text(encoding="utf-8")
        if SOLUTION.search(text):
            page.write_text(strip_solutions(text), encoding="utf-8")
    # Carved as they stand in the archive (HEAD), which the working tree's markers may not match.
    ids = {task.id for task in chosen}
    chosen = [
        task for task in build_tasks.find_tasks(build_tasks.source_files(out)) if task.id in ids
    ]
    boxes = task_boxes.boxes_for(out, chosen, carved=True)  # read before carving moves lines
    changed = build_tasks.carve(out, chosen)
    if changed:
        _allow_unused_imports(out / "pyproject.toml", changed)
    for page in (out / "chapters").glob("*.md"):
        text = page.read_text(encoding="utf-8")
        boxed = task_boxes.task_boxes(text, boxes)
        if boxed != text:
            page.write_text(boxed, encoding="utf-8")
    return chosen


def _allow_unused_imports(pyproject: Path, paths: list[str]) -> None:
    """Tell ruff that a carved file's imports may go unused until its tasks are written
    (in pyproject.toml, not in the file: a task file may change only inside its tasks)."""
    header = "[tool.ruff.lint.per-file-ignores]\n"
    text = pyproject.read_text(encoding="utf-8")
    lines = "".join(
        f'"{path}" = ["F401"]  # a carved build task uses these imports\n' for path in paths
    )
    text = text.replace(header, header + lines, 1) if header in text else f"{text}\n{header}{lines}"
    pyproject.write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.release", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out", type=Path, help="the folder to create")
    parser.add_argument(
        "--tasks", default="", help="build tasks to carve out: all, chN, or ids like 1.2,5.1"
    )
    args = parser.parse_args(argv)
    try:
        carved = release(args.out, tasks=args.tasks)
    except (FileExistsError, subprocess.CalledProcessError, build_tasks.TaskError) as exc:
        print(f"cannot make the release: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the student release to {args.out}: make book and make grade work there")
    if carved:
        print(
            f"carved {len(carved)} build task(s) out of its minifx: {', '.join(t.id for t in carved)}; "
            "grade them there with make grade TRACK=build"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
