"""`fuse_conv_bn` against torch.fx's `fuse` and the eager model.

Differential: the same model fused by both libraries prints the same graph,
keeps the same submodules, and computes what the eager model computes (up to
float rounding) on every device. Then each case that is left alone, with the
reason `why_left_alone` gives, and the cases where minifx differs on purpose
(training mode, shared conv modules, Linear + BatchNorm1d).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.fx
from torch import nn
from torch.fx.experimental.optimization import fuse as torch_fx_fuse
from torch.nn.utils.fusion import fuse_conv_bn_weights as torch_fuse_conv_bn_weights

from minifx.codegen import GraphModule, symbolic_trace
from minifx.passes.fuse_conv_bn import fuse_conv_bn, fuse_conv_bn_weights, why_left_alone
from tests.models import ResNet50
from tests.oracle import assert_well_formed

pytestmark = pytest.mark.ch6

CONVS = {
    1: (nn.Conv1d, nn.BatchNorm1d),
    2: (nn.Conv2d, nn.BatchNorm2d),
    3: (nn.Conv3d, nn.BatchNorm3d),
}


def randomize_statistics(model: nn.Module) -> nn.Module:
    """Give every BatchNorm running statistics and affine parameters far from 0 and 1,
    so that a wrong fusion cannot hide behind the identity it starts as."""
    generator = torch.Generator().manual_seed(1)
    for bn in model.modules():
        if isinstance(bn, nn.modules.batchnorm._BatchNorm) and bn.running_mean is not None:
            shape = bn.running_mean.shape
            bn.running_mean.copy_(torch.rand(shape, generator=generator) * 2 - 1)
            bn.running_var.copy_(torch.rand(shape, generator=generator) * 2 + 0.5)
            if bn.affine:
                bn.weight.data.copy_(torch.rand(shape, generator=generator) + 0.5)
                bn.bias.data.copy_(torch.rand(shape, generator=generator) - 0.5)
    return model


class ConvBN(nn.Module):
    """conv -> bn -> relu, for any rank, bias, groups and padding mode."""

    def __init__(
        self,
        rank: int = 2,
        bias: bool = True,
        groups: int = 1,
        padding_mode: str = "zeros",
        affine: bool = True,
    ):
        super().__init__()
        conv, bn = CONVS[rank]
        self.conv = conv(4, 8, 3, padding=1, bias=bias, groups=groups, padding_mode=padding_mode)
        self.bn = bn(8, affine=affine)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


def conv_input(rank: int, device: str = "cpu") -> torch.Tensor:
    return torch.randn(2, 4, *[6] * rank, generator=torch.Generator().manual_seed(0)).to(device)


def prepared(model: nn.Module, device: str = "cpu") -> nn.Module:
    torch.manual_seed(0)
    return randomize_statistics(model).eval().to(device)


def check_like_torch_fx(model: nn.Module, x: torch.Tensor, fused_nodes: int) -> GraphModule:
    """Fuse with both libraries; same graph, modules and outputs (vs eager too)."""
    ours, theirs = fuse_conv_bn(model), torch_fx_fuse(model)
    assert str(ours.graph) == str(theirs.graph)
    assert len(symbolic_trace(model).graph.nodes) - len(ours.graph.nodes) == fused_nodes
    assert sorted(dict(ours.named_modules())) == sorted(dict(theirs.named_modules()))
    got = assert_well_formed(ours, model, x, rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        reference = theirs(x)
    torch.testing.assert_close(got, reference, rtol=1e-4, atol=1e-5)
    return ours


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.task("6.3")
def test_every_conv_rank_with_and_without_bias(rank, bias, device):
    model = prepared(ConvBN(rank, bias), device)
    gm = check_like_torch_fx(model, conv_input(rank, device), fused_nodes=1)
    assert [n.op for n in gm.graph.nodes] == [
        "placeholder",
        "call_module",
        "call_function",
        "output",
    ]
    assert gm.conv.bias is not None and not hasattr(gm, "bn")


@pytest.mark.parametrize("groups", [2, 4])
@pytest.mark.task("6.3")
def test_grouped_convolutions(groups, device):
    check_like_torch_fx(prepared(ConvBN(2, groups=groups), device), conv_input(2, device), 1)


@pytest.mark.parametrize("padding_mode", ["zeros", "reflect", "replicate", "circular"])
def test_padding_modes_are_kept(padding_mode, device):
    gm = check_like_torch_fx(
        prepared(ConvBN(2, padding_mode=padding_mode), device), conv_input(2, device), 1
    )
    assert gm.conv.padding_mode == padding_mode


@pytest.mark.task("6.3")
def test_affine_false_batchnorm_is_fused_with_gamma_1_and_beta_0(device):
    check_like_torch_fx(prepared(ConvBN(2, affine=False), device), conv_input(2, device), 1)


def test_resnet50_like_torch_fx(device):
    torch.manual_seed(0)
    model = prepared(ResNet50(num_classes=10, width=8), device)
    x = torch.randn(2, 3, 64, 64, device=device)
    gm = check_like_torch_fx(model, x, fused_nodes=53)
    assert not any(isinstance(m, nn.BatchNorm2d) for m in gm.modules())
    assert "downsample.1" not in gm.code and "layer1.0.downsample.0" in dict(gm.named_modules())


@pytest.mark.task("6.1")
def test_weights_match_torch_nn_utils_fusion(device):
    generator = torch.Generator().manual_seed(0)
    w, b, mean, gamma, beta = (
        torch.randn(s, generator=generator).to(device) for s in [(8, 2, 3, 3), 8, 8, 8, 8]
    )
    var = torch.rand(8, generator=generator).to(device) + 0.5
    for bias in (b, None):
        ours = fuse_conv_bn_weights(w, bias, mean, var, 1e-5, gamma, beta)
        theirs = torch_fuse_conv_bn_weights(w, bias, mean, var, 1e-5, gamma, beta)
        # A weight and a bias, each checked: a zip over an empty answer would check nothing.
        assert isinstance(ours, tuple) and len(ours) == 2, f"expected (weight, bias), got {ours!r}"
        for got, want in zip(ours, theirs):
            assert isinstance(got, nn.Parameter) and got.device == want.device
            torch.testing.assert_close(got, want)


def test_dtype_and_requires_grad_are_kept():
    model = prepared(ConvBN(2)).double()
    gm = check_like_torch_fx(model, conv_input(2).double(), 1)
    assert gm.conv.weight.dtype == gm.conv.bias.dtype == torch.float64
    assert gm.conv.weight.requires_grad and gm.conv.bias.requires_grad


def test_without_inplace_the_input_is_left_as_it_was():
    model = prepared(ConvBN(2))
    traced = symbolic_trace(model)
    before_graph, before_weight = str(traced.graph), traced.conv.weight.detach().clone()
    fused = fuse_conv_bn(traced)
    assert fused is not traced and isinstance(fused, GraphModule)
    assert str(traced.graph) == before_graph and torch.equal(traced.conv.weight, before_weight)
    assert isinstance(traced.bn, nn.BatchNorm2d) and model.conv.weight is traced.conv.weight


@pytest.mark.task("6.3")
def test_inplace_edits_and_returns_the_graph_module():
    traced = symbolic_trace(prepared(ConvBN(2)))
    x = conv_input(2)
    with torch.no_grad():
        want = traced(x)
    assert fuse_conv_bn(traced, inplace=True) is traced
    assert "bn" not in str(traced.graph) and not hasattr(traced, "bn")
    with torch.no_grad():
        torch.testing.assert_close(traced(x), want, rtol=1e-4, atol=1e-5)


@pytest.mark.task("6.3")
def test_a_batchnorm_shared_by_two_convs_is_fused_into_both():
    class SharedBN(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b, self.bn = (
                nn.Conv2d(4, 8, 1),
                nn.Conv2d(4, 8, 3, padding=1),
                nn.BatchNorm2d(8),
            )

        def forward(self, x):
            return self.bn(self.a(x)) + self.bn(self.b(x))

    gm = check_like_torch_fx(prepared(SharedBN()), conv_input(2), fused_nodes=2)
    assert not hasattr(gm, "bn")


# --- left alone -------------------------------------------------------------------------


class TwoUsers(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        y = self.conv(x)
        return self.bn(y) + y


class SharedConv(nn.Module):
    """One conv module called twice, each call followed by its own BatchNorm."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 4, 3, padding=1)
        self.bn1, self.bn2 = nn.BatchNorm2d(4), nn.BatchNorm2d(4)

    def forward(self, x):
        return self.bn2(self.conv(self.bn1(self.conv(x))))


