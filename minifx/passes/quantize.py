"""Post-training quantization: observers, calibration, and real int8 kernels (chapter 8).

Three steps, as in PyTorch's FX graph-mode PTQ (`torch.ao.quantization.quantize_fx`):

1. `prepare(gm)` copies the GraphModule and puts a `MinMaxObserver` after every
   value that enters or leaves a quantizable op (`nn.Linear`, `nn.Conv2d`).
2. Calibration is running representative data through the prepared module: the
   observers record the range of each value, and pass the value on unchanged.
3. `convert(prepared)` turns each range into a scale and a zero point, swaps every
   Linear / Conv2d for a module that calls PyTorch's int8 CPU kernels, quantizes
   float values where they enter an int8 op and dequantizes int8 values where a float
   op (SELU, the output, ...) needs them.

Only the CPU has int8 kernels (`quantized::linear`, `quantized::conv2d`): prepare and
calibrate anywhere, convert on the CPU.
"""

from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Graph, Node

# --8<-- [start:qconfig]
# What PyTorch's x86/fbgemm defaults expect: activations unsigned and affine, weights
# signed and symmetric (zero point 0). `reduce_range` keeps activations in 0..127: on
# CPUs without VNNI, fbgemm adds pairs of u8 x s8 products in 16 bits, and 255 * 127 * 2
# would overflow.
ACTIVATION = {"dtype": torch.quint8, "qscheme": torch.per_tensor_affine, "reduce_range": True}
WEIGHT = {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric, "reduce_range": False}
# --8<-- [end:qconfig]

# The ops that follow a Linear or a Conv2d into one fused int8 kernel (and nn.ReLU).
_FUSED_RELUS = {"call_function": (torch.relu, F.relu), "call_method": ("relu",)}


# --8<-- [start:observer]
class MinMaxObserver(nn.Module):
    """Records the running minimum and maximum of what flows through it; returns its input.

    Args:
        dtype: `torch.quint8` (0..255) or `torch.qint8` (-128..127).
        qscheme: `torch.per_tensor_affine` (any zero point) or
            `torch.per_tensor_symmetric` (zero point in the middle of the range).
        reduce_range: Use one bit less (0..127 or -64..63).

    Attributes:
        min_val: The smallest value seen so far (`inf` before any data).
        max_val: The largest value seen so far (`-inf` before any data).
    """

    def __init__(self, dtype: torch.dtype = torch.quint8,
                 qscheme: torch.qscheme = torch.per_tensor_affine, reduce_range: bool = False) -> None:
        super().__init__()
        self.dtype, self.qscheme, self.reduce_range = dtype, qscheme, reduce_range
        self.register_buffer("min_val", torch.tensor(float("inf")))
        self.register_buffer("max_val", torch.tensor(float("-inf")))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        values = x.detach()
        self.min_val.copy_(torch.minimum(self.min_val, values.min()))
        self.max_val.copy_(torch.maximum(self.max_val, values.max()))
        return x

    @property
    def has_seen_data(self) -> bool:
        """Whether any data went through the observer (calibration ran)."""
        return bool(self.min_val <= self.max_val)

    @property
    def quant_range(self) -> tuple[int, int]:
        """The smallest and largest integer of the dtype, one bit less with reduce_range."""
        low, high = (0, 255) if self.dtype == torch.quint8 else (-128, 127)
        if self.reduce_range:
            low, high = low // 2, high // 2
        return low, high

    def calculate_qparams(self) -> tuple[float, int]:
        """The scale and zero point that map the recorded range onto `quant_range`.

        The range is widened to include 0, so that 0.0 (padding, a relu's zeros) is
        exactly representable. Computed in float32, as PyTorch's observers do.
        """
        low, high = self.quant_range
        min_neg = torch.clamp(self.min_val.float().cpu(), max=0.0)
        max_pos = torch.clamp(self.max_val.float().cpu(), min=0.0)
        eps = torch.finfo(torch.float32).eps
        if self.qscheme == torch.per_tensor_symmetric:
            scale = torch.maximum(-min_neg, max_pos) / ((high - low) / 2)
            zero_point = (low + high + 1) // 2 if self.dtype == torch.quint8 else 0
            return max(scale.item(), eps), zero_point
        scale = torch.clamp((max_pos - min_neg) / (high - low), min=eps)
        zero_point = low - torch.round(min_neg / scale).int().item()
        return scale.item(), min(max(zero_point, low), high)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val.item():.4g}, max_val={self.max_val.item():.4g}"
