"""The behaviours PyTorch's own `test/fx/test_subgraph_rewriter.py` pins, rewritten as
differential cases of our own: each program is rewritten by torch.fx and by minifx, and
the printed graphs, generated code, matches, submodules and outputs must agree.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.passes.subgraph_rewriter import replace_pattern
from tests.passes.test_subgraph_rewriter import assert_same_rewrite, match_names, rewrite_both

pytestmark = pytest.mark.ch7


def scale_and_shift(x, w, b):
    """Recorded as one node by both tracers (wrapped below)."""
    y = F.linear(x, w, bias=b)
    return y, y * x


torch.fx.wrap("scale_and_shift")
minifx.wrap("scale_and_shift")


def gate(x):
    return torch.sigmoid(x) * torch.tanh(x)


def gated_twice(x):
    v = torch.sigmoid(x) * torch.tanh(x)
    return torch.sub(v, v)


def test_a_pattern_replaced_by_itself_keeps_what_the_graph_computes():
    matches = assert_same_rewrite(lambda: gated_twice, gate, gate, (torch.randn(2, 3),))
    assert len(matches) == 1


def test_a_pattern_that_is_the_whole_graph():
    def program(x):
        a = torch.tanh(x)
        return torch.mul(a, a)

    def replacement(x):
        a = torch.exp(x)
        return torch.stack([a, a])

    assert_same_rewrite(lambda: program, program, replacement, (torch.randn(3),))


def test_a_returned_value_may_be_used_outside_the_match():
    def program(x):
        y = torch.tanh(x)
        return torch.neg(y) * y

    def pattern(x):
        return torch.tanh(x)

    def replacement(x):
        return torch.sigmoid(x)

    assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3),))


def test_an_inner_value_shared_by_two_candidates_blocks_both():
    def program(a, b, c):
        m = torch.cat([a, b])
        return torch.mm(m, c), torch.mm(m, c)

    def pattern(a, b, c):
        return torch.mm(torch.cat([a, b]), c)

    def replacement(a, b, c):
        return torch.cat([a, b]) @ c

    theirs, ours, their_matches, our_matches = rewrite_both(lambda: program, pattern, replacement)
    assert our_matches == their_matches == []
    assert str(ours.graph) == str(theirs.graph)


class CastThenSquash(nn.Module):
    """An in-place add, then a chain whose input is that add: any producer may feed a pattern."""

    def __init__(self):
        super().__init__()
        self.dtype = torch.float64

    def forward(self, x):
        x += 3
        x = torch.tanh(x.float())
        return x.to(self.dtype)


def test_a_placeholder_stands_for_a_node_with_any_inputs():
    def pattern(x):
        return torch.tanh(x.float()).to(torch.float64)

    def replacement(x):
        return x

    matches = assert_same_rewrite(CastThenSquash, pattern, replacement, (torch.randn(3),))
    assert match_names(matches)[0][1]["x"] == "add"


def test_one_node_patterns_in_a_chain_are_all_replaced():
    def program(x):
        return torch.sigmoid(torch.sigmoid(torch.sigmoid(x)))

    def pattern(x):
        return torch.sigmoid(x)

    def replacement(x):
        return torch.exp(x)

    assert len(assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3),))) == 3


def test_a_pattern_that_returns_a_value_it_also_uses():
    def program(x1, x2):
        d = x1 - x2
        return torch.sigmoid(d) + torch.relu(d)

    def pattern(a1, a2):
        d = a1 - a2
        return torch.sigmoid(d), torch.relu(d), d

    def replacement(a1, a2):
        y = torch.abs(a2)
        return y, y, torch.exp(a1)

    assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3), torch.randn(3)))


def test_the_models_unused_inputs_stay():
    def program(x, y, z):
        return x * y

    def pattern(x, y):
        return x * y

    def replacement(x, y):
        return x / y

    theirs, ours, _, _ = rewrite_both(lambda: program, pattern, replacement)
    assert str(ours.graph) == str(theirs.graph)
    assert [n.name for n in ours.graph.nodes if n.op == "placeholder"] == ["x", "y", "z"]


def test_an_unused_in_place_result_is_matched_and_replaced():
    def program(x, cache):
        n = cache.index_copy(0, torch.tensor([0]), x)
        p = torch.ops.aten.copy.default(cache, n)
        torch.ops.aten.copy_.default(cache, p)  # its result is unused; cache changes
        return torch.relu(cache)

    def pattern(dst, src):
        return torch.ops.aten.copy_.default(dst, torch.ops.aten.copy.default(dst, src))

    def replacement(dst, src):
        return torch.ops.aten.copy_.default(dst, src)

    theirs, ours, _, matches = rewrite_both(lambda: program, pattern, replacement)
    assert str(ours.graph) == str(theirs.graph) and len(matches) == 1
    x, cache = torch.randn(1, 4), torch.randn(2, 4)
    torch.testing.assert_close(ours(x, cache.clone()), theirs(x, cache.clone()))
    torch.testing.assert_close(ours(x, cache.clone()), program(x, cache.clone()))


def test_a_method_chain_replaced_by_its_input():
    def program(x):
        return x.float().sigmoid().to(torch.float16)

    def replacement(x):
        return x

    assert_same_rewrite(lambda: program, program, replacement, (torch.randn(3),))


class LinearTimesInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4, 4))
        self.b = nn.Parameter(torch.randn(4))

    def forward(self, x):
        y = F.linear(x, self.w, bias=self.b)
        return x * y + x


def linear_and_product(x, w, b):
    y = F.linear(x, w, bias=b)
    return y, x * y


def fused_linear_and_product(x, w, b):
    y, p = scale_and_shift(x, w, b)
    return y, p


def test_keyword_arguments_and_a_wrapped_replacement():
    # Not the code: its line that re-registers the wrapped function is chapter 3's business.
    theirs, ours, their_matches, matches = rewrite_both(
        LinearTimesInput, linear_and_product, fused_linear_and_product
    )
    assert str(ours.graph) == str(theirs.graph)
    assert match_names(matches) == match_names(their_matches) and len(matches) == 1
    assert [n.target for n in ours.graph.nodes].count(scale_and_shift) == 1
    x = torch.randn(2, 4)
    torch.testing.assert_close(ours(x), theirs(x))


class ThreeCandidates(nn.Module):
    """Three products of a linear layer: the second reads another value, so it fails
    after its linear was tentatively matched, and that attempt must be undone."""

    def __init__(self):
        super().__init__()
        self.w = nn.ParameterList(nn.Parameter(torch.randn(4, 4)) for _ in range(4))
        self.b = nn.ParameterList(nn.Parameter(torch.randn(4)) for _ in range(4))

    def forward(self, x, z):
        a = F.linear(x, self.w[0], bias=self.b[0])
        first = z * a
        c = F.linear(first + x, self.w[1], bias=self.b[1])
        second = c * torch.sigmoid(c)
        d = F.linear(z, self.w[2], bias=self.b[2])
        third = x * d
        return torch.cat([second, third + x], dim=1)


def linear_times(x, w, b, c):
    y = F.linear(x, w, bias=b)
    return y, c * y


def test_a_failed_candidate_is_undone_and_the_next_one_matches():
    def replacement(x, w, b, c):
        y = F.linear(x, w, bias=b)
        return y, torch.mul(c, y)

    matches = assert_same_rewrite(
        ThreeCandidates, linear_times, replacement, (torch.randn(2, 4), torch.randn(2, 4))
    )
    assert len(matches) == 2


class TensorConstants(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.tensor([1.0])
        self.b = torch.tensor([2.0])

    def forward(self, x):
        return x + self.a - self.b


class PlusConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.k = torch.tensor([5.0])

    def forward(self, x):
        return x + self.k


class MinusConstant(nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.tensor([3.0])

    def forward(self, x):
        return x - self.c


def test_plain_tensor_attributes_in_pattern_and_replacement():
    matches = assert_same_rewrite(
        TensorConstants, PlusConstant(), MinusConstant(), (torch.randn(3),)
    )
    assert len(matches) == 1


class SigmoidThenReLU(nn.Module):
    def __init__(self):
        super().__init__()
        self.squash = nn.Sigmoid()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.squash(x + 1))


class SquashAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.squash = nn.Sigmoid()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.squash(x))


class TanhAct(nn.Module):
    def __init__(self):
        super().__init__()
        self.tanh = nn.Tanh()
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.tanh(x))


def test_submodules_no_node_calls_are_deleted_and_the_replacements_copied_in():
    assert_same_rewrite(SigmoidThenReLU, SquashAct(), TanhAct(), (torch.randn(3),))
    gm = minifx.symbolic_trace(SigmoidThenReLU())
    replace_pattern(gm, SquashAct(), TanhAct())
    assert isinstance(gm.get_submodule("tanh"), nn.Tanh)
    assert isinstance(gm.get_submodule("act"), nn.ReLU)
    with pytest.raises(AttributeError, match="has no attribute"):
        gm.get_submodule("squash")


# --- torch.ops overloads ---------------------------------------------------------------


def test_placeholders_bound_to_list_arguments_of_an_overload():
    def program(x):
        return torch.ops.aten.repeat.default(x, [2, 1]) + 1

    def pattern(x, sizes):
        return torch.ops.aten.repeat.default(x, sizes)

    def replacement(x, sizes):
        return torch.ops.aten.tile.default(x, sizes)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(2, 3),))
    assert match_names(matches)[0][1]["sizes"] == [2, 1]


@pytest.mark.parametrize(
    "program",
    [
        lambda x: torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2], stride=[2, 2])[0],
        lambda x: torch.ops.aten.max_pool2d_with_indices.default(x, [2, 2], [2, 2], [0, 0])[0],
        lambda x: torch.ops.aten.max_pool2d_with_indices.default(
            x, [2, 2], [2, 2], dilation=[1, 1]
        )[0],
    ],
    ids=["keyword-stride", "positional-padding", "default-padding"],
)
def test_an_overload_call_matches_whatever_spells_the_same_arguments(program):
    def pattern(x, kernel, stride):
        return torch.ops.aten.max_pool2d_with_indices.default(x, kernel, stride, padding=[0, 0])

    matches = assert_same_rewrite(lambda: program, pattern, pattern, (torch.randn(1, 1, 4, 4),))
    assert len(matches) == 1


@pytest.mark.parametrize(
    "program,count",
    [
        (lambda x: torch.ops.aten.clamp.default(x, min=0.0), 1),
        (lambda x: torch.ops.aten.clamp.default(x, 0.0, None), 1),
        (lambda x: torch.ops.aten.clamp.default(x, 0.0, 1.0), 0),  # max differs from the default
        (lambda x: torch.clamp(x, min=0.0), 0),  # torch.clamp has no schema to consult
    ],
    ids=["keyword", "positional", "other-max", "not-an-overload"],
)
def test_keyword_and_positional_spellings_of_an_overload(program, count):
    def pattern(x, low):
        return torch.ops.aten.clamp.default(x, low)

    def replacement(x, low):
        return torch.ops.aten.clamp_min.default(x, low)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(5),))
    assert len(matches) == count


def test_an_omitted_default_matches_the_same_value_written_out():
    def program(x):
        return torch.ops.aten.leaky_relu.default(x) + torch.ops.aten.leaky_relu.default(x, 0.2)

    def pattern(x):
        return torch.ops.aten.leaky_relu.default(x, 0.01)

    def replacement(x):
        return torch.ops.aten.relu.default(x)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(5),))
    assert len(matches) == 1


# --- shapes of matches: diamonds, clashing names, overlaps -----------------------------


def test_a_two_branch_pattern_collapses_to_one_node():
    def program(x):
        v = torch.exp(x) - torch.sigmoid(x)
        return torch.mul(v, v)

    def pattern(x):
        return torch.exp(x) - torch.sigmoid(x)

    def replacement(x):
        return torch.tanh(x)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(2, 3),))
    assert match_names(matches) == [
        ("sub", {"exp": "exp", "sigmoid": "sigmoid", "sub": "sub", "x": "x"})
    ]


def test_a_replacement_op_already_in_the_graph_reads_the_matched_input():
    """The graph's own `abs(b)` must stay; the new `abs` reads `a`, where `sigmoid` was."""

    def program(a, b):
        v = torch.abs(b) * torch.sigmoid(a)
        return torch.add(v, v)

    def pattern(x):
        return torch.sigmoid(x)

    def replacement(x):
        return torch.abs(x)

    theirs, ours, their_matches, matches = rewrite_both(lambda: program, pattern, replacement)
    assert str(ours.graph) == str(theirs.graph) and ours.code == theirs.code
    assert match_names(matches) == match_names(their_matches)
    assert match_names(matches) == [("sigmoid", {"sigmoid": "sigmoid", "x": "a"})]
    reads = sorted([a.name for a in n.args] for n in ours.graph.nodes if n.target is torch.abs)
    assert reads == [["a"], ["b"]]
    a, b = torch.randn(4), torch.randn(4)
    torch.testing.assert_close(ours(a, b), theirs(a, b))
    torch.testing.assert_close(ours(a, b), 2 * torch.abs(b) * torch.abs(a))


@pytest.mark.parametrize("length,count", [(4, 2), (5, 2), (6, 3)])
def test_overlapping_matches_are_replaced_once_each(length, count):
    def program(x):
        for _ in range(length):
            x = torch.exp(x)
        return x

    def pattern(x):
        return torch.exp(torch.exp(x))

    def replacement(x):
        return torch.neg(x)

    matches = assert_same_rewrite(lambda: program, pattern, replacement, (torch.randn(3),))
    assert len(matches) == count
    claimed = [g for _, nodes in match_names(matches) for p, g in nodes.items() if p != "x"]
    assert len(claimed) == len(set(claimed)) == 2 * count
