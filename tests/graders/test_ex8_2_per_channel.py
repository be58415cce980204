"""Grader for exercise 8.2: Per-channel weights.

Expected values are golden: the weights are built from exact small fractions, and their
per-channel scales were written out once from PyTorch's `PerChannelMinMaxObserver`
(symmetric, qint8, axis 0). The int8 values are `torch.quantize_per_channel` with those
golden scales; minifx's per-tensor `quantize_weight` gives the error to beat, and the
error measure is the grader's copy of the given `relative_error`. The exercise says
compute the scales yourself: handing the work to an observer (torch.ao's or minifx's) fails.
"""

import warnings

import pytest
import torch
import torch.ao.quantization.observer as ao_observer

import minifx.passes.quantize as quantize
from tests.graders.support import (
    Delegated,
    describe_error,
    error_line,
    explain,
    oracle_lines,
    refusing,
    replace_for_student,
    stub_hint,
)

pytestmark = [
    pytest.mark.ch8,
    pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning"),
]

SEE = "chapters/08-quantization.md#exercise-82-per-channel-weights"
SEE_AFFINE = "chapters/08-quantization.md#affine-quantization"


@pytest.fixture
def ex(impl):
    return impl.load("ch8_per_channel")


# --- the grader's own copy of the given code ------------------------------------------


def _relative_error(weight: torch.Tensor, quantized: torch.Tensor) -> float:
    """The given `relative_error`, copied: the student may edit theirs."""
    return ((quantized.dequantize() - weight).norm() / weight.norm()).item()


def _float_error(weight: torch.Tensor, dequantized: torch.Tensor) -> float:
    """The same measure for a weight already dequantized (minifx's per-tensor one)."""
    return ((dequantized - weight).norm() / weight.norm()).item()


# --- the weights, and their scales (golden) -------------------------------------------


def _weights() -> dict[str, torch.Tensor]:
    """Weights of exact small fractions (times a per-row spread), so the scales are exact too."""
    spread = torch.tensor([0.01, 0.1, 1.0, 5.0, 0.5, 2.0])[:, None]  # channel 0 is 500x smaller
    c = torch.arange(6)[:, None]
    shift = torch.tensor([5.0, 10.0] * 3)[:, None]  # even rows peak positive, odd rows negative
    linear = ((torch.arange(16) * 5 + c * 3) % 16 - shift) / 8 * spread
    shift = torch.tensor([9.0, 17.0] * 3)[:, None]
    conv2d = (((torch.arange(27) * 7 + c * 2) % 27 - shift) / 16 * spread).reshape(6, 3, 3, 3)
    return {
        "linear": linear,
        "conv2d": conv2d,
        "square": torch.tensor(
            [
                [1.0, 0.5, -0.25, 0.125],
                [-4.0, 2.0, 1.0, 0.5],
                [0.5, -0.25, 8.0, 1.0],
                [0.25, 0.125, 0.5, -0.0625],
            ]
        ),
        "zero channel": torch.tensor(
            [[0.5, -1.5, 0.25, 1.0], [0.0, 0.0, 0.0, 0.0], [-0.75, 0.5, 2.0, -3.0]]
        ),
        "one channel": torch.tensor([[-0.375, 0.25, 1.75, -0.5, 0.0, 0.125, -2.5]]),
    }


# PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8, qscheme=torch.per_channel_symmetric)'s
# scales for each weight above, float32.
SCALES = {
    "linear": [
        9.803920693229884e-05,
        0.0009803922148421407,
        0.009803921915590763,
        0.04901960864663124,
        0.0049019609577953815,
        0.019607843831181526,
    ],
    "conv2d": [
        8.333333244081587e-05,
        0.0008333333535119891,
        0.008333333767950535,
        0.0416666679084301,
        0.004166666883975267,
        0.01666666753590107,
    ],
    "square": [0.007843137718737125, 0.0313725508749485, 0.062745101749897, 0.003921568859368563],
    "zero channel": [0.0117647061124444, 1.1920928955078125e-07, 0.0235294122248888],
    "one channel": [0.019607843831181526],
}
# The square weight's scales along dim 1 (its columns): what the wrong axis gives.
SQUARE_COLUMNS = [0.0313725508749485, 0.01568627543747425, 0.062745101749897, 0.007843137718737125]


def _scales(case: str) -> torch.Tensor:
    return torch.tensor(SCALES[case], dtype=torch.float32)


# --- running the student's code -----------------------------------------------------------

# Ready-made observers and qparams helpers: torch.ao's and minifx's.
ORACLE = (
    "PerChannelMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver",
    "MinMaxObserver",
    "calculate_qparams",
    "_calculate_qparams",
    "determine_qparams",
    "quantize_weight",
    "default_per_channel_weight_observer",
    "per_channel_weight_observer_range_neg_127_to_127",
    "default_weight_observer",
    "_choose_qparams_per_tensor",
)


