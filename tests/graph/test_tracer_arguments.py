"""Values that become node arguments the torch.fx way: dataclasses, `__fx_create_arg__`,
classes made with `ProxyableClassMeta`.

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

pytestmark = pytest.mark.ch2

LIBRARIES = {"minifx": minifx, "torch.fx": torch.fx}


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


# -- ProxyableClassMeta --------------------------------------------------------------------


def pair_class(meta):
    class TensorPair(metaclass=meta):
        def __init__(self, left, right):
            self.left, self.right = left, right

        def add(self, other):
            return TensorPair(self.left + other.left, self.right + other.right)

        def mul(self, other):
            return TensorPair(self.left * other.left, self.right * other.right)

    return TensorPair


def zero_class(meta):
    class ZeroTensor(metaclass=meta):
        def __init__(self, inp):
            if inp.sum() == 0:  # runs on real values only: a Proxy records the call instead
                self.is_zero, self.tensor = True, torch.tensor([])
            else:
                self.is_zero, self.tensor = False, inp

    return ZeroTensor


def pair_from_proxies(fx):
    TensorPair = pair_class(fx.ProxyableClassMeta)

    def use_tensor_pair_ctor(x: TensorPair, y: torch.Tensor):
        return x.add(TensorPair(y, y)).mul(x)

    return use_tensor_pair_ctor, TensorPair


def pair_from_constants(fx):
    TensorPair = pair_class(fx.ProxyableClassMeta)

    def use_tensor_pair_literal(x: TensorPair):
        return x.add(TensorPair(torch.zeros(5, 3), torch.ones(5, 3))).mul(x)

    return use_tensor_pair_literal, TensorPair


def zero_from_proxies(fx):
    ZeroTensor = zero_class(fx.ProxyableClassMeta)

    def use_zero_tensor(x: torch.Tensor, y: torch.Tensor):
        return ZeroTensor(x + y)

    return use_zero_tensor, ZeroTensor


PROXYABLE = [pair_from_proxies, pair_from_constants, zero_from_proxies]


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


@pytest.mark.parametrize("program", PROXYABLE, ids=lambda p: p.__name__)
def test_proxyable_classes_trace_as_in_torch_fx(program):
    printed = {}
    for name, fx in LIBRARIES.items():
        fn, _ = program(fx)
        printed[name] = str(fx.Tracer().trace(fn))
    assert printed["minifx"] == printed["torch.fx"]


def test_a_proxyable_instance_made_of_constants_is_stored_on_the_root():
    fn, TensorPair = pair_from_constants(minifx)
    tracer = minifx.graph.Tracer()
    graph = tracer.trace(fn)
    constant = tracer.root._TensorPair_constant_0
    assert isinstance(constant, TensorPair) and torch.equal(constant.right, torch.ones(5, 3))
    assert [n.target for n in graph.nodes if n.op == "get_attr"] == ["_TensorPair_constant_0"]


def test_a_proxyable_class_without_proxies_is_built_as_usual():
    TensorPair = pair_class(minifx.ProxyableClassMeta)
    pair = TensorPair(torch.ones(1), torch.zeros(1))
    assert type(pair) is TensorPair and torch.equal(pair.add(pair).left, torch.full((1,), 2.0))
    assert minifx.ProxyableClassMeta is minifx.graph.ProxyableClassMeta


def test_outside_a_trace_only_minifx_records_a_construction_from_proxies():
    # minifx differs on purpose: a Proxy among the arguments is enough to record the call;
    # torch.fx first checks that a symbolic trace is running, and builds the object otherwise.
    made = {}
    for name, fx in LIBRARIES.items():
        graph = fx.Graph()
        x = fx.Proxy(graph.placeholder("x"))
        made[name] = (pair_class(fx.ProxyableClassMeta)(x, x), x)
    ours, x = made["minifx"]
    assert isinstance(ours, minifx.Proxy) and ours.node.target.__name__ == "TensorPair"
    assert ours.node.args == (x.node, x.node)
    theirs, x = made["torch.fx"]
    assert type(theirs).__name__ == "TensorPair" and theirs.left is x


def test_fresh_attribute_names_are_torch_fx_s():
    names = {}
    for name, fx in LIBRARIES.items():
        tracer = fx.Tracer()
        tracer.trace(pair_from_constants(fx)[0])
        names[name] = [
            tracer.get_fresh_qualname("_TensorPair_constant_"),
            tracer.get_fresh_qualname("_tensor_constant"),
        ]
    assert names["minifx"] == names["torch.fx"] == ["_TensorPair_constant_1", "_tensor_constant0"]
