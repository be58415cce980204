"""Exercise 1.1: proxy failure.

`clip_or_negate` branches on a value computed from its input. Find out what
happens when you trace it, then write a version that traces.

Read first: chapters/01-proxy.md#why-if-proxy-must-fail
Grade with: `make grade CH=1`
"""

import torch

from minifx.proxy import TraceError, trace_to_tape  # noqa: F401  (you will need them)


# --8<-- [start:given]
def clip_or_negate(x: torch.Tensor) -> torch.Tensor:
    """Negate `x` when its sum is positive; otherwise clamp it to [-1, 1]."""
    if x.sum() > 0:
        return -x
    return x.clamp(-1, 1)


# --8<-- [end:given]


def capture_trace_error() -> TraceError:
    """Trace `clip_or_negate` with `trace_to_tape` and return the `TraceError` it raises.

    Catch the error and return it (do not let it escape). Then read its
    message: which recorded value did `if` try to use, and why can it not?
    """
    raise NotImplementedError(
        "Exercise 1.1: capture_trace_error is not written yet; "
        "see chapters/01-proxy.md#why-if-proxy-must-fail"
    )


def clip_or_negate_traceable(x: torch.Tensor) -> torch.Tensor:
    """The same result as `clip_or_negate(x)` for every `x`, with no `if` on a traced value.

    Then `trace_to_tape(clip_or_negate_traceable)` succeeds.

    Hint: compute both branches and let a torch function choose between them.
    """
    raise NotImplementedError(
        "Exercise 1.1: clip_or_negate_traceable is not written yet; "
        "see chapters/01-proxy.md#why-if-proxy-must-fail"
    )
