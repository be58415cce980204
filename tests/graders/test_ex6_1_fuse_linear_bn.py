"""Grader for exercise 6.1: fuse Linear and BatchNorm1d.

torch.fx is the oracle: its `torch.fx.experimental.optimization.fuse` folds
Linear + BatchNorm1d too, so the fused graph must print like torch.fx's, and
`fused_linear` must compute what `torch.nn.utils.fusion.fuse_linear_bn_eval`
computes. The outputs must equal the unfused model's, and the pairs that
cannot be fused (training mode, a Linear with another use) must be left
alone.
"""

import copy

import pytest
import torch
from torch import nn
from torch.fx.experimental.optimization import fuse as torch_fx_fuse
from torch.nn.utils.fusion import fuse_linear_bn_eval

from minifx.codegen import symbolic_trace
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch6

SEE = "chapters/06-conv-bn-fusion.md#exercise-61-fuse-linear-and-batchnorm1d"
HINT = ("scale = bn.weight / sqrt(running_var + eps), one per output feature; weight rows "
        "times scale (weight * scale[:, None]), bias (b - running_mean) * scale + bn.bias.")


@pytest.fixture
def ex(impl):
    return impl.load("ch6_fuse_linear_bn")


def with_statistics(model: nn.Module) -> nn.Module:
    """Eval mode, and BatchNorm statistics and parameters away from 0 and 1."""
    generator = torch.Generator().manual_seed(1)
    for bn in model.modules():
        if isinstance(bn, nn.BatchNorm1d):
            shape = bn.running_mean.shape
            bn.running_mean.copy_(torch.rand(shape, generator=generator) * 2 - 1)
            bn.running_var.copy_(torch.rand(shape, generator=generator) * 2 + 0.5)
            bn.weight.data.copy_(torch.rand(shape, generator=generator) + 0.5)
            bn.bias.data.copy_(torch.rand(shape, generator=generator) - 0.5)
    return model.eval()


class MLP(nn.Module):
    """Two Linear + BatchNorm1d pairs (one Linear without bias), and a head with no BN."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn1 = nn.Linear(6, 16), nn.BatchNorm1d(16)
        self.fc2, self.bn2 = nn.Linear(16, 8, bias=False), nn.BatchNorm1d(8)
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        x = torch.relu(self.bn1(self.fc1(x)))
        return self.head(torch.relu(self.bn2(self.fc2(x))))


EXPECTED_MLP = """\
graph():
    %x : [num_users=1] = placeholder[target=x]
    %fc1 : [num_users=1] = call_module[target=fc1](args = (%x,), kwargs = {})
    %relu : [num_users=1] = call_function[target=torch.relu](args = (%fc1,), kwargs = {})
    %fc2 : [num_users=1] = call_module[target=fc2](args = (%relu,), kwargs = {})
    %relu_1 : [num_users=1] = call_function[target=torch.relu](args = (%fc2,), kwargs = {})
    %head : [num_users=1] = call_module[target=head](args = (%relu_1,), kwargs = {})
    return head"""


class OutputUsedTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = nn.Linear(6, 6), nn.BatchNorm1d(6)

    def forward(self, x):
        y = self.fc(x)
        return self.bn(y) + y


class LinearCalledTwice(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.bn = nn.Linear(6, 6), nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.fc(x)) + self.fc(x)


def training_bn() -> nn.Module:
    model = with_statistics(MLP())
    model.bn1.train()
    return model


def training_linear() -> nn.Module:
    model = with_statistics(MLP())
    model.fc2.train()
    return model


class ConvBN(nn.Module):
    """A Conv1d + BatchNorm1d pair: chapter 6's pass fuses it, this exercise does not."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv1d(6, 6, 1), nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.conv(x))


LEFT_ALONE = {  # name -> model, input shape, which BatchNorm nodes must stay
    "output used twice": (lambda: with_statistics(OutputUsedTwice()), (5, 6), ["bn"]),
    "Linear called twice": (lambda: with_statistics(LinearCalledTwice()), (5, 6), ["bn"]),
    "BatchNorm1d in training mode": (training_bn, (5, 6), ["bn1"]),
    "Linear in training mode": (training_linear, (5, 6), ["bn2"]),
    "Conv1d + BatchNorm1d": (lambda: with_statistics(ConvBN()), (5, 6, 4), ["bn"]),
}


def _fuse(ex, model):
    gm = symbolic_trace(copy.deepcopy(model))
    return ex.fuse_linear_bn(gm)


