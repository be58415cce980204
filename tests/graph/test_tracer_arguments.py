"""Values that become node arguments the torch.fx way: dataclasses and `__fx_create_arg__`
(classes made with `ProxyableClassMeta` are in test_proxyable.py).

Each program is traced by torch.fx and by minifx; the graphs must print alike.
`tests/codegen/test_tracer_arguments.py` runs the same programs as GraphModules.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.fx
from torch import nn

import minifx
import minifx.graph
from tests.graph.support import LIBRARIES

pytestmark = pytest.mark.ch2


# -- dataclasses, as outputs and as arguments -------------------------------------------------


@dataclasses.dataclass
class MyOutput:
    foo: torch.Tensor
    bar: torch.Tensor


class ReturnsDataclass(nn.Module):
    def forward(self, d):
        return MyOutput(foo=d + d, bar=d * 3)


class ReturnsNestedDataclass(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.m = ReturnsDataclass()

    def forward(self, x):
        tmp = self.m(x)
        return MyOutput(foo=tmp.foo, bar=[tmp.bar, 2])


@dataclasses.dataclass
class Settings:
    scale: torch.Tensor
    steps: int = 2


class UsesSettings(nn.Module):
    def forward(self, x, settings: Settings):
        return x * settings.scale + settings.steps


class PassesDataclassToLeaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = UsesSettings()

    def forward(self, x):
        return self.inner(x, Settings(scale=x.sum(), steps=3))


# -- __fx_create_arg__ ---------------------------------------------------------------------


class CustomArgObject:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __fx_create_arg__(self, tracer):
        args = (tracer.create_arg(self.x), tracer.create_arg(self.y))
        return tracer.create_node("call_function", CustomArgObject, args, {})


class UsesCustomArg(nn.Module):
    def forward(self, o: CustomArgObject):
        for x in o.x:  # not traceable: a reason to keep this module a leaf
            o.y = o.y + x
        return o.y


class PassesCustomArg(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = UsesCustomArg()

    def forward(self, x, y):
        return self.inner(CustomArgObject([x, x], y))


class LeafTracers:
    """Tracers that keep `UsesSettings` / `UsesCustomArg` whole, for each library."""

    @staticmethod
    def of(fx) -> type:
        class Leaves(fx.Tracer):
            def is_leaf_module(self, m, qualname):
                return isinstance(m, (UsesSettings, UsesCustomArg)) or super().is_leaf_module(
                    m, qualname
                )

        return Leaves


MODULES = [ReturnsDataclass, ReturnsNestedDataclass, PassesDataclassToLeaf, PassesCustomArg]


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.__name__)
def test_dataclasses_and_custom_arguments_trace_as_in_torch_fx(module):
    graphs = {name: LeafTracers.of(fx)().trace(module()) for name, fx in LIBRARIES.items()}
    assert str(graphs["minifx"]) == str(graphs["torch.fx"])


def test_a_dataclass_becomes_a_call_of_its_class_with_its_fields():
    graph = minifx.graph.Tracer().trace(ReturnsDataclass())
    node = list(graph.nodes)[-1].args[0]
    assert node.op == "call_function" and node.target is MyOutput
    assert node.args == () and list(node.kwargs) == ["foo", "bar"]


def test_fx_create_arg_decides_how_an_object_is_recorded():
    graph = LeafTracers.of(minifx)().trace(PassesCustomArg())
    made = next(node for node in graph.nodes if node.target is CustomArgObject)
    assert [arg.name for arg in made.args[0]] == ["x", "x"] and made.args[1].name == "y"
