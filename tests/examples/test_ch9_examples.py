"""`examples/ch9_silent_failures.py`: the scheduling pass of chapter 9's `set` pitfall.

The chapter runs `hoisted_orders` in fresh Pythons with fixed hash seeds; these tests
check the pass itself, in this process, on both libraries' graphs.
"""

from __future__ import annotations

import pytest
import torch

from examples.ch9_silent_failures import (
    LIBRARIES,
    Recommender,
    hoist_prefetches,
    prefetch,
    run,
)

pytestmark = pytest.mark.ch9


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_hoisting_in_dict_order_keeps_the_graphs_order_and_what_it_computes(library) -> None:
    model = Recommender()
    gm = LIBRARIES[library].symbolic_trace(model)
    assert hoist_prefetches(gm, dict.fromkeys) == ["user", "item", "ad", "query"]
    ops = [node.op if node.target is not prefetch else "prefetch" for node in gm.graph.nodes]
    assert ops[:5] == ["placeholder", *["prefetch"] * 4]
    gm.graph.lint()
    ids = torch.arange(4)
    assert torch.equal(gm(ids), model(ids))


@pytest.mark.parametrize("library", list(LIBRARIES))
def test_hoisting_in_set_order_moves_every_prefetch_and_still_computes(library) -> None:
    order = run("set", library)  # raises if the result changed
    assert sorted(order) == sorted(["user", "item", "ad", "query"])


def test_both_libraries_hoist_in_the_same_order_in_one_process() -> None:
    assert run("set", "minifx") == run("set", "torch.fx")
