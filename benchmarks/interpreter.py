"""Interpreter overhead: minifx.Interpreter and torch.fx.Interpreter side by side.

Run it from the repository root:

    python -m benchmarks.interpreter                    # about 1 minute on 2 shared cores
    python -m benchmarks.interpreter --repeat 50 --budget 5
    python -m benchmarks.interpreter --device cuda      # on a GPU
    python -m benchmarks.interpreter --no-keep-values   # skip garbage_collect_values=False

For each model, under `torch.no_grad()` and in eval mode, one process times
the same input through every runner (`runners()`):

| runner                        | what one call is                                       |
|-------------------------------|--------------------------------------------------------|
| eager                         | `model(x)`                                             |
| minifx gm, torch.fx gm        | `gm(x)`: the generated code of `symbolic_trace(model)` |
| minifx / torch.fx interpreter | `interpreter.run(x)`, `Interpreter(gm)` built once     |
| ..., keep values              | the same with `garbage_collect_values=False`           |

The models: the tiny one (`common.Tiny`: Linear(4, 4) + relu, 1x4),
a chain of N cheap nodes (`common.Chain`: `x + 1`, `torch.relu(x)`, ...,
1x4), where the per-node cost of interpreting stands out, and ResNet-50
(`tests.models.ResNet50`, 1x3x64x64 as in `benchmarks.codegen`), where the
kernels take most of the time.

Before timing, every runner's output must equal the eager model's exactly
(`torch.equal`: the runners call the same kernels in the same order), and
both libraries' graphs must have the same number of nodes; otherwise the
benchmark raises. Timing is `benchmarks.codegen`'s `time_forward`: rounds of
enough calls to last `min_time`, the runners taking turns, each keeping its
fastest round; garbage collection off. Unlike there, the turns go forwards
in even rounds and backwards in odd ones (`time_runners`): in a fixed order,
the first keep-values runner came out 10-25% slower on the chain, whichever
library it was, a cost of the memory the runner before it left behind, not
of its Interpreter. Building an Interpreter is timed apart, best of
`construct_repeat`.

torch.fx's `Interpreter.run` opens a progress bar (`torch.hub.tqdm`: tqdm if
installed, else torch.hub's stand-in) on every call. The benchmark sets
`torch.fx.config.disable_progress = True` and `verbose_progress = False`
while it runs (the defaults in torch 2.13; restored afterwards), so nothing
is printed and the bar's description does not format the node list; the
disabled bar still costs a constructor and one `update(1)` per node, which
belong to torch.fx's Interpreter and stay in its times. The report states
that cost, measured alone (`progress_bar_seconds`).
"""

from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx
import torch.fx.config
import torch.hub

import minifx.codegen
import minifx.interpreter
from benchmarks.common import (
    Chain,
    ForwardCase,
    Tiny,
    add_machine_options,
    add_report_options,
    format_markdown,
    machine_description,
    options_problem,
    quiet_torch_fx_progress,
    ratio,
    time_runners,
    timed,
    us,
    write_report,
)
from tests.models import ResNet50

LIBRARY_NAMES = ("minifx", "torch.fx")
# What runs a graph, per library: generated code, then the Interpreter with and
# without dropping values after their last use.
VARIANTS = ("gm", "interpreter", "interpreter, keep values")
INTERPRETED = VARIANTS[1:]


@dataclass(frozen=True)
class Library:
    """What the benchmark uses of one library.

    Attributes:
        name: `"minifx"` or `"torch.fx"`.
        symbolic_trace: the library's `symbolic_trace`.
        interpreter: the library's `Interpreter` class.
    """

    name: str
    symbolic_trace: Callable[[torch.nn.Module], Any]
    interpreter: type


LIBRARIES: dict[str, Library] = {
    "minifx": Library("minifx", minifx.codegen.symbolic_trace, minifx.interpreter.Interpreter),
    "torch.fx": Library("torch.fx", torch.fx.symbolic_trace, torch.fx.Interpreter),
}


def runner(library: str, variant: str) -> str:
    """A runner's name: `"minifx gm"`, `"torch.fx interpreter, keep values"`, ..."""
    return f"{library} {variant}"


