"""The programs that `RewritingTracer` is compared on: tests/graph/test_rewriter.py and
test_annotation.py trace them, tests/codegen/test_rewriting_tracer.py runs them as
GraphModules and tests/interpreter/test_rewriting_tracer.py transforms them.

They are those of PyTorch's tests of the rewriter (`test_ast_rewriter_*` in test_fx.py,
`test_subgraph_rewriter_annotations_int`), in our own words, plus variants with an
`assert`, so that minifx's rewriting path runs (minifx leaves a function without one as
it is). Unlike rewriter_programs.py, this module has no `from __future__ import
annotations` (torch.fx's rewriter evaluates annotations again, so its graphs would
differ) and imports `annotate`, which torch.fx's rewritten code calls by name.
"""

import dataclasses
from typing import Any, Callable

import torch
import torch.fx
import torch.fx.experimental.rewriter as torch_rewriter
from torch import nn

# torch.fx's rewritten code calls `annotate` by name in the globals of the function's
# module, so the programs below need it here (minifx's needs no import).
from torch.fx.annotate import annotate

import minifx
import minifx.graph

REWRITERS = {"torch.fx": torch_rewriter.RewritingTracer, "minifx": minifx.graph.RewritingTracer}
TRACERS = {"torch.fx": torch.fx.Tracer, "minifx": minifx.graph.Tracer}
ANNOTATE = {"torch.fx": annotate, "minifx": minifx.graph.annotate}


# -- wrapped functions, registered with torch.fx.wrap (minifx honours it too) ----------


def lifted_leaf(a, b):
    return a[0] + a[1] + b


torch.fx.wrap("lifted_leaf")


def lifted_leaf2(a, b):
    return a[0] + a[1] + b


torch.fx.wrap(lifted_leaf2)


@torch.fx.wrap
def wrapped_via_decorator(a):
    return a + 1


def wrapped_with_submodule(x, batchnorm1d):
    return batchnorm1d(x)


torch.fx.wrap("wrapped_with_submodule")

WRAPPED = {
    "lifted_leaf": lifted_leaf,
    "lifted_leaf2": lifted_leaf2,
    "wrapped_via_decorator": wrapped_via_decorator,
    "wrapped_with_submodule": wrapped_with_submodule,
}


# -- the programs -----------------------------------------------------------------------


class AssertsEqual(nn.Module):
    def forward(self, x: torch.Tensor, y: int, z: int):
        assert y == z
        return torch.add(x, x)


class AssertsWithMessage(nn.Module):
    def forward(self, x: torch.Tensor, y: int, z: int):
        assert y == z, "msg"
        return torch.add(x, x)


class HasUnusedBatchNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(100)

    def forward(self, x: torch.Tensor):
        return torch.add(x, x)


def lifts_by_name():
    def to_trace(y):
        return lifted_leaf((4, y), 3) + lifted_leaf((3, 4), 5) + lifted_leaf((y, y), y)

    return to_trace


def lifts_directly():
    def to_trace(y):
        return lifted_leaf2((4, y), 3) + lifted_leaf2((3, 4), 5) + lifted_leaf2((y, y), y)

    return to_trace


def lifts_and_checks():
    def to_trace(y):
        assert y > 0, "y must be positive"
        return lifted_leaf((4, y), 3) + lifted_leaf2((y, y), y)

    return to_trace


class CallsWrappedViaDecorator(nn.Module):
    def forward(self, x):
        return wrapped_via_decorator(x)


class ChecksAndCallsWrappedViaDecorator(nn.Module):
    def forward(self, x):
        assert x >= 0
        return wrapped_via_decorator(x)


class PassesSubmoduleToWrapped(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.batchnorm1d = nn.BatchNorm1d(2, affine=False)

    def forward(self, x: torch.Tensor):
        assert x.dim() == 2, "a batch of rows"
        return wrapped_with_submodule(x, self.batchnorm1d)


class AnnotatesInt(nn.Module):
    def forward(self, x):
        y: int = x
        return torch.add(x, y)


class AnnotatesResults(nn.Module):
    def forward(self, x):
        r: torch.Tensor = torch.relu(x)
        s: float = x.sum()
        return r + s


class AssertsInALoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x, y):
        for dim in range(2):
            assert x.size(dim) == y.size(dim), f"dimension {dim} differs"
        return self.lin(x) + y


@dataclasses.dataclass
class Program:
    """A program of the comparison: how to make it fresh, and inputs for running it."""

    make: Callable[[], Any]
    inputs: Callable[[], tuple]

    @property
    def name(self) -> str:
        return self.make.__name__


def _tensor_pair(*shape):
    return lambda: (torch.randn(*shape), 3, 3)


PROGRAMS = [
    Program(AssertsEqual, _tensor_pair(2, 3)),
    Program(AssertsWithMessage, _tensor_pair(2, 3)),
    Program(HasUnusedBatchNorm, lambda: (torch.randn(2, 3),)),
    Program(lifts_by_name, lambda: (2,)),
    Program(lifts_directly, lambda: (2,)),
    Program(lifts_and_checks, lambda: (2,)),
    Program(CallsWrappedViaDecorator, lambda: (0,)),
    Program(ChecksAndCallsWrappedViaDecorator, lambda: (0,)),
    Program(PassesSubmoduleToWrapped, lambda: (torch.rand(3, 2),)),
    Program(AnnotatesInt, lambda: (torch.randn(3),)),
    Program(AnnotatesResults, lambda: (torch.randn(3),)),
    Program(AssertsInALoop, lambda: (torch.randn(2, 3), torch.randn(2, 3))),
]


def trace(lib: str, root: Any, tracer_class: type | None = None) -> tuple[Any, Any]:
    """`(tracer, graph)`: `root` traced by `lib`'s RewritingTracer (or `tracer_class`)."""
    tracer = (tracer_class or REWRITERS[lib])()
    return tracer, tracer.trace(root)


def nodes(graph: Any) -> list[tuple]:
    return [(node.name, node.op, node.type) for node in graph.nodes]
