"""`annotate`: give a traced value a type, as torch.fx's `torch.fx.annotate.annotate` does.

A node's `type` is what the printed graph shows after its name (`%y : int`)
and what chapter 3's generated code writes on a placeholder. The Tracer takes
it from the signature for inputs; `annotate` sets it on any other value:

    def forward(self, x):
        y = annotate(x.sum(), int)   # %sum_1 : int
        return x + y

`RewritingTracer` (`minifx/graph/rewriter.py`) turns the annotated assignment
`y: int = x.sum()` into that call.
"""

from __future__ import annotations

from typing import Any

from ..proxy.errors import TraceRuntimeError, untraceable
from ..proxy.proxy import Proxy


def annotate(val: Any, type: Any) -> Any:
    """Record `type` as the type of the node behind `val`, and return `val`.

    Args:
        val: a Proxy (its node gets the type) or any other value (returned
            unchanged: outside a trace, `annotate` does nothing).
        type: the type to record, such as `int` or `torch.Tensor`.

    Raises:
        RuntimeError: if the node has a type already; a node has one type.
    """
    if not isinstance(val, Proxy):
        return val
    node = val.node
    if node.type is not None:
        raise untraceable(
            f"annotate(%{node.name}, {_name(type)}): %{node.name} already has the type "
            f"{_name(node.type)}.",
            "a node has one type; it was set by the function's signature (for an input) or "
            "by an earlier annotate of the same value.",
            "annotate each value once"
            + (
                f", and give an input its type in the signature (def forward(self, "
                f"{node.name}: {_name(type)}))."
                if node.op == "placeholder"
                else "."
            ),
            kind=TraceRuntimeError,
        )
    node.type = type
    return val


def _name(type_: Any) -> str:
    return getattr(type_, "__qualname__", repr(type_))
