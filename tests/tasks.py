"""Build tasks: parts of minifx that a student release carves out for students to write.

A task is marked in the reference source itself, in the spirit of the book's snippet
markers, by a pair of comment lines around one or more whole functions or methods:

    # --8<-- [task:1.4] "create_proxy" points=2 section=01-proxy.md#the-tracer-interface
    def create_proxy(self, ...):
        ...
    # --8<-- [end-task:1.4]

The first line gives the task's id (`<chapter>.<n>`), title, points and the chapter
section to read. A task may have more than one region (in several places or files): the
later regions repeat only the id, `# --8<-- [task:1.4]`. Carving a task replaces the body
of every outermost function in its regions, docstring kept, by a `raise
NotImplementedError(...)` that names the task, the section and the check to run.

The tests that grade a task carry its marker, `@pytest.mark.task("1.4")` on a test
function or `pytestmark = [..., pytest.mark.task("1.4")]` for a whole module. Everything
here reads code with `ast` and regular expressions; nothing of minifx is imported.
"""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from tests.task_markers import END, START

ROOT = Path(__file__).resolve().parent.parent
ATTRIBUTES = ("points", "section")


class TaskError(Exception):
    """The task markers are inconsistent: said with the file and line to fix."""


@dataclass
class Region:
    """One marked stretch of a file: the lines strictly between its two marker lines."""

    path: str
    start: int
    end: int


@dataclass
class Task:
    """One build task.

    Attributes:
        id: `"<chapter>.<n>"`, such as `"1.4"`.
        title: A few words, shown in the grade table and in the carved message.
        points: What the task is worth.
        section: The chapter section to read, `01-proxy.md#anchor`.
        regions: Where the task's functions are.
    """

    id: str
    title: str = ""
    points: float = 0
    section: str = ""
    regions: list[Region] = field(default_factory=list)

    @property
    def chapter(self) -> int:
        return int(self.id.split(".")[0])

    @property
    def order(self) -> tuple[int, int]:
        return tuple(int(part) for part in self.id.split("."))

    @property
    def paths(self) -> list[str]:
        return sorted({r.path for r in self.regions})

    def message(self) -> str:
        """What a carved body raises: the task, where to read, how to check."""
        return (
            f"Task {self.id} ({self.title}) is yours to write: read chapters/{self.section}, "
            f"then check with: make grade TASK={self.id}"
        )


# --- reading the markers ------------------------------------------------------------


def find_tasks(files: dict[str, bytes]) -> list[Task]:
    """The tasks marked in `files` (`{path: source}`, paths like `minifx/proxy/proxy.py`),
    sorted by id.

    Raises:
        TaskError: For a marker without its pair, a task without a title or with two,
            or a region that holds no function.
    """
    tasks: dict[str, Task] = {}
    for path, data in sorted(files.items()):
        if path.endswith(".py") and b"--8<-- [task:" in data:
            _read_markers(path, data.decode("utf-8"), tasks)
    for task in tasks.values():
        if not task.title:
            where = task.regions[0]
            raise TaskError(
                f"{where.path}:{where.start}: task {task.id} has no title: its first marker "
                f'reads # --8<-- [task:{task.id}] "Title" points=N section=chapter.md#anchor'
            )
    return sorted(tasks.values(), key=lambda t: t.order)


