"""Find a small pattern graph inside a bigger graph (the matcher behind `replace_pattern`).

The matcher mirrors `torch.fx.passes.utils.matcher_utils.SubgraphMatcher`. With its
defaults, the ones `replace_pattern` uses, the pattern's output node is not matched,
its placeholders are wildcards, and overlapping matches are dropped (the first wins).

How a match is found:

1. The *anchors* are the pattern nodes the output returns and nothing else uses.
2. Every graph node with the same opcode and target as an anchor is a candidate.
3. From an anchor and a candidate, walk backwards through the arguments of both
   graphs at once. A node's value has one producer but may have many users, so walking
   towards the producers is the only walk that never has to guess.
4. A pattern with several anchors needs one candidate per anchor that agree on the
   nodes they share; every combination is tried in graph order (backtracking).
5. A match is kept if nothing outside it uses its inner nodes (no escape), if
   fusing it would not create a cycle, and if it shares no node with an earlier match.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from minifx.graph import Graph, Node
from minifx.graph.module_paths import get_path

from . import rewriter_errors as errors
from .schema_arguments import has_schema, schema_arguments

# Pattern opcodes that are part of the pattern's interface, not of the matched subgraph.
_INTERFACE = ("placeholder", "output")


# --8<-- [start:internal_match]
@dataclass
class InternalMatch:
    """One place where the pattern occurs, as the matcher builds it.

    Attributes:
        anchors: the pattern's anchor nodes (the same for every match).
        nodes_map: pattern node -> graph node (or the literal a placeholder matched).
        placeholder_nodes: what each pattern placeholder matched, in pattern order.
        returning_nodes: the graph nodes matched by what the pattern returns.
        name_node_map: empty here; torch.fx has it for a matcher that names nodes.
    """

    anchors: list[Node]
    nodes_map: dict[Node, Any] = field(default_factory=dict)
    placeholder_nodes: list[Any] = field(default_factory=list)
    returning_nodes: list[Node] = field(default_factory=list)
    name_node_map: dict[str, Node] = field(default_factory=dict)

    def __copy__(self) -> InternalMatch:
        """A copy whose `nodes_map` can grow without changing this one."""
        return InternalMatch(
            self.anchors,
            dict(self.nodes_map),
            list(self.placeholder_nodes),
            list(self.returning_nodes),
        )


# --8<-- [end:internal_match]


class SubgraphMatcher:
    """Finds every self-contained occurrence of `pattern` in a graph.

    Args:
        pattern: the pattern graph; every node but the output must be used.
        match_output: match the pattern's output node too, so that a match must end
            the graph (its output returns the same values).
        match_placeholder: let a pattern placeholder match only a placeholder of the
            graph, instead of any value.
        remove_overlapping_matches: keep only the first of matches that share a node.
        ignore_literals: let a literal of the pattern match any argument, instead of
            an equal literal only.

    Raises:
        ValueError: if the pattern is empty or has an unused node (the unused node's
            error is also the `AssertionError` or `KeyError` torch.fx raises).
    """

    def __init__(
        self,
        pattern: Graph,
        match_output: bool = False,
        match_placeholder: bool = False,
        remove_overlapping_matches: bool = True,
        ignore_literals: bool = False,
    ) -> None:
        self.pattern = pattern
        self.match_output = match_output
        self.match_placeholder = match_placeholder
        self.remove_overlapping_matches = remove_overlapping_matches
        self.ignore_literals = ignore_literals
        nodes = list(pattern.nodes)
        if not nodes or nodes[-1].op != "output":
            raise ValueError(
                "SubgraphMatcher: the pattern graph is empty (it has no output "
                "node). How to fix: trace a function that returns something."
            )
        for node in nodes[:-1]:
            if not node.users:
                raise errors.unused_node(node)
        self.placeholders = [n for n in nodes if n.op == "placeholder"]
        self.returning_nodes = nodes[-1].all_input_nodes
        # A returned node that is also used inside the pattern is reached from
        # another anchor; anchoring on it too would only repeat work.
        self.anchors = (
            [nodes[-1]] if match_output else [n for n in self.returning_nodes if len(n.users) == 1]
        )

    # --8<-- [start:match]
    # --8<-- [task:7.1] "The matcher" points=10 section=07-subgraph-rewriting.md#matching
    def match(self, graph: Graph) -> list[InternalMatch]:
        """Every match of the pattern in `graph`, in graph order of the first anchor."""
        candidates = [[n for n in graph.nodes if self._nodes_are_equal(a, n)] for a in self.anchors]
        found: list[InternalMatch] = []
        if self.anchors:
            self._backtrack(0, candidates, InternalMatch(self.anchors), found)
        kept = [
            m
            for m in found
            if self._is_contained(m.nodes_map) and not _forms_cycle(self._matched_graph_nodes(m))
        ]
        return self._remove_overlaps(kept) if self.remove_overlapping_matches else kept

    def _backtrack(
        self,
        index: int,
        candidates: list[list[Node]],
        match: InternalMatch,
        found: list[InternalMatch],
    ) -> None:
        """Try each candidate for anchor `index`; the last anchor records a match."""
        if index == len(self.anchors):
            match.placeholder_nodes = [match.nodes_map[p] for p in self.placeholders]
            match.returning_nodes = [match.nodes_map[r] for r in self.returning_nodes]
            found.append(match)
            return
        for candidate in candidates[index]:
            attempt = copy.copy(match)  # a failed attempt leaves `match` as it was
            if self._match_nodes(self.anchors[index], candidate, attempt):
                self._backtrack(index + 1, candidates, attempt, found)

    # --8<-- [end-task:7.1]
    # --8<-- [end:match]

    # --8<-- [start:match_nodes]
    # --8<-- [task:7.1]
    def _match_nodes(self, pn: Node, gn: Node, match: InternalMatch) -> bool:
        """Whether pattern node `pn` matches graph node `gn`, recording it and its inputs."""
        if pn in match.nodes_map:
            return match.nodes_map[pn] is gn
        if any(gn is matched for matched in match.nodes_map.values()):
            return False  # one graph node plays one pattern role only
        if not self._nodes_are_equal(pn, gn):
            return False
        match.nodes_map[pn] = gn
        if pn.op == "placeholder":
            return True  # a wildcard: whatever computed `gn` is outside the pattern
        if len(pn.args) != len(gn.args) or list(pn.kwargs) != list(gn.kwargs):
            # Written differently: only a torch.ops overload's schema can tell whether
            # the two calls mean the same (see `schema_arguments`).
            return has_schema(pn) and self._match_args(
                schema_arguments(pn), schema_arguments(gn), match
            )
        return self._match_args(
            [*pn.args, *pn.kwargs.values()], [*gn.args, *gn.kwargs.values()], match
        )

    def _match_args(
        self, pattern_args: list | tuple, graph_args: list | tuple, match: InternalMatch
    ) -> bool:
        """Match two argument lists position by position, nested lists included."""
        if len(pattern_args) != len(graph_args):
            return False
        for pa, ga in zip(pattern_args, graph_args):
            if isinstance(pa, Node) and isinstance(ga, Node):
                matched = self._match_nodes(pa, ga, match)
            elif isinstance(pa, (list, tuple)) and isinstance(ga, (list, tuple)):
                matched = self._match_args(pa, ga, match)
            else:
                matched = _match_literal(pa, ga, match, self.ignore_literals)
            if not matched:
                return False
        return True

    # --8<-- [end-task:7.1]
    # --8<-- [end:match_nodes]

    def _nodes_are_equal(self, pn: Node, gn: Node) -> bool:
        """Same opcode and target; a pattern placeholder equals anything.

        The pattern's output node is compared only with `match_output`, and then
        equals the graph's output: a match need not end the graph otherwise.
        """
        if pn.op == "placeholder" and not self.match_placeholder:
            return True
        if pn.op != gn.op:
            return False
        if pn.op in _INTERFACE:
            return True
        if pn.op == "get_attr":
            return _attributes_match(pn, gn)
        return pn.target == gn.target

    # --8<-- [start:rules]
    def _is_contained(self, nodes_map: dict[Node, Any]) -> bool:
        """The no-escape rule: only the returned nodes may be used outside the match."""
        inner = {gn: pn for pn, gn in nodes_map.items() if pn.op != "placeholder"}
        for gn, pn in inner.items():
            if pn in self.returning_nodes:
                continue
            if any(user not in inner for user in gn.users):
                return False
        return True

    def _matched_graph_nodes(self, match: InternalMatch) -> list[Node]:
        return [gn for pn, gn in match.nodes_map.items() if pn.op not in _INTERFACE]

    def _remove_overlaps(self, matches: list[InternalMatch]) -> list[InternalMatch]:
        """The non-overlap rule: a graph node belongs to the first match that uses it."""
        taken: set[Node] = set()
        kept = []
        for match in matches:
            nodes = self._matched_graph_nodes(match)
            if taken.isdisjoint(nodes):
                kept.append(match)
                taken.update(nodes)
        return kept

    # --8<-- [end:rules]


def _match_literal(
    pattern_arg: Any, graph_arg: Any, match: InternalMatch, ignore_literals: bool = False
) -> bool:
    """A literal argument: a placeholder may stand for it, otherwise it must be equal.

    With `ignore_literals`, a pattern's literal matches anything, and a placeholder
    may stand for different literals (as in torch.fx).
    """
    if isinstance(pattern_arg, Node):
        if pattern_arg.op != "placeholder":
            return False
        if pattern_arg in match.nodes_map:
            return ignore_literals or _same_value(match.nodes_map[pattern_arg], graph_arg)
        match.nodes_map[pattern_arg] = graph_arg
        return True
    if ignore_literals:
        return True
    if isinstance(graph_arg, Node):
        return False  # a constant in the pattern never matches a computed value
    # The type test keeps 1 from matching 1.0 or True.
    return type(pattern_arg) is type(graph_arg) and pattern_arg == graph_arg


def _same_value(bound: Any, value: Any) -> bool:
    """A placeholder seen twice must stand for the same node, or an equal literal."""
    if isinstance(bound, Node) or isinstance(value, Node):
        return bound is value
    return bound == value


def _attributes_match(pn: Node, gn: Node) -> bool:
    """`get_attr` nodes match when both read tensors (their names may differ)."""
    pattern_value = get_path(pn.graph.owning_module, pn.target)
    graph_value = get_path(gn.graph.owning_module, gn.target)
    if type(pattern_value) is not type(graph_value):
        return False
    if isinstance(pattern_value, torch.Tensor):
        return True
    raise errors.unmatchable_attribute(pn, pattern_value)


def _forms_cycle(partition: list[Node]) -> bool:
    """Whether a path leaves `partition` and comes back (fusing it would make a cycle)."""
    inside = set(partition)
    stack = [user for node in partition for user in node.users if user not in inside]
    seen: set[Node] = set()
    while stack:
        node = stack.pop()
        if node in inside:
            return True
        if node not in seen:
            seen.add(node)
            stack.extend(node.users)
    return False
