"""Grader for exercise 8.2: Per-channel weights.

Oracles: PyTorch's `PerChannelMinMaxObserver` (symmetric, qint8, axis 0) for the scales,
`torch.quantize_per_channel` with its scales for the int8 values, and minifx's per-tensor
`quantize_weight` for the error to beat.
"""

import warnings

import pytest
import torch
from torch import nn

from minifx.passes.quantize import quantize_weight
from tests.graders.support import explain

pytestmark = [pytest.mark.ch8,
              pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")]

SEE = "chapters/08-quantization.md#exercise-82-per-channel-weights"
HINT = ("scale[c] = max |weight[c]| / 127.5 over every entry of channel c (flatten all dims but 0), "
        "clamped below at torch.finfo(torch.float32).eps.")


@pytest.fixture
def ex(impl):
    return impl.load("ch8_per_channel")


def _weights() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    spread = torch.tensor([0.01, 0.1, 1.0, 5.0, 0.5, 2.0])
    return {
        "linear": nn.Linear(16, 6).weight.detach() * spread[:, None],
        "conv2d": nn.Conv2d(3, 6, 3).weight.detach() * spread[:, None, None, None],
        "zero channel": torch.cat([torch.randn(3, 4), torch.zeros(1, 4)]),
        "one channel": torch.randn(1, 7),
    }


def _torch_qparams(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from torch.ao.quantization import PerChannelMinMaxObserver
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.ao.quantization is deprecated", DeprecationWarning)
        observer = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)
        observer(weight)
        return observer.calculate_qparams()


@pytest.mark.parametrize("case", list(_weights()))
def test_scales_equal_pytorchs_per_channel_observer(ex, case):
    weight = _weights()[case]
    want, _ = _torch_qparams(weight)
    got = ex.per_channel_scales(weight)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32 and torch.equal(got, want), explain(
        f"the {case} weight's scales, float32: {want.tolist()}",
        repr(got.tolist() if isinstance(got, torch.Tensor) else got), HINT, SEE)


def test_scales_stay_on_the_weights_device(ex, device):
    weight = _weights()["conv2d"].to(device)
    got = ex.per_channel_scales(weight)
    assert got.device == weight.device and got.shape == (6,), explain(
        f"6 scales on {weight.device}", f"shape {tuple(got.shape)} on {got.device}",
        "compute with tensor operations on the weight itself (abs, flatten, amax, clamp).", SEE)


@pytest.mark.parametrize("case", list(_weights()))
def test_int8_values_equal_torch_quantize_per_channel(ex, case):
    weight = _weights()[case]
    scales, zero_points = _torch_qparams(weight)
    want = torch.quantize_per_channel(weight, scales, zero_points, 0, torch.qint8)
    got = ex.quantize_per_channel(weight)
    same = (isinstance(got, torch.Tensor) and got.is_quantized and got.dtype == torch.qint8
            and got.q_per_channel_axis() == 0 and torch.equal(got.int_repr(), want.int_repr())
            and torch.equal(got.q_per_channel_scales().float(), scales)
            and not got.q_per_channel_zero_points().any())
    assert same, explain(
        f"a qint8 tensor quantized per channel along axis 0, zero points 0, int values {want.int_repr().tolist()}",
        repr(got), "torch.quantize_per_channel(weight, scales.double(), zeros (int64), 0, torch.qint8).", SEE)


@pytest.mark.parametrize("case", ["linear", "conv2d"])
def test_per_channel_loses_less_than_per_tensor(ex, case):
    weight = _weights()[case]
    ours, theirs = ex.quantize_per_channel(weight), quantize_weight(weight)
    per_channel, per_tensor = ex.relative_error(weight, ours), ex.relative_error(weight, theirs)
    # Channel 0 is 500 times smaller than channel 3: one scale for both rounds it to a few levels.
    small_channel = ex.relative_error(weight[0], ours[0]), ex.relative_error(weight[0], theirs[0])
    assert per_channel < per_tensor and small_channel[0] < small_channel[1] / 10, explain(
        f"less than the per-tensor error {per_tensor:.3%} overall, and a tenth of its "
        f"{small_channel[1]:.2%} on the smallest channel",
        f"{per_channel:.3%} overall, {small_channel[0]:.2%} on the smallest channel",
        "each channel's scale comes from that channel's largest |w| alone.", SEE)


def test_every_weight_is_within_half_a_step(ex):
    weight = _weights()["conv2d"]
    scales = ex.per_channel_scales(weight)
    error = (ex.quantize_per_channel(weight).dequantize() - weight).abs().flatten(1).amax(1)
    assert bool((error <= scales / 2 + 1e-7).all()), explain(
        "|dequantized - weight| at most half a scale in every channel (rounding to the nearest step)",
        f"errors {error.tolist()} for scales {scales.tolist()}",
        "symmetric: zero point 0, and the range [-max|w|, max|w|] must fit in -128..127.", SEE)
