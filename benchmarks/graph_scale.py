"""How graph building and editing scale: minifx.graph and torch.fx side by side.

Run it from the repository root:

    python -m benchmarks.graph_scale                      # 1k, 10k and 100k nodes
    python -m benchmarks.graph_scale --sizes 1000 10000 --repeat 5
    python -m benchmarks.graph_scale --check              # exit 1 if minifx is not linear

For each library and each size N, one pipeline runs on a chain of N nodes and
times six operations separately (`OPERATIONS`):

| operation | what it does                                                   | nodes after |
|-----------|----------------------------------------------------------------|-------------|
| build     | placeholder, N call_function nodes (add, relu, ...), output    | N + 2       |
| erase     | every other call_function node: rewire its users to its input  | N/2 + 2     |
|           | with `replace_all_uses_with`, then `erase_node`, while walking |             |
|           | `graph.nodes`                                                  |             |
| insert    | `with graph.inserting_after(n)`: a `mul(n, 2)` after each node | N + 3       |
| rauw      | after each node a `neg(n)`, and every other user of `n` moved  | 2N + 5      |
|           | onto it with `replace_all_uses_with` (how observers are added) |             |
| lint      | `graph.lint()`                                                 |             |
| print     | `str(graph)`                                                   |             |
| dce_dead  | `eliminate_dead_code()` on a fresh chain whose result nobody   | 2           |
|           | uses (built untimed): every call_function node is erased       |             |
| dce_live  | `eliminate_dead_code()` on a fresh chain that the output       | N + 2       |
|           | returns (built untimed): nothing is erased                     |             |

The operations are written once, against the API that minifx shares with
torch.fx, and receive the library as a module (`torch.fx` or `minifx.graph`),
so both libraries do exactly the same work; `tests/test_benchmarks.py`
checks that their edited graphs print the same.

Every operation is O(N) in a correct implementation: each node is visited a
constant number of times and each edit touches O(1) nodes. The report gives,
per operation, the time ratio minifx / torch.fx and each library's growth
from the second-largest to the largest size: for 10k -> 100k, a linear
operation grows about 10x; more than `slack` times that (20x by default) is
flagged NOT LINEAR.

Timing is best-of-`repeat`: the whole pipeline runs `repeat` times on fresh
graphs, the two libraries taking turns, and each operation keeps its fastest
run. Garbage collection is off while an operation is timed (as `timeit`
does), and collected between runs.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import operator
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable

import torch
import torch.fx

import minifx.graph
from benchmarks.common import (
    add_report_options,
    add_scaling_options,
    build_chain,
    format_markdown,
    machine_description,
    options_problem,
    write_report,
)
from benchmarks.common import ms as _ms
from benchmarks.common import size_label as _size
from benchmarks.common import timed as _timed

LIBRARIES: dict[str, ModuleType] = {"minifx": minifx.graph, "torch.fx": torch.fx}
DEFAULT_SIZES = (1_000, 10_000, 100_000)


# --- the operations, written once for both libraries -------------------------------


def erase_every_other(fx: ModuleType, graph: Any) -> None:
    """Erase every other call_function node, rewiring its users to its first input.

    Erasing the node the loop stands on is allowed in both libraries: an erased
    node keeps its link to the next one.
    """
    index = 0
    for node in graph.nodes:
        if node.op != "call_function":
            continue
        if index % 2 == 1:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)
        index += 1


def insert_after_every(fx: ModuleType, graph: Any) -> None:
    """After every node but the output, insert `mul(node, 2)` (an unused node)."""
    for node in list(graph.nodes):  # a snapshot, or the loop would visit its own insertions
        if node.op == "output":
            continue
        with graph.inserting_after(node):
            graph.call_function(operator.mul, (node, 2))


def replace_all_uses(fx: ModuleType, graph: Any) -> None:
    """After every node `n` but the output, insert `neg(n)` and move `n`'s users onto it.

    This is how a pass puts an observer behind every value: each
    `replace_all_uses_with` touches only `n`'s users, so the pass is O(N).
    """
    for node in list(graph.nodes):
        if node.op == "output":
            continue
        with graph.inserting_after(node):
            observer = graph.call_function(operator.neg, (node,))
        node.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)


def build_dead_chain(fx: ModuleType, n: int) -> Any:
    """The chain of `build_chain`, but the output returns the input: every call is dead."""
    graph = build_chain(fx, n)
    output = next(node for node in reversed(graph.nodes) if node.op == "output")
    output.args = (next(iter(graph.nodes)),)
    return graph


def lint(fx: ModuleType, graph: Any) -> None:
    """Check the graph's invariants."""
    graph.lint()


def print_graph(fx: ModuleType, graph: Any) -> str:
    """The graph as text, as `print(graph)` shows it."""
    return str(graph)


