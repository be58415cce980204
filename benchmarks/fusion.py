"""Conv–BatchNorm fusion: how much faster ResNet-50 runs after minifx's and torch.fx's fusion.

Run it from the repository root:

    python -m benchmarks.fusion                       # a few minutes on 2 shared cores
    python -m benchmarks.fusion --batch-sizes 1 --image-size 64 --repeat 3   # a quick look
    python -m benchmarks.fusion --out benchmarks/results/fusion.md --plot chapters/figures/fusion.png

The model is `tests.models.ResNet50` (torchvision's layout: 53 Conv2d, each
followed by a BatchNorm2d) in eval mode, on CPU unless `--device` says
otherwise, with its BatchNorms' running statistics and affine parameters
set to random values away from 0 and 1 (fresh ones are the identity, which
would hide a wrong fusion). For each batch size, one process times the same
input through three runners (`runners()`):

| runner          | what one call is                                                          |
|-----------------|---------------------------------------------------------------------------|
| eager           | `model(x)`                                                                |
| minifx fused    | `gm(x)`, `gm = minifx.passes.fuse_conv_bn.fuse_conv_bn(model)`            |
| torch.fx fused  | `gm(x)`, `gm = torch.fx.experimental.optimization.fuse(model)`            |

Before timing, both fused graphs must print the same and hold no BatchNorm,
and both fused outputs must equal the eager output within float tolerance
(`check_outputs`); otherwise the benchmark raises. Timing is
`benchmarks.common.time_runners`: rounds of enough calls to last
`min_time`, the runners taking turns (forwards, then backwards), each
keeping its fastest round, under `torch.no_grad()`, garbage collection off.
The report gives each fused model's speedup over eager (eager time / fused
time) and minifx's time over torch.fx's.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch
from torch import nn
from torch.fx.experimental.optimization import fuse as torch_fx_fuse

from benchmarks.common import (
    add_machine_options,
    add_report_options,
    format_markdown,
    machine_description,
    options_problem,
    time_runners,
    write_report,
)
from benchmarks.plots import speedup_bars
from minifx.passes.fuse_conv_bn import fuse_conv_bn
from tests.models import ResNet50

RUNNERS = ("eager", "minifx fused", "torch.fx fused")
FUSED = RUNNERS[1:]
# Fusion reorders float arithmetic; through 53 fused layers the outputs drift
# by a few float32 ulps of their size, never by this much.
RTOL, ATOL = 1e-3, 1e-4


def make_model(width: int = 64, device: str = "cpu") -> nn.Module:
    """ResNet-50 in eval mode, with BatchNorm statistics and parameters away from 0 and 1."""
    torch.manual_seed(0)
    model = ResNet50(width=width)
    generator = torch.Generator().manual_seed(1)
    for bn in model.modules():
        if isinstance(bn, nn.BatchNorm2d):
            shape = bn.running_mean.shape
            bn.running_mean.copy_(torch.rand(shape, generator=generator) * 0.2 - 0.1)
            bn.running_var.copy_(torch.rand(shape, generator=generator) + 0.5)
            bn.weight.data.copy_(torch.rand(shape, generator=generator) * 0.5 + 0.5)
            bn.bias.data.copy_(torch.rand(shape, generator=generator) * 0.2 - 0.1)
    return model.eval().to(device)


def runners(model: nn.Module) -> dict[str, Callable]:
    """The eager model and both libraries' fused GraphModules of it, in `RUNNERS` order."""
    return {
        "eager": model,
        "minifx fused": fuse_conv_bn(model),
        "torch.fx fused": torch_fx_fuse(model),
    }


def check_outputs(functions: dict[str, Any], x: torch.Tensor) -> float:
    """Check both fused models against eager, and their graphs against each other.

    Returns:
        The largest absolute difference of a fused output from eager's.

    Raises:
        RuntimeError: naming what differs; timing different work would mean nothing.
    """
    ours, theirs = functions["minifx fused"], functions["torch.fx fused"]
    if str(ours.graph) != str(theirs.graph):
        raise RuntimeError("minifx and torch.fx fused the model into different graphs")
    if any(isinstance(m, nn.BatchNorm2d) for gm in (ours, theirs) for m in gm.modules()):
        raise RuntimeError("a fused model still holds a BatchNorm2d")
    with torch.no_grad():
        want = functions["eager"](x)
        largest = 0.0
        for name in FUSED:
            got = functions[name](x)
            if not torch.allclose(got, want, rtol=RTOL, atol=ATOL):
                raise RuntimeError(
                    f"{name}: the output differs from eager's by up to "
                    f"{(got - want).abs().max().item():.3g}, more than rtol={RTOL}, "
                    f"atol={ATOL}"
                )
            largest = max(largest, (got - want).abs().max().item())
    return largest


@dataclass
class Results:
    """Every measurement.

    Attributes:
        seconds: (batch size, runner) -> best seconds per call.
        rounds: batch size -> timed rounds run.
        differences: batch size -> largest |fused - eager| over both libraries.
        nodes: runner -> nodes in its graph (eager: the unfused trace).
    """

    seconds: dict[tuple[int, str], float] = field(default_factory=dict)
    rounds: dict[int, int] = field(default_factory=dict)
    differences: dict[int, float] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)

    def speedup(self, batch: int, runner: str) -> float:
        """Eager time / the runner's time: above 1 means the fused model is faster."""
        return self.seconds[batch, "eager"] / self.seconds[batch, runner]

    def minifx_over_torch_fx(self, batch: int) -> float:
        """minifx's fused time / torch.fx's: below 1 means minifx's is faster."""
        return self.seconds[batch, "minifx fused"] / self.seconds[batch, "torch.fx fused"]


