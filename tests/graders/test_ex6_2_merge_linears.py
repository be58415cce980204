"""Grader for exercise 6.2: merge consecutive Linears.

torch.fx has no such pass, so the oracles are the algebra and the graph:
the merged Linear must compute `second(first(x))` (checked in float64), the
merged GraphModule must compute what the model computes, its graph must be
the expected one (written out below; a chain of three Linears becomes one),
and pairs that cannot be merged (something in between, a first Linear with
another use, training mode) must be left alone.
"""

import copy

import pytest
import torch
from torch import nn

from minifx.codegen import symbolic_trace
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch6

SEE = "chapters/06-conv-bn-fusion.md#exercise-62-merge-consecutive-linears"
HINT = ("second(first(x)) = W2 (W1 x + b1) + b2: weight W2 @ W1, bias W2 @ b1 + b2, a missing "
        "bias counting as 0.")


@pytest.fixture
def ex(impl):
    return impl.load("ch6_merge_linears")


class Chain(nn.Module):
    """Three Linears in a row (the middle one without bias), a relu, and a head."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 16), nn.Linear(16, 8, bias=False), nn.Linear(8, 8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(torch.relu(self.fc3(self.fc2(self.fc1(x)))))


EXPECTED_CHAIN = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%fc1,), kwargs = {})
    %head : [num_users=1] = call_module[target=head](args = (%relu,), kwargs = {})
    return head"""


class OutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        y = self.fc1(x)
        return self.fc2(y) + y


class FirstCalledTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return self.fc2(self.fc1(x)) + self.fc1(x)


class ReluBetween(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(6, 6), nn.Linear(6, 6)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def in_training(part: str) -> nn.Module:
    model = nn.Sequential(nn.Linear(6, 6), nn.Linear(6, 6)).eval()
    model.get_submodule(part).train()
    return model


LEFT_ALONE = {  # name -> model; every Linear node must stay
    "first output used twice": lambda: OutputUsedTwice().eval(),
    "first Linear called twice": lambda: FirstCalledTwice().eval(),
    "relu in between": lambda: ReluBetween().eval(),
    "first Linear in training mode": lambda: in_training("0"),
    "second Linear in training mode": lambda: in_training("1"),
}


def _merge(ex, model):
    return ex.merge_linears(symbolic_trace(copy.deepcopy(model)))


def _linear_nodes(gm) -> list[str]:
    return [n.name for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(n.target), nn.Linear)]


def _check_output(gm, model, device="cpu", what="the merged GraphModule"):
    x = torch.randn(5, 6, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        want, got = model(x), gm(x)
    assert got.device == want.device and torch.allclose(got, want, rtol=1e-4, atol=1e-5), explain(
        f"{what} computes what the model computes (within float rounding), on {device}",
        f"outputs that differ by up to {(got - want).abs().max().item():.3g}, on {got.device}",
        HINT, SEE)


def test_a_chain_of_three_becomes_one(ex):
    torch.manual_seed(0)
    gm = _merge(ex, Chain().eval())
    assert str(gm.graph) == EXPECTED_CHAIN, explain_graphs(
        "the chain's graph after merge_linears: fc1 (merged) -> relu -> head", EXPECTED_CHAIN,
        str(gm.graph), "keep the first node, erase the second; walking in order, the merged fc1 "
        "is then the input of fc3, which merges into it again.", SEE)
    modules = sorted(name for name, _ in gm.named_modules())
    assert modules == ["", "fc1", "head"], explain(
        "the submodules '', 'fc1', 'head'", repr(modules), "gm.delete_all_unused_submodules().", SEE)


def test_outputs_equal_the_model(ex):
    torch.manual_seed(0)
    model = Chain().eval()
    _check_output(_merge(ex, model), model)


@pytest.mark.parametrize("bias1, bias2", [(True, True), (True, False), (False, True), (False, False)])
def test_merged_linear(ex, bias1, bias2):
    torch.manual_seed(0)
    first, second = nn.Linear(6, 5, bias=bias1), nn.Linear(5, 3, bias=bias2)
    pair = nn.Sequential(first, second)
    before = {k: v.clone() for k, v in pair.state_dict().items()}
    merged = ex.merged_linear(first, second)
    x = torch.randn(4, 6)
    with torch.no_grad():
        want = copy.deepcopy(pair).double()(x.double()).float()  # the two layers, in float64
        got = merged(x) if isinstance(merged, nn.Linear) else merged
    ok = (isinstance(merged, nn.Linear) and (merged.bias is not None) == (bias1 or bias2)
          and torch.allclose(got, want, rtol=1e-5, atol=1e-6))
    assert ok, explain(
        f"an nn.Linear(6, 3, bias={bias1 or bias2}) computing second(first(x)), biases {bias1}, {bias2}",
        repr(merged) if not isinstance(merged, nn.Linear) else
        f"{merged}, off by {(got - want).abs().max().item():.3g}", HINT, SEE)
    after = pair.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before), explain(
        "first and second unchanged", "they were changed", "build a new nn.Linear.", SEE)


@pytest.mark.parametrize("case", list(LEFT_ALONE))
def test_pairs_that_cannot_be_merged_are_left_alone(ex, case):
    torch.manual_seed(0)
    model = LEFT_ALONE[case]()
    traced = symbolic_trace(model)
    gm = _merge(ex, model)
    assert str(gm.graph) == str(traced.graph), explain_graphs(
        f"{case}: the graph unchanged", str(traced.graph), str(gm.graph),
        "merge only two eval-mode nn.Linear calls in a row, when the first one's output has no "
        "other user and its module no other use (other_uses).", SEE)
    _check_output(gm, model, what=f"the {case} model after the pass")


def test_on_device(ex, device):
    torch.manual_seed(0)
    model = Chain().eval().to(device)
    gm = _merge(ex, model)
    assert gm.fc1.weight.device.type == device, explain(
        f"the merged Linear on {device}", str(gm.fc1.weight.device),
        "create it with device=first.weight.device.", SEE)
    _check_output(gm, model, device)