# The pipeline, in order: `build` makes the graph, each later step edits or reads it.
OPERATIONS: tuple[tuple[str, Callable[[ModuleType, Any], Any]], ...] = (
    ("erase", erase_every_other),
    ("insert", insert_after_every),
    ("rauw", replace_all_uses),
    ("lint", lint),
    ("print", print_graph),
)
# Dead-code elimination runs on fresh chains (built untimed), one all dead, one all live.
DEAD_CODE_CHAINS: tuple[tuple[str, Callable[[ModuleType, int], Any]], ...] = (
    ("dce_dead", build_dead_chain),
    ("dce_live", build_chain),
)
OPERATION_NAMES = (
    "build",
    *(name for name, _ in OPERATIONS),
    *(name for name, _ in DEAD_CODE_CHAINS),
)


def run_pipeline(
    fx: ModuleType, n: int, timer: Callable[[str, Callable[[], Any]], Any] | None = None
) -> Any:
    """Build a chain of `n` nodes and apply every operation to it, in order.

    Args:
        fx: `torch.fx` or `minifx.graph`.
        n: the number of call_function nodes in the chain.
        timer: called as `timer(name, thunk)` for each operation; it must call
            `thunk()` and return its result. By default the thunk is just called.

    Returns:
        The edited graph (the chains that dead-code elimination cleaned are
        left out; `eliminate_dead_chains` returns them).
    """
    timer = timer or (lambda name, thunk: thunk())
    graph = timer("build", lambda: build_chain(fx, n))
    for name, operation in OPERATIONS:
        timer(name, lambda: operation(fx, graph))
    eliminate_dead_chains(fx, n, timer)
    return graph


def eliminate_dead_chains(
    fx: ModuleType, n: int, timer: Callable[[str, Callable[[], Any]], Any] | None = None
) -> dict[str, tuple[bool, Any]]:
    """Build each chain of `DEAD_CODE_CHAINS` untimed, then time `eliminate_dead_code` on it.

    Returns:
        For each chain's name: what `eliminate_dead_code` returned, and the cleaned graph.
    """
    timer = timer or (lambda name, thunk: thunk())
    results = {}
    for name, build in DEAD_CODE_CHAINS:
        graph = build(fx, n)
        results[name] = (timer(name, graph.eliminate_dead_code), graph)
    return results


# --- timing -------------------------------------------------------------------------


def measure(
    fx: ModuleType, n: int, repeat: int, budget_s: float = 60.0
) -> tuple[dict[str, float], int]:
    """Best-of-`repeat` seconds for each operation on a chain of `n` nodes.

    Repeats stop early (after at least one) once `budget_s` seconds are spent,
    so a quadratic operation cannot stall the whole run.

    Returns:
        `{operation: seconds}` and the number of repeats actually run.
    """
    best: dict[str, float] = {}
    started, runs = time.perf_counter(), 0

    def timer(name: str, thunk: Callable[[], Any]) -> Any:
        seconds, result = _timed(thunk)
        best[name] = min(best.get(name, float("inf")), seconds)
        return result

    while runs < repeat and (runs == 0 or time.perf_counter() - started < budget_s):
        gc.collect()  # the previous run's graph is a cycle-rich heap; free it untimed
        run_pipeline(fx, n, timer)
        runs += 1
    gc.collect()
    return best, runs


@dataclass
class Results:
    """Seconds per (library, operation, size), and how many repeats each size got."""

    sizes: list[int]
    seconds: dict[tuple[str, str, int], float] = field(default_factory=dict)
    runs: dict[tuple[str, int], int] = field(default_factory=dict)

    def ratio(self, operation: str, n: int) -> float:
        """minifx time / torch.fx time: below 1, minifx is faster."""
        return self.seconds["minifx", operation, n] / self.seconds["torch.fx", operation, n]

    def growth(self, library: str, operation: str) -> float:
        """time(largest size) / time(second-largest size)."""
        small, large = self.sizes[-2], self.sizes[-1]
        return self.seconds[library, operation, large] / self.seconds[library, operation, small]

    def growth_limit(self, slack: float) -> float:
        """The growth above which an operation counts as not linear."""
        return slack * self.sizes[-1] / self.sizes[-2]


def run_all(
    sizes: list[int],
    repeat: int,
    budget_s: float = 60.0,
    progress: Callable[[str], None] = lambda line: None,
) -> Results:
    """Measure every library at every size.

    The libraries take turns, one run each, `repeat` times: on a shared
    machine the load changes from one minute to the next, and taking turns
    lets both libraries meet the same load.
    """
    results = Results(sorted(sizes))
    for n in results.sizes:
        spent = dict.fromkeys(LIBRARIES, 0.0)
        for _ in range(repeat):
            for library, fx in LIBRARIES.items():
                if results.runs.get((library, n), 0) and spent[library] > budget_s:
                    continue  # out of time for this library and size (see `measure`)
                started = time.perf_counter()
                best, _ = measure(fx, n, repeat=1)
                spent[library] += time.perf_counter() - started
                results.runs[library, n] = results.runs.get((library, n), 0) + 1
                for operation, seconds in best.items():
                    key = (library, operation, n)
                    results.seconds[key] = min(results.seconds.get(key, float("inf")), seconds)
        for library in LIBRARIES:
            total = sum(results.seconds[library, op, n] for op in OPERATION_NAMES)
            progress(
                f"  {library:8} n={n:>7,}: {total:7.2f} s for all operations "
                f"(best of {results.runs[library, n]})"
            )
    return results


