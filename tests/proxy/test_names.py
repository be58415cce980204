"""Naming: minifx's `Namespace` and helpers against torch.fx's private ones."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx.graph
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

from minifx.proxy.names import Namespace, snake_case, target_to_name
from tests.proxy.support import param_id

pytestmark = pytest.mark.ch1

CANDIDATES = [
    "add",
    "add_1",
    "add_2",
    "x",
    "x_2",
    "x_0",
    "getattr",
    "abs",
    "len",
    "torch",
    "inf",
    "nan",
    "device",
    "layer1.0.conv1",
    "layer1_0_conv1",
    "1bad",
    "",
    "camelCase",
    "for",
    "class",
    "_",
    "__",
    "getattr_1",
    "relu",
    "a b",
    "-",
    "add_01",
]


def fx_names(candidates):
    namespace = torch.fx.graph._Namespace()
    return [namespace.create_name(c, None) for c in candidates]


def minifx_names(candidates):
    namespace = Namespace()
    return [namespace.create_name(c) for c in candidates]


@given(st.lists(st.sampled_from(CANDIDATES), max_size=40))
def test_namespace_matches_torch_fx(candidates):
    assert minifx_names(candidates) == fx_names(candidates)


@given(st.lists(st.sampled_from(CANDIDATES) | st.text("ab_019.- ", max_size=6), max_size=40))
def test_namespace_matches_torch_fx_on_made_up_candidates(candidates):
    assert minifx_names(candidates) == fx_names(candidates)


@given(st.lists(st.sampled_from(CANDIDATES), max_size=40))
def test_names_are_unique_valid_identifiers(candidates):
    names = minifx_names(candidates)
    assert len(set(names)) == len(names)
    assert all(name.isidentifier() for name in names)


@pytest.mark.parametrize(
    "candidates, expected",
    [
        (["add", "add", "add"], ["add", "add_1", "add_2"]),
        (["add_1", "add", "add"], ["add_1", "add", "add_2"]),
        (["x_3", "x", "x"], ["x_3", "x", "x_4"]),
        (["abs", "abs"], ["abs_1", "abs_2"]),
        (["getattr", "torch", "inf", "for"], ["getattr_1", "torch_1", "inf_1", "for_1"]),
        (["layer1.0.conv1", "layer1.0.conv1"], ["layer1_0_conv1", "layer1_0_conv1_1"]),
        (["1bad", "", "camelCase"], ["_1bad", "_unnamed", "camelCase"]),
    ],
    ids=["repeat", "suffix-first", "free-suffix-kept", "builtin", "reserved", "dotted", "invalid"],
)
def test_namespace_examples(candidates, expected):
    assert minifx_names(candidates) == expected == fx_names(candidates)


def test_namespace_contains_the_names_it_gave():
    namespace = Namespace()
    namespace.create_name("add")
    assert "add" in namespace and "add_1" not in namespace


def test_none_is_renamed_although_torch_fx_keeps_it():
    # torch.fx looks `None` up in its table of illegal names, finds the value
    # None there (builtins.None), and takes that for "no clash". Keeping a
    # variable called `None` would make generated code a syntax error, so
    # minifx renames it. This pins the difference down.
    assert fx_names(["None"]) == ["None"]
    assert minifx_names(["None"]) == ["None_1"]


def fx_target_to_str(target):
    return torch.fx.graph.Graph()._target_to_str(target)


@pytest.mark.parametrize(
    "target",
    [
        operator.add,
        operator.getitem,
        getattr,
        torch.relu,
        F.relu,
        torch.Tensor.add,
        F.batch_norm,
        "relu",
        "size",
        "__call__",
        "__getitem__",
        "batchNorm",
        "camelCaseName",
        "layer1.0.conv1",
        "ALL_CAPS",
        "x",
    ],
    ids=param_id,
)
def test_target_to_name_matches_torch_fx(target):
    assert target_to_name(target) == fx_target_to_str(target)


@pytest.mark.parametrize(
    "target", [torch.Tensor.__getitem__, torch.Tensor.__add__], ids=lambda target: target.__name__
)
def test_target_to_name_of_a_magic_callable_matches_torch_fx(target):
    assert target_to_name(target) == fx_target_to_str(target)


def test_snake_case():
    assert snake_case("batchNorm") == "batch_norm"
    assert snake_case("ALL_CAPS") == "all_caps"
    assert snake_case("mod.pascalCase") == "mod.pascal_case"
