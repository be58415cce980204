"""Drawing a graph: `to_mermaid` writes any Graph as a Mermaid flowchart.

Mermaid is a small text language for diagrams that mkdocs-material (and GitHub)
render in the browser, so the book's pictures of graphs are text files that
`to_mermaid` writes and a test keeps current:

    flowchart TD
        n0(["x<br/>placeholder"])
        n1["relu<br/>call_function torch.relu"]
        n2[["output<br/>output"]]
        n0 --> n1
        n1 --> n2

One Mermaid node per graph node, one arrow per use (an arrow from `a` to `b`
when `a` is among `b.all_input_nodes`: the use-def lists of chapter 2).
torch.fx draws graphs with Graphviz (`torch.fx.passes.graph_drawer.FxGraphDrawer`,
which needs the `pydot` package and the `dot` binary); Mermaid needs neither.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable

from ..graph import Graph, Node
from ..proxy.ir import format_target

if TYPE_CHECKING:
    from ..codegen import GraphModule

NodeLabel = Callable[[Node], str]
EdgeLabel = Callable[[Node, Node], "str | None"]

# Mermaid's flowchart spacing, as YAML front matter before the chart: 8 px
# between a box and its text instead of 15, and 20 px between boxes side by side
# instead of 50. Three branches side by side, with a name in each box, then fit
# a phone's column (358 px) without their text shrinking below 11 px.
_COMPACT = """\
---
config:
  flowchart:
    nodeSpacing: 20
    padding: 8
---
"""

# --8<-- [start:shapes]
# Each opcode gets its own outline, so inputs, weights and the result stand out:
# placeholders are stadiums, get_attr a cylinder (stored data), output a
# subroutine box, and the three calls plain rectangles.
_OUTLINES = {
    "placeholder": ('(["', '"])'),
    "get_attr": ('[("', '")]'),
    "call_function": ('["', '"]'),
    "call_method": ('["', '"]'),
    "call_module": ('["', '"]'),
    "output": ('[["', '"]]'),
}
# --8<-- [end:shapes]

# --8<-- [start:escape]
# Characters that Mermaid or the HTML it renders would read as syntax, written
# as Mermaid entity codes (`#<decimal code>;`). Brackets need none: labels are
# always quoted, and inside quotes Mermaid reads them as text.
_ENTITIES = {c: f"#{ord(c)};" for c in '#"&<>|`'}
# Mermaid also reads a label as Markdown: `__getitem__` would be drawn as a bold
# "getitem". A star, or a run of underscores at a word's edge, gets a backslash; an
# underscore inside a word (`call_module`) starts no emphasis and stays as it is.
_EMPHASIS = re.compile(r"\*|(?<![^\W_])_+|_+(?![^\W_])")


def escape(text: str) -> str:
    """`text` as it may appear inside a quoted Mermaid label, rendered literally.

    Mermaid reads `#`, quotes, `|`, `&`, `<`, `>` and backticks as syntax or HTML;
    each becomes an entity code (`"` -> `#34;`), and a line break becomes `<br/>`.
    Stars and underscores that Markdown would read as emphasis get a backslash.
    """
    escaped = "".join(_ENTITIES.get(c, c) for c in text)
    escaped = _EMPHASIS.sub(lambda marks: "".join("\\" + c for c in marks[0]), escaped)
    return escaped.replace("\r\n", "\n").replace("\n", "<br/>")


# --8<-- [end:escape]


# --8<-- [start:describe]
def describe_node(node: Node) -> str:
    """The default label: the node's name, then its opcode and target.

    Placeholders and outputs show only their opcode (their target is the
    name again, or `"output"`); a call shows what it calls, printed as
    `str(graph)` prints it (`operator.add`, `torch.relu`, `layer1.0.conv1`).
    """
    if node.op in ("placeholder", "output"):
        return f"{node.name}\n{node.op}"
    return f"{node.name}\n{node.op} {format_target(node.target)}"


# --8<-- [end:describe]


# --8<-- [start:to_mermaid]
def to_mermaid(
    gm_or_graph: GraphModule | Graph,
    node_label: NodeLabel | None = None,
    edge_label: EdgeLabel | None = None,
    direction: str = "TD",
    compact: bool = False,
) -> str:
    """A Mermaid flowchart of a Graph or a GraphModule, one node per graph node.

    Mermaid node ids are `n0`, `n1`, ... in graph order, so any node name is safe
    (`end` or `o` would break Mermaid as ids); names appear only in labels, escaped.
    The text is the same for the same graph, so a test can compare it.

    Args:
        gm_or_graph: a `Graph`, or anything with a `Graph` in `.graph` (a `GraphModule`).
        node_label: the text of each node's box, given the node; defaults to
            `describe_node` (name, then opcode and target). Lines are separated
            by `"\\n"`; the text is escaped for you.
        edge_label: the text on the arrow from an input to a node that uses it,
            given `(input, user)`, or `None` for no text. Escaped for you.
        direction: Mermaid's direction: `"TD"` (top-down), `"LR"`, `"BT"` or `"RL"`.
        compact: draw the boxes and the gaps between them narrower (Mermaid
            config in front matter before the chart), so that a wide graph with
            short labels (`node_label=lambda n: n.name`) fits a phone's screen.

    Returns:
        The flowchart, one statement per line, ending with a newline.

    Raises:
        TypeError: `gm_or_graph` is neither a Graph nor has one in `.graph`.
        ValueError: `direction` is not one Mermaid knows.
    """
    graph = _graph_of(gm_or_graph)
    _check_direction(direction)
    label = node_label or describe_node
    ids = {node: f"n{i}" for i, node in enumerate(graph.nodes)}
    lines = [f"flowchart {direction}"]
    lines += [_box(ids[node], node.op, label(node)) for node in graph.nodes]
    for user in graph.nodes:
        for used in user.all_input_nodes:
            text = edge_label(used, user) if edge_label else None
            lines.append(_arrow(ids[used], ids[user], text))
    chart = "\n    ".join(lines) + "\n"
    return _COMPACT + chart if compact else chart


# --8<-- [end:to_mermaid]


def _box(node_id: str, op: str, text: str) -> str:
    opening, closing = _OUTLINES[op]
    return f"{node_id}{opening}{escape(text)}{closing}"


def _arrow(source: str, target: str, text: str | None) -> str:
    if text is None:
        return f"{source} --> {target}"
    return f'{source} -->|"{escape(text)}"| {target}'


_DIRECTIONS = ("TD", "TB", "LR", "BT", "RL")


def _check_direction(direction: str) -> None:
    if direction not in _DIRECTIONS:
        raise ValueError(
            f"to_mermaid: unknown direction {direction!r}. Mermaid flowcharts go "
            f"{', '.join(_DIRECTIONS)} (TD is top-down, LR left to right)."
        )


def _graph_of(gm_or_graph: GraphModule | Graph | object) -> Graph:
    if isinstance(gm_or_graph, Graph):
        return gm_or_graph
    graph = getattr(gm_or_graph, "graph", None)
    if isinstance(graph, Graph):
        return graph
    inner = (
        ""
        if graph is None
        else f" whose .graph is a {type(graph).__module__}.{type(graph).__name__}"
    )
    raise TypeError(
        f"to_mermaid: expected a minifx Graph or GraphModule, got {type(gm_or_graph).__name__}"
        f"{inner}. Trace it with minifx first: to_mermaid(minifx.symbolic_trace(module))."
    )
