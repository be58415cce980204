"""Stage 5: passes over graphs (chapters 5 to 8).

One file per pass, in the order the book teaches them:

| module | chapter | what it does |
|---|---|---|
| `shape_prop` | 5 | `ShapeProp`: records each node's shape, dtype, stride, ... in `node.meta` |
| `draw` | 5 | `to_mermaid`: a Mermaid flowchart of any graph, for the book's pictures |
| `fuse_conv_bn` | 6 | `fuse_conv_bn`: folds eval-mode BatchNorm into the preceding Conv |
| `matcher` | 7 | `SubgraphMatcher`: finds a pattern graph in a graph |
| `subgraph_rewriter` | 7 | `replace_pattern`(`_with_filters`): finds a traced pattern and swaps in a replacement |
| `quantize` | 8 | `prepare` / `convert`: post-training int8 quantization |

Chapter 7's two modules have two helpers beside them: `schema_arguments` (calls of
`torch.ops` overloads spelled out in full) and `rewriter_errors`. Chapter 8's pass has
two: `observers` (`MinMaxObserver` and the int8 scheme) and `int8` (the int8 kernels on
plain integer tensors, with `torch._int_mm`).

Importing `minifx.passes` loads none of them; each name below is imported the
first time it is used (PEP 562), so one pass never drags in another.
"""

import importlib
from pathlib import Path

# Public name -> the module of this package that defines it. Chapter 6's function is not
# here: it has its module's name, and Python binds `minifx.passes.fuse_conv_bn` to the
# module as soon as the module is imported, so that name is the module, always
# (`from minifx.passes.fuse_conv_bn import fuse_conv_bn` reaches the function).
_EXPORTS = {
    "ShapeProp": "shape_prop",
    "TensorMetadata": "shape_prop",
    "to_mermaid": "draw",
    "replace_pattern": "subgraph_rewriter",
    "replace_pattern_with_filters": "subgraph_rewriter",
    "Match": "subgraph_rewriter",
    "ReplacedPatterns": "subgraph_rewriter",
    "SubgraphMatcher": "matcher",
    "InternalMatch": "matcher",
    "prepare": "quantize",
    "convert": "quantize",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    if (Path(__file__).parent / f"{name}.py").is_file():  # a module of this package
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(__all__)
