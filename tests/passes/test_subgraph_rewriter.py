"""`replace_pattern` against `torch.fx.replace_pattern`, case by case.

Each case builds a fresh root twice, traces it with each library, rewrites it with
each library's `replace_pattern` (each tracing pattern and replacement itself), and
compares: the printed graph, the generated code, the matches (anchor and every
pattern-node -> graph-node name), the submodules, and the outputs.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.passes.subgraph_rewriter import Match, replace_pattern
from tests import models

pytestmark = pytest.mark.ch7


def match_names(matches: list) -> list[tuple[str, dict[str, Any]]]:
    """Matches as names, comparable across the two libraries."""
    return [
        (m.anchor.name, {p.name: getattr(g, "name", g) for p, g in m.nodes_map.items()})
        for m in matches
    ]


def rewrite_both(
    make_root: Callable[[], Any], pattern: Any, replacement: Any, times: int = 1
) -> tuple[Any, Any, list, list]:
    """Rewrite a fresh root with each library `times` times; the last matches of each."""
    torch.manual_seed(0)
    theirs = torch.fx.symbolic_trace(make_root())
    torch.manual_seed(0)
    ours = minifx.symbolic_trace(make_root())
    for _ in range(times):
        their_matches = torch.fx.replace_pattern(theirs, pattern, replacement)
        our_matches = replace_pattern(ours, pattern, replacement)
    return theirs, ours, their_matches, our_matches


def assert_same_rewrite(
    make_root: Callable[[], Any], pattern: Any, replacement: Any, inputs: tuple, times: int = 1
) -> list:
    theirs, ours, their_matches, our_matches = rewrite_both(make_root, pattern, replacement, times)
    assert str(ours.graph) == str(theirs.graph)
    assert ours.code == theirs.code
    assert match_names(our_matches) == match_names(their_matches)
    assert [n for n, _ in ours.named_modules()] == [n for n, _ in theirs.named_modules()]
    ours.graph.lint()
    torch.testing.assert_close(ours(*inputs), theirs(*inputs))
    return our_matches


# --- the cases -------------------------------------------------------------------------


class CatSum(nn.Module):
    """The example of torch.fx's `replace_pattern` docstring."""

    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


@pytest.mark.task("7.2")
def test_the_torch_fx_docstring_example():
    def pattern(w1, w2):
        return torch.cat([w1, w2])

    def replacement(w1, w2):
        return torch.stack([w1, w2])

    x, w = torch.randn(3), torch.randn(2, 3)
    matches = assert_same_rewrite(CatSum, pattern, replacement, (x, w, w))
    assert len(matches) == 2 and all(isinstance(m, Match) for m in matches)


def swish_chain(x):
    y = x * torch.sigmoid(x)
    return y * torch.sigmoid(y)


def swish(x):
    return x * torch.sigmoid(x)


def silu(x):
    return F.silu(x)


@pytest.mark.task("7.2")
def test_a_later_match_reads_the_value_an_earlier_one_replaced():
    matches = assert_same_rewrite(lambda: swish_chain, swish, silu, (torch.randn(5),))
    assert match_names(matches)[1][1]["x"] == "silu"  # updated to the replacement, as torch.fx


def relu3(x):
    return torch.relu(torch.relu(torch.relu(x)))


def test_overlapping_candidates_keep_the_first():
    def pattern(x):
        return torch.relu(torch.relu(x))

    def replacement(x):
        return torch.sigmoid(x)

    matches = assert_same_rewrite(lambda: relu3, pattern, replacement, (torch.randn(4),))
    assert len(matches) == 1


def test_a_pattern_that_matches_nothing_changes_nothing():
    def pattern(x):
        return torch.tanh(x)

    theirs, ours, their_matches, our_matches = rewrite_both(lambda: relu3, pattern, silu)
    assert our_matches == their_matches == []
    assert str(ours.graph) == str(minifx.symbolic_trace(relu3).graph)


def two_outputs(x):
    a = torch.relu(x)
    b = torch.neg(a)
    return a + 1, b * 2


@pytest.mark.task("7.2")
def test_a_pattern_with_several_outputs():
    def pattern(x):
        a = torch.relu(x)
        return a, torch.neg(a)

    def replacement(x):
        a = torch.clamp(x, min=0)
        return a, torch.clamp(-x, max=0)

    assert_same_rewrite(lambda: two_outputs, pattern, replacement, (torch.randn(4),))


def relu_and_sigmoid(x, y):
    return torch.relu(x) + torch.sigmoid(x) + torch.relu(y) * torch.sigmoid(y)


