"""Post-training quantization: float vs minifx int8 vs PyTorch's FX graph-mode int8.

Run it from the repository root:

    python -m benchmarks.quantization                  # 2 to 4 minutes on 2 shared cores
    python -m benchmarks.quantization --n 256 --batch-sizes 1 16 --repeat 3   # a quick look
    python -m benchmarks.quantization --out benchmarks/results/quantization.md \\
        --plot chapters/figures/quantization.png

The model is `examples.ch8_quantization.AutoEncoder(n)`, shaped like the torch.fx
paper's DeepRecommender: dense layers n -> 512 -> 512 -> 1024 -> 512 -> 512 -> n with
SELU between them, in eval mode, on the CPU (minifx converts on the CPU only). Both
libraries calibrate on the same batches and quantize with the same scheme, per-tensor
min/max observers (`minifx.passes.quantize.ACTIVATION` and `WEIGHT`). For each batch
size, one process times the same input through three runners (`runners()`):

| runner           | what one call is                                                       |
|------------------|------------------------------------------------------------------------|
| float            | `model(x)`                                                             |
| minifx int8      | `gm(x)`, `gm = convert(prepare(model))`, calibrated                     |
| torch.ao int8    | `gm(x)`, `gm = convert_fx(prepare_fx(model, qconfig_mapping, ...))`    |

Before timing, both int8 models are checked (`check_outputs`): their outputs must stay
within `MAX_RELATIVE_ERROR` of the float output; otherwise the benchmark raises. Timing
is `benchmarks.interpreter.time_runners`: rounds of enough calls to last `min_time`, the
runners taking turns (forwards, then backwards), each keeping its fastest round, under
`torch.no_grad()`, garbage collection off. The report gives each int8 model's speedup
(float time / int8 time) and relative error (`||int8 - float|| / ||float||`).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch
from torch import nn

from benchmarks.common import (
    add_machine_options,
    add_report_options,
    format_markdown,
    machine_description,
    time_runners,
    write_report,
)
from benchmarks.plots import speedup_bars
from examples.ch8_quantization import AutoEncoder, quantize, relative_error
from tests.passes.quantization_oracle import torch_ao

RUNNERS = ("float", "minifx int8", "torch.ao int8")
INT8 = RUNNERS[1:]
# int8 keeps 7 bits of each activation (reduce_range); through six layers the output
# drifts by a few percent. Far more means a wrong scale, not rounding.
MAX_RELATIVE_ERROR = 0.2


def make_model(n: int = 4096) -> nn.Module:
    """The DeepRecommender-shaped autoencoder, seeded, in eval mode."""
    torch.manual_seed(0)
    return AutoEncoder(n).eval()


def calibration_data(n: int, batches: int = 8, batch_size: int = 32) -> list[torch.Tensor]:
    """Random normal batches (seeded): the same for both libraries."""
    generator = torch.Generator().manual_seed(1)
    return [torch.randn(batch_size, n, generator=generator) for _ in range(batches)]


def runners(model: nn.Module, calibration: list[torch.Tensor]) -> dict[str, Callable]:
    """The float model and both libraries' int8 versions of it, in `RUNNERS` order."""
    ours = quantize(model, calibration)  # no warning: minifx's int8 path uses no quantized tensors
    return {
        "float": model,
        "minifx int8": ours,
        "torch.ao int8": torch_ao(model, calibration)[1],  # (prepared, converted)
    }


def check_outputs(functions: dict[str, Callable], x: torch.Tensor) -> dict[str, float]:
    """The relative error of each int8 model (and of minifx's against torch.ao's).

    Raises:
        RuntimeError: If an int8 output is further than `MAX_RELATIVE_ERROR` from float.
    """
    with torch.no_grad():
        outputs = {name: function(x) for name, function in functions.items()}
    errors = {name: relative_error(outputs[name], outputs["float"]) for name in INT8}
    for name, error in errors.items():
        if error > MAX_RELATIVE_ERROR:
            raise RuntimeError(
                f"{name}: relative error {error:.3g} from the float output, more than "
                f"{MAX_RELATIVE_ERROR}: the int8 model computes something else"
            )
    errors["minifx vs torch.ao"] = relative_error(outputs["minifx int8"], outputs["torch.ao int8"])
    return errors


@dataclass
class Results:
    """Every measurement.

    Attributes:
        seconds: (batch size, runner) -> best seconds per call.
        rounds: batch size -> timed rounds run.
        errors: batch size -> {"minifx int8" | "torch.ao int8" | "minifx vs torch.ao": relative error}.
    """

    seconds: dict[tuple[int, str], float] = field(default_factory=dict)
    rounds: dict[int, int] = field(default_factory=dict)
    errors: dict[int, dict[str, float]] = field(default_factory=dict)

    def speedup(self, batch: int, runner: str) -> float:
        """Float time / the runner's time: above 1 means int8 is faster."""
        return self.seconds[batch, "float"] / self.seconds[batch, runner]


def measure(
    n: int,
    batch_sizes: list[int],
    repeat: int = 20,
    min_time: float = 0.02,
    budget_s: float = 30.0,
    progress: Callable[[str], None] = lambda line: None,
) -> Results:
    """Quantize once with each library, check, then time the three runners per batch size."""
    model = make_model(n)
    functions = runners(model, calibration_data(n))
    results = Results()
    generator = torch.Generator().manual_seed(2)
    for batch in batch_sizes:
        x = torch.randn(batch, n, generator=generator)
        results.errors[batch] = check_outputs(functions, x)
        best, results.rounds[batch] = time_runners(functions, x, repeat, min_time, budget_s)
        results.seconds.update({(batch, name): s for name, s in best.items()})
        progress(
            f"  batch {batch}: float {best['float'] * 1e3:,.2f} ms, speedup minifx "
            f"{results.speedup(batch, 'minifx int8'):.2f}x, torch.ao "
            f"{results.speedup(batch, 'torch.ao int8'):.2f}x (best of {results.rounds[batch]})"
        )
    return results


