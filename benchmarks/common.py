"""What the benchmark scripts share: the workloads, the timers, the report's formatting and
the command-line options that several scripts take.

One home for them, so that each script imports its helpers from here and none imports
another script's private ones. The workloads, timers and formatting were moved here
unchanged (names without the leading underscore they had as one script's private
helpers), so every script measures and prints what it did before; the options a script
shares with others take their wording from here, so `--help` says the same for each.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import operator
import os
import platform
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.fx
import torch.fx.config

# --- workloads ------------------------------------------------------------------------

# The chain alternates these, so names and targets vary as in a real model.
CHAIN_FUNCTIONS = (operator.add, torch.relu)


def build_chain(fx: ModuleType, n: int) -> Any:
    """A graph `x -> add -> relu -> add -> ... -> output` with `n` call_function nodes."""
    graph = fx.Graph()
    value = graph.placeholder("x")
    for i in range(n):
        if CHAIN_FUNCTIONS[i % 2] is operator.add:
            value = graph.call_function(operator.add, (value, 1))
        else:
            value = graph.call_function(torch.relu, (value,))
    graph.output(value)
    return graph


class Chain(torch.nn.Module):
    """A forward of `n` simple ops, `x + 1` and `torch.relu(x)` in turn.

    Traced, it gives the same graph as `build_chain(fx, n)`.
    """

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def forward(self, x):  # no annotations: they would become the placeholder's type
        for i in range(self.n):  # a Python int: the loop unrolls while tracing
            x = x + 1 if i % 2 == 0 else torch.relu(x)
        return x


class Tiny(torch.nn.Module):
    """The smallest model worth a GraphModule: one Linear(4, 4) and a relu."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


@dataclass(frozen=True)
class ForwardCase:
    """A model and the input shape its forward is timed on."""

    name: str
    make_model: Callable[[], torch.nn.Module]
    input_shape: tuple[int, ...]


# --- timing ---------------------------------------------------------------------------


def timed(thunk: Callable[[], Any]) -> tuple[float, Any]:
    """Run `thunk` with the garbage collector off (as timeit does); seconds and result."""
    gc.disable()
    try:
        start = time.perf_counter()
        result = thunk()
        return time.perf_counter() - start, result
    finally:
        gc.enable()


def synchronizer(device: torch.device) -> Callable[[], None]:
    """Waits for queued GPU work, so a timer stops when the work is done."""
    return torch.cuda.synchronize if device.type == "cuda" else (lambda: None)


def time_calls(function: Callable, x: torch.Tensor, number: int, sync: Callable[[], None]) -> float:
    """Seconds for `number` calls of `function(x)`."""
    sync()
    start = time.perf_counter()
    for _ in range(number):
        function(x)
    sync()
    return time.perf_counter() - start


def calls_per_round(
    function: Callable, x: torch.Tensor, min_time: float, sync: Callable[[], None]
) -> int:
    """How many calls last at least `min_time` seconds (doubling, as timeit's autorange)."""
    number = 1
    while time_calls(function, x, number, sync) < min_time:
        number *= 2
    return number


@contextlib.contextmanager
def quiet_torch_fx_progress() -> Iterator[None]:
    """Disable torch.fx's progress bar and its node-list description; restore after."""
    saved = torch.fx.config.disable_progress, torch.fx.config.verbose_progress
    torch.fx.config.disable_progress, torch.fx.config.verbose_progress = True, False
    try:
        yield
    finally:
        torch.fx.config.disable_progress, torch.fx.config.verbose_progress = saved


def time_runners(
    functions: dict[str, Callable],
    x: torch.Tensor,
    repeat: int,
    min_time: float,
    budget_s: float = float("inf"),
) -> tuple[dict[str, float], int]:
    """Best seconds per call of each function, in up to `repeat` rounds of turns.

    `benchmarks.codegen.time_forward`, but the turns run backwards in every
    other round, so that each runner is timed after both of its neighbours:
    what one runner leaves in the allocator (a keep-values Interpreter frees
    its previous run's values only when it runs again) is not always charged
    to the same next runner. Rounds stop early (after at least one) once
    `budget_s` seconds are spent.

    Returns:
        `{name: seconds per call}` and the number of rounds run.
    """
    sync = synchronizer(x.device)
    best = dict.fromkeys(functions, float("inf"))
    with torch.no_grad(), quiet_torch_fx_progress():
        numbers = {name: calls_per_round(f, x, min_time, sync) for name, f in functions.items()}
        turns = list(functions.items())
        gc.collect()
        gc.disable()
        started, rounds = time.perf_counter(), 0
        try:
            while rounds < repeat and (rounds == 0 or time.perf_counter() - started < budget_s):
                for name, function in reversed(turns) if rounds % 2 else turns:
                    seconds = time_calls(function, x, numbers[name], sync) / numbers[name]
                    best[name] = min(best[name], seconds)
                rounds += 1
        finally:
            gc.enable()
    return best, rounds


