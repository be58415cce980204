"""Exercise 0.1: Faithful, refused or silently wrong?

Chapter 0 captured one program three ways: a concrete trace that was
silently wrong, and a symbolic trace that refused loudly. Write the check
that tells them apart. `check_capture` captures a program with
`minifx.symbolic_trace`, runs the capture and the program itself on a list
of inputs, and returns a `Verdict`: refused, fails, wrong or faithful.
`opcode_counts` reads the captured program as data: how many nodes of each
opcode its graph holds.

Read first: chapters/00-why-capture.md#exercise-01-faithful-refused-or-silently-wrong
Grade with: `make grade CH=0`
"""

from collections import Counter  # noqa: F401  (you may need it)
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch  # noqa: F401  (you will need it)
from torch import nn

import minifx  # noqa: F401  (you will need it)
from minifx import TraceError  # noqa: F401  (you will need it)
from minifx.codegen import GraphModule


# --8<-- [start:given]
class Verdict(NamedTuple):
    """What became of one program's capture.

    Attributes:
        kind: `"refused"` (symbolic tracing raised a `TraceError`), `"fails"`
            (the captured program raised on an input that the eager program
            ran), `"wrong"` (it returned something else than the eager program
            did) or `"faithful"` (it agreed on every input).
        detail: For `"refused"`, the first line of the TraceError's message;
            for `"fails"` and `"wrong"`, the index in `inputs` of the first
            input where it happened; for `"faithful"`, None.
    """

    kind: str
    detail: str | int | None


# --8<-- [end:given]


def check_capture(
    program: Callable | nn.Module,
    inputs: Sequence[tuple],
    concrete_args: dict | None = None,
) -> Verdict:
    """Capture `program` with `minifx.symbolic_trace` (passing `concrete_args` on),
    then run the capture and the program on each input in turn and compare.

    - Symbolic tracing raised a `TraceError`: return `Verdict("refused", <the first
      line of its message>)`. Any other error is a bug in `program`, not a verdict:
      let it propagate.
    - For each input, in order (each input is a tuple of arguments: call
      `program(*args)` and `captured(*args)`): if the captured program raises,
      return `Verdict("fails", index)`; if it returns another tensor than the
      program did, `Verdict("wrong", index)`. Compare tensors with `torch.equal`.
    - Otherwise, `Verdict("faithful", None)`.
    """
    raise NotImplementedError(
        "Exercise 0.1: check_capture is not written yet; "
        "see chapters/00-why-capture.md#exercise-01-faithful-refused-or-silently-wrong"
    )


def opcode_counts(gm: GraphModule) -> dict[str, int]:
    """How many nodes of each opcode `gm`'s graph holds, keyed by `node.op`, such as
    `{"placeholder": 1, "call_module": 1, "output": 1}` (opcodes with no node are
    left out)."""
    raise NotImplementedError(
        "Exercise 0.1: opcode_counts is not written yet; "
        "see chapters/00-why-capture.md#exercise-01-faithful-refused-or-silently-wrong"
    )
