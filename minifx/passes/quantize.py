"""Post-training quantization: observers in the graph, calibration, conversion to int8 (chapter 8).

Three steps, as in PyTorch's FX graph-mode PTQ (`torch.ao.quantization.quantize_fx`):

1. `prepare(gm)` copies the GraphModule and puts a `MinMaxObserver` (`observers.py`)
   after every value that enters or leaves a quantizable op (`nn.Linear`, `nn.Conv2d`).
2. Calibration is running representative data through the prepared module: the
   observers record the range of each value, and pass the value on unchanged.
3. `convert(prepared)` turns each range into a scale and a zero point, swaps every
   Linear / Conv2d for an int8 module (`int8.py`: `torch._int_mm` and the
   requantization written out), quantizes float values where they enter an int8 op
   and dequantizes 8-bit values where a float op (SELU, the output, ...) needs them.

Prepare and calibrate on any device; convert on the CPU, the one minifx's int8 kernels
are tested on.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Node
from minifx.passes.int8 import (
    QUANTIZED,
    QuantizedConv2d,
    QuantizedLinear,
    dequantize,
    quantize,
    quantize_weight,
)
from minifx.passes.observers import ACTIVATION, WEIGHT, MinMaxObserver

__all__ = [
    "ACTIVATION",
    "WEIGHT",
    "MinMaxObserver",
    "QuantizedConv2d",
    "QuantizedLinear",
    "convert",
    "is_observer",
    "is_quantizable",
    "prepare",
    "quantize_weight",
]

# The ops that follow a Linear or a Conv2d into one fused int8 kernel (and nn.ReLU).
_FUSED_RELUS = {"call_function": (torch.relu, F.relu), "call_method": ("relu",)}


# --- finding the ops ------------------------------------------------------------------


def _module(gm: GraphModule, node: Node) -> Any:
    return gm.get_submodule(node.target) if node.op == "call_module" else None


def is_quantizable(gm: GraphModule, node: Node) -> bool:
    """Whether `node` calls an `nn.Linear` or an `nn.Conv2d` that int8 kernels can run.

    A Conv2d with a string padding (`"same"`) or a padding mode other than zeros has
    no int8 kernel here and stays float, and so does a call whose input is not one
    positional node (`self.fc(input=x)`).
    """
    if len(node.args) != 1 or node.kwargs or not isinstance(node.args[0], Node):
        return False  # int8 ops here take one tensor that the graph computes
    module = _module(gm, node)
    if isinstance(module, nn.Conv2d):
        return module.padding_mode == "zeros" and not isinstance(module.padding, str)
    return type(module) is nn.Linear


def is_observer(gm: GraphModule, node: Node) -> bool:
    """Whether `node` calls a `MinMaxObserver`."""
    return isinstance(_module(gm, node), MinMaxObserver)


def _fused_relu(gm: GraphModule, node: Node) -> Node | None:
    """The relu that is the only user of `node`: the two run as one int8 kernel.

    The user counts in any of its spellings: `torch.relu`, `F.relu`, `x.relu()` or an
    `nn.ReLU` submodule.
    """
    users = list(node.users)
    if len(users) != 1:
        return None
    user = users[0]
    if user.op == "call_module":
        fused = isinstance(_module(gm, user), nn.ReLU)
    else:
        fused = user.target in _FUSED_RELUS.get(user.op, ())
    return user if fused else None


# --- prepare ---------------------------------------------------------------------------


# --8<-- [start:prepare]
def prepare(model: nn.Module) -> GraphModule:
    """A copy of `model` with observers around its Linear and Conv2d calls.

    Each value that enters or leaves a quantizable op gets one `MinMaxObserver`,
    registered as the submodule `<value's node name>_observer` and called right after
    the value; every former user of the value reads the observer's output instead. A
    relu that is a Linear's or Conv2d's only user is observed in its place: convert
    fuses the two. Run calibration data through the result, then call `convert`.

    Args:
        model: An eval-mode `GraphModule`, or an `nn.Module` to trace with
            `symbolic_trace`. It is not changed.

    Returns:
        The prepared GraphModule; it computes exactly what `model` computes.

    Raises:
        ValueError: If `model` is in training mode, or calls one Linear or Conv2d
            from two nodes.
    """
    _check_eval(model)
    gm = copy.deepcopy(model) if isinstance(model, GraphModule) else symbolic_trace(model)
    device = _device_of(gm)
    for node in list(gm.graph.nodes):
        if is_quantizable(gm, node):
            _check_called_once(gm, node)
            _observe(gm, node.args[0], device)
            _observe(gm, _fused_relu(gm, node) or node, device)
    gm.recompile()
    return gm


def _observe(gm: GraphModule, value: Node, device: torch.device) -> None:
    """Call a new observer right after `value` and move `value`'s users onto it."""
    if is_observer(gm, value) or any(is_observer(gm, user) for user in value.users):
        return  # observed already: one observer per value
    name = _free_name(gm, f"{value.name}_observer")
    gm.add_submodule(name, MinMaxObserver(**ACTIVATION).to(device))
    with gm.graph.inserting_after(value):
        observer = gm.graph.call_module(name, (value,))
    value.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)


