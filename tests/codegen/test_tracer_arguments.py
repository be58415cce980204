"""The programs of `tests/graph/test_tracer_arguments.py`, run as GraphModules.

Dataclass outputs and arguments, `__fx_create_arg__` and `ProxyableClassMeta`
must give the code torch.fx gives, and compute what the eager program computes.
"""

from __future__ import annotations

import dataclasses

import pytest
import torch

from tests.graph.proxyable_programs import PROXYABLE
from tests.graph.support import LIBRARIES
from tests.graph.test_tracer_arguments import MODULES, LeafTracers, PassesCustomArg

pytestmark = pytest.mark.ch3


def as_module(fx, module):
    root = module()
    return fx.GraphModule(root, LeafTracers.of(fx)().trace(root))


def flat(value):
    return dataclasses.astuple(value) if dataclasses.is_dataclass(value) else value


@pytest.mark.parametrize(
    "module", [m for m in MODULES if m is not PassesCustomArg], ids=lambda m: m.__name__
)
def test_dataclass_programs_give_torch_fx_s_code_and_eager_results(module):
    gms = {name: as_module(fx, module) for name, fx in LIBRARIES.items()}
    assert gms["minifx"].code == gms["torch.fx"].code
    x = torch.randn(3)
    expected = module()(x)
    for gm in gms.values():
        torch.testing.assert_close(flat(gm(x)), flat(expected))
        assert type(gm(x)) is type(expected)


def test_fx_create_arg_program_gives_torch_fx_s_code():
    gms = {name: as_module(fx, PassesCustomArg) for name, fx in LIBRARIES.items()}
    assert gms["minifx"].code == gms["torch.fx"].code
    assert (
        "custom_arg_object = tests_graph_test_tracer_arguments_CustomArgObject([x, x], y)"
        in gms["minifx"].code
    )
    x, y = torch.randn(3), torch.randn(3)
    for gm in gms.values():
        torch.testing.assert_close(gm(x, y), y + x + x)


@pytest.mark.parametrize("program", PROXYABLE, ids=lambda p: p.__name__)
def test_proxyable_class_programs_run_as_in_eager(program):
    codes = {}
    for name, fx in LIBRARIES.items():
        fn, cls = program(fx)
        gm = fx.symbolic_trace(fn)
        codes[name] = gm.code
        inputs = (
            (cls(torch.randn(5, 3), torch.randn(5, 3)), torch.randn(5, 3))
            if program.__name__.startswith("pair")
            else (torch.randn(5, 3), -torch.randn(5, 3))
        )
        inputs = inputs[: fn.__code__.co_argcount]
        got, expected = gm(*inputs), fn(*inputs)
        assert type(got) is cls
        for field in vars(expected):
            torch.testing.assert_close(getattr(got, field), getattr(expected, field))
    assert codes["minifx"] == codes["torch.fx"]
