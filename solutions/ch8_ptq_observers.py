"""Exercise 8.1: PTQ observers (solution).

An observer is an identity with a memory: put one after a value, move the value's
users onto it, and every run through the graph updates the range it records. That is
all `prepare` does; here the values observed are the relus' outputs.
"""

from __future__ import annotations

from typing import Iterable

import torch
import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule
from minifx.graph import Node
from minifx.passes.quantize import MinMaxObserver


# --8<-- [start:given]
def calibrate(gm: GraphModule, batches: Iterable[torch.Tensor]) -> None:
    """Run each batch through `gm` without recording gradients: the observers record."""
    with torch.no_grad():
        for batch in batches:
            gm(batch)


# --8<-- [end:given]


# --8<-- [start:solution]
def is_relu(gm: GraphModule, node: Node) -> bool:
    """Whether `node` computes a relu: `torch.relu`, `F.relu`, `x.relu()` or an `nn.ReLU`."""
    if node.op == "call_function":
        return node.target in (torch.relu, F.relu)
    if node.op == "call_method":
        return node.target == "relu"
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.ReLU)
    return False


def insert_relu_observers(gm: GraphModule) -> list[str]:
    """Put a `MinMaxObserver` after every relu of `gm`, in place; return their names."""
    names = []
    for node in list(gm.graph.nodes):  # a copy: the loop adds nodes
        if not is_relu(gm, node):
            continue
        name = f"{node.name}_observer"
        gm.add_submodule(name, MinMaxObserver())
        with gm.graph.inserting_after(node):
            observer = gm.graph.call_module(name, (node,))
        # Every user of the relu, except the observer itself, now reads the observer.
        node.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)
        names.append(name)
    gm.recompile()
    return names


def observed_ranges(gm: GraphModule) -> dict[str, tuple[float, float]]:
    """The range each observer recorded, keyed by the name of the node it observes."""
    ranges = {}
    for node in gm.graph.nodes:
        if node.op == "call_module" and isinstance(gm.get_submodule(node.target), MinMaxObserver):
            observer = gm.get_submodule(node.target)
            ranges[node.args[0].name] = (observer.min_val.item(), observer.max_val.item())
    return ranges


# --8<-- [end:solution]