def cases(image_size: int = 64, chain_size: int = 1000) -> list[ForwardCase]:
    """The tiny model, a chain of `chain_size` nodes (none if 0), and ResNet-50."""
    found = [ForwardCase("tiny: Linear(4, 4) + relu", Tiny, (1, 4))]
    if chain_size:
        found.append(
            ForwardCase(f"chain of {chain_size} add/relu", lambda: Chain(chain_size), (1, 4))
        )
    found.append(ForwardCase("ResNet-50", ResNet50, (1, 3, image_size, image_size)))
    return found


# --- torch.fx's progress bar ----------------------------------------------------------


def progress_bar_kind() -> str:
    """Which bar torch.fx's Interpreter opens: real tqdm, or torch.hub's stand-in."""
    if torch.hub.tqdm.__module__ == "torch.hub":
        return "torch.hub's stand-in (tqdm is not installed)"
    return f"tqdm {getattr(sys.modules.get('tqdm'), '__version__', '')}".rstrip()


def progress_bar_seconds(nodes: int, repeat: int = 20) -> float:
    """Best seconds for what one torch.fx `run` spends on its disabled progress bar:
    opening it as `run` does, then `update(1)` once per node."""

    def one_run() -> None:
        bar = torch.hub.tqdm(
            total=nodes,
            desc="Interpreter: ",
            initial=0,
            position=0,
            leave=True,
            disable=True,
            delay=0,
        )
        for _ in range(nodes):
            bar.update(1)

    return min(timed(one_run)[0] for _ in range(repeat))


# --- the runners, checked before they are timed ---------------------------------------


def runners(
    model: torch.nn.Module, keep_values: bool = True
) -> tuple[dict[str, Callable], dict[str, Any]]:
    """The eager model and each library's GraphModule and Interpreters of it.

    Returns:
        `{runner name: callable taking x}`, eager first; and `{library: GraphModule}`.
    """
    functions: dict[str, Callable] = {"eager": model}
    gms = {}
    variants = INTERPRETED if keep_values else INTERPRETED[:1]
    for name, library in LIBRARIES.items():
        gm = gms[name] = library.symbolic_trace(model)
        functions[runner(name, "gm")] = gm
    for variant in variants:  # grouped by variant, so the table reads minifx | torch.fx
        for name, library in LIBRARIES.items():
            interpreter = library.interpreter(
                gms[name], garbage_collect_values=variant == "interpreter"
            )
            functions[runner(name, variant)] = interpreter.run
    return functions, gms


def check_outputs(case: str, functions: dict[str, Callable], x: torch.Tensor) -> None:
    """Raise unless every runner returns exactly what the first (eager) one does.

    Raises:
        RuntimeError: naming the first runner that differs; timing different
            work would mean nothing.
    """
    (_, reference), *others = functions.items()
    with torch.no_grad(), quiet_torch_fx_progress():
        expected = reference(x)
        for name, function in others:
            got = function(x)
            if type(got) is not type(expected) or not torch.equal(got, expected):
                raise RuntimeError(
                    f"{case}: {name} returns something else than eager's "
                    f"{type(expected).__name__}; the runners must do the same work"
                )


def node_count(case: str, gms: dict[str, Any]) -> int:
    """The number of nodes in the graph, which must be the same in both libraries."""
    counts = {name: len(gm.graph.nodes) for name, gm in gms.items()}
    if len(set(counts.values())) != 1:
        raise RuntimeError(f"{case}: the libraries trace graphs of different sizes: {counts}")
    return counts["minifx"]


def construction_seconds(library: Library, gm: Any, repeat: int) -> float:
    """Best seconds for `Interpreter(gm)`: collecting submodules and last uses."""
    return min(timed(lambda: library.interpreter(gm))[0] for _ in range(repeat))


# --- all of it ----------------------------------------------------------------------


