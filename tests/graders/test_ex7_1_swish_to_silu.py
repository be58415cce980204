"""Grader for exercise 7.1: Swish to SiLU.

The oracle is torch.fx: each program is traced and rewritten with
`torch.fx.replace_pattern` and the pattern `x * torch.sigmoid(x)` written here, and
the student's minifx graph must print the same. The counts are also written out.
"""

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import symbolic_trace
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch7

SEE = "chapters/07-subgraph-rewriting.md#exercise-71-swish-to-silu"
HINT = ("the pattern is `def swish(x): return x * torch.sigmoid(x)`, the replacement "
        "`def silu(x): return F.silu(x)`, and swish_to_silu returns "
        "len(replace_pattern(gm, swish, silu)).")


@pytest.fixture
def ex(impl):
    return impl.load("ch7_swish_to_silu")


def reference_swish(x):
    return x * torch.sigmoid(x)


def reference_silu(x):
    return F.silu(x)


class SwishNet(nn.Module):
    """Two convolutions, each followed by a swish written by hand."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)

    def forward(self, x):
        x = self.conv1(x)
        x = x * torch.sigmoid(x)
        x = self.conv2(x)
        return x * torch.sigmoid(x)


def swish_of_swish(x):
    y = x * torch.sigmoid(x)
    return y * torch.sigmoid(y)


def near_miss(x, y):
    return x * torch.sigmoid(y)           # a gate, not a swish: two different inputs


def escaping_sigmoid(x):
    s = torch.sigmoid(x)
    return x * s, s                        # the sigmoid is needed outside the product


def reversed_factors(x):
    y = x + 1
    return torch.sigmoid(x) * x + y * torch.sigmoid(y)  # only the second is x * sigmoid(x)


CASES = {  # name -> (make the root, inputs, how many swishes are rewritten)
    "SwishNet": (lambda: SwishNet().eval(), lambda: (torch.randn(2, 3, 8, 8),), 2),
    "swish_of_swish": (lambda: swish_of_swish, lambda: (torch.randn(5),), 2),
    "near_miss": (lambda: near_miss, lambda: (torch.randn(5), torch.randn(5)), 0),
    "escaping_sigmoid": (lambda: escaping_sigmoid, lambda: (torch.randn(5),), 0),
    "reversed_factors": (lambda: reversed_factors, lambda: (torch.randn(5),), 1),
}


def rewrite(ex, name):
    make_root, inputs, count = CASES[name]
    torch.manual_seed(0)
    gm = symbolic_trace(make_root())
    torch.manual_seed(0)
    expected = torch.fx.symbolic_trace(make_root())
    torch.fx.replace_pattern(expected, reference_swish, reference_silu)
    return gm, ex.swish_to_silu(gm), expected, inputs(), count


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_number_of_rewrites(ex, name):
    _, got, _, _, want = rewrite(ex, name)
    assert got == want, explain(f"{want} rewrites of {name}", repr(got), HINT, SEE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_graph_after_the_rewrite(ex, name):
    gm, _, expected, _, _ = rewrite(ex, name)
    assert str(gm.graph) == str(expected.graph), explain_graphs(
        f"the graph of {name} after swish_to_silu", str(expected.graph), str(gm.graph),
        HINT + " Near misses (x * sigmoid(y), a sigmoid used elsewhere) must stay.", SEE)


@pytest.mark.parametrize("name", sorted(CASES))
def test_outputs_are_unchanged(ex, name, device):
    make_root, inputs, _ = CASES[name]
    torch.manual_seed(0)
    root = make_root()
    root = root.to(device) if isinstance(root, nn.Module) else root
    gm = symbolic_trace(root)
    args = tuple(a.to(device) for a in inputs())
    before = gm(*args)
    ex.swish_to_silu(gm)
    after = gm(*args)
    torch.testing.assert_close(after, before, msg=lambda m: explain(
        f"{name} computes the same values after the rewrite", m,
        "F.silu(x) is x * torch.sigmoid(x); the replacement must take the pattern's input.",
        SEE))


def test_a_second_run_finds_nothing(ex):
    gm = symbolic_trace(swish_of_swish)
    ex.swish_to_silu(gm)
    again = ex.swish_to_silu(gm)
    assert again == 0, explain("0 rewrites on a graph that has no swish left", repr(again),
                               HINT, SEE)
