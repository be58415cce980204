"""Every claim of chapter 6's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx's `fuse` as well as minifx's `fuse_conv_bn`, so that a claim
about torch.fx that stops being true fails here instead of misleading the reader.
Each docstring quotes its claim.

Most items are pinned in tests/passes/test_fuse_conv_bn.py, each by a test that runs
torch.fx's `fuse` on the same model:

- "On the same model both give the same graph, the same submodules and the same outputs up
  to float rounding": check_like_torch_fx, used by test_every_conv_rank_with_and_without_bias,
  test_grouped_convolutions, test_padding_modes_are_kept, test_resnet50_like_torch_fx, ...
- "always reuses a GraphModule it is given (torch.fx retraces it ...), and returns it when
  inplace=True (torch.fx returns a new GraphModule ...)":
  test_a_graph_module_is_reused_and_returned_by_inplace_where_torch_fx_retraces
- "takes modules only and raises a TypeError that says what to pass":
  test_what_is_not_a_module_gets_a_clear_error; "torch.fx's fuse also traces a plain function
  ... and fails on a bare Graph with an AssertionError":
  test_torch_fx_traces_a_function_and_asserts_on_a_graph
- "A training-mode conv or BatchNorm is left alone; torch.fx raises AssertionError: Fusion only
  for eval!": test_training_mode_is_left_alone_where_torch_fx_raises
- "A conv module that another node also calls, or whose weight a get_attr node reads, is left
  alone. torch.fx fuses the first pair anyway, and the other use then runs with the fused
  weights": test_a_conv_module_used_elsewhere_is_left_alone_where_torch_fx_goes_wrong
- "torch.fx's fuse also folds BatchNorm1d into a preceding nn.Linear":
  test_linear_and_batchnorm1d_are_left_alone_unlike_torch_fx
- "The fused weights ... are equal bit for bit": test_fused_weights_are_torch_fx_bits_and_biases_within_rounding
- the chapter's "as in torch.nn.utils.fusion": test_weights_match_torch_nn_utils_fusion

This file pins the parts those tests leave open.
"""

from __future__ import annotations

import inspect

import pytest
import torch
import torch.fx
from torch import nn
from torch.fx.experimental.optimization import fuse as torch_fx_fuse
from torch.nn.utils.fusion import fuse_conv_bn_eval as torch_fuse_conv_bn_eval

from minifx.codegen import symbolic_trace
from minifx.passes.fuse_conv_bn import fuse_conv_bn
from tests.models import ResNet50
from tests.passes.test_fuse_conv_bn import ConvBN, SharedConv, conv_input, prepared

pytestmark = pytest.mark.ch6


def test_torch_fx_counterpart_is_fuse_with_inplace_and_no_trace():
    """torch.fx's counterpart is `torch.fx.experimental.optimization.fuse(model, inplace=False,
    no_trace=False)`. minifx's `fuse_conv_bn(gm, inplace=False)`."""
    assert str(inspect.signature(torch_fx_fuse)) == (
        "(model: torch.nn.modules.module.Module, inplace: bool = False, no_trace: bool = False) "
        "-> torch.nn.modules.module.Module"
    )
    assert list(inspect.signature(fuse_conv_bn).parameters) == ["gm", "inplace"]
    assert inspect.signature(fuse_conv_bn).parameters["inplace"].default is False


def test_torch_fx_keeps_a_graph_module_only_with_no_trace_and_returns_a_new_one_either_way():
    """(torch.fx retraces it unless `no_trace=True`) ... (torch.fx returns a new GraphModule
    either way)."""
    model = prepared(ConvBN(2))
    for no_trace, note in ((False, None), (True, "kept")):
        theirs = torch.fx.symbolic_trace(model)
        theirs.graph.find_nodes(op="call_module", target="conv")[0].meta["note"] = "kept"
        fused = torch_fx_fuse(theirs, inplace=True, no_trace=no_trace)
        assert fused is not theirs
        assert [n.meta.get("note") for n in fused.graph.nodes if n.name == "conv"] == [note]
    ours = symbolic_trace(model)
    ours.graph.find_nodes(op="call_module", target="conv")[0].meta["note"] = "kept"
    assert fuse_conv_bn(ours, inplace=True) is ours
    assert [n.meta.get("note") for n in ours.graph.nodes if n.name == "conv"] == ["kept"]


