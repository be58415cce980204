"""Int8 kernels in plain PyTorch: quantize, dequantize, and Linear / Conv2d on 8-bit tensors.

An 8-bit value here is a plain integer tensor `q` together with two numbers, its `scale`
and `zero_point`: it stands for the float tensor `scale * (q - zero_point)`. Activations
are `torch.uint8` (the `ACTIVATION` scheme: calibration puts their range on 0..127, and
values beyond it saturate at 255, as in PyTorch's quint8 kernels); weights are
`torch.int8`, -128..127 with zero point 0 (`WEIGHT`). The matrix products are
`torch._int_mm`: uint8 x int8 products summed in int32. The rest, the arithmetic that
turns those sums into the next layer's 8-bit input, is written out below in ordinary
tensor operations.

`torch._int_mm` on the CPU takes a uint8 or int8 left matrix, an int8 right one, any
sizes and strides. It has a CUDA kernel too, with rules of its own (it refuses 16 rows
or fewer, for one); minifx converts and tests on the CPU only (chapter 8).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from minifx.passes.observers import WEIGHT, MinMaxObserver

# A conv's output pixels are computed this many at a time, so that each block's int32 sums
# are requantized while they are still in the CPU's cache: one pass over a whole large
# output per operation ran several times slower (and torch._int_mm itself took 8 times as
# long on 50,176 rows at once as on blocks of 4,096).
ROWS_PER_BLOCK = 4096

# oneDNN's int8 product, which torch._int_mm runs on the CPU, reads the weight fastest as
# the `.t()` view of its (N, K) rows, except for two or more input rows through a Linear that
# narrows NARROWING times or more: there a (K, N) copy is faster (4096 -> 512 on 16 rows:
# 131 us instead of 202; the benchmark's AutoEncoder at batch 16: 3-8% less time). At one row
# the copy is 3 times slower, and 1024 -> 512 or 4096 -> 4096 gain nothing from it.
NARROWING = 4

# The integers an activation is stored in: all of uint8. Calibration maps the observed
# range onto 0..127 (reduce_range); 128..255 is headroom for larger values.
ACTIVATION_RANGE = (0, 255)


# Below this many values one conversion costs less than two (see `to_uint8`).
SMALL = 8192


# --8<-- [start:quantize]
def quantize(x: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor) -> torch.Tensor:
    """`clamp(round(x / scale + zero_point), 0, 255)` as a `torch.uint8` tensor.

    `zero_point + (1 / scale) * x` is one fused multiply-add (`torch.add` with `alpha`),
    rounded once in float32, as PyTorch's `quantize_per_tensor` computes it: `x / scale`,
    or the zero point added in a second step, can land a value near a half step on the
    other side of it. (`1 / scale.item()` is worked out in float64, then rounded to
    float32 once: the float32 reciprocal exactly.)
    """
    low, high = ACTIVATION_RANGE
    q = torch.add(zero_point, x, alpha=1 / scale.item())  # float32
    return to_uint8(q.round_().clamp_(low, high))


def to_uint8(q: torch.Tensor) -> torch.Tensor:
    """Whole numbers in 0..255, held in float32, as a `torch.uint8` tensor.

    Through int16: torch 2.13 converts float32 to uint8 one value at a time, but float32
    to int16 and int16 to uint8 with vector instructions, so two conversions take a
    third of the time of one on a large tensor. On a small one the extra call costs more.
    (`.byte()` and `.short()` are `.to(torch.uint8)` and `.to(torch.int16)`, each half a
    microsecond cheaper to call: `.to` first works out which of its forms it was given.)
    """
    if q.numel() < SMALL:
        return q.byte()
    return q.short().byte()


def dequantize(q: torch.Tensor, scale: torch.Tensor, zero_point: torch.Tensor) -> torch.Tensor:
    """`scale * (q - zero_point)` as a float32 tensor: what the 8-bit values stand for."""
    return q.float().sub_(zero_point).mul_(scale)


def quantize_weight(weight: torch.Tensor) -> tuple[torch.Tensor, float]:
    """`weight` as int8 values and one scale, per-tensor symmetric (the `WEIGHT` scheme).

    Returns:
        The `torch.int8` tensor `q` and the scale: `weight ≈ scale * q` (zero point 0).
    """
    observer = MinMaxObserver(**WEIGHT)
    observer(weight)
    scale, _ = observer.calculate_qparams()
    low, high = observer.quant_range
    inverse_scale = 1 / torch.tensor(scale)  # in float32, as in `quantize`
    return torch.clamp(torch.round(weight.detach() * inverse_scale), low, high).to(
        torch.int8
    ), scale


# --8<-- [end:quantize]


# --8<-- [start:requantize]
def _float32(number: float) -> torch.Tensor:
    return torch.tensor(number, dtype=torch.float32)


class Int8Layer(nn.Module):
    """What the int8 Linear and Conv2d share: int8 weights, and the requantization.

    A layer computes `y[.., n] = bias[n] + sum_k x[.., k] * w[n, k]` (for a conv, `k` runs
    over an input patch). With `x = s_x * (q_x - z_x)` and `w = s_w * q_w`, and
    `acc = sum_k q_x * q_w`, the int32 sums that `torch._int_mm` returns:

        acc = acc - z_x * w_sum[n]                   # zero-point correction, exact in int32
        y   = s_x * s_w * acc + bias[n]               # the layer's float output
        q_y = clamp(round(y / s_y) + z_y, 0, 255)     # requantize

    where `w_sum[n] = sum_k q_w[n, k]`. `y / s_y` is worked out in float32 in the order
    PyTorch's x86 kernels (fbgemm) use, so that every rounding is theirs:
    `(acc + bias / (s_x * s_w)) * (s_x * s_w / s_y)`, the bias counted in steps of `acc`
    (`scaled_bias`), the product `s_x * s_w` and both quotients rounded to float32. One
    fused `acc * multiplier + bias / s_y` rounds elsewhere: fed every pair of uint8
    inputs, a Linear(2, 40) wrote 8 of its 2.6 million integers one off. The zero point
    is added after rounding, as in PyTorch's kernels: added before, in float32, it can
    move a value that lies a hair off a half step onto it. A fused relu is a clamp at
    `z_y`, the integer that stands for 0.0.

    Args:
        layer: The float `nn.Linear` or `nn.Conv2d`.
        input_qparams: `(s_x, z_x)`, the scale and zero point of the uint8 input.
        output_qparams: `(s_y, z_y)`, those the output is written in.
        relu: Whether the relu after the layer is fused in.

    Attributes:
        weight: The int8 weight (`torch.int8`), its float layout; `weight_scale` is `s_w`.
        scale: `s_y`; `zero_point`: `z_y`.
    """

    def __init__(
        self,
        layer: nn.Linear | nn.Conv2d,
        input_qparams: tuple[float, int],
        output_qparams: tuple[float, int],
        relu: bool = False,
    ) -> None:
        super().__init__()
        weight, self.weight_scale = quantize_weight(layer.weight)
        self.register_buffer("weight", weight)
        (input_scale, input_zero_point), (self.scale, self.zero_point) = (
            input_qparams,
            output_qparams,
        )
        self.input_scale, self.input_zero_point, self.relu = input_scale, input_zero_point, relu
        w_sum = weight.flatten(1).sum(1, dtype=torch.int32)
        self.register_buffer("zero_point_correction", input_zero_point * w_sum)  # z_x * w_sum[n]
        step = _float32(input_scale) * _float32(self.weight_scale)  # s_x * s_w: one step of acc
        bias = torch.zeros(len(weight)) if layer.bias is None else layer.bias.detach().cpu().float()
        self.register_buffer("scaled_bias", bias / step)  # bias / (s_x * s_w), in steps of acc
        # 0-dim float32 tensors, not Python numbers: an in-place op takes one in half the
        # time (0.85 us, not 1.85, on one row), and one row's requantization is all such calls.
        self.multiplier = step / _float32(self.scale)  # s_x * s_w / s_y
        self.output_zero_point = _float32(self.zero_point)  # z_y

    def requantize(self, acc: torch.Tensor) -> torch.Tensor:
        """Int32 sums, output channels last -> the uint8 output (`relu`: clamped at `z_y`).

        `acc` is overwritten: it is a fresh `torch._int_mm` result that nothing else reads.
        """
        low, high = ACTIVATION_RANGE
        acc = acc.sub_(self.zero_point_correction)  # int32, in place: sum_k (q_x - z_x) * q_w
        q = torch.add(acc, self.scaled_bias).mul_(self.multiplier)  # float32: y / s_y
        q = q.round_().add_(self.output_zero_point)
        return to_uint8(q.clamp_(self.zero_point if self.relu else low, high))

    def extra_repr(self) -> str:
        return f"scale={self.scale:.4g}, zero_point={self.zero_point}, relu={self.relu}"


# --8<-- [end:requantize]


# --8<-- [start:linear]
def right_matrix(weight: torch.Tensor) -> torch.Tensor:
    """An (N, K) weight as the (K, N) right-hand matrix of `torch._int_mm`: its `.t()` view.

    With K = 1 that view has two strides of 1, which torch 2.13's `_int_mm` misreads (it
    returns wrong sums); the (1, N) view that `reshape` makes of the same memory it reads right.
    """
    return weight.reshape(1, -1) if weight.shape[1] == 1 else weight.t()


class QuantizedLinear(Int8Layer):
    """`nn.Linear` on uint8 inputs with int8 weights, through `torch._int_mm`.

    A Linear that narrows `NARROWING` times or more also keeps its weight as a (K, N)
    copy, `weight_kn`, for inputs of several rows.
    """

    def __init__(
        self,
        linear: nn.Linear,
        input_qparams: tuple[float, int],
        output_qparams: tuple[float, int],
        relu: bool = False,
    ) -> None:
        super().__init__(linear, input_qparams, output_qparams, relu)
        self.in_features, self.out_features = linear.in_features, linear.out_features
        narrows = self.in_features >= NARROWING * self.out_features
        self.register_buffer("weight_kn", self.weight.t().contiguous() if narrows else None)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        # _int_mm multiplies 2-d matrices only: other inputs go through a (rows, K) view and
        # back. A 2-d input, the usual one, skips both reshapes (a microsecond each at batch 1).
        rows = q if q.dim() == 2 else q.reshape(-1, self.in_features)
        weight_kn = self.weight_kn  # (K, N): the same matrix, in the layout faster here
        if weight_kn is None or rows.shape[0] == 1:
            weight_kn = right_matrix(self.weight)
        acc = torch._int_mm(rows, weight_kn)  # int32: sum_k q_x[m, k] * q_w[n, k]
        out = self.requantize(acc)
        return out if q.dim() == 2 else out.reshape(*q.shape[:-1], self.out_features)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, {super().extra_repr()}"


# --8<-- [end:linear]


# --8<-- [start:conv2d]
class QuantizedConv2d(Int8Layer):
    """`nn.Conv2d` on uint8 inputs with int8 weights, lowered to `torch._int_mm` by im2col.

    im2col copies each input patch that the kernel sees into one row of a matrix; the
    convolution is then that matrix times the flattened weight, one int8 product per
    group. The padding is the input's zero point, the integer that stands for 0.0.

    Everything is channels-last (NHWC) in memory, so that a patch row is made of runs of
    C contiguous bytes: the weight is stored channels-last (its shape stays nn.Conv2d's),
    and the output is an NCHW view of NHWC memory, which the next conv reads for free.
    """

    def __init__(
        self,
        conv: nn.Conv2d,
        input_qparams: tuple[float, int],
        output_qparams: tuple[float, int],
        relu: bool = False,
    ) -> None:
        super().__init__(conv, input_qparams, output_qparams, relu)
        self.weight = self.weight.contiguous(memory_format=torch.channels_last)
        self.in_channels, self.out_channels, self.groups = (
            conv.in_channels,
            conv.out_channels,
            conv.groups,
        )
        self.kernel_size, self.stride = conv.kernel_size, conv.stride
        self.padding, self.dilation = conv.padding, conv.dilation

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        patches = self.im2col(q)  # (N, OH, OW, kh, kw, C), a view
        n, out_h, out_w = patches.shape[:3]
        pixels, group_channels = n * out_h * out_w, self.in_channels // self.groups
        rows = [
            patches[..., g * group_channels : (g + 1) * group_channels].reshape(pixels, -1)
            for g in range(self.groups)
        ]  # one row per output pixel, per group: the one copy
        weights = self.weight.permute(0, 2, 3, 1).reshape(self.out_channels, -1).chunk(self.groups)
        out = torch.empty(pixels, self.out_channels, dtype=torch.uint8)
        for start in range(0, pixels, ROWS_PER_BLOCK):
            block = slice(start, start + ROWS_PER_BLOCK)
            products = [
                torch._int_mm(r[block], right_matrix(w))  # int32
                for r, w in zip(rows, weights)
            ]
            out[block] = self.requantize(
                products[0] if self.groups == 1 else torch.cat(products, dim=1)
            )
        return out.reshape(n, out_h, out_w, self.out_channels).permute(
            0, 3, 1, 2
        )  # NCHW shape, NHWC memory

    def im2col(self, q: torch.Tensor) -> torch.Tensor:
        """The patches of `q` (N, C, H, W), one per output pixel: (N, OH, OW, kh, kw, C), a view."""
        (pad_h, pad_w), (dil_h, dil_w), (kh, kw) = self.padding, self.dilation, self.kernel_size
        channels_last = q.permute(0, 2, 3, 1)  # (N, H, W, C): free if q is NHWC in memory
        padded = F.pad(
            channels_last, (0, 0, pad_w, pad_w, pad_h, pad_h), value=self.input_zero_point
        )
        span_h, span_w = dil_h * (kh - 1) + 1, dil_w * (kw - 1) + 1  # what a dilated kernel covers
        windows = padded.unfold(1, span_h, self.stride[0]).unfold(2, span_w, self.stride[1])
        windows = windows[..., ::dil_h, ::dil_w]  # (N, OH, OW, C, kh, kw)
        return windows.permute(0, 1, 2, 4, 5, 3)

    def extra_repr(self) -> str:
        return f"{self.in_channels}, {self.out_channels}, {super().extra_repr()}"


QUANTIZED = {nn.Linear: QuantizedLinear, nn.Conv2d: QuantizedConv2d}
# --8<-- [end:conv2d]
