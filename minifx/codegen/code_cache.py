"""Compiled code kept for reuse: `recompile` of a source compiled before skips `compile`.

Compiling the generated source is most of `recompile`'s time (about 60% for
ResNet-50), and the same source comes back often: recompiling after a pass
that changed nothing, `copy.deepcopy`, `copy.copy`, unpickling, building a
second GraphModule from the same graph. torch.fx compiles every time.
"""

from __future__ import annotations

import types

# File name -> compiled code, for the last few sources compiled, least recent first.
_COMPILED: dict[str, types.CodeType] = {}
_COMPILED_KEPT = 16


def compile_once(src: str, filename: str) -> types.CodeType:
    """`compile(src)`, reusing the code compiled last time for the same source.

    `filename` stands for the source: `source.register_source` makes it from
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
