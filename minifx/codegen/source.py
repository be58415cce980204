"""Running generated source, and explaining its errors.

- `compile_forward` execs the source under a file name that `linecache`
  knows, so tracebacks, `pdb` and `inspect.getsource` show the generated lines;
  the name says where the traced code came from, as torch.fx's does.
- `explain_error` adds a note to an exception raised inside generated code,
  naming the node whose line failed.
"""

from __future__ import annotations

import hashlib
import itertools
import linecache
from typing import TYPE_CHECKING, Callable

import torch.fx.graph_module

from ..proxy.ir import format_target
from .code_cache import compile_once
from .python_code import PythonCode

if TYPE_CHECKING:
    from .graph_module import GraphModule

# Hash of a source and its origin -> the start of its file name (`<eval_with_key>.N`).
_SOURCE_KEYS: dict[str, str] = {}
_own_numbers = itertools.count()


# --8<-- [start:compile_forward]
def compile_forward(code: PythonCode, co_fields: dict | None = None) -> tuple[Callable, str]:
    """Exec the generated source; return its `forward` and the file name it runs under.

    The file name is torch.fx's: `<eval_with_key>.3`, followed by where the
    traced code lives when the tracer recorded it (`co_fields`), as in
    `<eval_with_key>.3 from /home/me/model.py:12 in forward`. It is
    registered in `linecache`, which is where tracebacks and debuggers look
    for source lines.
    """
    filename = register_source(code.src, co_fields)
    namespace = dict(code.globals)
    try:
        compiled = compile_once(code.src, filename)
    except SyntaxError as error:  # a graph python_code could not check: say which line
        error.add_note(
            f"The generated code of this graph does not compile; line {error.lineno} "
            f"is:\n    {(error.text or '').strip()}\nprint the code with "
            "minifx.codegen.python_code(graph).src, and fix the graph's node."
        )
        raise
    exec(compiled, namespace)
    return namespace["forward"], filename


def register_source(src: str, co_fields: dict | None = None) -> str:
    """Store `src` in `linecache` under a file name of its own, and return that name.

    The same code from the same place gets the same name again, so
    recompiling in a loop does not fill the cache.
    """
    origin = (
        (
            f" from {co_fields['co_filename']}:{co_fields['co_firstlineno']} in "
            f"{co_fields['co_name']}"
        )
        if co_fields
        else ""
    )
    key = hashlib.sha1((src + origin).encode()).hexdigest()
    if key not in _SOURCE_KEYS:
        _SOURCE_KEYS[key] = _fresh_key()
    filename = _SOURCE_KEYS[key] + origin
    # mtime None: linecache.checkcache() never drops an entry that has no file.
    linecache.cache[filename] = (len(src), None, src.splitlines(keepends=True), filename)
    return filename


# --8<-- [end:compile_forward]


def _fresh_key() -> str:
    """`<eval_with_key>.N` with a number torch.fx will not use: a program that runs both
    libraries must never get two sources under one name, or tracebacks show wrong lines."""
    loader = getattr(torch.fx.graph_module, "_loader", None)  # torch.fx's numbering, if any
    if hasattr(loader, "_get_key"):
        return loader._get_key()
    return f"<eval_with_key>.minifx{next(_own_numbers)}"


# --8<-- [start:explain_error]
def explain_error(error: BaseException, gm: GraphModule) -> None:
    """Add a note to `error` naming the node of `gm` whose generated line raised it."""
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == gm._source_file:
            frames.append(traceback.tb_lineno)
        traceback = traceback.tb_next
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
