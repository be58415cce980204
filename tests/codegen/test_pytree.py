"""`minifx.codegen.pytree`: how generated code flattens structured inputs, against torch.fx.

A graph traced with structured `concrete_args` reads its inputs with
`fx_pytree.tree_flatten_spec`, which checks each input's structure and says which
input does not have it; `register_pytree_flatten_spec` teaches it a class of one's own.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
import torch
import torch.fx

import minifx
import minifx.graph
from minifx.codegen import symbolic_trace
from minifx.graph import PH
from tests.codegen.support import Pair, add_pair, boxed_sum, f_dict_add, pair_sum

pytestmark = pytest.mark.ch3


def test_the_pytree_codegen_checks_the_structure_of_process_inputs():
    nf = symbolic_trace(f_dict_add, concrete_args={"x": {"a": PH, "z": (PH, PH)}})
    with pytest.raises(TypeError, match=r"the inputs\[0\] should be a dict with keys \['a', 'z'\]"):
        nf.graph.process_inputs({"a": 1})


def test_structured_concrete_args_reject_another_structure():
    gm = symbolic_trace(add_pair, concrete_args={"d": {"a": minifx.graph.PH, "b": minifx.graph.PH}})
    with pytest.raises(TypeError, match=r"the inputs\[0\] should be a dict with keys \['a', 'b'\]"):
        gm({"a": torch.ones(1)})


def test_a_namedtuple_of_ph_rejects_another_length_with_its_name():
    gm = symbolic_trace(pair_sum, concrete_args={"p": Pair(minifx.graph.PH, minifx.graph.PH)})
    with pytest.raises(TypeError, match=r"the inputs\[0\] should be a Pair of 2 items"):
        gm((torch.ones(1),))


def _a_plus_twice_b(x):
    return x["a"] + 2 * x["b"]


@pytest.mark.parametrize(
    "keys", [("b", "a"), ("a", "c"), ("a", "b", "c")], ids=["reordered", "renamed", "one more"]
)
def test_an_ordered_dict_input_must_have_the_traced_keys_in_the_traced_order(keys):
    """torch.fx compares the whole structure of an OrderedDict; reading its values by
    position instead gave a wrong sum with no error (`b` read as `a`)."""
    given = OrderedDict((key, torch.full((1,), float(i + 1))) for i, key in enumerate(keys))
    traced = {
        lib: lib.symbolic_trace(
            _a_plus_twice_b, concrete_args={"x": OrderedDict(a=lib.PH, b=lib.PH)}
        )
        for lib in (torch.fx, minifx)
    }
    with pytest.raises(RuntimeError, match="is different from expected spec"):
        traced[torch.fx](given)
    with pytest.raises(
        TypeError,
        match=r"the inputs\[0\] should be an OrderedDict with the keys \['a', 'b'\], in that order",
    ):
        traced[minifx](given)
    same = OrderedDict(a=torch.ones(1), b=torch.full((1,), 10.0))
    assert traced[minifx](same).tolist() == traced[torch.fx](same).tolist() == [21.0]


class Counted:
    """A class registered with pytree whose flatten-spec function counts its calls."""

    read = 0

    def __init__(self, a, b):
        self.a, self.b = a, b


def _read_counted(box, spec):
    Counted.read += 1
    return [box.a, box.b]


torch.utils._pytree.register_pytree_node(
    Counted, lambda box: ([box.a, box.b], None), lambda children, _: Counted(*children)
)


def test_register_pytree_flatten_spec_is_how_generated_code_reads_a_registered_input():
    from minifx.codegen.pytree import register_pytree_flatten_spec

    register_pytree_flatten_spec(Counted, _read_counted)
    torch.fx._pytree.register_pytree_flatten_spec(Counted, _read_counted)
    box = Counted(torch.ones(2), torch.full((2,), 2.0))
    for lib in (torch.fx, minifx):
        gm = lib.symbolic_trace(boxed_sum, concrete_args={"x": Counted(lib.PH, lib.PH)})
        before = Counted.read
        assert gm(box).tolist() == [3.0, 3.0]
        assert Counted.read == before + 1, lib.__name__


def test_tree_flatten_spec_takes_torch_fx_s_keywords():
    """`tree_flatten_spec(pytree=..., spec=...)`, as torch.fx._pytree's is called."""
    from torch.utils import _pytree as pytree

    value = {"a": torch.ones(1), "b": (torch.zeros(1), 2)}
    spec = pytree.tree_flatten(value)[1]
    theirs = torch.fx._pytree.tree_flatten_spec(pytree=value, spec=spec)
    ours = minifx._pytree.tree_flatten_spec(pytree=value, spec=spec)
    assert len(ours) == len(theirs) == 3
    assert all(a is b for a, b in zip(ours, theirs))