@dataclass
class Results:
    """Every measurement, in seconds.

    Attributes:
        seconds: (case name, runner) -> seconds per call.
        construction: (case name, library) -> seconds for `Interpreter(gm)`.
        inputs: case name -> input shape, as `1x3x64x64`.
        nodes: case name -> nodes in the graph (placeholders and output included).
        rounds: case name -> timed rounds run.
        variants: the interpreter variants timed (`INTERPRETED`, or its first).
    """

    seconds: dict[tuple[str, str], float] = field(default_factory=dict)
    construction: dict[tuple[str, str], float] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    nodes: dict[str, int] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=dict)
    variants: tuple[str, ...] = INTERPRETED

    def time(self, case: str, library: str, variant: str) -> float:
        """Seconds per call of one library's runner."""
        return self.seconds[case, runner(library, variant)]

    def per_node(self, case: str, library: str, variant: str = "interpreter") -> float:
        """(interpreter time - generated-code time) / nodes, in seconds per node."""
        extra = self.time(case, library, variant) - self.time(case, library, "gm")
        return extra / self.nodes[case]


def measure_case(
    results: Results,
    case: ForwardCase,
    device: torch.device,
    repeat: int,
    min_time: float,
    budget_s: float,
    construct_repeat: int,
    keep_values: bool,
) -> None:
    """Check and time every runner on one model; add the numbers to `results`."""
    torch.manual_seed(0)
    model = case.make_model().eval().to(device)
    x = torch.randn(case.input_shape, device=device)
    functions, gms = runners(model, keep_values)
    check_outputs(case.name, functions, x)
    results.nodes[case.name] = node_count(case.name, gms)
    results.inputs[case.name] = "x".join(map(str, case.input_shape))
    for name, library in LIBRARIES.items():
        results.construction[case.name, name] = construction_seconds(
            library, gms[name], construct_repeat
        )
    best, results.rounds[case.name] = time_runners(functions, x, repeat, min_time, budget_s)
    results.seconds.update({(case.name, name): s for name, s in best.items()})


def run_all(
    repeat: int,
    min_time: float = 0.005,
    budget_s: float = 20.0,
    image_size: int = 64,
    chain_size: int = 1000,
    device: str = "cpu",
    construct_repeat: int = 20,
    keep_values: bool = True,
    progress: Callable[[str], None] = lambda line: None,
) -> Results:
    """Measure every case, for both libraries."""
    results = Results(variants=INTERPRETED if keep_values else INTERPRETED[:1])
    for case in cases(image_size, chain_size):
        measure_case(
            results,
            case,
            torch.device(device),
            repeat,
            min_time,
            budget_s,
            construct_repeat,
            keep_values,
        )
        progress(
            f"  {case.name}: {results.nodes[case.name]} nodes, eager "
            f"{results.seconds[case.name, 'eager'] * 1e6:,.1f} us per call, minifx interpreter "
            f"{results.time(case.name, 'minifx', 'interpreter') * 1e6:,.1f} us "
            f"(best of {results.rounds[case.name]})"
        )
    return results


# --- reporting ----------------------------------------------------------------------


