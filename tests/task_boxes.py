"""Task boxes: what the book shows where a chapter includes the code of a build task.

One renderer serves both books. In a student release (`tests/release.py`) the box stands
before the carved code, which is the student's to write. On the reference site
(`tests/book_hooks.py`) the same box stands before the reference code, which is collapsed
under it, so that a reader can try the task before opening the answer.

A chapter includes code with a snippet line, `--8<-- "minifx/graph/node.py:users"`, inside
a fenced block; a box goes before that block when the named section overlaps a task's
region. Like `tests/tasks.py`, this reads files and never imports minifx.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests import tasks
from tests.tasks import Task, functions_in

SECTION = re.compile(r"^\s*# --8<-- \[(start|end):([a-z][-_0-9a-z]*)\]")
INCLUDE = re.compile(r'^--8<-- "(?P<path>[^":]+):(?P<name>[^"]+)"$')


def sections_of(root: Path, tasks: list[Task]) -> dict[str, list[Task]]:
    """`{"path:section": tasks}`: the book's snippet sections that show code of `tasks`."""
    found: dict[str, list[Task]] = {}
    for path in sorted({p for task in tasks for p in task.paths}):
        opened: dict[str, int] = {}
        lines = (root / path).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, start=1):
            if (marker := SECTION.match(line)) and marker[1] == "start":
                opened[marker[2]] = number
            elif marker and marker[2] in opened:
                start = opened.pop(marker[2])
                shown = [
                    t
                    for t in tasks
                    if any(r.path == path and r.start < number and start < r.end for r in t.regions)
                ]
                if shown:
                    found[f"{path}:{marker[2]}"] = shown
    return found


def functions_of(root: Path, task: Task) -> dict[str, list[str]]:
    """`{path: names}`: the functions `task` carves, named as Python's `__qualname__`
    would name them without its `<locals>` (`Class.method`, `_records.method`)."""
    found: dict[str, list[str]] = {}
    for path in task.paths:
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        names = _qualified_names(tree)
        for region in (r for r in task.regions if r.path == path):
            for function in functions_in(tree, region):
                if names[id(function)] not in found.setdefault(path, []):
                    found[path].append(names[id(function)])
    return found


def _qualified_names(node: ast.AST, prefix: str = "") -> dict[int, str]:
    """`{id(definition): dotted name}` for every class and function under `node`."""
    names: dict[int, str] = {}
    for child in ast.iter_child_nodes(node):
        inner = prefix
        if isinstance(child, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            names[id(child)] = inner = f"{prefix}{child.name}"
            inner += "."
        names.update(_qualified_names(child, inner))
    return names


def is_carved(root: Path, task: Task) -> bool:
    """Whether `task` is carved out of the minifx under `root`: a body raises what carving
    writes (its message in two strings, cut at the first ': ', which a title may hold)."""
    written = [line.strip() for line in tasks._raise("", task.message()).splitlines()[1:]]
    return any(
        all(line in (root / path).read_text(encoding="utf-8") for line in written)
        for path in task.paths
    )


def box(task: Task, functions: dict[str, list[str]], carved: bool) -> str:
    """The task box: what to implement, the contract, a hint and the check.

    Args:
        task: The task.
        functions: What `functions_of` says the task carves.
        carved: Whether the code under the box is carved (a student release) or the
            reference, collapsed (the reference site).
    """
    what = "; ".join(
        ", ".join(f"`{name}`" for name in names) + f" in `{path}`"
        for path, names in functions.items()
    )
    if carved:
        lead = (
            "In this release, the code below is yours to write: its body raises\n"
            "    `NotImplementedError` until you do."
        )
    else:
        lead = (
            f"In a release that carves this task (`make student-release TASKS={task.id}`), the\n"
            "    code below is yours to write. Here it is the reference, collapsed under this\n"
            "    box: write yours first, then open it."
        )
    return (
        f'!!! example "Task {task.id} · {_as_written(task.title)} ({task.points:g} points)"\n\n'
        f"    {lead}\n\n"
        f"    - **Implement** {what}.\n"
        f"    - **Contract**: each function's signature and docstring, which the release keeps.\n"
        f"    - **Hint**: read [the section]({task.section}) up to here, close the page, and\n"
        f"      write it from the idea.\n"
        f'    - **Check**: `make grade TASK={task.id}` runs the tests marked `task("{task.id}")`,\n'
        f"      which compare your minifx with torch.fx.\n\n"
    )


def _as_written(title: str) -> str:
    """`title` as Markdown that shows it as written: a star, or an underscore at a word's
    edge (`__torch_function__`), would start emphasis, so it is escaped; an underscore
    inside a word (`create_proxy`) starts none and stays as it is."""
    edge = r"\*|(?<![^\W_])_+|_+(?![^\W_])"  # [^\W_]: a letter or digit
    return re.sub(edge, lambda marks: "".join("\\" + mark for mark in marks[0]), title)


def boxes_for(root: Path, tasks: list[Task], carved: bool) -> dict[str, str]:
    """`{"path:section": boxes}`: the boxes to show before each include of `tasks`' code."""
    functions = {task.id: functions_of(root, task) for task in tasks}
    return {
        section: "".join(box(task, functions[task.id], carved) for task in shown)
        for section, shown in sections_of(root, tasks).items()
    }


BOX_TITLE = re.compile(r'^!!! example "Task (?P<id>\d+\.\d+) ', re.M)


def _split_boxes(boxes: str) -> dict[str, str]:
    """`{task id: its box}` of the boxes that `boxes_for` put together for one section."""
    starts = [match.start() for match in BOX_TITLE.finditer(boxes)] + [len(boxes)]
    if starts[0] != 0:
        raise ValueError(f"not a task box: {boxes[:60]!r}")
    return {BOX_TITLE.match(boxes, a)["id"]: boxes[a:b] for a, b in zip(starts, starts[1:])}


def task_boxes(markdown: str, boxes: dict[str, str], collapse: bool = False) -> str:
    """`markdown` with its boxes before each fenced block that includes a section of `boxes`;
    with `collapse`, the block itself goes, indented, into a collapsed `???` block.

    A task whose code a page includes twice gets its box once, before the first include;
    later includes say that they continue it.
    """
    lines = markdown.splitlines(keepends=True)
    edits, boxed = [], set()  # (fence, close, text before the block, collapsed block's title)
    for index, line in enumerate(lines):
        include = INCLUDE.match(line.rstrip("\n"))
        key = include and f"{include['path']}:{include['name']}"
        if not include or key not in boxes:
            continue
        fence = next((i for i in range(index - 1, -1, -1) if lines[i].startswith("```")), None)
        close = next((i for i in range(index + 1, len(lines)) if lines[i].startswith("```")), None)
        if fence is None or close is None:
            continue
        per_task = _split_boxes(boxes[key])
        new = {id_: text for id_, text in per_task.items() if id_ not in boxed}
        again = ", ".join(id_ for id_ in per_task if id_ in boxed)
        before = "".join(new.values())
        if again and not collapse:
            before += f"*More of task {again}: its box is above.*\n\n"
        title = f"The reference code (more of task {again})" if again else "The reference code"
        edits.append((fence, close, before, title))
        boxed.update(per_task)
    for fence, close, before, title in reversed(edits):
        if collapse:
            code = [f"    {line}" if line.strip() else line for line in lines[fence : close + 1]]
            lines[fence : close + 1] = [f'??? note "{title}"\n\n', *code]
        lines[fence:fence] = [before]
    return "".join(lines)
