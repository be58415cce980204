"""Grader for exercise 8.2: Per-channel weights.

Expected values are golden: the weights are built from exact small fractions, and their
per-channel scales were written out once from PyTorch's `PerChannelMinMaxObserver`
(symmetric, qint8, axis 0). The int8 values are PyTorch's rounding with those golden
scales, `clamp(round(w * (1 / scale)), -128, 127)` in float32 (`_int8_values`): on these
weights, what `torch.quantize_per_channel(...).int_repr()` gave when they were written
(torch 2.13, which deprecates that function; a division instead of the reciprocal gives
other values on three of the five). minifx's per-tensor `quantize_weight` gives the error
to beat, and the error measure is the grader's copy of the given `relative_error`. The
exercise says compute the scales yourself: handing the work to an observer (torch.ao's or
minifx's) fails.
"""

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
    plain_tensors,
    refuse_torch_swaps,
    refusing,
    replace_for_student,
    stub_hint,
    tensors_close,
    tensors_equal,
)

pytestmark = pytest.mark.ch8

SEE = "chapters/08-quantization.md#exercise-82-per-channel-weights"
SEE_AFFINE = "chapters/08-quantization.md#affine-quantization"


@pytest.fixture
def ex(impl):
    return impl.load("ch8_per_channel")


# --- the grader's own copy of the given code ------------------------------------------


def _dequantized(q: torch.Tensor, scales: torch.Tensor) -> torch.Tensor:
    """The given `dequantize_per_channel`, copied: the student may edit theirs."""
    return q.float() * scales.reshape(-1, *[1] * (q.dim() - 1))


def _relative_error(weight: torch.Tensor, q: torch.Tensor, scales: torch.Tensor) -> float:
    """The given `relative_error`, copied."""
    return _float_error(weight, _dequantized(q, scales))


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