def test_several_anchors_are_matched_by_backtracking():
    def pattern(x):
        return torch.relu(x), torch.sigmoid(x)

    def replacement(x):
        return torch.tanh(x), torch.neg(x)

    matches = assert_same_rewrite(
        lambda: relu_and_sigmoid, pattern, replacement, (torch.randn(3), torch.randn(3))
    )
    assert len(matches) == 2


def escapes(x):
    a = torch.relu(x)
    return torch.neg(a) + a


def test_a_match_whose_inner_value_escapes_is_skipped():
    def pattern(x):
        return torch.neg(torch.relu(x))

    def replacement(x):
        return torch.relu(x)

    _, _, _, matches = rewrite_both(lambda: escapes, pattern, replacement)
    assert matches == []
    assert_same_rewrite(lambda: escapes, pattern, replacement, (torch.randn(3),))


def constants(x):
    return (x + 1) * (x + 2) - (x + 1.0)


def test_literals_in_the_pattern_must_be_equal_and_of_the_same_type():
    def pattern(x):
        return x + 1

    def replacement(x):
        return x - (-1)

    matches = assert_same_rewrite(lambda: constants, pattern, replacement, (torch.randn(3),))
    assert len(matches) == 1


def test_a_placeholder_matches_a_literal_argument():
    def pattern(x, y):
        return torch.add(x, y)

    def replacement(x, y):
        return torch.sub(x, -y)

    def program(x):
        return torch.add(x, 3) + torch.add(x, x)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3),))
    assert match_names(matches) == [("add", {"add": "add", "x": "x", "y": 3})]  # not add(x, x)


def test_keyword_arguments_must_have_the_same_keys():
    def program(x):
        return torch.sum(x, dim=0) + torch.sum(x, 0)

    def pattern(x):
        return torch.sum(x, dim=0)

    def replacement(x):
        return torch.mean(x, dim=0) * x.shape[0]

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3, 2),))
    assert len(matches) == 1


@pytest.mark.task("7.2")
def test_replacements_with_more_and_fewer_nodes_and_call_method():
    def program(x):
        return x.neg().neg().relu().sum()

    def double_neg(x):
        return x.neg().neg()

    def identity(x):
        return x

    assert_same_rewrite(lambda: program, double_neg, identity, (torch.randn(3),))

    def relu(x):
        return x.relu()

    def relu_the_long_way(x):
        return torch.where(x > 0, x, torch.zeros_like(x))

    assert_same_rewrite(lambda: program, relu, relu_the_long_way, (torch.randn(3),))


@pytest.mark.task("7.2")
def test_repeated_application_rewrites_what_the_last_one_produced():
    def pattern(x):
        return torch.relu(x)

    def replacement(x):
        return torch.relu(torch.relu(x))

    for times in (1, 2, 3):
        assert_same_rewrite(lambda: relu3, pattern, replacement, (torch.randn(3),), times)


class AddBias(nn.Module):
    def __init__(self):
        super().__init__()
        self.bias = nn.Parameter(torch.randn(3))
        self.scale = nn.Parameter(torch.randn(3))

    def forward(self, x):
        return (x + self.bias) * self.scale


class PatternAddParameter(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(3))

    def forward(self, x):
        return x + self.weight


def test_get_attr_nodes_match_any_tensor_attribute():
    def replacement(x):
        return x * 0

    matches = assert_same_rewrite(AddBias, PatternAddParameter(), replacement, (torch.randn(3),))
    assert match_names(matches) == [("add", {"add": "add", "x": "x", "weight": "bias"})]


class LinearAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.lin(x)) + self.act(x)


