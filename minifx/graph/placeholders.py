"""`PH`: the marker that keeps (part of) a `concrete_args` value an input.

`Tracer.trace(f, concrete_args={"pair": (PH, 2)})` fixes the second element of
`pair` to 2 and keeps the first one symbolic: each `PH` becomes a placeholder.

`PH` is the one instance of `PHBase`. A subclass of `PHBase` can carry
metadata for the placeholder it stands for: its attributes are copied onto
that placeholder node, so a pass can recognise the node later. torch.fx's
own subclass, `PHWithMeta`, carries one key:

    graph = Tracer().trace(f, concrete_args={"x": PHWithMeta(ph_key="image")})
    [n.ph_key for n in graph.nodes if n.op == "placeholder"]   # ["image"]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .node import Node


class PHBase:
    """A placeholder marker in `concrete_args`; subclass it to attach metadata."""

    def __repr__(self) -> str:
        return "PH"


PH = PHBase()


class PHWithMeta(PHBase):
    """A `PH` whose placeholder node gets the attribute `ph_key`.

    Args:
        ph_key: a name the user chooses, to find the placeholder node again.
    """

    def __init__(self, ph_key: str | None = None) -> None:
        super().__init__()
        self.ph_key = ph_key


def copy_metadata(marker: PHBase, node: Node) -> None:
    """Copy the plain data attributes of `marker` onto its placeholder `node`.

    Methods, dunder names and attributes the node already has (a `tag` set by
    the tracer's `create_node`, say) are left alone, as torch.fx does.
    """
    for name in dir(marker):
        value = getattr(marker, name)
        if not name.startswith("__") and not callable(value) and not hasattr(node, name):
            setattr(node, name, value)
