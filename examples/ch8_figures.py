"""Chapter 8's graph pictures, drawn by `python -m examples.figures`.

The same small MLP three times: as traced, after `prepare` (observers around each
Linear), and after calibration and `convert` (int8 Linears, quantize and dequantize
only where float meets int8). `chapters/08-quantization.md` includes them.
"""

from __future__ import annotations

import torch

from examples.ch8_quantization import MLP, quantize
from examples.figures import narrow
from minifx.codegen import GraphModule, symbolic_trace
from minifx.passes.quantize import prepare


def _model() -> MLP:
    torch.manual_seed(0)
    return MLP().eval()


def float_mlp() -> GraphModule:
    return symbolic_trace(_model())


def prepared_mlp() -> GraphModule:
    return prepare(_model())


def converted_mlp() -> str:
    # Each quantize and dequantize reads a scale and a zero point beside its input,
    # and the layout steps right at each: named boxes, so that the picture fits a
    # phone (the printout under it gives each target).
    calibration = [torch.randn(8, 16, generator=torch.Generator().manual_seed(1))]
    return narrow(quantize(_model(), calibration))


FIGURES = {
    "ch8_float": float_mlp,
    "ch8_prepared": prepared_mlp,
    "ch8_converted": converted_mlp,
}