def _per_channel(values: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """One value per output channel, shaped to broadcast over each channel's entries."""
    return values.reshape(-1, *[1] * (weight.dim() - 1))


def _int8_values(weight: torch.Tensor, scales: torch.Tensor, divide: bool = False) -> torch.Tensor:
    """PyTorch's symmetric int8 rounding of `weight` with `scales` (`divide`: the near miss)."""
    scaled = (
        weight / _per_channel(scales, weight)
        if divide
        else weight * _per_channel(1 / scales, weight)
    )
    return torch.round(scaled).clamp(-128, 127).to(torch.int8)


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

    with pytest.MonkeyPatch.context() as patch:
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
            got = getattr(ex, function)(weight)
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
    refuse_torch_swaps()  # a patch graded code put back later would still be in place now
    return plain_tensors(got, f"{function}(weight)", SEE)


# --- what went wrong --------------------------------------------------------------------


def _close(a: torch.Tensor, b) -> bool:
    b = torch.as_tensor(b, dtype=torch.float64)
    return tensors_close(a.double(), b, rtol=1e-5, atol=0)


def _scales_hint(case: str, weight: torch.Tensor, got) -> str:
    """The hint for scales `got` that are not SCALES[case]."""
    want = _scales(case)
    channels = weight.shape[0]
    if not isinstance(got, torch.Tensor):
        scales = "1 scale" if channels == 1 else f"{channels} scales"
        return f"return a tensor of {scales}, not a {type(got).__name__}."
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
    assert tensors_equal(weight, _weights()[case]), explain(
        "the weight unchanged by per_channel_scales",
        "the weight changed",
        "compute on new tensors: abs_(), clamp_() and the like change the weight in place.",
        SEE,
    )
    same = (
        isinstance(got, torch.Tensor)
        and got.dtype == torch.float32
        and tensors_equal(got.detach().cpu(), want)
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


def _quantized_problem(case: str, weight: torch.Tensor, got) -> str | None:
    """What is wrong with `got`, a quantize_per_channel result, in its form: the hint, or
    None when it is a pair of an int8 tensor of the weight's shape and the right scales."""
    if not (type(got) is tuple and len(got) == 2):  # a subclass could iterate as it likes
        return (
            "return a pair (q, scales): the int8 values and the scales from "
            f"per_channel_scales, not a {type(got).__name__}."
        )
    q, scales = got
    if not isinstance(q, torch.Tensor) or q.is_quantized or q.dtype != torch.int8:
        kind = q.dtype if isinstance(q, torch.Tensor) else type(q).__name__
        if kind == torch.uint8:
            return "signed int8 values with zero point 0 (torch.int8, -128..127), not uint8."
        return f"q is a plain torch.int8 tensor (signed, -128..127), not {kind}."
    if q.shape != weight.shape:
        return (
            f"one int8 value per weight entry: shape {tuple(weight.shape)}, not {tuple(q.shape)}."
        )
    if not isinstance(scales, torch.Tensor) or (scales.numel() == 1 and weight.shape[0] > 1):
        return "one scale per output channel, not per tensor: return per_channel_scales(weight)."
    if not (scales.dtype == torch.float32 and tensors_equal(scales.detach().cpu(), _scales(case))):
        return "the scales are per_channel_scales(weight): " + _scales_hint(case, weight, scales)
    return None


def _int8_hint(weight: torch.Tensor, scales: torch.Tensor, q: torch.Tensor) -> str:
    """The hint for int8 values `q` that are not PyTorch's rounding with `scales`."""
    exact = weight * _per_channel(1 / scales, weight)
    if tensors_equal(q, _int8_values(weight, scales, divide=True)):
        return (
            "multiply by the reciprocal, weight[c] * (1 / scales[c]), in float32 as PyTorch "
            "does: dividing rounds some values that lie near a half step to the other side."
        )
    if tensors_equal(q, torch.round(exact).to(torch.int8)):
        return (
            "clamp to QMIN..QMAX before converting: each channel's largest |w| lands on "
            "127.5, which rounds to 128, and 128 does not fit in int8."
        )
    if tensors_equal(q, exact.clamp(-128, 127).to(torch.int8)):
        return (
            "round to the nearest step (torch.round) before converting; .to(torch.int8) truncates."
        )
    overall = scales.max()
    if tensors_equal(q, torch.round(weight * (1 / overall)).clamp(-128, 127).to(torch.int8)):
        return "not per tensor: round each channel with its own scale, not the largest one."
    return (
        "q[c] = round(weight[c] * (1 / scales[c])) for each output channel c (dim 0), "
        "clamped to -128..127, as a torch.int8 tensor."
    )


def _quantize(ex, case: str, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The student's `(q, scales)`; a test fails with a hint if it is not of that form.

    The student's function gets a copy: the tests measure against `weight`, which an
    in-place edit (`weight.copy_(dequantized)`) would otherwise move to the answer."""
    got = _call(ex, "quantize_per_channel", weight.clone())
    problem = _quantized_problem(case, weight, got)
    if problem:
        pytest.fail(
            explain(
                "a pair (q, scales): q a torch.int8 tensor of the weight's shape, the float32 "
                f"scales {SCALES[case]}",
                repr(got),
                problem,
                SEE,
            ),
            pytrace=False,
        )
    return got


@pytest.mark.parametrize("case", list(SCALES))
def test_int8_values_are_pytorchs_rounding_per_channel(ex, case):
    weight = _weights()[case]
    scales = _scales(case)
    want = _int8_values(weight, scales)
    q, _ = _quantize(ex, case, weight)
    assert tensors_equal(q.cpu(), want), explain(
        f"int8 values {want.tolist()}",
        repr(q.tolist()),
        _int8_hint(weight, scales, q.cpu()),
        SEE,
    )


@pytest.mark.parametrize("case", ["linear", "conv2d"])
def test_per_channel_loses_less_than_per_tensor(ex, case):
    weight = _weights()[case]
    int8_weight, scale = quantize.quantize_weight(weight)
    theirs = int8_weight.float() * scale  # what minifx's per-tensor int8 weight stands for
    q, scales = _quantize(ex, case, weight)
    per_channel, per_tensor = _relative_error(weight, q, scales), _float_error(weight, theirs)
    # Channel 0 is 500 times smaller than channel 3: one scale for both rounds it to a few levels.
    small_channel = (
        _relative_error(weight[:1], q[:1], scales[:1]),
        _float_error(weight[0], theirs[0]),
    )
    assert per_channel < per_tensor and small_channel[0] < small_channel[1] / 10, explain(
        f"less than the per-tensor error {per_tensor:.3%} overall, and a tenth of its "
        f"{small_channel[1]:.2%} on the smallest channel",
        f"{per_channel:.3%} overall, {small_channel[0]:.2%} on the smallest channel",
        "each channel's int8 values come from that channel's own scale: "
        + _int8_hint(weight, scales, q.cpu()),
        SEE,
    )


def test_every_weight_is_within_half_a_step(ex):
    weight = _weights()["conv2d"]
    scales = _scales("conv2d")
    q, _ = _quantize(ex, "conv2d", weight)
    error = (_dequantized(q.cpu(), scales) - weight).abs().flatten(1).amax(1)
    assert bool((error <= scales / 2 * (1 + 1e-5)).all()), explain(
        "|dequantized - weight| at most half a scale in every channel (rounding to the nearest step)",
        f"errors {error.tolist()} for scales {scales.tolist()}",
        "symmetric: zero point 0, and the range [-max|w|, max|w|] must fit in -128..127.",
        SEE,
    )
