"""Grader for exercise 1.1: proxy failure.

Expected values are golden: literal inputs and the literal outputs of the given
`clip_or_negate` on them, never a call of the (editable) given function.
"""

import traceback
from pathlib import Path

import pytest
import torch

from minifx.proxy import TraceError, trace_to_tape
from minifx.proxy.tape import Tape
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    safe_repr,
    stub_hint,
    tensors_equal,
)

pytestmark = pytest.mark.ch1

SEE = "chapters/01-proxy.md#why-if-proxy-must-fail"


@pytest.fixture
def ex(impl):
    return impl.load("ch1_proxy_failure")


def _capture(ex):
    """`ex.capture_trace_error()`, or a failed test that says what went wrong."""
    error, raised = call_graded(ex.capture_trace_error)
    if isinstance(raised, TraceError):
        pytest.fail(
            explain(
                "capture_trace_error() returns the TraceError (it must not raise)",
                describe_error(raised, "capture_trace_error"),
                "catch it: `except TraceError as error: return error` around "
                "trace_to_tape(clip_or_negate). This test wants the error returned, not a rewrite "
                "that traces.",
                SEE,
            ),
            pytrace=False,
        )
    if raised is not None:
        pytest.fail(
            explain(
                "capture_trace_error() returns the TraceError",
                describe_error(raised),
                stub_hint(raised, "this function"),
                SEE,
            ),
            pytrace=False,
        )
    return error


def test_capture_returns_the_trace_error(ex):
    error = _capture(ex)
    if isinstance(error, TraceError):
        return
    if isinstance(error, str):
        hint = "return the exception object (`return error`), not its message."
    elif isinstance(error, type):
        hint = "return the instance caught by `except TraceError as error`, not the class."
    elif isinstance(error, Tape):
        hint = (
            "tracing succeeded, so nothing failed: trace the given clip_or_negate, "
            "whose `if` cannot be traced."
        )
    elif error is None:
        hint = "return the error: `return error` inside the `except TraceError as error:` block."
    else:
        hint = "return the TraceError that trace_to_tape(clip_or_negate) raises."
    pytest.fail(
        explain(
            "a TraceError instance, returned (not raised)",
            f"{type(error).__name__}: {error!r}"[:300],
            hint,
            SEE,
        ),
        pytrace=False,
    )


def test_the_error_comes_from_tracing_clip_or_negate(ex):
    error = _capture(ex)
    # Exactly a TraceError: a subclass of graded code's could print any message.
    if type(error) is not TraceError:
        pytest.fail(
            explain(
                "a TraceError instance",
                safe_repr(error, 300),
                "first make capture_trace_error return the TraceError.",
                SEE,
            ),
            pytrace=False,
        )
    branch = "if x.sum() > 0:"
    source = Path(ex.__file__).read_text().splitlines()
    lines = [number for number, text in enumerate(source, 1) if text.strip() == branch]
    message = str(error)
    frames = [
        f
        for f in traceback.extract_tb(error.__traceback__)
        if f.name == "clip_or_negate" and Path(f.filename).name == Path(ex.__file__).name
    ]
    if error.__traceback__ is None:
        hint = (
            "this error was never raised: return the one trace_to_tape(clip_or_negate) "
            "raises, not one you build."
        )
    elif not frames:
        hint = "the error did not come from clip_or_negate: call trace_to_tape(clip_or_negate)."
    else:
        hint = "return the error unchanged; its message is written by the tracer."
    named = message.startswith("%gt ") and any(
        f"line {n}, in clip_or_negate\n" in message for n in lines
    )
    assert named and branch in message and frames, explain(
        f"the error tracing raises: its message names %gt and line "
        f"{' or '.join(map(str, lines)) or '?'}: `{branch}`",
        message[:400] or "(an empty message)",
        hint,
        SEE,
    )


def test_the_traceable_version_traces(ex):
    tape, raised = call_graded(trace_to_tape, ex.clip_or_negate_traceable)
    if isinstance(raised, TraceError):
        pytest.fail(
            explain(
                "trace_to_tape(clip_or_negate_traceable) to succeed",
                describe_error(raised),
                "no `if` (nor `a if c else b`, `and`, `or`, `not`) may look at a traced value: "
                "compute both results and let a torch function pick one.",
                SEE,
            ),
            pytrace=False,
        )
    if raised is not None:
        pytest.fail(
            explain(
                "trace_to_tape(clip_or_negate_traceable) to succeed",
                describe_error(raised),
                stub_hint(raised, "this function"),
                SEE,
            ),
            pytrace=False,
        )
    ops = [record.op for record in tape]
    assert ops[:1] == ["placeholder"] and ops[-1:] == ["output"] and len(ops) > 2, explain(
        "a tape that starts with the input x, computes something, and ends with an output",
        str(tape),
        "clip_or_negate_traceable must take one tensor and return one computed from it.",
        SEE,
    )


