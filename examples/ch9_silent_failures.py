"""Chapter 9: a scheduling pass that hoists prefetches, and what a `set` does to it.

The torch.fx paper's scheduling case study moves non-blocking prefetch calls (RPCs)
to the start of the graph, so that they run while the rest of the model computes.
`hoist_prefetches` does that here, on a `Recommender` whose `forward` asks for four
tables, in either library's graph. It collects the tables to hoist in a collection
the caller chooses: a `set` iterates in the order of its strings' hashes, which
Python seeds afresh in every process (`PYTHONHASHSEED`), and a `dict` in insertion
order. `hoisted_order` runs the pass in a fresh Python with a given hash seed, so
the book can show two runs of the same program disagreeing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Callable, Iterable

import torch
import torch.fx
from torch import nn

import minifx

ROOT = Path(__file__).resolve().parent.parent


# --8<-- [start:hoist]
def prefetch(table: str, ids: torch.Tensor) -> torch.Tensor:
    """Stands for a non-blocking RPC that fetches rows of `table`; here, the ids."""
    return ids.float()


# One call_function node per prefetch in both libraries' graphs.
minifx.wrap("prefetch")
torch.fx.wrap("prefetch")


class Recommender(nn.Module):
    """Asks for each table where it needs it, between computations."""

    def forward(self, ids):
        score = prefetch("user", ids) * 2
        score = score + prefetch("item", ids)
        score = torch.relu(score) + prefetch("ad", ids)
        return score * prefetch("query", ids)


def hoist_prefetches(
    gm: minifx.GraphModule | torch.fx.GraphModule, collect: Callable[[Iterable[str]], Iterable[str]]
) -> list[str]:
    """Move every `prefetch` call to the start of `gm`'s graph, table by table.

    Args:
        gm: a GraphModule of either library.
        collect: makes the collection of table names the pass walks:
            `set` or `dict.fromkeys`.

    Returns:
        The tables in the order the new code calls them.
    """
    calls = {n.args[0]: n for n in gm.graph.nodes if n.target is prefetch}
    last = [n for n in gm.graph.nodes if n.op == "placeholder"][-1]
    for table in collect(calls):  # the order of the hoisted calls is this loop's
        last.append(calls[table])  # moves the node to just after `last`
        last = calls[table]
    gm.recompile()
    return [n.args[0] for n in gm.graph.nodes if n.target is prefetch]


# --8<-- [end:hoist]

COLLECTIONS: dict[str, Callable[[Iterable[str]], Iterable[str]]] = {
    "set": set,
    "dict": dict.fromkeys,
}
LIBRARIES = {"minifx": minifx, "torch.fx": torch.fx}


def hoisted_orders(hash_seed: int) -> dict[str, dict[str, list[str]]]:
    """`hoist_prefetches`'s orders, run in a fresh Python whose string hashes use `hash_seed`.

    Returns:
        `{collection: {library: tables in the order the new code calls them}}`, for
        `set` and `dict`, minifx and torch.fx.
    """
    program = (
        "import json; from examples.ch9_silent_failures import run_all; "
        "print(json.dumps(run_all()))"
    )
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"the fresh Python failed:\n{done.stderr}")
    return json.loads(done.stdout)


def run(collection: str, library: str) -> list[str]:
    """Trace `Recommender` with `library`, hoist its prefetches, check it still computes."""
    model = Recommender()
    gm = LIBRARIES[library].symbolic_trace(model)
    order = hoist_prefetches(gm, COLLECTIONS[collection])
    ids = torch.arange(4)
    assert torch.equal(gm(ids), model(ids)), "hoisting changed what the model computes"
    return order


def run_all() -> dict[str, dict[str, list[str]]]:
    """`run` for each collection and library, in this process."""
    return {c: {lib: run(c, lib) for lib in LIBRARIES} for c in COLLECTIONS}