def test_torch_fx_fuses_a_conv_called_twice_twice():
    """(a conv called twice, each call followed by a BatchNorm, gets fused twice)."""
    model = prepared(SharedConv())
    theirs, ours = torch_fx_fuse(model), fuse_conv_bn(model)
    twice = torch_fuse_conv_bn_eval(torch_fuse_conv_bn_eval(model.conv, model.bn1), model.bn2)
    assert [n.target for n in theirs.graph.nodes if n.op == "call_module"] == ["conv", "conv"]
    assert torch.equal(theirs.conv.weight, twice.weight) and torch.equal(
        theirs.conv.bias, twice.bias
    )
    assert [n.target for n in ours.graph.nodes if n.op == "call_module"] == [
        "conv",
        "bn1",
        "conv",
        "bn2",
    ]
    assert torch.equal(ours.conv.weight, model.conv.weight)
    x = conv_input(2)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x))


def _fused_biases(model: nn.Module) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(minifx's, torch.fx's) bias of every conv that a BatchNorm was folded into."""
    ours, theirs = fuse_conv_bn(model).state_dict(), torch_fx_fuse(model).state_dict()
    convs = [name for name, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    return [(ours[f"{name}.bias"], theirs[f"{name}.bias"]) for name in convs]


def test_fused_biases_differ_from_torch_fxs_in_the_last_bits():
    """The bias is `(b - mean) * scale + beta` with `scale = gamma * rsqrt(var + eps)`, where
    torch.fx multiplies by `rsqrt` and then by `gamma`: the biases differ in the last bits (on
    ResNet-50, all 53 of them, by at most 2.4e-7)."""
    biases = _fused_biases(prepared(ResNet50(num_classes=10, width=8)))
    assert len(biases) == 53
    assert sum(not torch.equal(ours, theirs) for ours, theirs in biases) == 53
    assert max((ours - theirs).abs().max().item() for ours, theirs in biases) <= 2.4e-7

    model = prepared(ConvBN(2))
    conv, bn = model.conv, model.bn
    rsqrt = torch.rsqrt(bn.running_var + bn.eps)
    minifx_order = (conv.bias - bn.running_mean) * (bn.weight * rsqrt) + bn.bias
    torch_fx_order = (conv.bias - bn.running_mean) * rsqrt * bn.weight + bn.bias
    assert not torch.equal(minifx_order, torch_fx_order)  # so the two checks below tell them apart
    assert torch.equal(torch_fuse_conv_bn_eval(conv, bn).bias, torch_fx_order)
    assert torch.equal(fuse_conv_bn(model).conv.bias, minifx_order)


def test_a_new_bias_requires_grad_as_the_weight_does_where_torch_fxs_does_not():
    """A conv without a bias gets one: minifx's requires grad as the conv's weight does; torch.fx's
    does not (`requires_grad=False`)."""
    model = nn.Sequential(nn.Conv2d(3, 4, 3, bias=False), nn.BatchNorm2d(4)).eval()
    ours, theirs = fuse_conv_bn(model).get_submodule("0"), torch_fx_fuse(model).get_submodule("0")
    assert ours.weight.requires_grad and theirs.weight.requires_grad
    assert ours.bias.requires_grad and not theirs.bias.requires_grad
    with_bias = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4)).eval()
    assert torch_fx_fuse(with_bias).get_submodule("0").bias.requires_grad


class WithBlock(nn.Module):
    """A ConvBN block inside a model, for a tracer that keeps the block a leaf (as
    torchvision's feature extraction keeps its `Conv2dNormActivation` blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = ConvBN(2)

    def forward(self, x):
        return torch.sigmoid(self.block(x))


def _traced_with_block_as_leaf(fx, model: nn.Module):
    class BlockIsLeaf(fx.Tracer):
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            return isinstance(m, ConvBN) or super().is_leaf_module(m, module_qualified_name)

    return fx.GraphModule(model, BlockIsLeaf().trace(model))


def test_a_leaf_module_of_your_tracer_stays_whole_where_torch_fx_retraces_into_it():
    """A GraphModule traced with a tracer of your own keeps its graph: a leaf module of that
    tracer stays one `call_module` node, and the conv and BatchNorm inside are not fused.
    torch.fx's retrace, with the default tracer, goes into it and fuses them."""
    import minifx

    model = prepared(WithBlock())
    ours = fuse_conv_bn(_traced_with_block_as_leaf(minifx, model))
    theirs = torch_fx_fuse(_traced_with_block_as_leaf(torch.fx, model))
    kept = torch_fx_fuse(_traced_with_block_as_leaf(torch.fx, model), no_trace=True)
    called = {
        name: [n.target for n in gm.graph.nodes if n.op == "call_module"]
        for name, gm in (("ours", ours), ("theirs", theirs), ("kept", kept))
    }
    assert called == {"ours": ["block"], "theirs": ["block.conv"], "kept": ["block"]}
    assert isinstance(ours.block.bn, nn.BatchNorm2d)
    x = conv_input(2)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x))
        torch.testing.assert_close(theirs(x), model(x))
