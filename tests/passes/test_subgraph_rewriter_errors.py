"""Bad patterns and replacements get errors that say what, where, why and how to fix.

Where torch.fx fails too, its failure is pinned next to ours (it is often a bare
AssertionError or KeyError); where torch.fx says nothing, the difference is pinned.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx
from torch import nn

import minifx
from minifx.graph import Graph
from minifx.passes.matcher import SubgraphMatcher
from minifx.passes.subgraph_rewriter import replace_pattern
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
        "the pattern, even those it does not use.")
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
        "matched. How to fix: remove the parameter from the pattern (and from the replacement).")
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
        "pattern or delete it.")


def test_an_empty_pattern_graph():
    with pytest.raises(ValueError) as error:
        SubgraphMatcher(Graph())
    assert str(error.value) == (
        "SubgraphMatcher: the pattern graph is empty (it has no output node). How to fix: "
        "trace a function that returns something.")


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
        "the pattern must be traceable like any model)"]


def test_a_pattern_that_is_not_callable():
    with pytest.raises(TypeError) as error:
        replace_pattern(minifx.symbolic_trace(program), relu, "torch.sigmoid")
    assert str(error.value) == (
        "replace_pattern: the replacement must be a function, an nn.Module, a GraphModule or a "
        "Graph, not str. How to fix: write the replacement as a function of its inputs.")


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
        "order.")
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
        "or pass the value in as an argument.")
    theirs = graph_reading({"k": 3}, torch.fx)
    with pytest.raises(RuntimeError, match="Unsupported type 3"):
        torch.fx.replace_pattern(theirs, graph_reading({"k": 3}, torch.fx), relu)


def test_a_get_attr_of_another_type_does_not_match():
    ours = graph_reading({"k": torch.ones(1)}, minifx)
    assert replace_pattern(ours, graph_reading({"k": 3}, minifx), relu) == []


class Replacement(nn.Module):
    def forward(self, x):
        return torch.relu(x)


def test_a_replacement_module_missing_an_attribute_its_graph_reads():
    replacement = minifx.symbolic_trace(Replacement())
    relu_node = next(n for n in replacement.graph.nodes if n.op == "call_function")
    with replacement.graph.inserting_before(relu_node):
        missing = replacement.graph.create_node("get_attr", "missing")
    relu_node.args = (relu_node.args[0], missing)
    relu_node.target = torch.add
    gm = minifx.symbolic_trace(program)
    with pytest.raises(AttributeError) as error:
        replace_pattern(gm, relu, replacement)
    assert str(error.value) == (
        "replace_pattern: the rewritten graph's %missing (get_attr) refers to 'missing', which "
        "neither the module nor the replacement has. How to fix: make the replacement a module "
        "that owns this attribute.")


def test_a_pattern_that_returns_its_input():
    def pattern(x):
        return x

    with pytest.raises(ValueError) as error:
        replace_pattern(minifx.symbolic_trace(program), pattern, relu)
    assert str(error.value) == (
        "replace_pattern: the pattern returns its input 'x' unchanged. A match is what the "
        "pattern computes from its inputs, and the uses of each returned value are handed to "
        "the replacement, so an input returned as is would hand over every use of whatever it "
        "matched. How to fix: return only values the pattern computes.")
    with pytest.raises(AssertionError, match="The insert point can't be None"):
        torch.fx.replace_pattern(torch.fx.symbolic_trace(program), pattern, relu)
