"""Running generated source (`compile_forward`), and explaining its errors
(`explain_error` names the node whose line failed)."""

from __future__ import annotations

import linecache
from traceback import walk_tb
from typing import TYPE_CHECKING, Callable

from ..proxy.ir import format_target
from .code_cache import compile_once, register_source
from .codegen import PythonCode
from .syntax import syntax_error_note

if TYPE_CHECKING:
    from .graph_module import GraphModule


# --8<-- [start:compile_forward]
def compile_forward(code: PythonCode, co_fields: dict | None = None) -> tuple[Callable, str]:
    """Exec the generated source; return its `forward` and the file name (in
    `linecache`, for tracebacks, `pdb` and `inspect.getsource`) it runs under."""
    filename = register_source(code.src, co_fields)
    namespace = dict(code.globals)
    try:
        compiled = compile_once(code.src, filename)
    except SyntaxError as error:  # a graph python_code could not check: say which line
        error.add_note(syntax_error_note(error))
        raise
    exec(compiled, namespace)
    return namespace["forward"], filename


# --8<-- [end:compile_forward]
# --8<-- [start:explain_error]
def explain_error(error: BaseException, gm: GraphModule) -> None:
    """Add a note to `error` naming the node of `gm` whose generated line raised it."""
    frames = [n for f, n in walk_tb(error.__traceback__) if f.f_code.co_filename == gm._source_file]
    index = gm._lineno_map.get(frames[-1] - gm._prologue_start) if frames else None
    if index is None:
        return
    node = next(n for i, n in enumerate(gm.graph.nodes) if i == index)
    line = linecache.getline(gm._source_file, frames[-1]).strip()
    note = (
        f"While running node %{node.name} ({node.op} {format_target(node.target)}) in the generated "
        f"forward of {gm._get_name()}, line {frames[-1]}:\n    {line}\n"
        "print(gm.code) shows the whole function; print(gm.graph) shows the nodes."
    )
    if note not in getattr(error, "__notes__", []):
        error.add_note(note)


# --8<-- [end:explain_error]