class ActPattern(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(x)


class GeluReplacement(nn.Module):
    def __init__(self):
        super().__init__()
        self.gelu = nn.GELU()

    def forward(self, x):
        return self.gelu(x)


def test_call_module_patterns_and_replacement_submodules_are_copied_in():
    ours = assert_same_rewrite(LinearAct, ActPattern(), GeluReplacement(), (torch.randn(2, 4),))
    assert len(ours) == 2


def test_graph_modules_and_graphs_as_pattern_and_replacement():
    def pattern(x):
        return torch.relu(x)

    def replacement(x):
        return torch.sigmoid(x)

    theirs = torch.fx.symbolic_trace(relu3)
    torch.fx.replace_pattern(
        theirs, torch.fx.symbolic_trace(pattern), torch.fx.symbolic_trace(replacement).graph
    )
    ours = minifx.symbolic_trace(relu3)
    replace_pattern(ours, minifx.symbolic_trace(pattern), minifx.symbolic_trace(replacement).graph)
    assert str(ours.graph) == str(theirs.graph) and ours.code == theirs.code


def test_the_public_names():
    import minifx.passes

    assert minifx.replace_pattern is minifx.passes.replace_pattern is replace_pattern
    assert minifx.passes.Match is Match and Match._fields == ("anchor", "nodes_map")


# --- real models -------------------------------------------------------------------------


def test_resnet18_residual_adds():
    def pattern(x, y):
        return x + y

    def replacement(x, y):
        return torch.add(x, y, alpha=1)

    model = lambda: models.ResNet18().eval()  # noqa: E731
    matches = assert_same_rewrite(model, pattern, replacement, (torch.randn(2, 3, 32, 32),))
    assert len(matches) == 8


def test_encoder_block_attention_scores():
    scale = math.sqrt(8)

    def pattern(q, k):
        return F.softmax(q @ k.transpose(-2, -1) / scale, dim=-1)

    def replacement(q, k):
        return F.softmax(torch.matmul(q * (1 / scale), k.transpose(-2, -1)), dim=-1)

    model = lambda: models.EncoderBlock().eval()  # noqa: E731
    matches = assert_same_rewrite(model, pattern, replacement, (torch.randn(2, 5, 32),))
    assert len(matches) == 1


def test_mlp_gelu_to_tanh_approximation():
    def pattern(x):
        return F.gelu(x)

    def replacement(x):
        return F.gelu(x, approximate="tanh")

    model = lambda: models.MLP().eval()  # noqa: E731
    theirs, ours, _, matches = rewrite_both(model, pattern, replacement)
    assert str(ours.graph) == str(theirs.graph) and len(matches) == 2
    x = torch.randn(4, 32)
    torch.testing.assert_close(ours(x), theirs(x))
    torch.manual_seed(0)
    torch.testing.assert_close(ours(x), models.MLP().eval()(x), atol=1e-3, rtol=1e-3)


def add_then_scale(x, y):
    return torch.add(x, y) * y


@pytest.mark.parametrize(
    "program",
    [
        lambda a, b: torch.add(a, 2) * 2,  # y stands for 2 twice: a match
        lambda a, b: torch.add(a, 2) * 3,  # y cannot be 2 and 3
        lambda a, b: torch.add(a, b) * 2,  # y cannot be %b and 2
        lambda a, b: torch.add(a, 2) * a,  # y cannot be 2 and %a
    ],
    ids=["same-literal", "other-literal", "node-then-literal", "literal-then-node"],
)
def test_a_placeholder_seen_twice_stands_for_one_value(program):
    def replacement(x, y):
        return (x + y) * y

    assert_same_rewrite(
        lambda: program, add_then_scale, replacement, (torch.randn(3), torch.randn(3))
    )


def test_literals_never_match_computed_values_and_back():
    def program(x, y):
        return (x + y) + torch.relu(x + 1)

    def plus_one(x):
        return x + 1

    def plus_relu(x, y):
        return x + torch.relu(y)

    def replacement(x, y):
        return x - torch.relu(y)

    assert_same_rewrite(lambda: program, plus_one, identity, (torch.randn(3), torch.randn(3)))
    assert rewrite_both(lambda: lambda x: x + 1, plus_relu, replacement)[3] == []


def identity(x):
    return x


def test_a_matched_value_nobody_uses():
    def program(x):
        torch.relu(x)
        return x

    assert_same_rewrite(lambda: program, relu_only, sigmoid_only, (torch.randn(3),))


def relu_only(x):
    return torch.relu(x)


def sigmoid_only(x):
    return torch.sigmoid(x)


class ScaleReplacement(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.full((3,), 2.0))

    def forward(self, x):
        return torch.relu(x) * self.scale


def test_replacement_parameters_are_copied_in():
    ours = assert_same_rewrite(lambda: relu3, relu_only, ScaleReplacement(), (torch.randn(3),))
    assert len(ours) == 3


class Scales(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.full((3,), 3.0))


class NestedScaleReplacement(nn.Module):
    def __init__(self):
        super().__init__()
        self.scales = Scales()

    def forward(self, x):
        return torch.relu(x) * self.scales.w


def test_a_nested_replacement_parameter_goes_into_a_new_submodule():
    """Difference: torch.fx sets `gm.<"scales.w">`, which nn.Module refuses for a parameter."""
    gm = minifx.symbolic_trace(relu3)
    x = torch.randn(3)
    want = relu3(x) * 3
    assert len(replace_pattern(gm, relu_only, NestedScaleReplacement())) == 3
    assert [name for name, _ in gm.named_parameters()] == ["scales.w"]
    torch.testing.assert_close(gm(x), want * 9)
    with pytest.raises(KeyError, match=r'parameter name can.+t contain "\."'):
        torch.fx.replace_pattern(
            torch.fx.symbolic_trace(relu3), relu_only, NestedScaleReplacement()
        )