class ReadsConvWeight(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 8, 3, padding=1), nn.BatchNorm2d(8)

    def forward(self, x):
        return self.bn(self.conv(x)) + self.conv.weight.sum()


class MismatchedKinds(nn.Module):
    """An unbatched Conv2d output (C, H, W) read by BatchNorm1d as (N, C, L): it runs."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(4, 8, 1), nn.BatchNorm1d(6)

    def forward(self, x):
        return self.bn(self.conv(x))


class MyConv(nn.Conv2d):
    """A subclass: its forward could compute anything, so it is not fused."""


def untracked_statistics() -> nn.Module:
    model = ConvBN(2)
    model.bn = nn.BatchNorm2d(8, track_running_stats=False)
    return model


def subclassed_conv() -> nn.Module:
    model = ConvBN(2)
    model.conv = MyConv(4, 8, 3, padding=1)
    return model


LEFT_ALONE = {  # model, input, why_left_alone's reason for its BatchNorm node
    "other users": (
        TwoUsers,
        lambda: conv_input(2),
        "the conv's output has other users, which need it unnormalized",
    ),
    "no running stats": (
        untracked_statistics,
        lambda: conv_input(2),
        "no running statistics (track_running_stats=False)",
    ),
    "mismatched kinds": (
        MismatchedKinds,
        lambda: torch.randn(4, 6, 6),
        "a BatchNorm1d cannot follow a Conv2d",
    ),
    "conv subclass": (
        subclassed_conv,
        lambda: conv_input(2),
        "its input is not a call of an nn.Conv1d/2d/3d",
    ),
}


@pytest.mark.parametrize("case", list(LEFT_ALONE))
@pytest.mark.task("6.2")
def test_left_alone_as_by_torch_fx(case):
    make, make_input, reason = LEFT_ALONE[case]
    model = prepared(make())
    gm = check_like_torch_fx(model, make_input(), fused_nodes=0)
    modules = dict(gm.named_modules())
    assert [why_left_alone(n, modules) for n in gm.graph.nodes if n.name == "bn"] == [reason]


def test_training_mode_is_left_alone_where_torch_fx_raises():
    for part in ("conv", "bn"):
        model = prepared(ConvBN(2))
        getattr(model, part).train()
        gm = fuse_conv_bn(model)
        assert str(gm.graph) == str(symbolic_trace(model).graph)
        assert (
            why_left_alone(
                gm.graph.find_nodes(op="call_module", target="bn")[0], dict(gm.named_modules())
            )
            == "training mode: the BatchNorm normalizes with the batch's statistics"
        )
        with pytest.raises(AssertionError, match="^Fusion only for eval!$"):
            torch_fx_fuse(model)


@pytest.mark.parametrize("make", [SharedConv, ReadsConvWeight])
@pytest.mark.task("6.2")
def test_a_conv_module_used_elsewhere_is_left_alone_where_torch_fx_goes_wrong(make):
    model = prepared(make())
    x = conv_input(2)
    gm, theirs = fuse_conv_bn(model), torch_fx_fuse(model)
    assert str(gm.graph) == str(symbolic_trace(model).graph)
    reasons = {n.name: why_left_alone(n, dict(gm.named_modules())) for n in gm.graph.nodes}
    assert {reasons[name] for name in reasons if name.startswith("bn")} == {
        "the conv module is used elsewhere, which needs its weights unchanged"
    }
    with torch.no_grad():
        want = model(x)
        torch.testing.assert_close(gm(x), want)
        # torch.fx fuses the first pair anyway, and its fused conv also serves the other use.
        assert not torch.allclose(theirs(x), want, rtol=1e-3, atol=1e-3)


@pytest.mark.task("6.2")
def test_linear_and_batchnorm1d_are_left_alone_unlike_torch_fx():
    model = prepared(nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8)))
    gm = fuse_conv_bn(model)
    assert [n.target for n in gm.graph.nodes if n.op == "call_module"] == ["0", "1"]
    assert [n.target for n in torch_fx_fuse(model).graph.nodes if n.op == "call_module"] == ["0"]
    assert (
        why_left_alone(list(gm.graph.nodes)[2], dict(gm.named_modules()))
        == "its input is not a call of an nn.Conv1d/2d/3d"
    )


@pytest.mark.task("6.2")
def test_nodes_that_are_not_batchnorm_calls():
    gm = symbolic_trace(prepared(nn.Sequential(nn.Conv2d(4, 8, 1), nn.ReLU())))
    modules = dict(gm.named_modules())
    assert {why_left_alone(n, modules) for n in gm.graph.nodes} == {"not a BatchNorm module call"}


@pytest.mark.task("6.2")
def test_a_batchnorm_reading_a_function_result_is_left_alone():
    class AfterRelu(nn.Module):
        def __init__(self):
            super().__init__()
            self.bn = nn.BatchNorm2d(4)

        def forward(self, x):
            return self.bn(torch.relu(x))

    model = prepared(AfterRelu())
    gm = check_like_torch_fx(model, conv_input(2), fused_nodes=0)
    assert (
        why_left_alone(
            gm.graph.find_nodes(op="call_module", target="bn")[0], dict(gm.named_modules())
        )
        == "its input is not a call of an nn.Conv1d/2d/3d"
    )


def test_the_original_model_is_not_changed_by_tracing_and_fusing():
    model = prepared(ConvBN(2))
    state = copy.deepcopy(model.state_dict())
    fuse_conv_bn(model)
    fuse_conv_bn(model, inplace=True)  # an nn.Module is traced: its submodules are not replaced
    assert isinstance(model.bn, nn.BatchNorm2d)
    assert all(torch.equal(state[k], v) for k, v in model.state_dict().items())


# --- the other differences from torch.fx -------------------------------------------------


def test_a_graph_module_is_reused_and_returned_by_inplace_where_torch_fx_retraces():
    model = prepared(ConvBN(2))
    ours, theirs = symbolic_trace(model), torch.fx.symbolic_trace(model)
    for gm in (ours, theirs):
        gm.graph.find_nodes(op="call_module", target="conv")[0].meta["note"] = "kept"
    fused_ours, fused_theirs = fuse_conv_bn(ours, inplace=True), torch_fx_fuse(theirs, inplace=True)
    assert fused_ours is ours and fused_theirs is not theirs
    assert [n.meta.get("note") for n in fused_ours.graph.nodes if n.name == "conv"] == ["kept"]
    assert [n.meta.get("note") for n in fused_theirs.graph.nodes if n.name == "conv"] == [None]


def test_fused_weights_are_torch_fx_bits_and_biases_within_rounding():
    model = prepared(ResNet50(num_classes=10, width=8))
    ours, theirs = fuse_conv_bn(model), torch_fx_fuse(model)
    theirs_state = theirs.state_dict()
    for name, tensor in ours.state_dict().items():
        if name.endswith("weight"):
            assert torch.equal(tensor, theirs_state[name]), name
        else:
            torch.testing.assert_close(tensor, theirs_state[name], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "not_a_module, kind",
    [
        (lambda: symbolic_trace(ConvBN()).graph, "Graph"),
        (lambda: torch.relu, "builtin_function_or_method"),
    ],
)
def test_what_is_not_a_module_gets_a_clear_error(not_a_module, kind):
    message = (
        f"fuse_conv_bn(gm): gm is a {kind}, not an nn.Module. The pass replaces the conv "
        "modules that call_module nodes name, so it needs the module that owns them. How to "
        "fix: pass the model, or a GraphModule (for a bare Graph: GraphModule(model, graph))."
    )
    with pytest.raises(TypeError) as error:
        fuse_conv_bn(not_a_module())
    assert str(error.value) == message


def test_torch_fx_traces_a_function_and_asserts_on_a_graph():
    assert isinstance(torch_fx_fuse(lambda x: x + 1), torch.fx.GraphModule)
    with pytest.raises(
        AssertionError, match="^Expected FunctionType, got <class 'torch.fx.graph.Graph'>$"
    ):
        torch_fx_fuse(torch.fx.symbolic_trace(ConvBN()).graph)


def test_minifx_passes_fuse_conv_bn_is_the_module_at_every_access():
    """`fuse_conv_bn` names chapter 6's module and its function. `minifx.passes.fuse_conv_bn`
    is the module, also the first time (it used to be the function at the first access, and
    the module after, once importing the module had bound the name), so `from minifx.passes
    import fuse_conv_bn` never hands out the function at one time and the module at another."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import types\n"
        "import minifx.passes as passes\n"
        "first, again = passes.fuse_conv_bn, passes.fuse_conv_bn\n"
        "from minifx.passes import fuse_conv_bn\n"
        "assert isinstance(first, types.ModuleType), first\n"
        "assert first is again is fuse_conv_bn, (first, again, fuse_conv_bn)\n"
        "assert callable(first.fuse_conv_bn)\n"
        "assert passes.draw.to_mermaid is passes.to_mermaid\n"
    )
    root = Path(__file__).resolve().parents[2]
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
