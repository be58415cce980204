"""`benchmarks.torchscript_size` counts TorchScript's nodes as its docstring says.

The paper's comparison (445 nodes in torch.fx, 860 with `jit.trace`, 2614 with
`jit.script`) is only as good as the counting: nested blocks are counted, each graph and
block adds an input and a return node when those are counted too, and the kinds add up to
the nodes. Nothing is timed.
"""

from __future__ import annotations

import collections

import pytest
import torch
from torch import nn

from benchmarks import ir_size, torchscript_size
from tests.models import ResNet50

# ch0: chapter 0 contrasts TorchScript's IR with torch.fx's, and the performance page
# quotes these counts.
pytestmark = pytest.mark.ch0


class Shift(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


def test_script_counts_the_nodes_inside_an_if_and_its_blocks_inputs_and_returns() -> None:
    graph = torchscript_size.torchscript_graph(Shift(), torch.ones(2), "jit.script")
    top = list(graph.nodes())
    # Three constants, sum, gt, Bool and the prim::If; each of its two blocks holds one op.
    assert [node.kind() for node in top][-1] == "prim::If"
    assert len(top) == 7
    assert torchscript_size.count_nodes(graph) == 7 + 2
    # The graph's input and return nodes, and each block's: 2 + 2 * 2.
    assert torchscript_size.count_with_inputs_and_returns(graph) == 9 + 2 + 2 * 2
    kinds = torchscript_size.kind_counts(graph)
    assert kinds["control flow"] == 1
    assert kinds["prim::Constant"] == 3
    assert kinds["aten::"] == 5  # sum, gt, Bool, add, sub
    assert sum(kinds.values()) == 9


def test_trace_records_the_operators_the_decomposed_torch_fx_graph_calls() -> None:
    torch.manual_seed(0)
    model = ResNet50(num_classes=3, width=4).eval()
    x = torch.randn(1, 3, 32, 32)
    graph = torchscript_size.torchscript_graph(model, x, "jit.trace")
    kinds = torchscript_size.kind_counts(graph)
    fx_graph = ir_size.trace(model, "decomposed", "torch.fx").graph
    calls = collections.Counter(node.op for node in fx_graph.nodes)["call_function"]
    # The same 175 operators (53 convolutions, 53 batch norms, 49 relus, 16 adds, ...);
    # what differs is how each IR fetches parameters and passes constant arguments.
    assert kinds["aten::"] == calls == 175
    assert kinds["control flow"] == 0
    assert torchscript_size.count_nodes(graph) == sum(kinds.values())
    # A traced graph has no blocks: only its own input and return node are added.
    assert torchscript_size.count_with_inputs_and_returns(graph) == sum(kinds.values()) + 2


def test_an_unknown_capture_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^unknown capture 'jit\.freeze'"):
        torchscript_size.torchscript_graph(Shift(), torch.ones(2), "jit.freeze")
