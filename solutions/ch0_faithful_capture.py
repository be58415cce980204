"""Exercise 0.1: Faithful, refused or silently wrong? (solution).

A capture is worth only as much as its agreement with the program it came
from. Symbolic tracing either refuses (a `TraceError`) or returns a graph;
the graph can still be wrong where the trace baked in something the eager
program recomputes on every call. The only way to know is to run both.
"""

from collections import Counter
from collections.abc import Callable, Sequence
from typing import NamedTuple

import torch
from torch import nn

import minifx
from minifx import TraceError
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


# --8<-- [start:solution]
def check_capture(
    program: Callable | nn.Module,
    inputs: Sequence[tuple],
    concrete_args: dict | None = None,
) -> Verdict:
    """Capture `program` with `minifx.symbolic_trace`, then run the capture and the
    program on each input in turn (each a tuple of arguments) and compare."""
    try:
        captured = minifx.symbolic_trace(program, concrete_args=concrete_args)
    except TraceError as error:  # only a refusal is a verdict; any other error is a bug
        return Verdict("refused", str(error).splitlines()[0])
    for index, args in enumerate(inputs):
        want = program(*args)
        try:
            got = captured(*args)
        except Exception:  # the captured program raised: the capture fails here
            return Verdict("fails", index)
        if not torch.equal(got, want):
            return Verdict("wrong", index)
    return Verdict("faithful", None)


def opcode_counts(gm: GraphModule) -> dict[str, int]:
    """How many nodes of each opcode `gm`'s graph holds, such as
    `{"placeholder": 1, "call_module": 1, "output": 1}`."""
    return dict(Counter(node.op for node in gm.graph.nodes))


# --8<-- [end:solution]
