"""`replace_pattern_with_filters` against torch.fx's: match filters, `ignore_literals`,
replacement callbacks, and the `ReplacedPatterns` records (with the nodes put in)."""

from __future__ import annotations

import dataclasses
import inspect
import operator

import pytest
import torch
import torch.fx
from torch.fx import subgraph_rewriter as torch_rewriter

import minifx
import minifx.passes
from minifx.passes.matcher import InternalMatch
from minifx.passes.subgraph_rewriter import ReplacedPatterns, replace_pattern_with_filters

pytestmark = pytest.mark.ch7


def replaced_names(results: list) -> list[tuple]:
    """Each record as names: anchor, pattern node -> graph value, replacement nodes."""
    return [
        (
            r.anchor.name,
            {p.name: getattr(g, "name", g) for p, g in r.nodes_map.items()},
            [n.name for n in r.replacements],
        )
        for r in results
    ]


def rewrite_both(program, pattern, replacement=None, callback=None, **options):
    """Rewrite `program` with each library; the two GraphModules and our records.

    `callback(match, original_graph, pattern_graph, library)` builds a replacement
    graph with the given library, so that each library copies in its own kind of graph.
    """
    theirs = torch.fx.symbolic_trace(program)
    their_results = torch_rewriter.replace_pattern_with_filters(
        theirs,
        pattern,
        replacement,
        replacement_callback=callback and (lambda *args: callback(*args, library=torch.fx)),
        **options,
    )
    ours = minifx.symbolic_trace(program)
    our_results = replace_pattern_with_filters(
        ours,
        pattern,
        replacement,
        replacement_callback=callback and (lambda *args: callback(*args, library=minifx)),
        **options,
    )
    assert str(ours.graph) == str(theirs.graph) and ours.code == theirs.code
    assert replaced_names(our_results) == replaced_names(their_results)
    ours.graph.lint()
    return ours, theirs, our_results


def add_scalar_relu(x, y):
    a = torch.relu(torch.add(x, 2)) * 3
    return torch.relu(torch.add(a, y)) * 3


def add_relu_scale(x, num, scale):
    return torch.relu(torch.add(x, num)) * scale


def mul_scale(x, num, scale):
    return torch.mul(x, num) * scale


def second_input_is_a_number(match, original_graph, pattern_graph):
    num = [n for n in pattern_graph.nodes if n.op == "placeholder"][1]
    return isinstance(match.nodes_map[num], (int, float))


@pytest.mark.parametrize(
    "filters,count",
    [(None, 2), ([], 2), ([second_input_is_a_number], 1)],
    ids=["none", "empty", "number-only"],
)
def test_match_filters_decide_which_matches_are_replaced(filters, count):
    ours, theirs, results = rewrite_both(
        add_scalar_relu, add_relu_scale, mul_scale, match_filters=filters
    )
    assert len(results) == count
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(ours(x, y), theirs(x, y))


def test_every_filter_gets_the_match_and_both_graphs():
    seen = []

    def record(match, original_graph, pattern_graph):
        seen.append((type(match), original_graph, pattern_graph, list(match.placeholder_nodes)))
        return True

    pattern = minifx.symbolic_trace(add_relu_scale).graph
    gm = minifx.symbolic_trace(add_scalar_relu)
    replace_pattern_with_filters(gm, pattern, mul_scale, [record, lambda *args: False])
    assert [(kind, g is gm.graph, p is pattern) for kind, g, p, _ in seen] == [
        (InternalMatch, True, True)
    ] * 2
    assert [[getattr(v, "name", v) for v in values] for *_, values in seen] == [
        ["x", 2, 3],
        ["mul", "y", 3],
    ]
    assert "mul_scale" not in gm.code and "relu" in gm.code  # the second filter said no


