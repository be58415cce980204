"""The exceptions stage 2 raises for a misuse of the graph API.

Each is also the exception type torch.fx raises for the same mistake, so code
written for torch.fx catches it; minifx's message adds what to do instead.
"""


class MisuseError(ValueError, AssertionError):
    """A misuse of the graph API that torch.fx meets with a bare `AssertionError` (an
    unknown opcode, a node of another graph); minifx's message says what to do instead."""


class InsertArgIndexError(IndexError, AssertionError):
    """A bad index for `insert_arg`; also an `AssertionError`, which torch.fx raises."""


class NotTraceable(TypeError, AssertionError):
    """`root` has no function to trace; also the `AssertionError` torch.fx raises."""


class SelfInStarArgs(TypeError, RuntimeError):
    """A module's `self` hidden in `*args`; also the `RuntimeError` torch.fx raises."""
