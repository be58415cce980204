"""IR size: how many nodes minifx, torch.fx and TorchScript capture ResNet-50 into.

Run it from the repository root:

    python -m benchmarks.ir_size                 # a few seconds; writes nothing
    python -m benchmarks.ir_size --out benchmarks/results/ir_size.md --plot chapters/figures/ir_size.png

Nothing is timed: the size of a graph does not depend on the machine. The
model is `tests.models.ResNet50` (torchvision's layout, 16 Bottlenecks), in
eval mode, traced by both libraries under two tracers (`TRACERS`):

| tracer     | what becomes a node                                                          |
|------------|------------------------------------------------------------------------------|
| default    | every `torch.nn` layer is a leaf: one `call_module` node (`Tracer`'s rule)    |
| decomposed | no module is a leaf: `is_leaf_module` returns False, so the tracer runs each  |
|            | layer's `forward` and records what it calls: `Conv2d` becomes `torch.conv2d` |
|            | on a `get_attr` weight, `BatchNorm2d` becomes `F.batch_norm` on four         |
|            | `get_attr` tensors, `ReLU` becomes `F.relu`, `Linear` becomes `F.linear`     |

The decomposed tracer needs one help: `BatchNorm2d.forward` starts with
`_check_input_dim`, whose `if input.dim() != 4: raise ...` is a Python `if`
on a traced value, which neither library can trace (a Proxy has no truth
value). The check computes nothing (it only rejects inputs of the wrong
rank), so `DecomposeEveryModule` skips it while tracing through a
BatchNorm. The report names every module type that cannot be decomposed
without such help, with each library's error (`undecomposable`).

For each tracer the two libraries must trace the same graph: the same count
of nodes per opcode (the benchmark says so in the report and exits with
status 1 when they differ, a minifx bug) and, reported beside it, the same
printed graph. Each traced GraphModule's output is checked against the eager
model's (`torch.equal`), so that the decomposed graph is a real program and
not only a count.

Next to them, the paper's comparison: the same model captured by `torch.jit.trace`
and `torch.jit.script`, counted by `benchmarks.torchscript_size` (whose docstring says
how a TorchScript graph is counted), with the paper's counts beside ours.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
import torch.fx
from torch import nn

import minifx
from benchmarks.common import add_report_options, write_report
from benchmarks.torchscript_size import (
    CAPTURES,
    PAPER_COUNTS,
    count_nodes,
    count_with_inputs_and_returns,
    kind_counts,
    torchscript_graph,
)
from tests.models import ResNet50

LIBRARY_NAMES = ("minifx", "torch.fx")
OPCODES = ("placeholder", "get_attr", "call_function", "call_module", "call_method", "output")
TRACERS = ("default", "decomposed")

# The paper's torch.fx count, as the walkthrough of the paper in the project's seeds
# (004_f76f08ed96b37b97.txt) quotes it: "445 nodes for ResNet50 in torch.fx".
PAPER_FIGURE = "Reed et al. 2022, section 2.1 and Figure 5 (ResNet-50 in torch.fx)"
PAPER_COUNT = str(PAPER_COUNTS["torch.fx"])


# --- the tracers ----------------------------------------------------------------------


@contextmanager
def rank_check_skipped(module: nn.Module) -> Iterator[None]:
    """Trace through a BatchNorm without its `_check_input_dim` (see the module docstring).

    The instance attribute hides the class's method for this module only, and
    is removed afterwards, so the model is left as it was.
    """
    module._check_input_dim = lambda input: None
    try:
        yield
    finally:
        del module._check_input_dim


class DecomposeEveryModule:
    """A tracer mixin: no module is a leaf; BatchNorms traced without their rank check.

    Put it before a library's `Tracer` in the bases, as
    `class MinifxDecomposer(DecomposeEveryModule, minifx.Tracer)`, so that
    its two overrides come first.
    """

    skip_rank_checks = True

    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        return False

    def call_module(self, m: nn.Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        if self.skip_rank_checks and isinstance(m, nn.modules.batchnorm._BatchNorm):
            with rank_check_skipped(m):
                return super().call_module(m, forward, args, kwargs)
        return super().call_module(m, forward, args, kwargs)


class MinifxDecomposer(DecomposeEveryModule, minifx.Tracer):
    """minifx's Tracer with every module traced through."""


class TorchFxDecomposer(DecomposeEveryModule, torch.fx.Tracer):
    """torch.fx's Tracer with every module traced through."""


TRACER_CLASSES: dict[tuple[str, str], type] = {
    ("default", "minifx"): minifx.Tracer,
    ("default", "torch.fx"): torch.fx.Tracer,
    ("decomposed", "minifx"): MinifxDecomposer,
    ("decomposed", "torch.fx"): TorchFxDecomposer,
}
GRAPH_MODULES = {"minifx": minifx.GraphModule, "torch.fx": torch.fx.GraphModule}


def trace(model: nn.Module, tracer: str, library: str) -> Any:
    """`model` traced by one library's tracer of that kind, as a GraphModule."""
    tracer_object = TRACER_CLASSES[tracer, library]()
    graph = tracer_object.trace(model)
    return GRAPH_MODULES[library](model, graph, type(model).__name__)


def opcode_counts(graph: Any) -> dict[str, int]:
    """How many nodes of each opcode, in `OPCODES` order (zeros included)."""
    found = collections.Counter(node.op for node in graph.nodes)
    return {op: found[op] for op in OPCODES}


# --- what cannot be decomposed --------------------------------------------------------


