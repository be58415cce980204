"""What the stage-2 tests share: the two libraries and their tracers side by side, and the
`Lib` interface through which one build function makes the same graph with each
(`differential` requires the same printout and node names), a diff of two printouts,
the message of an error of exactly one type, and `Tensor.__getitem__` listed to patch."""

from __future__ import annotations

import contextlib
import difflib
import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import pytest
import torch
import torch.fx
import torch.fx.node

import minifx
import minifx.graph

LIBRARIES = {"minifx": minifx, "torch.fx": torch.fx}

TRACERS = {"minifx": minifx.graph.Tracer, "torch.fx": torch.fx.Tracer}


@dataclass(frozen=True)
class Lib:
    """What a build function may use from one library."""

    name: str
    Graph: type
    map_arg: Callable
    map_aggregate: Callable
    Proxy: type


TORCH = Lib(
    "torch.fx", torch.fx.Graph, torch.fx.map_arg, torch.fx.node.map_aggregate, torch.fx.Proxy
)
MINI = Lib(
    "minifx", minifx.graph.Graph, minifx.graph.map_arg, minifx.graph.map_aggregate, minifx.Proxy
)


def names(nodes) -> list[str]:
    return [node.name for node in nodes]


def differential(build: Callable[[Lib], Any]) -> Any:
    """Run `build` on both libraries and require the same result.

    `build(lib)` returns a graph, or a tuple `(graph, data)` whose plain `data`
    (names, numbers, strings) must also be equal. Returns minifx's result.
    """
    theirs, ours = build(TORCH), build(MINI)
    their_graph, their_data = theirs if isinstance(theirs, tuple) else (theirs, None)
    our_graph, our_data = ours if isinstance(ours, tuple) else (ours, None)
    assert str(our_graph) == str(their_graph)
    assert names(our_graph.nodes) == names(their_graph.nodes)
    assert our_data == their_data
    return ours


def chain(lib: Lib):
    """x -> add(x, 1) -> relu -> output: the small graph many tests start from."""
    graph = lib.Graph()
    x = graph.placeholder("x")
    add = graph.call_function(operator.add, (x, 1))
    relu = graph.call_function(torch.relu, (add,))
    graph.output(relu)
    return graph, x, add, relu


def diff(expected: str, actual: str) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(), actual.splitlines(), "torch.fx", "minifx", lineterm=""
    )
    return "\n".join(lines)


def error_of(kind: type, thunk) -> str:
    """The message of the `kind` error that `thunk()` raises (and nothing broader)."""
    with pytest.raises(kind) as error:
        thunk()
    assert type(error.value) is kind, (
        f"expected exactly {kind.__name__}, got {type(error.value).__name__}"
    )
    return str(error.value)


@contextlib.contextmanager
def getitem_listed_in(methods: list) -> Iterator[None]:
    """`(torch.Tensor, "__getitem__")` in `methods` (a `_wrapped_methods_to_patch`) for the
    block: tracing records `tensor[..., proxy]` as one call_method node."""
    methods.append((torch.Tensor, "__getitem__"))
    try:
        yield
    finally:
        methods.remove((torch.Tensor, "__getitem__"))


@contextlib.contextmanager
def tensor_left_as_torch_fx_found_it() -> Iterator[None]:
    """Around a torch.fx trace with `Tensor.__getitem__` patched: torch.fx puts the inherited
    method back as Tensor's own attribute, which is undone after the block, so that later
    tests (the graders' guard among them) find Tensor as it was. Not for minifx's traces,
    whose own putting back is under test."""
    inherited = "__getitem__" not in torch.Tensor.__dict__
    try:
        yield
    finally:
        if inherited and "__getitem__" in torch.Tensor.__dict__:
            del torch.Tensor.__getitem__