# --- reporting ----------------------------------------------------------------------


def table(results: Results) -> tuple[list[str], list[list[str]]]:
    """One row per batch size: times, speedups, minifx / torch.ao, relative errors."""
    header = [
        "batch",
        "rounds",
        *(f"{name} (ms)" for name in RUNNERS),
        "minifx speedup",
        "torch.ao speedup",
        "minifx / torch.ao",
        "minifx error",
        "torch.ao error",
        "minifx vs torch.ao",
    ]
    rows = []
    for batch in results.rounds:
        errors = results.errors[batch]
        rows.append(
            [
                str(batch),
                str(results.rounds[batch]),
                *(f"{results.seconds[batch, name] * 1e3:,.3f}" for name in RUNNERS),
                f"{results.speedup(batch, 'minifx int8'):.2f}",
                f"{results.speedup(batch, 'torch.ao int8'):.2f}",
                f"{results.seconds[batch, 'minifx int8'] / results.seconds[batch, 'torch.ao int8']:.2f}",
                *(f"{errors[name]:.2%}" for name in (*INT8, "minifx vs torch.ao")),
            ]
        )
    return header, rows


# The report's tables, by column: the times, the speedups, the errors. One table of all
# eleven columns was wider than a phone's screen even with its words broken.
REPORT_TABLES = {
    "Times": ["batch", "rounds", *(f"{name} (ms)" for name in RUNNERS)],
    "Speedups": ["batch", "minifx speedup", "torch.ao speedup", "minifx / torch.ao"],
    "Errors": ["batch", "minifx error", "torch.ao error", "minifx vs torch.ao"],
}


def report_tables(header: list[str], rows: list[list[str]]) -> list[str]:
    """`table`'s columns as the report's Markdown tables (`REPORT_TABLES`), each
    after a bold caption and followed by a blank line."""
    lines = []
    for caption, columns in REPORT_TABLES.items():
        picked = [header.index(column) for column in columns]
        picked_rows = [[row[i] for i in picked] for row in rows]
        lines += [f"**{caption}**", "", format_markdown(columns, picked_rows), ""]
    return lines


def markdown_report(results: Results, args: argparse.Namespace) -> str:
    """The tables with a header saying where, when and how they were measured."""
    lines = [
        "# Post-training quantization: DeepRecommender-shaped autoencoder, float vs int8",
        "",
        # The book includes the report from here on (pymdownx.snippets drops the marker lines).
        "<!-- --8<-- [start:report] -->",
        f"Produced by `python -m benchmarks.quantization` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Machine: {machine_description()}; on cpu with {args.threads} torch thread(s), "
        f"quantized engine `{torch.backends.quantized.engine}`.",
    ]
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- Model: `examples.ch8_quantization.AutoEncoder({args.n})`: Linear layers {args.n} → 512 → "
        f"512 → 1024 → 512 → 512 → {args.n} with SELU between, eval mode; input batch x {args.n}, "
        "random normal. Both libraries calibrate on the same 8 batches of 32 with per-tensor "
        "min/max observers (activations quint8 affine in 0..127, weights qint8 symmetric).",
        f"- Best of up to {args.repeat} rounds of at least {args.min_time * 1e3:g} ms (fewer after "
        f"{args.budget:g} s per batch size), the runners taking turns forwards, then backwards, "
        "under `torch.no_grad()`, garbage collection off.",
        "- Speedup = float time / int8 time (above 1: int8 is faster). minifx / torch.ao = "
        "minifx's int8 time / torch.ao's. Error = ||int8 - float|| / ||float|| on the timed "
        "batch; the last column of Errors compares the two int8 outputs. Compare ratios, not times.",
        "",
        *report_tables(*table(results)),
        "<!-- --8<-- [end:report] -->",
        "",
    ]
    return "\n".join(lines)


def save_plot(results: Results, path: Path) -> None:
    """Bars of each int8 model's speedup over float, per batch size (PNG)."""
    batches = list(results.rounds)
    speedup_bars(
        path,
        batches,
        {name: [results.speedup(batch, name) for batch in batches] for name in INT8},
        ylabel="float time / int8 time",
        title="Autoencoder: int8's speedup over float",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.quantization", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--n", type=int, default=4096, help="input and output width (default: 4096)"
    )
    parser.add_argument(
        "--batch-sizes",
        type=int,
        nargs="+",
        default=[1, 16, 64, 128],
        help="batch sizes to time (default: 1 16 64 128)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=20,
        help="timed rounds per runner; the fastest counts (default: 20)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.02,
        help="seconds a round lasts at least (default: 0.02)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=30.0,
        help="seconds per batch size after which rounds stop early (default: 30)",
    )
    add_machine_options(parser, None)
    add_report_options(parser, "quantization.md", plot="quantization.png")
    args = parser.parse_args(argv)

    torch.set_num_threads(args.threads)
    print(
        f"quantization: AutoEncoder({args.n}), batch sizes {args.batch_sizes}; {machine_description()}",
        flush=True,
    )
    results = measure(
        args.n,
        args.batch_sizes,
        args.repeat,
        args.min_time,
        args.budget,
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