# --8<-- [end:prepare]


def _check_eval(model: nn.Module) -> None:
    if model.training:
        raise ValueError(
            f"prepare: the {type(model).__name__} is in training mode; post-training quantization "
            "calibrates the model as it will run (dropout off, BatchNorm using its running "
            "statistics). Call model.eval() before prepare(model)."
        )


def _check_called_once(gm: GraphModule, node: Node) -> None:
    callers = gm.graph.find_nodes(op="call_module", target=node.target)
    if len(callers) > 1:
        names = ", ".join(f"%{caller.name}" for caller in callers)
        raise ValueError(
            f"prepare: the module {node.target!r} is called by {len(callers)} nodes ({names}); "
            "its int8 version has one output scale, so each call needs its own module. Give each "
            "call its own nn.Linear / nn.Conv2d (copy.deepcopy the shared one)."
        )


def _device_of(gm: nn.Module) -> torch.device:
    tensor = next(iter(gm.parameters()), None)
    if tensor is None:
        tensor = next(iter(gm.buffers()), torch.empty(0))
    return tensor.device


def _free_name(gm: GraphModule, name: str) -> str:
    candidate, i = name, 1
    while hasattr(gm, candidate):
        candidate, i = f"{name}_{i}", i + 1
    return candidate


# --- convert ---------------------------------------------------------------------------


# --8<-- [start:convert]
def convert(prepared: GraphModule) -> GraphModule:
    """A copy of a calibrated `prepared` module that runs its Linears and Conv2ds in int8.

    Each quantizable op (fused with its relu when prepare observed the relu) becomes a
    `QuantizedLinear` / `QuantizedConv2d`, which reads int8 and writes int8 in the scale
    and zero point of its output observer. An observer of a float value becomes
    `quantize(value, <name>_scale, <name>_zero_point)` for the int8 ops that read it;
    an int8 value read by a float op (or returned) goes through one
    `dequantize(value, <name>_scale, <name>_zero_point)`. The scales and zero points are
    buffers, read by `get_attr` nodes. Between two int8 ops nothing is inserted.

    Args:
        prepared: What `prepare` returned, after calibration. It is not changed.

    Returns:
        The converted GraphModule, on the CPU.

    Raises:
        RuntimeError: If an observer has seen no data (calibration did not run), or if
            the module is not on the CPU (the only device minifx's int8 path is tested on).
    """
    _check_cpu(prepared)
    gm = copy.deepcopy(prepared)
    _check_calibrated(gm)
    ops = [node for node in gm.graph.nodes if is_quantizable(gm, node)]
    qparams = {node: _observed_qparams(gm, node) for node in ops}  # before observers go
    for node in ops:
        _convert_op(gm, node, *qparams[node])
    quantized = set(ops)  # the nodes whose values are int8 tensors
    for node in list(gm.graph.nodes):
        if is_observer(gm, node):
            quantized.add(_quantize_input(gm, node, quantized))
    _dequantize_for_float_users(gm, quantized)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm


def _observed_qparams(gm: GraphModule, node: Node) -> tuple[tuple[float, int], tuple[float, int]]:
    """The (scale, zero point) of the input and of the output of the op `node`."""
    observer = _output_observer(gm, _fused_relu(gm, node) or node)
    return (
        gm.get_submodule(node.args[0].target).calculate_qparams(),
        gm.get_submodule(observer.target).calculate_qparams(),
    )


