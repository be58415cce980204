"""Compiled code kept for reuse: `recompile` of a source compiled before skips `compile`;
and the file name each source runs under (`register_source`), the same for the same source.

Compiling the generated source is most of `recompile`'s time (about 60% for
ResNet-50), and the same source comes back often: recompiling after a pass
that changed nothing, `copy.deepcopy`, `copy.copy`, unpickling, building a
second GraphModule from the same graph. torch.fx compiles every time.
"""

from __future__ import annotations

import hashlib
import itertools
import linecache
import types

import torch.fx.graph_module

# Hash of a source and its origin -> the start of its file name (`<eval_with_key>.N`).
_SOURCE_KEYS: dict[str, str] = {}
_own_numbers = itertools.count()
# File name -> compiled code, for the last few sources compiled, least recent first.
_COMPILED: dict[str, types.CodeType] = {}
_COMPILED_KEPT = 16


def compile_once(src: str, filename: str) -> types.CodeType:
    """`compile(src)`, reusing the code compiled last time for the same source.

    `filename` stands for the source: `register_source` makes it from
    the source's hash. Code objects are immutable: each `exec` of one still
    makes a new `forward`, with its own globals.
    """
    compiled = _COMPILED.pop(filename, None)
    if compiled is None:
        # dont_inherit: this module's `from __future__ import annotations` must not
        # turn the generated code's annotations into strings.
        compiled = compile(src, filename, "exec", dont_inherit=True)
    _COMPILED[filename] = compiled  # now the most recent
    if len(_COMPILED) > _COMPILED_KEPT:
        del _COMPILED[next(iter(_COMPILED))]  # the least recently used
    return compiled


def forget_compiled() -> None:
    """Drop the compiled code kept for reuse: the next compile of any source
    starts afresh (`benchmarks.codegen` uses it to time compiling new code)."""
    _COMPILED.clear()


# --8<-- [start:register_source]
def register_source(src: str, co_fields: dict | None = None) -> str:
    """Store `src` in `linecache` under a file name of its own, and return that name.

    The file name is torch.fx's: `<eval_with_key>.3`, followed by where the
    traced code lives when the tracer recorded it (`co_fields`), as in
    `<eval_with_key>.3 from /home/me/model.py:12 in forward`.

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


# --8<-- [end:register_source]


def _fresh_key() -> str:
    """`<eval_with_key>.N` with a number torch.fx will not use: a program that runs both
    libraries must never get two sources under one name, or tracebacks show wrong lines."""
    loader = getattr(torch.fx.graph_module, "_loader", None)  # torch.fx's numbering, if any
    if hasattr(loader, "_get_key"):
        return loader._get_key()
    return f"<eval_with_key>.minifx{next(_own_numbers)}"
