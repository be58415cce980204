"""Grader for exercise 1.1: proxy failure."""

import inspect

import pytest
import torch

from minifx.proxy import TraceError, trace_to_tape
from tests.graders.support import explain

pytestmark = pytest.mark.ch1

SEE = "chapters/01-proxy.md#why-if-proxy-must-fail"


@pytest.fixture
def ex(impl):
    return impl.load("ch1_proxy_failure")


def test_capture_returns_the_trace_error(ex):
    error = ex.capture_trace_error()
    assert isinstance(error, TraceError), explain(
        "a TraceError instance, returned (not raised)",
        repr(error),
        "call trace_to_tape(clip_or_negate) inside try/except TraceError and return the error.",
        SEE,
    )


def test_the_error_names_the_value_and_the_line(ex):
    message = str(ex.capture_trace_error())
    branch_line = "if x.sum() > 0:"
    lineno = inspect.getsourcelines(ex.clip_or_negate)[1] + 2
    assert "%gt" in message and branch_line in message and f"line {lineno}," in message, explain(
        f"a message naming %gt and the line `{branch_line}` (line {lineno})",
        message,
        "return the error raised by tracing clip_or_negate itself, not one you build.",
        SEE,
    )


def test_the_traceable_version_traces(ex):
    try:
        tape = trace_to_tape(ex.clip_or_negate_traceable)
    except TraceError as error:
        pytest.fail(explain("trace_to_tape(clip_or_negate_traceable) to succeed",
                            f"TraceError:\n{error}",
                            "no `if` (or `and`, `or`, `not`) may look at a traced value.", SEE))
    ops = [record.op for record in tape]
    assert ops[0] == "placeholder" and ops[-1] == "output", explain(
        "a tape that starts with the input x and ends with an output", str(tape),
        "clip_or_negate_traceable must take one tensor and return one.", SEE)


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["positive-sum", "negative-sum"])
def test_the_traceable_version_matches_the_original(ex, sign):
    torch.manual_seed(0)
    x = sign * (torch.rand(2, 5) * 3)  # values beyond [-1, 1], so clamping matters
    want = ex.clip_or_negate(x)
    got = ex.clip_or_negate_traceable(x)
    assert isinstance(got, torch.Tensor) and torch.equal(got, want), explain(
        f"clip_or_negate_traceable(x) == clip_or_negate(x) for a {'positive' if sign > 0 else 'negative'} sum:\n{want}",
        repr(got),
        "compute both -x and x.clamp(-1, 1), then select with torch.where(x.sum() > 0, ...).",
        SEE,
    )