def _batchnorm_nodes(gm) -> list[str]:
    return [n.name for n in gm.graph.nodes
            if n.op == "call_module" and isinstance(gm.get_submodule(n.target), nn.BatchNorm1d)]


def _check_output(gm, model, shape, device="cpu", what="the fused GraphModule"):
    x = torch.randn(shape, generator=torch.Generator().manual_seed(0)).to(device)
    with torch.no_grad():
        want, got = model(x), gm(x)
    assert got.device == want.device and torch.allclose(got, want, rtol=1e-4, atol=1e-5), explain(
        f"{what} computes what the unfused model computes (within float rounding), on {device}",
        f"outputs that differ by up to {(got - want).abs().max().item():.3g}, on {got.device}",
        HINT, SEE)


def test_the_graph_is_torch_fx_fused_graph(ex):
    model = with_statistics(MLP())
    gm = _fuse(ex, model)
    assert str(torch_fx_fuse(model).graph) == EXPECTED_MLP  # the oracle agrees with the text
    assert str(gm.graph) == EXPECTED_MLP, explain_graphs(
        "the MLP's graph after fuse_linear_bn: no BatchNorm node, each Linear node where it was",
        EXPECTED_MLP, str(gm.graph),
        "point the BatchNorm node's users at the Linear node (replace_all_uses_with), then erase "
        "the BatchNorm node; keep the Linear node and its name.", SEE)


def test_outputs_equal_the_unfused_model(ex):
    model = with_statistics(MLP())
    _check_output(_fuse(ex, model), model, (5, 6))


def test_batchnorm_modules_are_gone(ex):
    gm = _fuse(ex, with_statistics(MLP()))
    left = [name for name, m in gm.named_modules() if isinstance(m, nn.BatchNorm1d)]
    assert left == [] and _batchnorm_nodes(gm) == [], explain(
        "no BatchNorm1d node and no BatchNorm1d submodule left", f"nodes {_batchnorm_nodes(gm)}, "
        f"submodules {left}", "after erasing the nodes, gm.delete_all_unused_submodules().", SEE)


@pytest.mark.parametrize("case", list(LEFT_ALONE))
def test_pairs_that_cannot_be_fused_are_left_alone(ex, case):
    make, shape, kept = LEFT_ALONE[case]
    model = make()
    want = str(symbolic_trace(model).graph)
    gm = _fuse(ex, model)
    got_kept = [name for name in _batchnorm_nodes(gm) if name in kept]
    assert got_kept == kept, explain_graphs(
        f"{case}: the BatchNorm node(s) {kept} left in the graph", want, str(gm.graph),
        "fuse only eval-mode pairs (both modules), exactly nn.Linear then nn.BatchNorm1d, when the "
        "Linear's output has no other user and its module no other use (other_uses).", SEE)
    _check_output(gm, model, shape, what=f"the {case} model after the pass")


def test_fused_linear_matches_torch(ex):
    model = with_statistics(MLP())
    for linear, bn in [(model.fc1, model.bn1), (model.fc2, model.bn2)]:
        before = [t.clone() for t in (linear.weight, bn.running_mean, bn.running_var)]
        got, want = ex.fused_linear(linear, bn), fuse_linear_bn_eval(linear, bn)
        same = (isinstance(got, nn.Linear) and got.bias is not None
                and torch.allclose(got.weight, want.weight, rtol=1e-5, atol=1e-6)
                and torch.allclose(got.bias, want.bias, rtol=1e-5, atol=1e-6))
        assert same, explain(
            "fused_linear: the weight and bias of torch.nn.utils.fusion.fuse_linear_bn_eval",
            repr(got) if not isinstance(got, nn.Linear) else
            f"weight off by {(got.weight - want.weight).abs().max().item():.3g}, bias "
            f"{'None' if got.bias is None else (got.bias - want.bias).abs().max().item()}",
            HINT + " A Linear without bias counts as bias 0.", SEE)
        unchanged = all(torch.equal(a, b) for a, b in
                        zip(before, (linear.weight, bn.running_mean, bn.running_var)))
        assert unchanged and got is not linear, explain(
            "a new Linear; the old Linear and BatchNorm unchanged", "they were changed",
            "copy.deepcopy(linear), then assign new nn.Parameters to the copy.", SEE)


def test_on_device(ex, device):
    model = with_statistics(MLP()).to(device)
    gm = _fuse(ex, model)
    assert gm.fc1.weight.device.type == device, explain(
        f"the fused Linear on {device}", str(gm.fc1.weight.device),
        "compute from the modules' own tensors: they are on the device already.", SEE)
    _check_output(gm, model, (5, 6), device)