# --8<-- [task:8.2] "Convert: int8 ops in the graph" points=10 section=08-quantization.md#convert-int8-ops-in-the-graph
def _convert_op(
    gm: GraphModule, node: Node, input_qparams: tuple[float, int], output_qparams: tuple[float, int]
) -> None:
    """Swap `node`'s module for its int8 version; drop its fused relu and output observer."""
    relu = _fused_relu(gm, node)
    observer = _output_observer(gm, relu or node)
    module = gm.get_submodule(node.target)
    gm.add_submodule(
        node.target,
        QUANTIZED[type(module)](module, input_qparams, output_qparams, relu is not None),
    )
    for dropped in (observer, relu):
        if dropped is not None:
            dropped.replace_all_uses_with(node)
            gm.graph.erase_node(dropped)


def _qparams_nodes(gm: GraphModule, value: Node, qparams: tuple[float, int]) -> tuple[Node, Node]:
    """`get_attr` nodes of two new buffers `<value>_scale`, `<value>_zero_point`, after `value`."""
    prefix, i = value.name, 1
    while hasattr(gm, f"{prefix}_scale") or hasattr(gm, f"{prefix}_zero_point"):
        prefix, i = f"{value.name}_{i}", i + 1
    gm.register_buffer(f"{prefix}_scale", torch.tensor(qparams[0]))
    # The zero point is a whole number, held in float32: the arithmetic it enters is float32,
    # and an int64 operand costs each quantize and dequantize call 0.8 us more at batch 1.
    gm.register_buffer(f"{prefix}_zero_point", torch.tensor(float(qparams[1])))
    return gm.graph.get_attr(f"{prefix}_scale"), gm.graph.get_attr(f"{prefix}_zero_point")


def _quantize_input(gm: GraphModule, observer: Node, quantized: set[Node]) -> Node:
    """Replace an observer of a float value by a `quantize` for the int8 ops that read it."""
    value = observer.args[0]
    qparams = gm.get_submodule(observer.target).calculate_qparams()
    with gm.graph.inserting_before(observer):
        scale, zero_point = _qparams_nodes(gm, value, qparams)
        node = gm.graph.call_function(quantize, (value, scale, zero_point))
    for user in list(observer.users):  # float users read the float value, as before
        user.replace_input_with(observer, node if user in quantized else value)
    gm.graph.erase_node(observer)
    return node


def _dequantize_for_float_users(gm: GraphModule, quantized: set[Node]) -> None:
    """Give each int8 value read by a float op (or the output) one `dequantize`."""
    for node in [node for node in gm.graph.nodes if node in quantized]:  # names in graph order
        float_users = [user for user in node.users if user not in quantized]
        if float_users:
            layer = gm.get_submodule(node.target)  # the int8 op that wrote the value
            with gm.graph.inserting_before(node.next):  # right after node, in this order
                scale, zero_point = _qparams_nodes(gm, node, (layer.scale, layer.zero_point))
                float_value = gm.graph.call_function(dequantize, (node, scale, zero_point))
            for user in float_users:
                user.replace_input_with(node, float_value)


# --8<-- [end-task:8.2]
# --8<-- [end:convert]


def _output_observer(gm: GraphModule, node: Node) -> Node:
    users = list(node.users)
    if len(users) != 1 or not is_observer(gm, users[0]):
        raise RuntimeError(
            f"convert: %{node.name} should be read by exactly one observer, the one prepare put "
            f"after it, but its users are {[f'%{user.name}' for user in users]}. Run convert on "
            "what prepare returned, without editing its graph in between."
        )
    return users[0]


def _check_calibrated(gm: GraphModule) -> None:
    for node in gm.graph.nodes:
        if is_observer(gm, node) and not gm.get_submodule(node.target).has_seen_data:
            raise RuntimeError(
                f"convert: the observer {node.target!r} (after %{node.args[0].name}) has seen no "
                "data, so there is no range to quantize with. Calibrate first: run representative "
                "inputs through the prepared module (prepared(x) for a few batches), then convert."
            )


def _check_cpu(gm: GraphModule) -> None:
    device = _device_of(gm)
    if device.type != "cpu":
        raise RuntimeError(
            f"convert: the prepared module is on {device}, but minifx's int8 kernels run and are "
            "tested on the CPU only (torch._int_mm's CUDA kernel has rules of its own). "
            "Calibrate on any device, then convert a CPU copy: convert(prepared.cpu()), and run it "
            "on CPU inputs."
        )