def not_linear(results: Results, slack: float, library: str = "minifx") -> list[str]:
    """The operations whose growth from the second-largest to the largest size exceeds
    `slack` times the size ratio (20x for 10k -> 100k with the default slack of 2)."""
    if len(results.sizes) < 2:
        return []
    limit = results.growth_limit(slack)
    return [op for op in OPERATION_NAMES if results.growth(library, op) > limit]


# --- reporting ----------------------------------------------------------------------


def table_rows(
    results: Results, slack: float
) -> tuple[list[str], list[list[str]], list[str], list[list[str]]]:
    """The two tables, as header and rows: times and ratios, then growth."""
    time_header = ["operation", "nodes", "minifx (ms)", "torch.fx (ms)", "minifx / torch.fx"]
    time_rows = [
        [
            op,
            _size(n),
            _ms(results.seconds["minifx", op, n]),
            _ms(results.seconds["torch.fx", op, n]),
            f"{results.ratio(op, n):.2f}",
        ]
        for op in OPERATION_NAMES
        for n in results.sizes
    ]
    if len(results.sizes) < 2:
        return time_header, time_rows, [], []
    small, large = _size(results.sizes[-2]), _size(results.sizes[-1])
    limit = results.growth_limit(slack)
    growth_header = [
        "operation",
        f"minifx {small} -> {large}",
        f"torch.fx {small} -> {large}",
        f"minifx (linear ~ {results.sizes[-1] / results.sizes[-2]:.0f}, limit {limit:.0f})",
    ]
    growth_rows = []
    for op in OPERATION_NAMES:
        mine, theirs = results.growth("minifx", op), results.growth("torch.fx", op)
        growth_rows.append(
            [op, f"{mine:.1f}x", f"{theirs:.1f}x", "NOT LINEAR" if mine > limit else "linear"]
        )
    return time_header, time_rows, growth_header, growth_rows


def format_text(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(
            cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))
        )
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def markdown_report(results: Results, slack: float, repeat: int, note: str) -> str:
    time_header, time_rows, growth_header, growth_rows = table_rows(results, slack)
    runs = sorted(set(results.runs.values()))
    lines = [
        "# Graph scale: minifx.graph vs torch.fx",
        "",
        f"Produced by `python -m benchmarks.graph_scale` on "
        f"{datetime.datetime.now().astimezone():%Y-%m-%d %H:%M %Z}.",
        "",
        f"- Machine: {machine_description()}.",
    ]
    if note:
        lines.append(f"- Note: {note}")
    lines += [
        f"- Best of {repeat} runs per operation"
        + ("" if runs == [repeat] else f" (some sizes stopped early after {runs[0]}: time budget)")
        + "; garbage collection off while timing.",
        "- Times are wall-clock milliseconds. A ratio below 1 means minifx is faster.",
        "- See `benchmarks/README.md` for what each operation does and how to read the tables.",
        "",
        "## Times and ratios",
        "",
        format_markdown(time_header, time_rows),
        "",
    ]
    if growth_rows:
        lines += [
            "## Growth from the second-largest to the largest size",
            "",
            "A linear operation grows by the size ratio; above the limit it is flagged NOT LINEAR.",
            "",
            format_markdown(growth_header, growth_rows),
            "",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.graph_scale", description=__doc__.split("\n")[0]
    )
    add_scaling_options(parser, DEFAULT_SIZES, repeat=3, budget=60.0)
    add_report_options(parser, "graph_scale.md")
    args = parser.parse_args(argv)
    if problem := options_problem(args):
        print(problem, file=sys.stderr)
        return 2

    print(
        f"graph_scale: sizes {args.sizes}, best of {args.repeat}; {machine_description()}",
        flush=True,
    )
    results = run_all(
        args.sizes, args.repeat, args.budget, progress=lambda line: print(line, flush=True)
    )
    time_header, time_rows, growth_header, growth_rows = table_rows(results, args.slack)
    print()
    print(format_text(time_header, time_rows))
    if growth_rows:
        print()
        print(format_text(growth_header, growth_rows))
    if args.out is not None:
        print()
        write_report(args.out, markdown_report(results, args.slack, args.repeat, args.note))
    slow = not_linear(results, args.slack)
    if slow:
        print(
            f"\nNOT LINEAR in minifx: {', '.join(slow)} (growth above "
            f"{results.growth_limit(args.slack):.0f}x)"
        )
    return 1 if args.check and slow else 0


if __name__ == "__main__":
    sys.exit(main())
