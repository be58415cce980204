"""Exercise 1.1: proxy failure (solution).

`clip_or_negate` branches on a value computed from its input. While tracing,
that value is a Proxy, so `if` cannot decide: tracing raises a `TraceError`.
"""

import torch

from minifx.proxy import TraceError, trace_to_tape


# --8<-- [start:given]
def clip_or_negate(x: torch.Tensor) -> torch.Tensor:
    """Negate `x` when its sum is positive; otherwise clamp it to [-1, 1]."""
    if x.sum() > 0:
        return -x
    return x.clamp(-1, 1)


# --8<-- [end:given]


# --8<-- [start:solution]
def capture_trace_error() -> TraceError:
    """Trace `clip_or_negate` and return the `TraceError` that tracing raises."""
    try:
        trace_to_tape(clip_or_negate)
    except TraceError as error:
        return error
    raise AssertionError("tracing clip_or_negate should have failed")


def clip_or_negate_traceable(x: torch.Tensor) -> torch.Tensor:
    """The same results as `clip_or_negate`, with no branch on a traced value.

    Both branches are computed; `torch.where` picks one, elementwise, with a
    condition broadcast from the scalar `x.sum() > 0`.
    """
    return torch.where(x.sum() > 0, -x, x.clamp(-1, 1))


# --8<-- [end:solution]