def undecomposable(model: nn.Module, library: str) -> dict[str, str]:
    """Module types whose `forward` the library cannot trace through, with the error.

    Each type is tried alone: modules of that type are traced through (with
    no help: rank checks not skipped), every other `torch.nn` layer stays a
    leaf.

    Returns:
        `{type name: "ErrorType: first line of the message"}`; empty if all trace.
    """
    base = TRACER_CLASSES["default", library]
    failures = {}
    for kind in _layer_types(model):

        class OnlyThisKind(base):
            def is_leaf_module(self, m: nn.Module, name: str, kind: type = kind) -> bool:
                return not isinstance(m, kind) and super().is_leaf_module(m, name)

        try:
            OnlyThisKind().trace(model)
        except Exception as error:  # any failure to trace is what we report
            message = str(error).splitlines()[0]
            failures[kind.__name__] = f"{type(error).__name__}: {message} (at {_where(error)})"
    return failures


def _where(error: Exception) -> str:
    """The line of `torch.nn` code that the tracer could not get past, as `file:line in function`."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if f"torch{os.sep}nn{os.sep}" in frame.filename
    ]
    if not frames:
        return "a line outside torch.nn"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno} in {frame.name}: {frame.line}"


def _layer_types(model: nn.Module) -> list[type]:
    """The `torch.nn` layer types in `model` that the default tracer keeps as leaves."""
    tracer = minifx.Tracer()
    kinds = {
        type(m) for name, m in model.named_modules() if name and tracer.is_leaf_module(m, name)
    }
    return sorted(kinds, key=lambda kind: kind.__name__)


# --- all of it ----------------------------------------------------------------------


@dataclass
class Results:
    """Every count and check.

    Attributes:
        counts: (tracer, library) -> {opcode: nodes}.
        same_text: tracer -> whether both libraries print the same graph.
        failures: library -> `undecomposable`'s answer.
        skipped_checks: BatchNorm modules whose rank check the decomposed tracer skipped.
        torchscript: capture -> (nodes, nodes with inputs and returns), `CAPTURES`' order.
        torchscript_kinds: capture -> {node kind group: nodes}.
        model: a line naming the model and its input.
        name: the model's short name, for the plot's title.
    """

    counts: dict[tuple[str, str], dict[str, int]] = field(default_factory=dict)
    same_text: dict[str, bool] = field(default_factory=dict)
    failures: dict[str, dict[str, str]] = field(default_factory=dict)
    skipped_checks: int = 0
    torchscript: dict[str, tuple[int, int]] = field(default_factory=dict)
    torchscript_kinds: dict[str, dict[str, int]] = field(default_factory=dict)
    model: str = ""
    name: str = ""

    def total(self, tracer: str, library: str) -> int:
        return sum(self.counts[tracer, library].values())

    def disagreements(self) -> list[str]:
        """The tracers under which the libraries' counts differ."""
        return [
            tracer
            for tracer in TRACERS
            if self.counts[tracer, "minifx"] != self.counts[tracer, "torch.fx"]
        ]


def check_output(name: str, gm: Any, model: nn.Module, x: torch.Tensor) -> None:
    """Raise unless the traced module computes exactly what the eager model does.

    Raises:
        RuntimeError: naming the graph; a count of a graph that computes
            something else would mean nothing.
    """
    with torch.no_grad():
        expected, got = model(x), gm(x)
    if not torch.equal(got, expected):
        raise RuntimeError(
            f"{name}: the traced GraphModule's output differs from the eager "
            "model's; the graph does not compute the model"
        )


def measure(model: nn.Module, x: torch.Tensor, description: str = "") -> Results:
    """Trace `model` (eval mode) with every tracer and library; count and check.

    Args:
        model: the module to trace; put in eval mode here.
        x: an input, to check each GraphModule against the eager model.
        description: a line naming the model and input, for the report.
    """
    model.eval()
    results = Results(model=description or type(model).__name__, name=type(model).__name__)
    for tracer in TRACERS:
        texts = []
        for library in LIBRARY_NAMES:
            gm = trace(model, tracer, library)
            check_output(f"{tracer} {library}", gm, model, x)
            results.counts[tracer, library] = opcode_counts(gm.graph)
            texts.append(str(gm.graph))
        results.same_text[tracer] = texts[0] == texts[1]
    results.skipped_checks = sum(
        isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()
    )
    results.failures = {library: undecomposable(model, library) for library in LIBRARY_NAMES}
    for capture in CAPTURES:
        graph = torchscript_graph(model, x, capture)
        results.torchscript[capture] = count_nodes(graph), count_with_inputs_and_returns(graph)
        results.torchscript_kinds[capture] = kind_counts(graph)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.ir_size", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--width",
        type=int,
        default=64,
        help="ResNet-50's stem channels (default: 64, torchvision's); the graph "
        "is the same at any width",
    )
    parser.add_argument(
        "--image-size",
        type=int,
        default=64,
        help="height and width of the input used to check outputs (default: 64)",
    )
    add_report_options(parser, "ir_size.md", plot="ir_size.png")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    x = torch.randn(1, 3, args.image_size, args.image_size)
    description = f"`tests.models.ResNet50(width={args.width})`, input 1x3x{args.image_size}x{args.image_size}"
    results = measure(ResNet50(width=args.width), x, description)
    # Imported here: the report module imports this one's Results and constants.
    from benchmarks.ir_size_report import markdown_report, save_plot

    report = markdown_report(results, args.note)
    print(report)
    if args.out is not None:
        write_report(args.out, report)
    if args.plot is not None:
        save_plot(results, args.plot)
        print(f"wrote {args.plot}")
    if results.disagreements():
        print(
            f"minifx and torch.fx count different nodes under: {', '.join(results.disagreements())}",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