def _yourself(uses: str):
    pytest.fail(
        explain(
            "scales computed in the exercise itself, from each channel's entries",
            f"your code uses {uses}",
            "compute the scales yourself, as the exercise asks: max |w[c]| over each "
            "channel's entries, with tensor operations; an observer (torch.ao's or "
            "minifx's) is what you reimplement.",
            SEE,
        ),
        pytrace=False,
    )


def _call(ex, function: str, weight: torch.Tensor):
    """The student's `function(weight)`, with the ready-made observers refusing to work."""
    uses = oracle_lines(ex, ORACLE)
    if uses:
        _yourself(uses)

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.quantize_per_tensor", UserWarning)
        patch.setattr(
            ao_observer.UniformQuantizationObserverBase,
            "_calculate_qparams",
            refusing("torch.ao.quantization's observers"),
        )
        patch.setattr(
            quantize.MinMaxObserver, "calculate_qparams", refusing("minifx's MinMaxObserver")
        )
        for name in ("quantize_weight", "prepare", "convert"):
            replace_for_student(patch, quantize, name, refusing(f"minifx's {name}"), ex)
        try:
            return getattr(ex, function)(weight)
        except Delegated as error:
            _yourself(f"{error} at {error_line(error)}")
        except Exception as error:  # student code: any error becomes a message
            pytest.fail(
                explain(
                    f"{function}(weight) runs",
                    describe_error(error),
                    stub_hint(error, function),
                    SEE,
                ),
                pytrace=False,
            )


# --- what went wrong --------------------------------------------------------------------


def _close(a: torch.Tensor, b) -> bool:
    b = torch.as_tensor(b, dtype=torch.float64)
    return a.shape == b.shape and torch.allclose(a.double(), b, rtol=1e-5, atol=0)


def _scales_hint(case: str, weight: torch.Tensor, got) -> str:
    """The hint for scales `got` that are not SCALES[case]."""
    want = _scales(case)
    channels = weight.shape[0]
    if not isinstance(got, torch.Tensor):
        return f"return a tensor of {channels} scales, not a {type(got).__name__}."
    if got.dim() == 0 or got.numel() == 1 and channels > 1:
        return (
            f"one scale per output channel: a tensor of {channels}, not one scale for the "
            "whole weight (per-tensor)."
        )
    if got.shape != want.shape:
        return (
            f"one scale for each of the output channels, dim 0: shape ({channels},), not "
            f"{tuple(got.shape)}; take the max over all the other dims (flatten them)."
        )
    if got.dtype != torch.float32:
        return f"the scales are float32, not {got.dtype}."
    got = got.detach().cpu().double()
    if channels > 1 and bool((got == got[0]).all()):
        return (
            "every channel got the same scale, the per-tensor one: each channel's scale "
            "comes from that channel's largest |w| alone."
        )
    if case == "square" and _close(got, SQUARE_COLUMNS):
        return "one scale per row, for each of the output channels, dim 0; yours are per column (dim 1)."
    nonzero = want > torch.finfo(torch.float32).eps
    if bool((got[~nonzero] == 0).any()):
        return (
            "an all-zero channel gets scale 0, and rounding then divides by it: never go below "
            "torch.finfo(torch.float32).eps."
        )
    if _close(got[nonzero], want[nonzero] * 127.5 / 127):
        return "divide by (QMAX - QMIN) / 2 = 127.5, as PyTorch's observers do, not 127."
    if _close(got[nonzero], want[nonzero] / 2):
        return "symmetric: [-max|w|, max|w|] spans 255 steps, so divide max|w| by 127.5, not 255."
    flat = weight.flatten(1).double()
    eps = torch.finfo(torch.float32).eps
    if _close(got, (flat.amax(1) / 127.5).clamp(min=eps)):
        return "max |w[c]| is the largest magnitude: negative entries count too (take abs first)."
    low, high = flat.amin(1).clamp(max=0), flat.amax(1).clamp(min=0)
    if _close(got, ((high - low) / 255).clamp(min=eps)):
        return (
            "symmetric, not affine: the scale comes from max |w[c]| alone (zero point 0), not "
            "from the range max - min."
        )
    return (
        "scale[c] = max |weight[c]| / 127.5 over every entry of channel c (flatten all dims "
        "but 0), and never below torch.finfo(torch.float32).eps."
    )


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("case", list(SCALES))
def test_scales_equal_pytorchs_per_channel_observer(ex, case):
    weight = _weights()[case]
    got = _call(ex, "per_channel_scales", weight)
    want = _scales(case)
    assert torch.equal(weight, _weights()[case]), explain(
        "the weight unchanged by per_channel_scales",
        "the weight changed",
        "compute on new tensors: abs_(), clamp_() and the like change the weight in place.",
        SEE,
    )
    same = (
        isinstance(got, torch.Tensor)
        and got.dtype == torch.float32
        and got.shape == want.shape
        and torch.equal(got.detach().cpu(), want)
    )
    assert same, explain(
        f"the {case} weight's scales, float32: {want.tolist()}",
        repr(got.tolist() if isinstance(got, torch.Tensor) else got),
        _scales_hint(case, weight, got),
        SEE_AFFINE,
    )


