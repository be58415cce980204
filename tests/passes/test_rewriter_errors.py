"""Bad patterns and replacements get errors that say what, where, why and how to fix.

Where torch.fx fails too, its failure is pinned next to ours (it is often a bare
AssertionError or KeyError), and ours is an instance of the same type, so the same
`except` clause catches both; where torch.fx says nothing, the difference is pinned.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher as TorchSubgraphMatcher

import minifx
from minifx.graph import Graph
from minifx.passes.matcher import SubgraphMatcher
from minifx.passes.subgraph_rewriter import replace_pattern, replace_pattern_with_filters
from minifx.proxy import TraceError

pytestmark = pytest.mark.ch7


def program(x, y):
    return torch.relu(x) + y


def relu(x):
    return torch.relu(x)


def test_pattern_and_replacement_with_different_numbers_of_inputs():
    def pattern(x, y):
        return torch.relu(x) + y

    gm = minifx.symbolic_trace(program)
    with pytest.raises(ValueError) as error:
        replace_pattern(gm, pattern, relu)
    assert str(error.value) == (
        "replace_pattern: the pattern takes 2 input(s) (x, y) but the replacement takes 1 (x). "
        "Inputs pair up by position. How to fix: give the replacement the same parameters as "
        "the pattern, even those it does not use."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="Placeholder count mismatch: 2 vs 1"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, relu)


def test_the_arity_is_checked_even_without_a_match():
    """Difference: torch.fx only notices the mismatch when something matched."""

    def pattern(x, y):
        return torch.tanh(x) + y

    assert torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, relu) == []
    with pytest.raises(ValueError, match="the pattern takes 2 input"):
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)


def test_an_unused_pattern_parameter():
    def pattern(x, y):
        return torch.relu(x)

    with pytest.raises(ValueError) as error:
        replace_pattern(minifx.symbolic_trace(program), pattern, pattern)
    assert str(error.value) == (
        "replace_pattern: the pattern's parameter 'y' is never used. Matching follows values "
        "from the pattern's output back to its inputs, so an unused parameter can never be "
        "matched. How to fix: remove the parameter from the pattern (and from the replacement)."
    )
    assert isinstance(error.value, KeyError)
    with pytest.raises(KeyError):  # torch.fx fails while recording the match
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, pattern)


def test_dead_code_in_the_pattern():
    def pattern(x):
        torch.neg(x)
        return torch.relu(x)

    with pytest.raises(ValueError) as error:
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)
    assert str(error.value) == (
        "replace_pattern: the pattern computes %neg (call_function) but never uses it "
        "(dead code), so no match could ever account for it. How to fix: return it from the "
        "pattern or delete it."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="dead code"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, relu)


def test_an_unused_in_place_call_in_the_pattern():
    """Difference: torch.fx accepts it (a call with side effects is not dead code), leaves it
    out of every match, and fails with KeyError when erasing the match."""

    def pattern(x):
        torch.ops.aten.add_.Tensor(x, 1)
        return torch.relu(x)

    with pytest.raises(ValueError, match="computes %add__tensor .* never uses it"):
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)
    theirs = torch.fx.symbolic_trace(program)
    with pytest.raises(KeyError, match="add__tensor"):
        torch.fx.replace_pattern(theirs, pattern, relu)


def test_an_empty_pattern_graph():
    with pytest.raises(ValueError) as error:
        SubgraphMatcher(Graph())
    assert str(error.value) == (
        "SubgraphMatcher: the pattern graph is empty (it has no output node). How to fix: "
        "trace a function that returns something."
    )


def test_an_untraceable_pattern_keeps_the_trace_error_and_says_which_side():
    def pattern(x):
        if x.sum() > 0:
            return torch.relu(x)
        return x

    with pytest.raises(TraceError) as error:
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)
    assert "if x.sum() > 0:" in str(error.value)
    assert error.value.__notes__ == [
        "(while replace_pattern traced the pattern "
        "test_an_untraceable_pattern_keeps_the_trace_error_and_says_which_side.<locals>.pattern; "
        "the pattern must be traceable like any model)"
    ]


def test_a_pattern_that_is_not_callable():
    with pytest.raises(TypeError) as error:
        replace_pattern(minifx.symbolic_trace(program), relu, "torch.sigmoid")
    assert str(error.value) == (
        "replace_pattern: the replacement must be a function, an nn.Module, a GraphModule or a "
        "Graph, not str. How to fix: write the replacement as a function of its inputs."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="Must provide either a replacement"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), relu, "torch.sigmoid")
    with pytest.raises(AssertionError, match="Expected FunctionType"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), "torch.relu", relu)
    with pytest.raises(AssertionError, match="the pattern must be a function"):
        replace_pattern(minifx.symbolic_trace(program), "torch.relu", relu)


def test_no_replacement_and_no_callback():
    with pytest.raises(TypeError) as error:
        replace_pattern_with_filters(minifx.symbolic_trace(program), relu)
    assert str(error.value) == (
        "replace_pattern_with_filters: there is no replacement: `replacement` is None and no "
        "`replacement_callback` was given. How to fix: pass the replacement (a function, "
        "module, GraphModule or Graph), or a callback that builds one Graph per match."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="Must provide either a replacement"):
        torch.fx.subgraph_rewriter.replace_pattern_with_filters(
            torch.fx.symbolic_trace(program), relu
        )


def test_a_callbacks_replacement_with_another_number_of_inputs():
    def callback(match, original_graph, pattern_graph):
        return minifx.symbolic_trace(lambda x, y: x + y).graph

    with pytest.raises(ValueError, match=r"takes 1 input\(s\) \(x\) but the replacement takes 2"):
        replace_pattern_with_filters(
            minifx.symbolic_trace(program), relu, replacement_callback=callback
        )


def test_a_replacement_that_returns_a_different_number_of_values():
    def two(x):
        return torch.relu(x), x

    gm = minifx.symbolic_trace(program)
    with pytest.raises(ValueError) as error:
        replace_pattern(gm, relu, two)
    assert str(error.value) == (
        "replace_pattern: the pattern returns 1 value(s) but the replacement returns 2. Each "
        "returned value takes over the uses of the pattern's value in the same position. How "
        "to fix: return as many values from the replacement as from the pattern, in the same "
        "order."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="Returning nodes count mismatch: 1 vs 2"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), relu, two)


def graph_reading(root: dict, library) -> object:
    graph = library.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (x, graph.get_attr("k"))))
    return library.GraphModule(root, graph)


def test_get_attr_of_something_that_is_not_a_tensor():
    ours = graph_reading({"k": 3}, minifx)
    with pytest.raises(TypeError) as error:
        replace_pattern(ours, graph_reading({"k": 3}, minifx), relu)
    assert str(error.value) == (
        "replace_pattern: the pattern's get_attr %k reads a int, but only tensor attributes "
        "can be matched. How to fix: make the pattern read a tensor (a parameter or buffer), "
        "or pass the value in as an argument."
    )
    assert isinstance(error.value, RuntimeError)
    theirs = graph_reading({"k": 3}, torch.fx)
    with pytest.raises(RuntimeError, match="Unsupported type 3"):
        torch.fx.replace_pattern(theirs, graph_reading({"k": 3}, torch.fx), relu)


def test_a_get_attr_of_another_type_does_not_match():
    ours = graph_reading({"k": torch.ones(1)}, minifx)
    assert replace_pattern(ours, graph_reading({"k": 3}, minifx), relu) == []


class Replacement(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def reading_a_missing_attribute(library):
    """A traced replacement module whose graph was edited to read `self.missing`."""
    replacement = library.symbolic_trace(Replacement())
    relu_node = next(n for n in replacement.graph.nodes if n.op == "call_function")
    with replacement.graph.inserting_before(relu_node):
        missing = replacement.graph.create_node("get_attr", "missing")
    relu_node.args = (relu_node.args[0], missing)
    relu_node.target = torch.add
    return replacement


def test_a_replacement_module_missing_an_attribute_its_graph_reads():
    gm = minifx.symbolic_trace(program)
    with pytest.raises(AttributeError) as error:
        replace_pattern(gm, relu, reading_a_missing_attribute(minifx))
    assert str(error.value) == (
        "replace_pattern: the rewritten graph's %missing (get_attr) refers to 'missing', which "
        "neither the module nor the replacement has. How to fix: make the replacement a module "
        "that owns this attribute."
    )
    assert isinstance(error.value, RuntimeError)
    with pytest.raises(RuntimeError, match="references nonexistent attribute"):
        torch.fx.replace_pattern(
            torch.fx.symbolic_trace(program), relu, reading_a_missing_attribute(torch.fx)
        )


def test_a_pattern_that_returns_its_input():
    def pattern(x):
        return x

    with pytest.raises(ValueError) as error:
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)
    assert str(error.value) == (
        "replace_pattern: the pattern returns its input 'x' unchanged. A match is what the "
        "pattern computes from its inputs, and the uses of each returned value are handed to "
        "the replacement, so an input returned as is would hand over every use of whatever it "
        "matched. How to fix: return only values the pattern computes."
    )
    assert isinstance(error.value, AssertionError)
    with pytest.raises(AssertionError, match="The insert point can't be None"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, relu)


def test_a_matcher_pattern_that_returns_its_input_matches_every_node():
    """The matcher alone accepts it, as torch.fx's does: the input stands for anything."""

    def pattern(x):
        return x

    ours = SubgraphMatcher(minifx.symbolic_trace(pattern).graph)
    theirs = TorchSubgraphMatcher(torch.fx.symbolic_trace(pattern).graph)
    found = [
        [m.nodes_map for m in matcher.match(library.symbolic_trace(program).graph)]
        for matcher, library in ((theirs, torch.fx), (ours, minifx))
    ]
    assert [[{p.name: g.name for p, g in m.items()} for m in f] for f in found] == [
        [{"x": n} for n in ("x", "y", "relu", "add", "output")]
    ] * 2