# --8<-- [end:observer]


# --8<-- [start:quantized_modules]
def quantize_weight(weight: torch.Tensor) -> torch.Tensor:
    """`weight` as a per-tensor symmetric qint8 tensor (the `WEIGHT` scheme)."""
    observer = MinMaxObserver(**WEIGHT)
    observer(weight)
    scale, zero_point = observer.calculate_qparams()
    return torch.quantize_per_tensor(weight.detach(), scale, zero_point, WEIGHT["dtype"])


class QuantizedLinear(nn.Module):
    """`nn.Linear` on quint8 inputs with int8 weights, through `quantized::linear`.

    The output is quint8 with the given scale and zero point; with `relu=True` the
    kernel is `quantized::linear_relu`, which clamps at zero before rounding.
    """

    def __init__(self, linear: nn.Linear, scale: float, zero_point: int, relu: bool = False) -> None:
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.scale, self.zero_point, self.relu = scale, zero_point, relu
        bias = None if linear.bias is None else linear.bias.detach()
        # prepack reorders the int8 weight into the layout the kernel reads fastest.
        self._packed_params = torch.ops.quantized.linear_prepack(quantize_weight(linear.weight), bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kernel = torch.ops.quantized.linear_relu if self.relu else torch.ops.quantized.linear
        return kernel(x, self._packed_params, self.scale, self.zero_point)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"scale={self.scale:.4g}, zero_point={self.zero_point}, relu={self.relu}")


class QuantizedConv2d(nn.Module):
    """`nn.Conv2d` on quint8 inputs with int8 weights, through `quantized::conv2d`."""

    def __init__(self, conv: nn.Conv2d, scale: float, zero_point: int, relu: bool = False) -> None:
        super().__init__()
        self.in_channels, self.out_channels = conv.in_channels, conv.out_channels
        self.scale, self.zero_point, self.relu = scale, zero_point, relu
        bias = None if conv.bias is None else conv.bias.detach()
        self._packed_params = torch.ops.quantized.conv2d_prepack(
            quantize_weight(conv.weight), bias, list(conv.stride), list(conv.padding),
            list(conv.dilation), conv.groups)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        kernel = torch.ops.quantized.conv2d_relu if self.relu else torch.ops.quantized.conv2d
        return kernel(x, self._packed_params, self.scale, self.zero_point)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_channels}, scale={self.scale:.4g}, "
                f"zero_point={self.zero_point}, relu={self.relu}")


QUANTIZED = {nn.Linear: QuantizedLinear, nn.Conv2d: QuantizedConv2d}
# --8<-- [end:quantized_modules]


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
            "statistics). Call model.eval() before prepare(model).")