def _read_markers(path: str, text: str, tasks: dict[str, Task]) -> None:
    open_regions: dict[str, tuple[int, str]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if start := START.match(line):
            if start["id"] in open_regions:
                raise TaskError(
                    f"{path}:{open_regions[start['id']][0]}: [task:{start['id']}] is never closed "
                    f"by # --8<-- [end-task:{start['id']}] before the next [task:{start['id']}]"
                )
            open_regions[start["id"]] = (number, start["attributes"])
        elif end := END.match(line):
            if end["id"] not in open_regions:
                raise TaskError(
                    f"{path}:{number}: [end-task:{end['id']}] has no [task:{end['id']}] above it"
                )
            first, attributes = open_regions.pop(end["id"])
            task = tasks.setdefault(end["id"], Task(end["id"]))
            task.regions.append(Region(path, first, number))
            if attributes.strip():
                _set_attributes(task, attributes, f"{path}:{first}")
    if open_regions:
        task_id, (number, _) = next(iter(open_regions.items()))
        raise TaskError(
            f"{path}:{number}: [task:{task_id}] is never closed by # --8<-- [end-task:{task_id}]"
        )


def _set_attributes(task: Task, attributes: str, where: str) -> None:
    if task.title:
        raise TaskError(
            f"{where}: task {task.id} already has a title; later regions say only [task:{task.id}]"
        )
    words = shlex.split(attributes)
    if not words or "=" in words[0]:
        raise TaskError(f"{where}: the marker of task {task.id} needs a quoted title first")
    task.title = words[0]
    values = dict(word.split("=", 1) for word in words[1:] if "=" in word)
    missing = [key for key in ATTRIBUTES if key not in values]
    if missing or len(values) != len(words) - 1:
        raise TaskError(
            f"{where}: the marker of task {task.id} needs points=N section=chapter.md#anchor"
        )
    task.points, task.section = float(values["points"]), values["section"]


def functions_in(tree: ast.Module, region: Region) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The outermost functions (methods too) that lie wholly inside `region`."""
    inside = [
        node
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and region.start < _first_line(node)
        and node.end_lineno < region.end
    ]
    return [
        node
        for node in inside
        if not any(
            other is not node and _first_line(other) <= node.lineno <= other.end_lineno
            for other in inside
        )
    ]


def _first_line(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


# --- carving --------------------------------------------------------------------------


def carve_source(path: str, text: str, tasks: list[Task]) -> str:
    """`text` (the file `path`) with the bodies of the given tasks' functions replaced.

    Raises:
        TaskError: If a region holds no function, or a body shares the line of its `def`.
    """
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    cuts = []
    for task in tasks:
        for region in (r for r in task.regions if r.path == path):
            found = functions_in(tree, region)
            if not found:
                raise TaskError(
                    f"{path}:{region.start}: the region of task {task.id} holds no whole function"
                )
            cuts += [(_body_span(path, node), task) for node in found]
    for (first, last, indent), task in sorted(cuts, key=lambda cut: -cut[0][0]):
        lines[first - 1 : last] = [_raise(indent, task.message())]
    return "".join(lines)


def _raise(indent: str, message: str) -> str:
    """The carved body: `raise NotImplementedError(...)`, its message cut at ': ' so that
    lines stay short."""
    head, _, tail = message.partition(": ")
    return (
        f"{indent}raise NotImplementedError(\n{indent}    {head + ': '!r}\n{indent}    {tail!r})\n"
    )


def _body_span(path: str, node: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[int, int, str]:
    """The lines of a function's body after its docstring, and the body's indentation."""
    body = node.body
    has_docstring = (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
    if body[0].lineno == node.lineno:
        raise TaskError(
            f"{path}:{node.lineno}: {node.name}'s body is on the line of its def; put it on its own lines"
        )
    rest = body[1:] if has_docstring else body
    first = rest[0].lineno if rest else body[0].end_lineno + 1
    if not rest:  # a docstring alone: the raise goes after it
        return first, first - 1, " " * body[0].col_offset
    return first, node.end_lineno, " " * rest[0].col_offset


def select(tasks: list[Task], choice: str) -> list[Task]:
    """The tasks `choice` names: `all`, `chN` (one chapter), or ids separated by commas
    or spaces (`1.1,1.2`); '' names none.

    Raises:
        TaskError: For an id or chapter that has no task.
    """
    chosen: list[Task] = []
    for word in choice.replace(",", " ").split():
        if word == "all":
            picked = tasks
        elif word.startswith("ch") and word[2:].isdigit():
            picked = [t for t in tasks if t.chapter == int(word[2:])]
        else:
            picked = [t for t in tasks if t.id == word]
        if not picked:
            raise TaskError(
                f"no task {word!r}: choose all, chN, or ids among " + ", ".join(t.id for t in tasks)
            )
        chosen += [t for t in picked if t not in chosen]
    return sorted(chosen, key=lambda t: t.order)


def carve(folder: Path, tasks: list[Task]) -> list[str]:
    """Carve `tasks` out of the minifx under `folder`, in place; the paths changed."""
    changed = sorted({path for task in tasks for path in task.paths})
    for path in changed:
        file = folder / path
        file.write_text(
            carve_source(path, file.read_text(encoding="utf-8"), tasks), encoding="utf-8"
        )
    return changed


def source_files(folder: Path, package: str = "minifx") -> dict[str, bytes]:
    """`{path: bytes}` of the Python files of `package` under `folder`."""
    return {
        p.relative_to(folder).as_posix(): p.read_bytes()
        for p in sorted((folder / package).rglob("*.py"))
        if "__pycache__" not in p.parts
    }


# --- the tests that grade a task ------------------------------------------------------


def task_tests(files: dict[str, bytes]) -> dict[str, dict[str, set[str]]]:
    """`{task id: {test file: {test function names}}}` from the `pytest.mark.task(...)`
    marks in `files` (`{path: source}` of test files)."""
    found: dict[str, dict[str, set[str]]] = {}
    for path, data in sorted(files.items()):
        if not Path(path).name.startswith("test_") or b"mark.task(" not in data:
            continue
        tree = ast.parse(data)
        module_marks = _task_marks(
            next(
                (
                    n.value
                    for n in tree.body
                    if isinstance(n, ast.Assign)
                    and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                ),
                None,
            )
        )
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith("test"):
                for task_id in module_marks | set().union(*map(_task_marks, node.decorator_list)):
                    found.setdefault(task_id, {}).setdefault(path, set()).add(node.name)
    return found


def _task_marks(node: ast.AST | None) -> set[str]:
    """The ids in every `pytest.mark.task("<id>")` call within `node`."""
    if node is None:
        return set()
    return {
        call.args[0].value
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "task"
        and call.args
        and isinstance(call.args[0], ast.Constant)
        and isinstance(call.args[0].value, str)
    }