def measure(
    batch_sizes: list[int],
    image_size: int = 224,
    width: int = 64,
    repeat: int = 10,
    min_time: float = 0.0,
    budget_s: float = 60.0,
    device: str = "cpu",
    progress: Callable[[str], None] = lambda line: None,
) -> Results:
    """Fuse once, check, then time the three runners at each batch size."""
    import minifx

    model = make_model(width, device)
    functions = runners(model)
    results = Results(
        nodes={
            "eager": len(minifx.symbolic_trace(model).graph.nodes),
            **{name: len(functions[name].graph.nodes) for name in FUSED},
        }
    )
    for batch in batch_sizes:
        x = torch.randn(batch, 3, image_size, image_size, device=device)
        results.differences[batch] = check_outputs(functions, x)
        best, results.rounds[batch] = time_runners(functions, x, repeat, min_time, budget_s)
        results.seconds.update({(batch, name): s for name, s in best.items()})
        progress(
            f"  batch {batch}: eager {best['eager'] * 1e3:,.1f} ms, speedup minifx "
            f"{results.speedup(batch, 'minifx fused'):.2f}x, torch.fx "
            f"{results.speedup(batch, 'torch.fx fused'):.2f}x (best of {results.rounds[batch]})"
        )
    return results


# --- reporting ----------------------------------------------------------------------


def table(results: Results) -> tuple[list[str], list[list[str]]]:
    """One row per batch size: times, speedups, minifx / torch.fx, the output difference."""
    header = [
        "batch",
        "rounds",
        *(f"{name} (ms)" for name in RUNNERS),
        "minifx speedup",
        "torch.fx speedup",
        "minifx / torch.fx",
        "max abs diff vs eager",
    ]
    rows = [
        [
            str(batch),
            str(results.rounds[batch]),
            *(f"{results.seconds[batch, name] * 1e3:,.1f}" for name in RUNNERS),
            f"{results.speedup(batch, 'minifx fused'):.2f}",
            f"{results.speedup(batch, 'torch.fx fused'):.2f}",
            f"{results.minifx_over_torch_fx(batch):.2f}",
            f"{results.differences[batch]:.1e}",
        ]
        for batch in results.rounds
    ]
    return header, rows


def markdown_report(results: Results, args: argparse.Namespace) -> str:
    """The table with a header saying where, when and how it was measured."""
    lines = [
        "# Conv–BatchNorm fusion: ResNet-50, eager vs minifx-fused vs torch.fx-fused",
        "",
        # The book includes the report from here on (pymdownx.snippets drops the marker lines).
        "<!-- --8<-- [start:report] -->",
        f"Produced by `python -m benchmarks.fusion` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Machine: {machine_description()}; on {args.device}"
        + (f" with {args.threads} torch thread(s)." if args.device == "cpu" else "."),
    ]
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- Model: `tests.models.ResNet50(width={args.width})`, eval mode, BatchNorm statistics "
        f"set away from the identity; input Nx3x{args.image_size}x{args.image_size}. Graph: "
        f"{results.nodes['eager']} nodes traced, {results.nodes['minifx fused']} after fusion "
        f"(torch.fx: {results.nodes['torch.fx fused']}); both libraries fuse it into the same graph.",
        f"- Best of up to {args.repeat} rounds (fewer after {args.budget:g} s per batch size), the "
        "runners taking turns forwards, then backwards, under `torch.no_grad()`, garbage "
        f"collection off. Both fused outputs equal eager's within rtol={RTOL}, atol={ATOL}, "
        "checked before timing (largest difference in the last column).",
        "- Speedup = eager time / fused time (above 1: fusion helps). minifx / torch.fx = "
        "minifx's fused time / torch.fx's (1 means the same: both run the same convolutions). "
        "Compare ratios, not times.",
        "",
        format_markdown(*table(results)),
        "",
        "<!-- --8<-- [end:report] -->",
        "",
    ]
    return "\n".join(lines)


def save_plot(results: Results, path: Path) -> None:
    """Bars of the speedup over eager, per batch size and library (PNG)."""
    batches = list(results.rounds)
    speedup_bars(
        path,
        batches,
        {
            name.replace(" fused", ""): [results.speedup(batch, name) for batch in batches]
            for name in FUSED
        },
        ylabel="eager time / fused time",
        title="ResNet-50: Conv–BN fusion's speedup",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.fusion", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=[1, 8],
        help="batch sizes to time (default: 1 8)",
    )
    parser.add_argument(
        "--image-size",
        type=int,
        default=224,
        help="height and width of the input (default: 224, ImageNet's)",
    )
    parser.add_argument(
        "--width",
        type=int,
        default=64,
        help="ResNet-50's stem channels (default: 64, torchvision's; smaller is faster)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=10,
        help="timed rounds per runner; the fastest counts (default: 10)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.0,
        help="seconds a round lasts at least (default: 0: one call per round)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=60.0,
        help="seconds per batch size after which rounds stop early (default: 60)",
    )
    add_machine_options(parser, "the models run")
    add_report_options(parser, "fusion.md", plot="fusion.png")
    args = parser.parse_args(argv)
    if problem := options_problem(args):
        print(problem, file=sys.stderr)
        return 2

    torch.set_num_threads(args.threads)
    print(f"fusion: ResNet-50, batch sizes {args.batch_sizes}; {machine_description()}", flush=True)
    results = measure(
        args.batch_sizes,
        args.image_size,
        args.width,
        args.repeat,
        args.min_time,
        args.budget,
        args.device,
        progress=lambda line: print(line, flush=True),
    )
    report = markdown_report(results, args)
    print(report)
    if args.out is not None:
        write_report(args.out, report)
    if args.plot is not None:
        save_plot(results, args.plot)
        print(f"wrote {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
