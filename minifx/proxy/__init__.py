"""Stage 1: Proxies and `__torch_function__` (chapter 1).

A `Proxy` stands in for a tensor and records every operation performed on it
through a tracer (`TracerBase`). This stage's tracer, `TapeRecorder`, writes
a flat `Tape` of `Record`s; `trace_to_tape(f)` traces a plain function.
Constructs a Proxy cannot record raise `TraceError`. `ir.py` holds the IR's
vocabulary that later stages share (the six `OPCODES`, the printer of a
line and the printout's grammar); `operators.py` holds Python's operators.
"""

from .errors import TraceError
from .ir import OPCODES
from .proxy import Attribute, GraphAppendingTracer, Proxy, TracerBase
from .tape import Record, Tape, TapeRecorder, trace_to_tape

__all__ = [
    "Proxy",
    "Attribute",
    "TraceError",
    "TracerBase",
    "GraphAppendingTracer",
    "Record",
    "Tape",
    "TapeRecorder",
    "trace_to_tape",
    "OPCODES",
]
