"""Code generation and GraphModule overhead: minifx.codegen and torch.fx side by side.

Run it from the repository root:

    python -m benchmarks.codegen                        # 2 to 3 minutes on 2 shared cores
    python -m benchmarks.codegen --sizes 1000 10000 --repeat 5
    python -m benchmarks.codegen --device cuda          # forward times on a GPU
    python -m benchmarks.codegen --check                # exit 1 if minifx is not linear

Three parts, each running both libraries in one process on the same work:

1. **ResNet-50** (`tests.models.ResNet50`, torchvision's layout, width 64):

   | operation      | what it times                                                    |
   |----------------|------------------------------------------------------------------|
   | symbolic_trace | `symbolic_trace(model)`: tracing, GraphModule, codegen, compile  |
   | recompile      | `gm.recompile()` of an unchanged graph: codegen, and compile,    |
   |                | which minifx skips when it compiled the same source before       |
   | recompile_new  | `gm.recompile()` with no compiled code to reuse, as after an     |
   |                | edit: codegen and compile                                        |

2. **Chains** of N call_function nodes (graph_scale's `build_chain`: add, relu, ...):

   | operation      | what it times                                                    |
   |----------------|------------------------------------------------------------------|
   | graphmodule    | `GraphModule(root, graph)`: codegen, compile, install `forward`  |
   | python_code    | the source alone: `python_code(graph)`, `graph.python_code(...)` |
   | symbolic_trace | `symbolic_trace(Chain(N))`, whose forward loops N times over     |
   |                | `x + 1` / `torch.relu(x)`: the same graph, traced end to end     |

   Each is O(N); the report gives each library's growth from the
   second-largest to the largest size, and flags NOT LINEAR above `slack`
   times the size ratio, as `benchmarks.graph_scale` does.

3. **Forward overhead**: `model(x)` eagerly and through each library's
   GraphModule of the same model, under `torch.no_grad()`, on a tiny model
   (Linear(4, 4) + relu, a 1x4 input) and realistic ones (the MLP of
   `tests.models` on 64x32, ResNet-50 on 1x3x64x64: 224x224 takes too long on
   a small CPU; `--image-size` changes it). On CPU, torch runs one thread
   (`--threads`): on a busy machine, more threads than idle cores stall.

Codegen timings are best-of-`repeat` with garbage collection off while timing,
as in graph_scale. Forward timings are timeit-style: each callable runs in
rounds of enough calls to last `min_time` seconds; the three callables take
turns, round after round, and each keeps its fastest round. Many short rounds
let the best one fall in a quiet moment of a shared machine.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import torch
import torch.fx

import minifx.codegen
import minifx.codegen.code_cache
import minifx.graph
from benchmarks.common import (
    Chain,
    ForwardCase,
    Tiny,
    add_machine_options,
    add_report_options,
    add_scaling_options,
    build_chain,
    format_markdown,
    machine_description,
    options_problem,
    write_report,
)
from benchmarks.common import calls_per_round as _calls_per_round
from benchmarks.common import ms as _ms
from benchmarks.common import ratio as _ratio
from benchmarks.common import size_label as _size
from benchmarks.common import synchronizer as _synchronizer
from benchmarks.common import time_calls as _time_calls
from benchmarks.common import timed as _timed
from benchmarks.common import us as _us
from tests.models import MLP, ResNet50

DEFAULT_SIZES = (1_000, 10_000, 100_000)
MODEL_OPERATIONS = ("symbolic_trace", "recompile", "recompile_new")
CHAIN_OPERATIONS = ("graphmodule", "python_code", "symbolic_trace")
RUNNERS = ("eager", "minifx", "torch.fx")  # the callables the forward part compares

# `timer(name, thunk)` calls `thunk()`, returns its result, and may time it.
Timer = Callable[[str, Callable[[], Any]], Any]


@dataclass(frozen=True)
class Library:
    """What the benchmark uses of one library.

    Attributes:
        name: `"minifx"` or `"torch.fx"`.
        fx: the module with `Graph` (for graph_scale's `build_chain`).
        graph_module: the `GraphModule` class.
        symbolic_trace: the library's `symbolic_trace`.
        python_code: graph -> generated source. torch.fx has it as the method
            `Graph.python_code`, minifx as the free function `python_code`.
        forget_compiled: drop the compiled code the library keeps to reuse for
            the same source (minifx keeps some; torch.fx none), so that the
            next operation compiles afresh. Called untimed before every
            operation except `recompile`, whose point is the reuse.
    """

    name: str
    fx: ModuleType
    graph_module: type
    symbolic_trace: Callable[[torch.nn.Module], Any]
    python_code: Callable[[Any], str]
    forget_compiled: Callable[[], None]


LIBRARIES: dict[str, Library] = {
    "minifx": Library(
        "minifx",
        minifx.graph,
        minifx.codegen.GraphModule,
        minifx.codegen.symbolic_trace,
        lambda graph: minifx.codegen.python_code(graph, "self").src,
        minifx.codegen.code_cache.forget_compiled,
    ),
    "torch.fx": Library(
        "torch.fx",
        torch.fx,
        torch.fx.GraphModule,
        torch.fx.symbolic_trace,
        lambda graph: graph.python_code("self").src,
        lambda: None,
    ),
}


# --- the work, written once for both libraries -------------------------------------


def _call(name: str, thunk: Callable[[], Any]) -> Any:
    return thunk()


def model_pipeline(library: Library, model: torch.nn.Module, timer: Timer = _call) -> Any:
    """Trace `model` into a GraphModule, then regenerate its code; returns the GraphModule."""
    library.forget_compiled()
    gm = timer("symbolic_trace", lambda: library.symbolic_trace(model))
    timer("recompile", gm.recompile)  # the code compiled just before: minifx reuses it
    library.forget_compiled()
    timer("recompile_new", gm.recompile)
    return gm


def chain_pipeline(library: Library, n: int, timer: Timer = _call) -> tuple[Any, Any]:
    """The chain operations on `n` nodes (building the graph is not timed).

    Returns:
        The GraphModule made from `build_chain`'s graph, and the one traced from `Chain(n)`.
    """
    graph = build_chain(library.fx, n)
    library.forget_compiled()  # an earlier run compiled the same source
    gm = timer("graphmodule", lambda: library.graph_module(torch.nn.Module(), graph))
    timer("python_code", lambda: library.python_code(graph))
    module = Chain(n)
    library.forget_compiled()
    traced = timer("symbolic_trace", lambda: library.symbolic_trace(module))
    return gm, traced


# --- codegen timing -----------------------------------------------------------------


def best_of(
    pipeline: Callable[[Timer], Any], repeat: int, budget_s: float = float("inf")
) -> tuple[dict[str, float], int]:
    """Run `pipeline(timer)` up to `repeat` times; the fastest time of each operation.

    Repeats stop early (after at least one) once `budget_s` seconds are spent,
    so a quadratic operation cannot stall the whole run.

    Returns:
        `{operation: seconds}` and the number of runs.
    """
    best: dict[str, float] = {}
    started, runs = time.perf_counter(), 0

    def timer(name: str, thunk: Callable[[], Any]) -> Any:
        seconds, result = _timed(thunk)
        best[name] = min(best.get(name, float("inf")), seconds)
        return result

    while runs < repeat and (runs == 0 or time.perf_counter() - started < budget_s):
        gc.collect()  # free the previous run's graphs untimed
        pipeline(timer)
        runs += 1
    gc.collect()
    return best, runs


# --- forward timing -----------------------------------------------------------------


def forward_cases(image_size: int = 64) -> list[ForwardCase]:
    """The tiny model, the MLP, and ResNet-50 on a batch of one `image_size`^2 image."""
    return [
        ForwardCase("tiny: Linear(4, 4) + relu", Tiny, (1, 4)),
        ForwardCase("MLP (32-64-64-10)", MLP, (64, 32)),
        ForwardCase("ResNet-50", ResNet50, (1, 3, image_size, image_size)),
    ]


def forward_callables(
    case: ForwardCase, device: torch.device
) -> tuple[dict[str, Callable], torch.Tensor]:
    """The eager model and both GraphModules of it, in eval mode on `device`, and an input.

    Raises:
        RuntimeError: if a GraphModule's output differs from the eager model's
            (timing different work would mean nothing).
    """
    torch.manual_seed(0)
    model = case.make_model().eval().to(device)
    x = torch.randn(case.input_shape, device=device)
    functions = {"eager": model}
    functions.update({name: library.symbolic_trace(model) for name, library in LIBRARIES.items()})
    with torch.no_grad():
        expected = model(x)
        for name, function in functions.items():
            if not torch.allclose(function(x), expected):
                raise RuntimeError(
                    f"{case.name}: the {name} GraphModule's output differs from eager's"
                )
    return functions, x


def time_forward(
    functions: dict[str, Callable],
    x: torch.Tensor,
    repeat: int,
    min_time: float,
    budget_s: float = float("inf"),
) -> tuple[dict[str, float], int]:
    """Best seconds per call of each function, in up to `repeat` interleaved rounds.

    Rounds stop early (after at least one) once `budget_s` seconds are spent:
    a big model's rounds last one call each, and its timings vary less.

    Returns:
        `{name: seconds per call}` and the number of rounds run.
    """
    sync = _synchronizer(x.device)
    best = dict.fromkeys(functions, float("inf"))
    with torch.no_grad():
        numbers = {name: _calls_per_round(f, x, min_time, sync) for name, f in functions.items()}
        gc.collect()
        gc.disable()
        started, rounds = time.perf_counter(), 0
        try:
            while rounds < repeat and (rounds == 0 or time.perf_counter() - started < budget_s):
                for name, function in functions.items():
                    seconds = _time_calls(function, x, numbers[name], sync) / numbers[name]
                    best[name] = min(best[name], seconds)
                rounds += 1
        finally:
            gc.enable()
    return best, rounds


# --- all of it ----------------------------------------------------------------------


@dataclass
class Results:
    """Every measurement, in seconds.

    Attributes:
        sizes: the chain sizes, sorted.
        model: (library, operation) -> seconds, for ResNet-50.
        chain: (library, operation, size) -> seconds.
        forward: (case name, runner) -> seconds per call.
        inputs: case name -> input shape, as `1x3x64x64`.
        rounds: case name -> forward rounds run.
        runs: chain runs per (library, size), fewer than `repeat` when the budget ran out.
    """

    sizes: list[int]
    model: dict[tuple[str, str], float] = field(default_factory=dict)
    chain: dict[tuple[str, str, int], float] = field(default_factory=dict)
    forward: dict[tuple[str, str], float] = field(default_factory=dict)
    inputs: dict[str, str] = field(default_factory=dict)
    rounds: dict[str, int] = field(default_factory=dict)
    runs: dict[tuple[str, int], int] = field(default_factory=dict)

    def growth(self, library: str, operation: str) -> float:
        """time(largest size) / time(second-largest size)."""
        small, large = self.sizes[-2], self.sizes[-1]
        return self.chain[library, operation, large] / self.chain[library, operation, small]

    def growth_limit(self, slack: float) -> float:
        """The growth above which an operation counts as not linear."""
        return slack * self.sizes[-1] / self.sizes[-2]


def run_all(
    sizes: list[int],
    repeat: int,
    model_repeat: int,
    forward_repeat: int,
    min_time: float = 0.005,
    image_size: int = 64,
    device: str = "cpu",
    budget_s: float = 30.0,
    forward_budget_s: float = 5.0,
    progress: Callable[[str], None] = lambda line: None,
) -> Results:
    """Measure the three parts, for both libraries."""
    results = Results(sorted(sizes))
    model = ResNet50()
    for name, library in LIBRARIES.items():
        best, _ = best_of(lambda timer: model_pipeline(library, model, timer), model_repeat)
        results.model.update({(name, op): s for op, s in best.items()})
        progress(f"  ResNet-50 {name:8}: symbolic_trace {_ms(best['symbolic_trace'])} ms")
    for n in results.sizes:
        for name, library in LIBRARIES.items():
            best, runs = best_of(lambda timer: chain_pipeline(library, n, timer), repeat, budget_s)
            results.runs[name, n] = runs
            results.chain.update({(name, op, n): s for op, s in best.items()})
            progress(
                f"  chain {name:8} n={n:>7,}: {sum(best.values()):7.2f} s for all operations "
                f"(best of {runs})"
            )
    for case in forward_cases(image_size):
        functions, x = forward_callables(case, torch.device(device))
        best, rounds = time_forward(functions, x, forward_repeat, min_time, forward_budget_s)
        results.forward.update({(case.name, runner): s for runner, s in best.items()})
        results.inputs[case.name] = "x".join(map(str, case.input_shape))
        results.rounds[case.name] = rounds
        progress(
            f"  forward {case.name}: eager {best['eager'] * 1e6:,.1f} us per call "
            f"(best of {rounds})"
        )
    return results


def not_linear(results: Results, slack: float, library: str = "minifx") -> list[str]:
    """The chain operations whose growth from the second-largest to the largest size
    exceeds `slack` times the size ratio (20x for 10k -> 100k with the default slack 2)."""
    if len(results.sizes) < 2:
        return []
    limit = results.growth_limit(slack)
    return [op for op in CHAIN_OPERATIONS if results.growth(library, op) > limit]


# --- reporting ----------------------------------------------------------------------


def tables(results: Results, slack: float) -> list[tuple[str, list[str], list[list[str]]]]:
    """The report's tables, as (title, header, rows)."""
    both = ["minifx (ms)", "torch.fx (ms)", "minifx / torch.fx"]
    model_rows = [
        [
            op,
            _ms(results.model["minifx", op]),
            _ms(results.model["torch.fx", op]),
            _ratio(results.model["minifx", op], results.model["torch.fx", op]),
        ]
        for op in MODEL_OPERATIONS
    ]
    chain_rows = [
        [
            op,
            _size(n),
            _ms(results.chain["minifx", op, n]),
            _ms(results.chain["torch.fx", op, n]),
            _ratio(results.chain["minifx", op, n], results.chain["torch.fx", op, n]),
        ]
        for op in CHAIN_OPERATIONS
        for n in results.sizes
    ]
    found = [
        ("ResNet-50 (torchvision layout, 16 Bottlenecks)", ["operation", *both], model_rows),
        ("Chains of N call_function nodes", ["operation", "nodes", *both], chain_rows),
    ]
    if len(results.sizes) >= 2:
        found.append(_growth_table(results, slack))
    found.append(_forward_table(results))
    return found


def _growth_table(results: Results, slack: float) -> tuple[str, list[str], list[list[str]]]:
    small, large = _size(results.sizes[-2]), _size(results.sizes[-1])
    limit = results.growth_limit(slack)
    header = [
        "operation",
        f"minifx {small} -> {large}",
        f"torch.fx {small} -> {large}",
        f"minifx (linear ~ {results.sizes[-1] / results.sizes[-2]:.0f}, limit {limit:.0f})",
    ]
    rows = []
    for op in CHAIN_OPERATIONS:
        mine, theirs = results.growth("minifx", op), results.growth("torch.fx", op)
        rows.append(
            [op, f"{mine:.1f}x", f"{theirs:.1f}x", "NOT LINEAR" if mine > limit else "linear"]
        )
    return "Growth of the chain times from the second-largest to the largest size", header, rows


def _forward_table(results: Results) -> tuple[str, list[str], list[list[str]]]:
    header = [
        "model",
        "input",
        "rounds",
        "eager (us)",
        "minifx gm (us)",
        "torch.fx gm (us)",
        "minifx / eager",
        "torch.fx / eager",
        "minifx / torch.fx",
    ]
    rows = []
    for case, shape in results.inputs.items():
        eager, mine, theirs = (results.forward[case, runner] for runner in RUNNERS)
        rows.append(
            [
                case,
                shape,
                str(results.rounds[case]),
                _us(eager),
                _us(mine),
                _us(theirs),
                _ratio(mine, eager),
                _ratio(theirs, eager),
                _ratio(mine, theirs),
            ]
        )
    return "Forward: eager module vs GraphModule, per call", header, rows


def markdown_tables(results: Results, slack: float) -> str:
    """Every table under its `##` title."""
    return "\n".join(
        f"## {title}\n\n{format_markdown(header, rows)}\n"
        for title, header, rows in tables(results, slack)
    )


def markdown_report(results: Results, args: argparse.Namespace) -> str:
    """The tables with a header saying where, when and how they were measured."""
    runs = sorted(set(results.runs.values()))
    lines = [
        "# Code generation: minifx.codegen vs torch.fx",
        "",
        f"Produced by `python -m benchmarks.codegen` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Machine: {machine_description()}; forward on {args.device}"
        + (f" with {args.threads} torch thread(s)." if args.device == "cpu" else "."),
    ]
    if args.note:
        lines.append(f"- Note: {args.note}")
    lines += [
        f"- ResNet-50: best of {args.model_repeat} runs. Chains: best of {args.repeat} runs"
        + (
            ""
            if runs == [args.repeat]
            else f" (some sizes stopped early after {runs[0]}: time budget)"
        )
        + ". Garbage collection off while timing.",
        f"- Forward: best of up to {args.forward_repeat} interleaved rounds of at least "
        f"{args.min_time * 1e3:g} ms each (fewer after {args.forward_budget:g} s per model), "
        "under `torch.no_grad()`, models in eval mode.",
        "- A ratio below 1 means the first-named is faster. On a shared or small machine, "
        "compare the ratios and the growth, not the absolute times.",
        "- See `benchmarks/README.md` for what each row times and how to read the tables.",
        "",
        markdown_tables(results, args.slack),
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.codegen", description=__doc__.split("\n")[0]
    )
    add_scaling_options(parser, DEFAULT_SIZES, repeat=5, budget=30.0)
    parser.add_argument(
        "--model-repeat",
        type=int,
        default=10,
        help="runs for ResNet-50's symbolic_trace and recompile (default: 10)",
    )
    parser.add_argument(
        "--forward-repeat",
        type=int,
        default=200,
        help="timed rounds per forward callable; the fastest counts (default: 200)",
    )
    parser.add_argument(
        "--min-time",
        type=float,
        default=0.005,
        help="seconds a forward round lasts at least (default: 0.005)",
    )
    parser.add_argument(
        "--forward-budget",
        type=float,
        default=5.0,
        help="seconds per model after which forward rounds stop early (default: 5)",
    )
    parser.add_argument(
        "--image-size",
        type=int,
        default=64,
        help="height and width of ResNet-50's input in the forward part (default: 64)",
    )
    add_machine_options(parser, "the forward part runs")
    add_report_options(parser, "codegen.md")
    args = parser.parse_args(argv)
    if problem := options_problem(args):
        print(problem, file=sys.stderr)
        return 2

    torch.set_num_threads(args.threads)
    print(
        f"codegen: sizes {args.sizes}, best of {args.repeat}; {machine_description()}", flush=True
    )
    results = run_all(
        args.sizes,
        args.repeat,
        args.model_repeat,
        args.forward_repeat,
        args.min_time,
        args.image_size,
        args.device,
        args.budget,
        args.forward_budget,
        progress=lambda line: print(line, flush=True),
    )
    print()
    print(markdown_tables(results, args.slack))
    if args.out is not None:
        write_report(args.out, markdown_report(results, args))
    slow = not_linear(results, args.slack)
    if slow:
        print(
            f"\nNOT LINEAR in minifx: {', '.join(slow)} (growth above "
            f"{results.growth_limit(args.slack):.0f}x)"
        )
    return 1 if args.check and slow else 0


if __name__ == "__main__":
    sys.exit(main())