def test_replacements_are_the_nodes_put_into_the_graph():
    def program(x, y):
        return torch.add(x, y) * torch.add(y, x)

    def pattern(x, y):
        return torch.add(x, y)

    def replacement(x, y):
        return torch.sub(torch.mul(x, y), y)

    ours, _, results = rewrite_both(program, pattern, replacement)
    added = [n for n in ours.graph.nodes if n.target in (torch.sub, torch.mul)]
    assert [n for r in results for n in r.replacements] == added and len(added) == 4


def test_a_replacement_that_returns_its_input_puts_in_no_node():
    def program(x):
        v = torch.neg(x)
        v = torch.add(v, v)
        return torch.add(v, v)

    def pattern(x):
        return torch.add(x, x)

    def replacement(x):
        return x

    ours, _, results = rewrite_both(program, pattern, replacement, match_filters=[])
    assert [r.replacements for r in results] == [[], []]
    x = torch.randn(4)
    torch.testing.assert_close(ours(x), torch.neg(x))


def test_a_replacement_callback_builds_one_graph_per_match():
    def program(x, y):
        return torch.add(x, y) + torch.add(x, 2)

    def pattern(x, y):
        return torch.add(x, y)

    def callback(match, original_graph, pattern_graph, library):
        if isinstance(match.placeholder_nodes[1], int):  # a literal: fold it in
            return library.symbolic_trace(lambda x, y: torch.sub(x, -y)).graph
        return library.symbolic_trace(lambda x, y: torch.mul(x, y)).graph

    ours, theirs, results = rewrite_both(program, pattern, callback=callback)
    assert [[n.target for n in r.replacements] for r in results] == [
        [torch.mul],
        [operator.neg, torch.sub],
    ]
    x, y = torch.randn(3), torch.randn(3)
    torch.testing.assert_close(ours(x, y), theirs(x, y))


def test_the_callback_wins_over_a_replacement():
    def program(x):
        return torch.relu(x)

    def sigmoid(x):
        return torch.sigmoid(x)

    def tanh(match, original_graph, pattern_graph, library):
        return library.symbolic_trace(lambda x: torch.tanh(x)).graph

    ours, _, _ = rewrite_both(program, program, sigmoid, callback=tanh)
    assert "tanh" in ours.code and "sigmoid" not in ours.code


def test_ignore_literals_lets_a_literal_match_any_argument():
    def program(x, y):
        return (x + 1) * (x + 2) + (x + 2.5) - (x + y)

    def pattern(x):
        return x + 1

    def replacement(x):
        return torch.add(x, 1)

    # With ignore_literals, the pattern's 1 matches 2, 2.5, the node %y, and even the
    # node %add_2 in `%add_3 = %mul + %add_2` (x standing for %mul), as in torch.fx.
    for ignore_literals, count in ((False, 1), (True, 5)):
        ours, theirs, results = rewrite_both(
            program, pattern, replacement, ignore_literals=ignore_literals
        )
        assert len(results) == count


def test_the_records_are_torch_fx_s():
    assert [f.name for f in dataclasses.fields(ReplacedPatterns)] == [
        f.name for f in dataclasses.fields(torch_rewriter.ReplacedPatterns)
    ]
    assert minifx.passes.replace_pattern_with_filters is replace_pattern_with_filters
    assert minifx.passes.ReplacedPatterns is ReplacedPatterns


def test_node_name_match_is_not_offered():
    """Difference: torch.fx's experimental `node_name_match` option is left out."""
    from torch.fx.passes.utils.matcher_utils import SubgraphMatcher as TorchSubgraphMatcher

    from minifx.passes.matcher import SubgraphMatcher

    theirs = [
        inspect.signature(torch_rewriter.replace_pattern_with_filters).parameters,
        inspect.signature(TorchSubgraphMatcher.match).parameters,
    ]
    ours = [
        inspect.signature(replace_pattern_with_filters).parameters,
        inspect.signature(SubgraphMatcher.match).parameters,
    ]
    assert all("node_name_match" in p for p in theirs)
    assert not any("node_name_match" in p for p in ours)
    assert [list(p)[:-1] for p in theirs] == [list(p) for p in ours]  # all the others
