"""Stage 3: code generation, `GraphModule` and `symbolic_trace` (chapter 3).

A `Graph` becomes Python source (`python_code`), the source becomes the
`forward` of an `nn.Module` (`GraphModule`), and `symbolic_trace` does the
whole trip from a module. Imports stages 1 and 2 only.
"""

from .codegen import CodeGen, PythonCode
from .graph_module import GraphModule
from .python_code import attribute_chain, python_code
from .symbolic_trace import symbolic_trace

__all__ = [
    "CodeGen",
    "GraphModule",
    "PythonCode",
    "attribute_chain",
    "python_code",
    "symbolic_trace",
]
