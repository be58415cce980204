"""The TorchScript side of the IR-size comparison: ResNet-50 under `torch.jit.trace` and `torch.jit.script`.

The torch.fx paper compares ResNet-50's torch.fx IR (445 nodes) with TorchScript's (860
nodes from `torch.jit.trace`, 2614 from `torch.jit.script`). `benchmarks.ir_size` counts
the torch.fx side; this module counts TorchScript's, on the same model, so the report can
set all of them next to the paper's. Nothing is timed.

How a TorchScript graph is counted (the paper does not say how it counted):

- The graph is the module's `inlined_graph`: every submodule's `forward` inlined into
  one graph, as torch.fx's decomposed graph has every layer written out. Without
  inlining, a scripted or traced module's graph holds one `prim::CallMethod` per child.
- **nodes**: every node of the graph, and of the blocks nested in it (`jit.script` keeps
  Python's `if` and loops as `prim::If` and `prim::Loop` nodes whose blocks hold more
  nodes), each counted once. This is what `graph.nodes()` walks, recursively.
- **with inputs and returns**: the same, plus the two nodes TorchScript adds to the graph
  and to each block for their inputs and their result (`param_node` / `paramNode` and
  `return_node` / `returnNode`), which `nodes()` does not list. torch.fx's placeholders
  and output are ordinary nodes, so its count is the same either way.
"""

from __future__ import annotations

import collections
import warnings
from typing import Any, Callable

import torch
from torch import nn

CAPTURES = ("jit.trace", "jit.script")

# The paper's counts for ResNet-50 (Reed et al. 2022), as the walkthrough of the paper
# in the project's seeds (004_f76f08ed96b37b97.txt) quotes them, section 2.1 and the
# caption of Figure 5.
PAPER_COUNTS = {"torch.fx": 445, "jit.trace": 860, "jit.script": 2614}

# Node kinds, grouped for the report: what fetches state, what builds constants and
# argument lists, what is control flow (`if`, loops, `raise`), and the operators.
KIND_GROUPS: dict[str, Callable[[str], bool]] = {
    "prim::GetAttr": lambda kind: kind == "prim::GetAttr",
    "prim::Constant": lambda kind: kind == "prim::Constant",
    "prim::ListConstruct": lambda kind: kind == "prim::ListConstruct",
    "control flow": lambda kind: kind in ("prim::If", "prim::Loop", "prim::RaiseException"),
    "other prim::": lambda kind: kind.startswith("prim::"),
    "aten::": lambda kind: kind.startswith("aten::"),
    "other": lambda kind: True,
}


def torchscript_graph(model: nn.Module, x: torch.Tensor, capture: str) -> Any:
    """`model` captured by `torch.jit.trace` (on `x`) or `torch.jit.script`, inlined.

    torch 2.13 deprecates both front ends and warns on every use; the warnings are
    silenced here (chapter 0 shows them).

    Returns:
        The `torch._C.Graph` of the captured module's `forward`, every call inlined.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if capture == "jit.trace":
            # check_trace re-runs the model to compare; it does not change the graph.
            captured = torch.jit.trace(model, x, check_trace=False)
        elif capture == "jit.script":
            captured = torch.jit.script(model)
        else:
            raise ValueError(f"unknown capture {capture!r}; expected one of {CAPTURES}")
    return captured.inlined_graph


def nested_nodes(graph_or_block: Any) -> list[Any]:
    """Every node of a TorchScript graph or block, and of the blocks nested in them."""
    found = []
    for node in graph_or_block.nodes():
        found.append(node)
        for block in node.blocks():
            found += nested_nodes(block)
    return found


def count_nodes(graph: Any) -> int:
    """The nodes of `graph`, nested blocks included (see the module docstring)."""
    return len(nested_nodes(graph))


def count_with_inputs_and_returns(graph: Any) -> int:
    """`count_nodes`, plus each graph's and block's input node and return node."""
    blocks = sum(len(list(node.blocks())) for node in nested_nodes(graph))
    return count_nodes(graph) + 2 * (1 + blocks)


def kind_counts(graph: Any) -> dict[str, int]:
    """How many nodes of each `KIND_GROUPS` group, in its order (a node joins its first)."""
    counts = dict.fromkeys(KIND_GROUPS, 0)
    for node in nested_nodes(graph):
        group = next(name for name, test in KIND_GROUPS.items() if test(node.kind()))
        counts[group] += 1
    return counts


def most_common_kinds(graph: Any, n: int = 8) -> list[tuple[str, int]]:
    """The `n` node kinds with the most nodes, most first."""
    return collections.Counter(node.kind() for node in nested_nodes(graph)).most_common(n)