# Each case: the input, what the given clip_or_negate returns for it, and the outputs of
# plausible wrong answers with the hint for each. Mixed signs and values beyond [-1, 1],
# so that the sign of the sum, the sign of each element and clamping all matter.
_ELEMENTWISE = (
    "the condition is the sign of x.sum(), one number for the whole tensor, "
    "not the sign of each element."
)
_PER_ROW = "the condition is the sum of all of x (x.sum()), not a sum per row or column."
_SWAPPED = "the branches are swapped: negate when the sum is positive, clamp otherwise."
_NO_CLAMP = "when the sum is not positive, clip_or_negate clamps x to [-1, 1]; yours returned x."
_CLAMPED_BOTH = (
    "the negated x was clamped too: clamp only in the branch where the sum is not positive "
    "(clamp x, then choose between -x and the clamped x)."
)
CASES = {
    "positive-sum": (
        [[3.0, -0.5, 2.0], [-1.5, 0.25, 1.0]],     # sum 4.25: negate
        [[-3.0, 0.5, -2.0], [1.5, -0.25, -1.0]],
        [([[-3.0, -0.5, -2.0], [-1.0, -0.25, -1.0]], _ELEMENTWISE),
         ([[-3.0, 0.5, -2.0], [-1.0, 0.25, 1.0]], _PER_ROW),
         ([[-3.0, -0.5, -2.0], [1.5, 0.25, -1.0]], _PER_ROW),
         ([[1.0, -0.5, 1.0], [-1.0, 0.25, 1.0]], _SWAPPED),
         ([[-1.0, 0.5, -1.0], [1.0, -0.25, -1.0]], _CLAMPED_BOTH)],
    ),
    "negative-sum": (
        [[-3.0, 0.5, -2.0], [1.5, -0.25, 0.75]],   # sum -2.5: clamp
        [[-1.0, 0.5, -1.0], [1.0, -0.25, 0.75]],
        [([[-1.0, -0.5, -1.0], [-1.5, -0.25, -0.75]], _ELEMENTWISE),
         ([[-1.0, 0.5, -1.0], [-1.5, 0.25, -0.75]], _PER_ROW),
         ([[-1.0, -0.5, -1.0], [1.0, 0.25, 0.75]], _PER_ROW),
         ([[3.0, -0.5, 2.0], [-1.5, 0.25, -0.75]], _SWAPPED),
         ([[-3.0, 0.5, -2.0], [1.5, -0.25, 0.75]], _NO_CLAMP)],
    ),
    "zero-sum": (
        [[2.0, -2.0], [0.5, -0.5]],                # sum exactly 0: clamp, since 0 > 0 is False
        [[1.0, -1.0], [0.5, -0.5]],
        [([[-2.0, 2.0], [-0.5, 0.5]], "at a sum of exactly 0, clip_or_negate clamps: its test is "
                                      "`> 0`, not `>= 0`."),
         ([[-2.0, -1.0], [-0.5, -0.5]], _ELEMENTWISE),
         ([[2.0, -2.0], [0.5, -0.5]], _NO_CLAMP)],
    ),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_the_traceable_version_matches_the_original(ex, case):
    given, expected, wrong = CASES[case]
    x, want = torch.tensor(given), torch.tensor(expected)
    got, raised = call_graded(ex.clip_or_negate_traceable, x.clone())
    if raised is not None:
        pytest.fail(
            explain(
                f"clip_or_negate_traceable(x) for x = {given}",
                describe_error(raised),
                stub_hint(raised, "this function"),
                SEE,
            ),
            pytrace=False,
        )
    same = tensors_equal(got, want) and got.dtype == want.dtype
    if same:
        return
    hint = (
        "negate x when x.sum() > 0, otherwise clamp it to [-1, 1]: compute both, then "
        "choose with a torch function."
    )
    if not isinstance(got, torch.Tensor):
        hint = "return a tensor of x's shape."
    else:
        for output, wrong_hint in wrong:
            if tensors_equal(got.to(want.dtype), torch.tensor(output)):
                hint = wrong_hint
                break
    got_text = (repr(got.tolist()) if isinstance(got, torch.Tensor) else repr(got))[:300]
    total = sum(sum(row) for row in given)
    pytest.fail(
        explain(
            f"for x = {given} (sum {total:g}), clip_or_negate(x) = {expected}",
            f"clip_or_negate_traceable(x) = {got_text}",
            hint,
            SEE,
        ),
        pytrace=False,
    )
