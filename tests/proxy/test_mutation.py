"""minifx/proxy/mutation.py: finding torch's schemas for an operator, binding a call to
one, and refusing a call that only a mutating schema accepts.

The tracers' behaviour with `check_mutable_operations` on, side by side with torch.fx's,
is tested in tests/graph/test_mutable_operations.py; these are the module's parts alone,
against torch's own schema objects.
"""

from __future__ import annotations

import pytest
import torch

from minifx.proxy.mutation import accepts, check_for_mutable_operation, schemas_of

pytestmark = pytest.mark.ch1

SIGMOID, SIGMOID_OUT = (
    "aten::sigmoid(Tensor self) -> Tensor",
    "aten::sigmoid.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)",
)


def schema(overload: torch._ops.OpOverload) -> torch.FunctionSchema:
    return overload._schema


def test_schemas_of_a_torch_function_an_overload_and_a_packet():
    assert [str(s) for s in schemas_of(torch.sigmoid)] == [SIGMOID, SIGMOID_OUT]
    assert schemas_of(torch.ops.aten.relu_.default) == [schema(torch.ops.aten.relu_.default)]
    packet = torch.ops.aten.add
    assert [str(s) for s in schemas_of(packet)] == [
        str(getattr(packet, name)._schema) for name in packet.overloads()
    ]
    assert len(schemas_of(packet)) > 1


def test_a_function_torch_has_no_schema_for_has_none():
    assert schemas_of(lambda x: x) == [] and schemas_of(len) == []


@pytest.mark.parametrize(
    "args, kwargs, want",
    [
        ((1,), {}, True),  # sigmoid(x)
        ((), {"input": 1}, True),  # `self` is bound by the name `input`, as in Python
        ((), {"self": 1}, False),
        ((1, 2), {}, False),  # one argument more than the schema has
        ((1,), {"input": 1}, False),  # the same parameter twice
        ((1,), {"other": 1}, False),  # a name the schema does not have
    ],
)
def test_accepts_binds_by_count_and_name_like_a_python_call(args, kwargs, want):
    assert accepts(schema(torch.ops.aten.sigmoid.default), args, kwargs) is want


def test_accepts_needs_every_parameter_without_a_default_and_keyword_only_ones_by_name():
    out = schema(torch.ops.aten.sigmoid.out)
    assert accepts(out, (1,), {"out": 2})
    assert not accepts(out, (1,), {})  # `out` has no default
    assert not accepts(out, (1, 2), {})  # and is keyword-only
    add = schema(torch.ops.aten.add.Tensor)  # add(self, other, *, alpha=1)
    assert accepts(add, (1, 2), {}) and accepts(add, (1, 2), {"alpha": 3})


def test_a_call_only_a_mutating_schema_accepts_is_refused_with_its_schema():
    x = torch.zeros(2)
    with pytest.raises(RuntimeError, match=r"mutable operation aten::sigmoid\.out\(") as info:
        check_for_mutable_operation(torch.sigmoid, (x,), {"out": x})
    assert "How to fix: use the functional form" in str(info.value)
    with pytest.raises(RuntimeError, match=r"aten::relu_\("):
        check_for_mutable_operation(torch.ops.aten.relu_.default, (x,), {})


@pytest.mark.parametrize(
    "target, args, kwargs",
    [
        (torch.sigmoid, (0,), {}),  # only the functional schema accepts it
        (torch.add, (0, 0), {"alpha": 2}),  # several schemas accept it: let through
        (len, ([],), {}),  # no schema at all
    ],
    ids=["functional", "ambiguous", "no schema"],
)
def test_other_calls_are_let_through(target, args, kwargs):
    check_for_mutable_operation(target, args, kwargs)
