"""`replace_pattern`: rewrite a graph by example, with a pattern and a replacement.

Both are ordinary Python (functions or modules) that minifx traces into small
graphs. Every place where the pattern's graph occurs in the module's graph is
cut out and the replacement's graph is spliced in, as `torch.fx.replace_pattern`
does. Finding the occurrences is the job of `minifx.passes.matcher`.
`replace_pattern_with_filters` is the same rewrite with a say on which matches to
take (`match_filters`), how literals compare, and what to put in each place.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import torch

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Graph, Node
from minifx.graph.module_paths import get_path
from minifx.proxy import TraceError

from . import rewriter_errors as errors
from .matcher import InternalMatch, SubgraphMatcher

PatternLike = Callable[..., Any] | GraphModule | Graph
# A match filter or replacement callback gets (match, original graph, pattern graph).
MatchFilter = Callable[[InternalMatch, Graph, Graph], bool]
ReplacementCallback = Callable[[InternalMatch, Graph, Graph], Graph]


# --8<-- [start:match_tuple]
class Match(NamedTuple):
    """Where the pattern matched.

    Attributes:
        anchor: the pattern node the match was grown from (a node of the
            pattern's graph, as in torch.fx, not of the rewritten graph).
        nodes_map: pattern node -> the graph node it matched. The matched
            graph nodes have been erased by the time you read this.
    """

    anchor: Node
    nodes_map: dict[Node, Node]


# --8<-- [end:match_tuple]


@dataclass
class ReplacedPatterns:
    """A `Match` and what replaced it: what `replace_pattern_with_filters` returns.

    Attributes:
        anchor: the pattern node the match was grown from.
        nodes_map: pattern node -> the graph node it matched.
        replacements: the nodes copied into the graph in its place, in order
            (empty when the replacement only returns one of its inputs).
    """

    anchor: Node
    nodes_map: dict[Node, Node]
    replacements: list[Node]


# --8<-- [start:replace_pattern]
def replace_pattern(gm: GraphModule, pattern: PatternLike, replacement: PatternLike) -> list[Match]:
    """Replace every non-overlapping occurrence of `pattern` in `gm` by `replacement`.

    Matching follows use-def edges, not names: the pattern's parameters match any
    value, its other nodes match nodes with the same opcode and target whose
    literal arguments are equal. A match's inner nodes may not be used outside
    it; only the values the pattern returns may be. Where matches overlap, the
    first in graph order wins.

    Args:
        gm: the module to rewrite in place; it is recompiled.
        pattern: a function, `nn.Module`, `GraphModule` or `Graph` to find.
        replacement: the same kinds, taking as many arguments as `pattern`
            (in the same order) and returning as many values.

    Returns:
        One `Match` per rewritten occurrence, in graph order.

    Raises:
        ValueError: if pattern and replacement take different numbers of
            arguments or return different numbers of values, or the pattern
            returns an input, has unused parameters or dead code (each also the
            `AssertionError` or `KeyError` torch.fx raises).
        TypeError: if the pattern or replacement is not a function, module or
            graph (also an `AssertionError`, as in torch.fx).
        TraceError: if the pattern or replacement cannot be traced.

    Example:
        ```python
        def pattern(x):
            return torch.sigmoid(x) * x

        def replacement(x):
            return F.silu(x)

        matches = replace_pattern(gm, pattern, replacement)
        ```
    """
    replaced = replace_pattern_with_filters(gm, pattern, replacement)
    return [Match(anchor=r.anchor, nodes_map=r.nodes_map) for r in replaced]


# --8<-- [end:replace_pattern]


# --8<-- [start:replace_pattern_with_filters]
def replace_pattern_with_filters(
    gm: GraphModule,
    pattern: PatternLike,
    replacement: PatternLike | None = None,
    match_filters: list[MatchFilter] | None = None,
    ignore_literals: bool = False,
    replacement_callback: ReplacementCallback | None = None,
) -> list[ReplacedPatterns]:
    """`replace_pattern`, with a say on which matches to take and what replaces them.

    Args:
        gm: the module to rewrite in place; it is recompiled.
        pattern: a function, `nn.Module`, `GraphModule` or `Graph` to find.
        replacement: the same kinds; may be `None` if `replacement_callback` is given.
        match_filters: functions `(match, original_graph, pattern_graph) -> bool`;
            a match is replaced only if every filter returns `True`.
        ignore_literals: let the pattern's literals match any argument.
        replacement_callback: a function `(match, original_graph, pattern_graph)`
            that returns the replacement `Graph` for that match; it wins over
            `replacement`.

    Returns:
        One `ReplacedPatterns` per rewritten occurrence, in graph order.

    Raises:
        ValueError: as `replace_pattern`, also for a callback's replacement.
        TypeError: as `replace_pattern`, also if there is neither a replacement
            nor a callback.
        TraceError: if the pattern or replacement cannot be traced.
    """
    pattern_graph = _as_graph(pattern, "pattern")
    _check_returns_computed_values(pattern_graph)
    common_graph = None  # one replacement for every match, unless a callback builds each
    if replacement_callback is None:
        common_graph = _as_graph(replacement, "replacement")
        _check_same_arity(pattern_graph, common_graph)
    matcher = SubgraphMatcher(pattern_graph, ignore_literals=ignore_literals)
    matches = [
        m
        for m in matcher.match(gm.graph)
        if all(keep(m, gm.graph, pattern_graph) for keep in match_filters or ())
    ]
    replaced: dict[Node, Node] = {}  # a later match may read a value an earlier rewrite replaced
    results = []
    for match in matches:
        replacement_graph = (
            common_graph
            if replacement_callback is None
            else _callback_graph(replacement_callback, match, gm.graph, pattern_graph)
        )
        new_nodes = _rewrite_one(gm.graph, pattern_graph, replacement_graph, match, replaced)
        results.append(ReplacedPatterns(match.anchors[0], match.nodes_map, new_nodes))
    gm.recompile()
    if isinstance(replacement, torch.nn.Module):
        _copy_attributes(gm, replacement)
    return results


# --8<-- [end:replace_pattern_with_filters]


# --8<-- [start:rewrite_one]
# --8<-- [task:7.2] "Splice in the replacement" points=5 section=07-subgraph-rewriting.md#replacing
def _rewrite_one(
    graph: Graph,
    pattern_graph: Graph,
    replacement_graph: Graph,
    match: InternalMatch,
    replaced: dict[Node, Node],
) -> list[Node]:
    """Splice one copy of the replacement in place of one match, then erase the match.

    Returns the copied nodes, in the replacement's order.
    """
    val_map = _bind_inputs(replacement_graph, match, replaced)
    with graph.inserting_before(_insert_point(graph, match.returning_nodes)):
        outputs = graph.graph_copy(replacement_graph, val_map)
    if isinstance(outputs, Node):
        outputs = (outputs,)
    if len(outputs) != len(match.returning_nodes):
        raise errors.output_count_mismatch(len(match.returning_nodes), len(outputs))
    for old, new in zip(match.returning_nodes, outputs):
        old.replace_all_uses_with(new)
        replaced[old] = new
    # Users before producers, so that every node is unused when it is erased.
    for pn in reversed(pattern_graph.nodes):
        if pn.op not in ("placeholder", "output"):
            graph.erase_node(match.nodes_map[pn])
    return [val_map[n] for n in replacement_graph.nodes if n.op not in ("placeholder", "output")]


def _bind_inputs(
    replacement_graph: Graph, match: InternalMatch, replaced: dict[Node, Node]
) -> dict[Node, Any]:
    """Replacement placeholder -> the value the matching pattern placeholder matched."""
    inputs = [n for n in replacement_graph.nodes if n.op == "placeholder"]
    val_map: dict[Node, Any] = {}
    for i, (ph, value) in enumerate(zip(inputs, match.placeholder_nodes)):
        if isinstance(value, Node) and value in replaced:
            value = replaced[value]
            _update_match(match, match.placeholder_nodes[i], value)
            match.placeholder_nodes[i] = value
        val_map[ph] = value
    return val_map


def _insert_point(graph: Graph, returning_nodes: list[Node]) -> Node:
    """The first user of a returned value, or else the node after the last returned value."""
    users = {user for node in returning_nodes for user in node.users}
    if users:
        return next(n for n in graph.nodes if n in users)
    last = next(n for n in reversed(graph.nodes) if n in returning_nodes)
    return last.next


# --8<-- [end-task:7.2]
# --8<-- [end:rewrite_one]


def _callback_graph(
    callback: ReplacementCallback | None, match: InternalMatch, graph: Graph, pattern_graph: Graph
) -> Graph:
    """The replacement the callback builds for this match, checked like a common one."""
    replacement_graph = callback(match, graph, pattern_graph)
    _check_same_arity(pattern_graph, replacement_graph)
    return replacement_graph


def _update_match(match: InternalMatch, old: Node, new: Node) -> None:
    """Point the pattern node that matched `old` at `new` (as torch.fx does)."""
    for pn, gn in match.nodes_map.items():
        if gn is old:
            match.nodes_map[pn] = new
            return


def _as_graph(fn: PatternLike, role: str) -> Graph:
    """The graph of a pattern or replacement, tracing it if needed."""
    if isinstance(fn, GraphModule):
        return fn.graph
    if isinstance(fn, Graph):
        return fn
    if fn is None and role == "replacement":
        raise errors.no_replacement()
    if not callable(fn):
        raise errors.not_a_pattern(role, fn)
    try:
        return symbolic_trace(fn).graph
    except TraceError as error:
        error.add_note(
            f"(while replace_pattern traced the {role} {_describe(fn)}; "
            f"the {role} must be traceable like any model)"
        )
        raise


def _describe(fn: Any) -> str:
    return getattr(fn, "__qualname__", type(fn).__name__)


def _check_same_arity(pattern_graph: Graph, replacement_graph: Graph) -> None:
    """Inputs pair up by position, so both sides must take the same number."""
    pattern_inputs = [n.name for n in pattern_graph.nodes if n.op == "placeholder"]
    replacement_inputs = [n.name for n in replacement_graph.nodes if n.op == "placeholder"]
    if len(pattern_inputs) != len(replacement_inputs):
        raise errors.arity_mismatch(pattern_inputs, replacement_inputs)


def _check_returns_computed_values(pattern_graph: Graph) -> None:
    """A returned input would hand every use of whatever it matched to the replacement."""
    for output in pattern_graph.find_nodes(op="output"):
        for node in output.all_input_nodes:
            if node.op == "placeholder":
                raise errors.returned_input(node)


# --8<-- [start:copy_attributes]
def _copy_attributes(gm: GraphModule, replacement: torch.nn.Module) -> None:
    """Give `gm` the submodules and tensors the replacement's nodes refer to."""
    gm.delete_all_unused_submodules()
    for node in gm.graph.nodes:
        if node.op not in ("call_module", "get_attr") or _lookup(gm, node.target) is not None:
            continue
        value = _lookup(replacement, node.target)
        if value is None:
            raise errors.missing_attribute(node)
        _install(gm, node.target, copy.deepcopy(value))
    gm.graph.lint()


# --8<-- [end:copy_attributes]


def _lookup(root: torch.nn.Module, target: str) -> Any:
    return get_path(root, target, None)


def _install(gm: GraphModule, target: str, value: Any) -> None:
    if isinstance(value, torch.nn.Module):
        gm.add_submodule(target, value)
        return
    # A tensor at "sub.w" belongs on the submodule `sub` (created if missing), not on
    # `gm` under the dotted name, which nn.Module refuses for parameters.
    owner_path, _, name = target.rpartition(".")
    if owner_path and _lookup(gm, owner_path) is None:
        gm.add_submodule(owner_path, torch.nn.Module())
    setattr(get_path(gm, owner_path) if owner_path else gm, name, value)