def _check_called_once(gm: GraphModule, node: Node) -> None:
    callers = gm.graph.find_nodes(op="call_module", target=node.target)
    if len(callers) > 1:
        names = ", ".join(f"%{caller.name}" for caller in callers)
        raise ValueError(
            f"prepare: the module {node.target!r} is called by {len(callers)} nodes ({names}); "
            "its int8 version has one output scale, so each call needs its own module. Give each "
            "call its own nn.Linear / nn.Conv2d (copy.deepcopy the shared one).")


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
    `QuantizedLinear` / `QuantizedConv2d` whose output scale and zero point come from
    its output observer. An observer of a float value becomes
    `torch.quantize_per_tensor(value, <name>_scale, <name>_zero_point, torch.quint8)`
    for the int8 ops that read it; an int8 value read by a float op (or returned) goes
    through one `.dequantize()`. Between two int8 ops nothing is inserted.

    Args:
        prepared: What `prepare` returned, after calibration. It is not changed.

    Returns:
        The converted GraphModule, on the CPU.

    Raises:
        RuntimeError: If an observer has seen no data (calibration did not run), or if
            the module is not on the CPU (int8 kernels exist only there).
    """
    _check_cpu(prepared)
    gm = copy.deepcopy(prepared)
    _check_calibrated(gm)
    quantized: set[Node] = set()  # the nodes whose values are int8 tensors
    for node in list(gm.graph.nodes):
        if is_quantizable(gm, node):
            quantized.add(_convert_op(gm, node))
    for node in list(gm.graph.nodes):
        if is_observer(gm, node):
            quantized.add(_quantize_input(gm, node, quantized))
    _dequantize_for_float_users(gm.graph, quantized)
    gm.delete_all_unused_submodules()
    gm.graph.lint()
    gm.recompile()
    return gm


def _convert_op(gm: GraphModule, node: Node) -> Node:
    """Swap `node`'s module for its int8 version; drop its fused relu and output observer."""
    relu = _fused_relu(gm, node)
    observer = _output_observer(gm, relu or node)
    scale, zero_point = gm.get_submodule(observer.target).calculate_qparams()
    module = gm.get_submodule(node.target)
    gm.add_submodule(node.target, QUANTIZED[type(module)](module, scale, zero_point, relu is not None))
    for dropped in (observer, relu):
        if dropped is not None:
            dropped.replace_all_uses_with(node)
            gm.graph.erase_node(dropped)
    return node


def _quantize_input(gm: GraphModule, observer: Node, quantized: set[Node]) -> Node:
    """Replace an observer of a float value by a quantize_per_tensor for the int8 ops."""
    value = observer.args[0]
    scale, zero_point = gm.get_submodule(observer.target).calculate_qparams()
    prefix = _free_name(gm, observer.target.removesuffix("_observer"))
    gm.register_buffer(f"{prefix}_scale", torch.tensor(scale))
    gm.register_buffer(f"{prefix}_zero_point", torch.tensor(zero_point))
    with gm.graph.inserting_before(observer):
        args = (value, gm.graph.get_attr(f"{prefix}_scale"),
                gm.graph.get_attr(f"{prefix}_zero_point"), ACTIVATION["dtype"])
        quantize = gm.graph.call_function(torch.quantize_per_tensor, args)
    for user in list(observer.users):  # float users read the float value, as before
        user.replace_input_with(observer, quantize if user in quantized else value)
    gm.graph.erase_node(observer)
    return quantize


def _dequantize_for_float_users(graph: Graph, quantized: set[Node]) -> None:
    """Give each int8 value read by a float op (or the output) one `.dequantize()`."""
    for node in [node for node in graph.nodes if node in quantized]:  # names in graph order
        float_users = [user for user in node.users if user not in quantized]
        if float_users:
            with graph.inserting_after(node):
                dequantize = graph.call_method("dequantize", (node,))
            for user in float_users:
                user.replace_input_with(node, dequantize)
# --8<-- [end:convert]


def _output_observer(gm: GraphModule, node: Node) -> Node:
    users = list(node.users)
    if len(users) != 1 or not is_observer(gm, users[0]):
        raise RuntimeError(
            f"convert: %{node.name} should be read by exactly one observer, the one prepare put "
            f"after it, but its users are {[f'%{user.name}' for user in users]}. Run convert on "
            "what prepare returned, without editing its graph in between.")
    return users[0]


def _check_calibrated(gm: GraphModule) -> None:
    for node in gm.graph.nodes:
        if is_observer(gm, node) and not gm.get_submodule(node.target).has_seen_data:
            raise RuntimeError(
                f"convert: the observer {node.target!r} (after %{node.args[0].name}) has seen no "
                "data, so there is no range to quantize with. Calibrate first: run representative "
                "inputs through the prepared module (prepared(x) for a few batches), then convert.")


def _check_cpu(gm: GraphModule) -> None:
    device = _device_of(gm)
    if device.type != "cpu":
        raise RuntimeError(
            f"convert: the prepared module is on {device}, but PyTorch's int8 kernels "
            "(quantized::linear, quantized::conv2d) exist only on the CPU. Calibrate on any "
            "device, then convert a CPU copy: convert(prepared.cpu()), and run it on CPU inputs.")
