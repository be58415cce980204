"""minifx.passes.int8: the int8 kernels, value for value against PyTorch's quantized kernels.

The oracle is what torch.ao's converted models run: `torch.quantize_per_tensor`, and the
x86 engine's `quantized::linear[_relu]` / `quantized::conv2d[_relu]` on quantized tensors
(deprecated in torch 2.13, silenced here, where they only check). minifx's kernels hold the
same integers in plain uint8 / int8 tensors and must produce exactly the same ones.
"""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from minifx.passes import int8
from minifx.passes.int8 import (
    QuantizedConv2d,
    QuantizedLinear,
    dequantize,
    quantize,
    quantize_weight,
)

pytestmark = pytest.mark.ch8

INPUT, OUTPUT = (0.031, 61), (0.047, 70)  # (scale, zero point) of the 8-bit input and output


def _silenced(function, *args):
    """Call one of torch's quantized-tensor functions without its deprecation warning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        warnings.filterwarnings("ignore", "torch._make_per_tensor_quantized_tensor", UserWarning)
        return function(*args)


def _torch_quantized(q: torch.Tensor, scale: float, zero_point: int) -> torch.Tensor:
    """The same integers as one of torch's quantized tensors (the oracle's input)."""
    return _silenced(torch._make_per_tensor_quantized_tensor, q, scale, zero_point)


def _random_input(*shape: int) -> torch.Tensor:
    """uint8 values over the whole range, 128..255 included (beyond the calibrated 0..127)."""
    return torch.randint(
        0, 256, shape, dtype=torch.uint8, generator=torch.Generator().manual_seed(3)
    )


def test_quantize_gives_torch_quantize_per_tensors_integers_in_a_uint8_tensor():
    torch.manual_seed(0)
    x = torch.cat([torch.randn(1000) * 3, torch.tensor([-100.0, 100.0, 0.0])])
    scale, zero_point = torch.tensor(INPUT[0]), torch.tensor(INPUT[1])
    q = quantize(x, scale, zero_point)
    want = _silenced(torch.quantize_per_tensor, x, scale, zero_point, torch.quint8)
    assert q.dtype == torch.uint8 and torch.equal(q, want.int_repr())
    assert torch.equal(dequantize(q, scale, zero_point), want.dequantize())


@pytest.mark.parametrize("zero_point", [0, 60, 127])
@pytest.mark.parametrize("scale", [0.1, 0.0579, 0.011])
def test_quantize_rounds_values_on_half_steps_as_torch_does(scale, zero_point):
    # round(x * (1 / scale)) + zero_point or round(x / scale + zero_point) in two steps miss
    # some of these by one; one fused multiply-add does not.
    scale, zero_point = torch.tensor(scale), torch.tensor(zero_point)
    x = (torch.arange(-2000, 2000) + 0.5) * scale
    want = _silenced(torch.quantize_per_tensor, x, scale, zero_point, torch.quint8).int_repr()
    assert torch.equal(quantize(x, scale, zero_point), want)


def test_quantize_weight_gives_symmetric_int8_values_and_the_observers_scale():
    torch.manual_seed(0)
    weight = torch.randn(64, 32)
    q, scale = quantize_weight(weight)
    assert q.dtype == torch.int8 and scale == pytest.approx(weight.abs().max().item() / 127.5)
    want = _silenced(torch.quantize_per_tensor, weight, scale, 0, torch.qint8)
    assert torch.equal(q, want.int_repr())


@pytest.mark.parametrize("features", [(96, 40), (256, 24)], ids=["plain", "narrowing"])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_writes_the_integers_quantized_linear_writes(relu, bias, features):
    torch.manual_seed(0)
    in_features, out_features = features
    linear = nn.Linear(in_features, out_features, bias=bias)
    ours = QuantizedLinear(linear, INPUT, OUTPUT, relu)
    assert (ours.weight_kn is not None) == (in_features >= int8.NARROWING * out_features)
    q = _random_input(2, 5, in_features)  # any leading dimensions, as nn.Linear
    weight, weight_scale = quantize_weight(linear.weight)
    packed = _silenced(
        torch.ops.quantized.linear_prepack,
        _torch_quantized(weight, weight_scale, 0),
        None if linear.bias is None else linear.bias.detach(),
    )
    kernel = torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear
    want = kernel(_torch_quantized(q, *INPUT), packed, *OUTPUT).int_repr()
    got = ours(q)
    assert got.dtype == torch.uint8 and got.shape == (2, 5, out_features)
    assert torch.equal(got, want)
    assert torch.equal(ours(q[0, :1]), want[0, :1])  # one row: the weight's .t() view


def test_linear_rounds_as_quantized_linear_on_every_pair_of_inputs():
    # 2.6 million outputs from every pair of uint8 inputs: some land within a float32
    # rounding of a half step. `acc * multiplier + bias / s_y` in one fused multiply-add
    # wrote 8 of them one off; `(acc + bias / (s_x * s_w)) * multiplier`, fbgemm's order, none.
    torch.manual_seed(0)
    linear = nn.Linear(2, 40)
    ours = QuantizedLinear(linear, INPUT, OUTPUT)
    values = torch.arange(256, dtype=torch.uint8)
    q = torch.cartesian_prod(values, values)
    weight, weight_scale = quantize_weight(linear.weight)
    packed = _silenced(
        torch.ops.quantized.linear_prepack,
        _torch_quantized(weight, weight_scale, 0),
        linear.bias.detach(),
    )
    want = torch.ops.quantized.linear(_torch_quantized(q, *INPUT), packed, *OUTPUT).int_repr()
    assert torch.equal(ours(q), want)


CONVS = {
    "plain": {},
    "strided": {"stride": 2, "padding": 1},
    "dilated, grouped": {"padding": 2, "dilation": 2, "groups": 4},
    "uneven, no bias": {"stride": (1, 2), "padding": (1, 0), "dilation": (2, 1), "bias": False},
}


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("options", CONVS.values(), ids=list(CONVS))
def test_conv2d_writes_the_integers_quantized_conv2d_writes(options, relu):
    torch.manual_seed(0)
    conv = nn.Conv2d(8, 16, 3, **options)
    ours = QuantizedConv2d(conv, INPUT, OUTPUT, relu)
    q = _random_input(2, 8, 11, 13)
    weight, weight_scale = quantize_weight(conv.weight)
    packed = _silenced(
        torch.ops.quantized.conv2d_prepack,
        _torch_quantized(weight, weight_scale, 0),
        None if conv.bias is None else conv.bias.detach(),
        list(conv.stride),
        list(conv.padding),
        list(conv.dilation),
        conv.groups,
    )
    kernel = torch.ops.quantized.conv2d_relu if relu else torch.ops.quantized.conv2d
    want = kernel(_torch_quantized(q, *INPUT), packed, *OUTPUT).int_repr()
    got = ours(q)
    assert got.dtype == torch.uint8 and got.shape == want.shape
    assert torch.equal(got, want)
    with pytest.MonkeyPatch.context() as patch:  # output pixels in many blocks, the last one short
        patch.setattr(int8, "ROWS_PER_BLOCK", 7)
        assert torch.equal(ours(q), want)


def test_one_input_value_per_output_is_multiplied_right():
    # K = 1 (a Linear with one input, a 1x1 conv with one channel per group): the weight's
    # `.t()` view has strides (1, 1), on which torch 2.13's _int_mm returns wrong sums.
    torch.manual_seed(0)
    linear, conv = nn.Linear(1, 8), nn.Conv2d(4, 12, 1, stride=2, padding=1, groups=4)
    q, q_image = _random_input(5, 1), _random_input(2, 4, 9, 10)
    weight, weight_scale = quantize_weight(linear.weight)
    packed = _silenced(
        torch.ops.quantized.linear_prepack,
        _torch_quantized(weight, weight_scale, 0),
        linear.bias.detach(),
    )
    want = torch.ops.quantized.linear(_torch_quantized(q, *INPUT), packed, *OUTPUT).int_repr()
    assert torch.equal(QuantizedLinear(linear, INPUT, OUTPUT)(q), want)
    weight, weight_scale = quantize_weight(conv.weight)
    packed = _silenced(
        torch.ops.quantized.conv2d_prepack,
        _torch_quantized(weight, weight_scale, 0),
        conv.bias.detach(),
        [2, 2],
        [1, 1],
        [1, 1],
        4,
    )
    want = torch.ops.quantized.conv2d(_torch_quantized(q_image, *INPUT), packed, *OUTPUT).int_repr()
    assert torch.equal(QuantizedConv2d(conv, INPUT, OUTPUT)(q_image), want)


def test_im2col_is_unfold_with_the_zero_point_as_padding():
    conv = nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 2), dilation=(1, 2))
    ours = QuantizedConv2d(conv, INPUT, OUTPUT)
    q = _random_input(2, 4, 7, 9)
    patches = ours.im2col(q)  # (N, OH, OW, kh, kw, C)
    assert patches.shape == (
        2,
        *conv(torch.zeros(1, 4, 7, 9)).shape[2:],
        3,
        2,
        4,
    )  # (N, OH, OW, kh, kw, C)
    padded = F.pad(q.float(), (2, 2, 1, 1), value=INPUT[1])
    columns = F.unfold(padded, (3, 2), dilation=(1, 2), stride=(2, 1))  # (N, C * kh * kw, OH * OW)
    rows = patches.permute(0, 1, 2, 5, 3, 4).reshape(
        2, 4 * 11, 4 * 3 * 2
    )  # unfold's order: C, kh, kw
    assert torch.equal(rows.transpose(1, 2).float(), columns)


def test_a_conv_reads_and_writes_channels_last_memory_in_nchw_shape():
    conv = nn.Conv2d(4, 6, 3, padding=1)
    ours = QuantizedConv2d(conv, INPUT, OUTPUT)
    assert ours.weight.shape == conv.weight.shape
    assert ours.weight.is_contiguous(memory_format=torch.channels_last)
    out = ours(_random_input(2, 4, 5, 5))
    assert out.shape == (2, 6, 5, 5) and out.is_contiguous(memory_format=torch.channels_last)
    assert torch.equal(
        ours(out.contiguous()), ours(out)
    )  # either memory layout in, the same values out


def test_the_layers_hold_plain_integer_tensors():
    ours = QuantizedLinear(nn.Linear(8, 4), INPUT, OUTPUT, relu=True)
    assert ours.weight.dtype == torch.int8 and not ours.weight.is_quantized
    assert {name for name, _ in ours.named_buffers()} == {
        "weight",
        "zero_point_correction",
        "scaled_bias",
    }
    assert (
        repr(ours)
        == "QuantizedLinear(in_features=8, out_features=4, scale=0.047, zero_point=70, relu=True)"
    )
    conv = QuantizedConv2d(nn.Conv2d(3, 5, 1), INPUT, OUTPUT)
    assert repr(conv) == "QuantizedConv2d(3, 5, scale=0.047, zero_point=70, relu=False)"
