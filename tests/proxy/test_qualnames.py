"""Qualified names of functions and types (`minifx/proxy/qualnames.py`), against torch.fx's."""

from __future__ import annotations

import sys
import typing

import pytest
import torch
import torch.fx

from minifx.proxy.qualnames import qualified_name, type_repr
from tests.proxy.support import param_id
from tests.proxy.test_ir import TARGETS, _id, helper

pytestmark = pytest.mark.ch1


@pytest.mark.parametrize("target", TARGETS, ids=_id)
def test_qualified_name_is_torch_fx_s(target):
    assert qualified_name(target) == torch.fx.node._get_qualified_name(target)


assigned_lambda = lambda a: a + 1  # noqa: E731 (what is tested: a lambda with a name)
LAMBDAS = {"assigned": assigned_lambda, "inline": (lambda a: a, 0)[0]}


@pytest.mark.parametrize("name", LAMBDAS)
def test_a_lambda_is_named_from_its_source_as_torch_fx_names_it(name):
    assert qualified_name(LAMBDAS[name]) == torch.fx.node._get_qualified_name(LAMBDAS[name])


def test_qualified_name_of_a_plain_function_and_a_callable_instance():
    class Scale:
        def __call__(self, x):
            return x

    assert qualified_name(helper) == f"{helper.__module__}.helper"
    assert qualified_name(Scale()) == f"{__name__}.Scale"


@pytest.mark.parametrize(
    "annotation",
    [
        int,
        torch.Tensor,
        list[int],
        typing.List[int],
        typing.Optional[torch.Tensor],
        ...,
        helper,
        "int",
    ],
    ids=param_id,
)
def test_type_repr_is_torch_fx_s(annotation):
    assert type_repr(annotation) == torch.fx.node._type_repr(annotation)


@pytest.mark.parametrize(
    "value",
    [torch.segment_reduce, torch.nn.functional.ScalingType, torch.nn.functional.SwizzleType],
    ids=lambda value: value.__name__,
)
def test_objects_torch_exports_under_another_name_are_spelled_as_torch_fx_spells_them(value):
    # test_fx traces every torch.nn.functional function; F.scaled_mm's annotations name
    # the enum `_ScalingType`, which torch exports only as `ScalingType`.
    name = qualified_name(value)
    assert name == torch.fx.node._get_qualified_name(value)
    module, _, attribute = name.rpartition(".")
    assert getattr(sys.modules[module], attribute) is value  # and it names the object
