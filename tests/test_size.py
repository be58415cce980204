"""Size limits a reader can count on: modules of at most 400 lines, function bodies of at
most 40, and a teaching path per stage short enough to read in a sitting.

Issue 17 set these limits (DESIGN.md section 6 asks for small files and functions). An
exception is allowed only with a reason, and one that is no longer needed fails too, so the
lists only shrink.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.book_hooks import TASK_MARKER

pytestmark = pytest.mark.meta

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "minifx"
MAX_MODULE_LINES = 400
MAX_BODY_LINES = 40
MAX_TEACHING_PATH_LINES = 2_400

# Modules allowed over MAX_MODULE_LINES: path (from the repository root) -> why.
LONG_MODULES: dict[str, str] = {}
# Functions allowed a body over MAX_BODY_LINES: "path:qualified name" -> why.
LONG_FUNCTIONS: dict[str, str] = {}

# What the chapters point to as "the code of this stage": the files a learner reads.
# Parity features (pickling, copying, to_folder, ...) live in modules beside these.
TEACHING_PATH: dict[int, list[str]] = {
    1: [
        "minifx/proxy/proxy.py",
        "minifx/proxy/operators.py",
        "minifx/proxy/ir.py",
        "minifx/proxy/tape.py",
    ],
    2: [
        "minifx/graph/node.py",
        "minifx/graph/graph.py",
        "minifx/graph/tracer.py",
        "minifx/graph/invariants.py",
    ],
    3: [
        "minifx/codegen/python_code.py",
        "minifx/codegen/graph_module.py",
        "minifx/codegen/source.py",
        "minifx/codegen/symbolic_trace.py",
    ],
    4: [
        "minifx/interpreter/interpreter.py",
        "minifx/interpreter/transformer.py",
        "minifx/interpreter/decompose.py",
    ],
}


def modules() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def relative(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def line_count(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def body_lines(function: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines from the first statement after the docstring to the end of the last one."""
    body = function.body
    if (
        isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    ):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def function_sizes(path: Path) -> dict[str, int]:
    """Body lines of each function in `path`, by qualified name (`Class.method`, `f.inner`)."""
    sizes: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                sizes[f"{prefix}{child.name}"] = body_lines(child)
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(encoding="utf-8")), "")
    return sizes


def test_body_lines_leave_out_the_docstring():
    function = ast.parse('def f():\n    """Doc\n    string."""\n    a = 1\n\n    return a\n').body[
        0
    ]
    assert body_lines(function) == 3


def test_every_module_is_short():
    too_long = {
        relative(p): line_count(p)
        for p in modules()
        if line_count(p) > MAX_MODULE_LINES and relative(p) not in LONG_MODULES
    }
    assert not too_long, (
        f"modules over {MAX_MODULE_LINES} lines: {too_long}; split them, or "
        "add one to LONG_MODULES with the reason it must stay whole"
    )


def test_every_long_module_exception_is_still_needed():
    for path, reason in LONG_MODULES.items():
        assert reason.strip(), f"{path}: say why it may be long"
        assert (ROOT / path).is_file(), f"LONG_MODULES names {path}, which does not exist"
        assert line_count(ROOT / path) > MAX_MODULE_LINES, (
            f"{path} is short now: remove it from LONG_MODULES"
        )


def test_every_function_body_is_short():
    too_long = {
        f"{relative(p)}:{name}": size
        for p in modules()
        for name, size in function_sizes(p).items()
        if size > MAX_BODY_LINES and f"{relative(p)}:{name}" not in LONG_FUNCTIONS
    }
    assert not too_long, (
        f"function bodies over {MAX_BODY_LINES} lines: {too_long}; split "
        "them, or add one to LONG_FUNCTIONS with the reason it must stay whole"
    )


def test_every_long_function_exception_is_still_needed():
    for key, reason in LONG_FUNCTIONS.items():
        path, name = key.split(":")
        assert reason.strip(), f"{key}: say why it may be long"
        size = function_sizes(ROOT / path).get(name)
        assert size is not None, f"LONG_FUNCTIONS names {key}, which does not exist"
        assert size > MAX_BODY_LINES, f"{key} is short now: remove it from LONG_FUNCTIONS"


def test_the_teaching_path_names_files_that_exist():
    missing = [
        path for paths in TEACHING_PATH.values() for path in paths if not (ROOT / path).is_file()
    ]
    assert not missing, f"TEACHING_PATH names files that do not exist: {missing}"


def teaching_lines(path: Path) -> int:
    """Lines a reader of the chapter reads: the build track's task markers (issue 18's
    `# --8<-- [task:N.M] ...` comment pairs, which the book drops from included code) left out."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if not TASK_MARKER.match(line))


def test_the_teaching_path_of_stages_1_to_4_is_short():
    sizes = {
        path: teaching_lines(ROOT / path) for stage in (1, 2, 3, 4) for path in TEACHING_PATH[stage]
    }
    too_long = {path: size for path, size in sizes.items() if size > MAX_MODULE_LINES}
    assert not too_long, f"teaching-path modules over {MAX_MODULE_LINES} lines: {too_long}"
    total = sum(sizes.values())
    assert total <= MAX_TEACHING_PATH_LINES, (
        f"the teaching path of stages 1-4 is {total} lines, over {MAX_TEACHING_PATH_LINES}: {sizes}"
    )
