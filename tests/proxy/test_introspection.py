"""What the Proxy asks of torch and of Python (`minifx/proxy/introspection.py`)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from minifx.proxy.introspection import current_instruction, is_tensor_method_or_property
from tests.proxy.support import param_id

pytestmark = pytest.mark.ch1


@pytest.mark.parametrize(
    "function",
    [
        torch.Tensor.add,
        torch.Tensor.view,
        torch.Tensor.__getitem__,
        torch.Tensor.split,
        torch.Tensor.shape.__get__,
        torch.relu,
        torch.cat,
        F.relu,
        F.linear,
    ],
    ids=param_id,
)
def test_is_tensor_method_or_property_agrees_with_torch(function):
    assert is_tensor_method_or_property(function) == (
        torch.overrides.is_tensor_method_or_property(function)
    )


def test_tensor_methods_are_methods_and_torch_functions_are_not():
    assert is_tensor_method_or_property(torch.Tensor.add)
    assert not is_tensor_method_or_property(torch.add)


class _Unpacked:
    """Reports the instruction of the line that iterates it, as `Proxy.__iter__` does."""

    def __iter__(self):
        self.instruction = current_instruction(1)
        return iter((1, 2))


def test_current_instruction_sees_unpacking_and_its_count():
    value = _Unpacked()
    a, b = value
    assert (value.instruction.opname, value.instruction.argval) == ("UNPACK_SEQUENCE", 2)


def test_current_instruction_sees_a_loop_as_no_unpacking():
    value = _Unpacked()
    items = [v for v in value]
    assert items == [1, 2]
    assert value.instruction.opname != "UNPACK_SEQUENCE"