def _per_node(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def tables(results: Results) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report's tables, as (title, header, rows)."""
    return [_times_table(results), _overhead_table(results), _construction_table(results)]


def _times_table(results: Results) -> tuple[str, list[str], list[list[str]]]:
    names = ["eager"] + [
        runner(library, variant)
        for variant in ("gm", *results.variants)
        for library in LIBRARY_NAMES
    ]
    header = ["model", "input", "nodes", "rounds", *(f"{name} (us)" for name in names)]
    rows = [
        [
            case,
            shape,
            str(results.nodes[case]),
            str(results.rounds[case]),
            *(us(results.seconds[case, name]) for name in names),
        ]
        for case, shape in results.inputs.items()
    ]
    return "Time per call", header, rows


def _overhead_table(results: Results) -> tuple[str, list[str], list[list[str]]]:
    header = [
        "model",
        "interpreter",
        "minifx / torch.fx",
        "minifx / minifx gm",
        "torch.fx / torch.fx gm",
        "minifx per node (us)",
        "torch.fx per node (us)",
    ]
    rows = []
    for case in results.inputs:
        for variant in results.variants:
            mine, theirs = (results.time(case, library, variant) for library in LIBRARY_NAMES)
            rows.append(
                [
                    case,
                    "keep values" if variant != "interpreter" else "default",
                    ratio(mine, theirs),
                    ratio(mine, results.time(case, "minifx", "gm")),
                    ratio(theirs, results.time(case, "torch.fx", "gm")),
                    _per_node(results.per_node(case, "minifx", variant)),
                    _per_node(results.per_node(case, "torch.fx", variant)),
                ]
            )
    return "Interpreter overhead", header, rows


def _construction_table(results: Results) -> tuple[str, list[str], list[list[str]]]:
    header = ["model", "nodes", "minifx (us)", "torch.fx (us)", "minifx / torch.fx"]
    rows = []
    for case in results.inputs:
        mine, theirs = (results.construction[case, library] for library in LIBRARY_NAMES)
        rows.append([case, str(results.nodes[case]), us(mine), us(theirs), ratio(mine, theirs)])
    return "Building an Interpreter: `Interpreter(gm)`, not in the times above", header, rows


def markdown_tables(results: Results) -> str:
    """Every table under its `##` title."""
    return "\n".join(
        f"## {title}\n\n{format_markdown(header, rows)}\n"
        for title, header, rows in tables(results)
    )


def _progress_bar_line(results: Results) -> str:
    largest = max(results.nodes.values())
    cost = progress_bar_seconds(largest)
    return (
        f"- torch.fx's progress bar: {progress_bar_kind()}, disabled "
        "(`torch.fx.config.disable_progress = True`, `verbose_progress = False`). Disabled, "
        f"it still costs {us(cost)} us per run at {largest} nodes "
        f"({cost / largest * 1e6:.3f} us per node), measured alone; that is part of "
        "torch.fx's Interpreter times."
    )


def markdown_report(results: Results, args: argparse.Namespace) -> str:
    """The tables with a header saying where, when and how they were measured."""
    lines = [
        "# Interpreter: minifx.Interpreter vs torch.fx.Interpreter",
        "",
        f"Produced by `python -m benchmarks.interpreter` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Machine: {machine_description()}; on {args.device}"
        + (f" with {args.threads} torch thread(s)." if args.device == "cpu" else "."),
    ]
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- Best of up to {args.repeat} rounds of at least {args.min_time * 1e3:g} ms each, the "
        f"runners taking turns forwards, then backwards (fewer rounds after {args.budget:g} s per "
        "model), under `torch.no_grad()`, models in eval "
        "mode, garbage collection off. Every runner's output equals eager's (`torch.equal`), "
        "checked before timing.",
        "- Each Interpreter is built once, outside the timing (as a user reuses it); building "
        f"one is timed apart, best of {args.construct_repeat}.",
        _progress_bar_line(results),
        "- A ratio below 1 means the first-named is faster. Per node = (interpreter time - "
        "generated-code time) / nodes. On a shared or small machine, compare the ratios, not "
        "the absolute times; ResNet-50's per-node figures vary by several us from run to run.",
        "- See `benchmarks/README.md` for what each row times and how to read the tables.",
        "",
        markdown_tables(results),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.interpreter", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=200,
        help="timed rounds per runner; the fastest counts (default: 200)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.005,
        help="seconds a round lasts at least (default: 0.005)",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=20.0,
        help="seconds per model after which rounds stop early (default: 20)",
    )
    parser.add_argument(
        "--construct-repeat",
        type=int,
        default=20,
        help="times each Interpreter is built; the fastest counts (default: 20)",
    )
    parser.add_argument(
        "--image-size",
        type=int,
        default=64,
        help="height and width of ResNet-50's input (default: 64)",
    )
    parser.add_argument(
        "--chain-size",
        type=int,
        default=1000,
        help="nodes in the chain of add/relu (default: 1000; 0 leaves the chain out)",
    )
    parser.add_argument(
        "--no-keep-values",
        dest="keep_values",
        action="store_false",
        help="do not time the Interpreters with garbage_collect_values=False",
    )
    add_machine_options(parser, "the models run")
    add_report_options(parser, "interpreter.md")
    args = parser.parse_args(argv)
    if problem := options_problem(args):
        print(problem, file=sys.stderr)
        return 2

    torch.set_num_threads(args.threads)
    print(f"interpreter: best of {args.repeat} rounds; {machine_description()}", flush=True)
    results = run_all(
        args.repeat,
        args.min_time,
        args.budget,
        args.image_size,
        args.chain_size,
        args.device,
        args.construct_repeat,
        args.keep_values,
        progress=lambda line: print(line, flush=True),
    )
    print()
    print(markdown_tables(results))
    if args.out is not None:
        write_report(args.out, markdown_report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