# --- reporting ------------------------------------------------------------------------


def ms(seconds: float) -> str:
    """Seconds written as milliseconds: three significant digits, whole ones from 100 ms."""
    return f"{seconds * 1e3:.3g}" if seconds < 0.1 else f"{seconds * 1e3:,.0f}"


def us(seconds: float) -> str:
    """Seconds written as microseconds: three significant digits, whole ones from 100 µs."""
    microseconds = seconds * 1e6
    return f"{microseconds:.3g}" if microseconds < 100 else f"{microseconds:,.0f}"


def size_label(n: int) -> str:
    """A node count as the tables write it: `10k` for 10,000."""
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def ratio(a: float, b: float) -> str:
    """`a / b` to two decimals."""
    return f"{a / b:.2f}"


def format_markdown(header: list[str], rows: list[list[str]]) -> str:
    """A Markdown table: the first column left-aligned, the others right-aligned."""
    align = ["---"] + ["---:"] * (len(header) - 1)
    return "\n".join("| " + " | ".join(row) + " |" for row in [header, align, *rows])


def machine_description() -> str:
    """CPU, core count, Python and torch versions, for the report's header."""
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (
        f"{cpu}, {os.cpu_count()} logical cores, {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}, torch {torch.__version__}"
    )


# --- the command line -----------------------------------------------------------------


def add_scaling_options(
    parser: argparse.ArgumentParser, sizes: tuple[int, ...], repeat: int, budget: float
) -> None:
    """`--sizes`, `--repeat`, `--budget`, `--slack` and `--check`: for a script that times
    chains of several sizes and flags a minifx operation whose time grows faster than linear."""
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="+",
        default=list(sizes),
        help=f"numbers of call_function nodes in the chains (default: {' '.join(map(str, sizes))})",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=repeat,
        help=f"runs per chain size; the fastest counts (default: {repeat})",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=budget,
        help=f"seconds per library and chain size after which repeats stop early "
        f"(default: {budget:g})",
    )
    parser.add_argument(
        "--slack",
        type=float,
        default=2.0,
        help="flag growth above slack x the size ratio (default: 2, i.e. 20x for 10k -> 100k)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="exit with status 1 if any minifx operation grows faster than the limit",
    )


def add_machine_options(parser: argparse.ArgumentParser, runs_there: str | None) -> None:
    """`--threads` and, for a script that can run on a GPU, `--device`.

    Args:
        runs_there: what runs on the device, as a clause ("the models run"); `None` for
            a script that runs on the CPU only.
    """
    if runs_there is not None:
        parser.add_argument(
            "--device", default="cpu", help=f"where {runs_there}: cpu or cuda (default: cpu)"
        )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch.set_num_threads on CPU (default: 1: on a busy machine, more threads than "
        "idle cores make CPU kernels stall)",
    )


def add_report_options(
    parser: argparse.ArgumentParser, report: str, plot: str | None = None
) -> None:
    """`--out`, `--note`, and `--plot` if the script draws a figure for the book.

    Args:
        report: the file name of the committed report in `benchmarks/results/`.
        plot: the file name of the book's figure in `chapters/figures/`.
    """
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"also write the report to this file (the committed one is "
        f"benchmarks/results/{report})",
    )
    if plot is not None:
        parser.add_argument(
            "--plot",
            type=Path,
            default=None,
            help=f"write the bar plot here (the book's is chapters/figures/{plot})",
        )
    parser.add_argument(
        "--note", default="", help="a line for the report's header, e.g. about the machine's load"
    )


def options_problem(args: argparse.Namespace) -> str | None:
    """What makes the options unusable, found before anything is timed; `None` if nothing."""
    if getattr(args, "check", False) and len(args.sizes) < 2:
        return "--check needs at least two sizes"
    if (
        torch.device(getattr(args, "device", "cpu")).type == "cuda"
        and not torch.cuda.is_available()
    ):
        return "--device cuda: CUDA is not available (torch.cuda.is_available() is False)"
    return None


def write_report(path: Path, text: str) -> None:
    """Write `text` to `path`, making its folder if need be, and say so."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    print(f"wrote {path}")