def test_scales_stay_on_the_weights_device(ex, device):
    weight = _weights()["conv2d"].to(device)
    got = _call(ex, "per_channel_scales", weight)
    ok = isinstance(got, torch.Tensor) and got.device == weight.device and got.shape == (6,)
    assert ok, explain(
        f"6 scales on {weight.device}",
        f"shape {tuple(got.shape)} on {got.device}" if isinstance(got, torch.Tensor) else repr(got),
        "compute with tensor operations on the weight itself (abs, flatten, amax, clamp).",
        SEE,
    )


def _quantized_hint(case: str, weight: torch.Tensor, got) -> str:
    """The hint for a quantize_per_channel result that is not the expected tensor."""
    if not isinstance(got, torch.Tensor) or not got.is_quantized:
        return (
            "return the quantized tensor that torch.quantize_per_channel gives (dequantize() "
            "turns it back into floats), not a float or integer tensor."
        )
    if got.qscheme() not in (torch.per_channel_affine, torch.per_channel_symmetric):
        return (
            f"quantize per channel with torch.quantize_per_channel, not per tensor "
            f"(your tensor's qscheme is {got.qscheme()})."
        )
    if got.dtype != torch.qint8:
        return f"the int8 type is torch.qint8 (signed, -128..127), not {got.dtype}."
    if got.q_per_channel_axis() != 0:
        return f"axis 0, the output channels, not axis {got.q_per_channel_axis()}."
    if got.q_per_channel_zero_points().any():
        return "symmetric: every zero point is 0."
    if not torch.equal(got.q_per_channel_scales().float(), _scales(case)):
        return "the scales are per_channel_scales(weight): " + _scales_hint(
            case, weight, got.q_per_channel_scales().float()
        )
    return "quantize the weight itself, with torch.quantize_per_channel."


@pytest.mark.parametrize("case", list(SCALES))
def test_int8_values_equal_torch_quantize_per_channel(ex, case):
    weight = _weights()[case]
    scales = _scales(case)
    want = torch.quantize_per_channel(
        weight, scales.double(), torch.zeros(len(scales), dtype=torch.int64), 0, torch.qint8
    )
    got = _call(ex, "quantize_per_channel", weight)
    same = (
        isinstance(got, torch.Tensor)
        and got.is_quantized
        and got.dtype == torch.qint8
        and got.qscheme() in (torch.per_channel_affine, torch.per_channel_symmetric)
        and got.q_per_channel_axis() == 0
        and torch.equal(got.int_repr(), want.int_repr())
        and torch.equal(got.q_per_channel_scales().float(), scales)
        and not got.q_per_channel_zero_points().any()
    )
    assert same, explain(
        f"a qint8 tensor quantized per channel along axis 0, zero points 0, int values "
        f"{want.int_repr().tolist()}",
        repr(got),
        _quantized_hint(case, weight, got),
        SEE,
    )


@pytest.mark.parametrize("case", ["linear", "conv2d"])
def test_per_channel_loses_less_than_per_tensor(ex, case):
    weight = _weights()[case]
    int8_weight, scale = quantize.quantize_weight(weight)
    theirs = int8_weight.float() * scale  # what minifx's per-tensor int8 weight stands for
    ours = _call(ex, "quantize_per_channel", weight)
    if not (isinstance(ours, torch.Tensor) and ours.is_quantized):
        pytest.fail(
            explain("a quantized tensor", repr(ours), _quantized_hint(case, weight, ours), SEE),
            pytrace=False,
        )
    per_channel, per_tensor = _relative_error(weight, ours), _float_error(weight, theirs)
    # Channel 0 is 500 times smaller than channel 3: one scale for both rounds it to a few levels.
    small_channel = _relative_error(weight[0], ours[0]), _float_error(weight[0], theirs[0])
    assert per_channel < per_tensor and small_channel[0] < small_channel[1] / 10, explain(
        f"less than the per-tensor error {per_tensor:.3%} overall, and a tenth of its "
        f"{small_channel[1]:.2%} on the smallest channel",
        f"{per_channel:.3%} overall, {small_channel[0]:.2%} on the smallest channel",
        _quantized_hint(case, weight, ours)
        if ours.qscheme() not in (torch.per_channel_affine, torch.per_channel_symmetric)
        else "each channel's scale comes from that channel's largest |w| alone.",
        SEE,
    )


def test_every_weight_is_within_half_a_step(ex):
    weight = _weights()["conv2d"]
    scales = _scales("conv2d")
    got = _call(ex, "quantize_per_channel", weight)
    if not (isinstance(got, torch.Tensor) and got.is_quantized):
        pytest.fail(
            explain("a quantized tensor", repr(got), _quantized_hint("conv2d", weight, got), SEE),
            pytrace=False,
        )
    error = (got.dequantize() - weight).abs().flatten(1).amax(1)
    assert bool((error <= scales / 2 * (1 + 1e-5)).all()), explain(
        "|dequantized - weight| at most half a scale in every channel (rounding to the nearest step)",
        f"errors {error.tolist()} for scales {scales.tolist()}",
        "symmetric: zero point 0, and the range [-max|w|, max|w|] must fit in -128..127.",
        SEE,
    )
