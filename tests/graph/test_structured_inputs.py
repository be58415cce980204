"""`minifx/graph/structured_inputs.py`: the tracer's unusual inputs.

The traced graphs are compared with torch.fx in test_tracer_arguments.py and
the corpus; these pin the helpers one by one.
"""

from __future__ import annotations

import inspect

import pytest
import torch

from minifx.graph import PH, Graph, Tracer
from minifx.graph.structured_inputs import (
    PytreeInfo,
    all_positional,
    concrete_args_by_name,
    flattening_outputs,
    has_structured_inputs,
    named_parameters,
    star_parameters,
    takes_only_plain_parameters,
)

pytestmark = pytest.mark.ch2


def every_kind(a, b=1, *rest, c, d=2, **options):
    return a, b, rest, c, d, options


def test_parameters_are_read_from_the_signature():
    signature = inspect.signature(every_kind)
    assert named_parameters(signature) == ["a", "b", "c", "d"]
    assert star_parameters(signature) == ["*rest", "**options"]
    assert not takes_only_plain_parameters(signature)
    assert takes_only_plain_parameters(inspect.signature(lambda x, y=2: x))


def test_all_positional_takes_every_input_by_position():
    flat = all_positional(every_kind, 6)  # in the code's order: a, b, c, d, rest, options
    assert flat(1, 2, 4, 5, (3,), {"e": 6}) == (1, 2, (3,), 4, 5, {"e": 6})
    assert every_kind(1, c=4) == (1, 1, (), 4, 2, {})  # the original is untouched


def test_concrete_args_by_name_matches_by_position():
    assert concrete_args_by_name(["x", "y"], (1, PH)) == {"x": 1, "y": PH}
    with pytest.raises(TypeError) as error:
        concrete_args_by_name(["x"], (1, 2))
    assert (
        str(error.value) == "concrete_args has 2 values but the traced function takes 1 input (x)."
    )


@pytest.mark.parametrize("values", [(PH,), (PH, PH, 3)])
def test_a_concrete_args_tuple_of_the_wrong_length_raises_what_torch_fx_raises(values):
    def two_inputs(x, y):
        return x + y

    torch_values = tuple(torch.fx.PH if value is PH else value for value in values)
    with pytest.raises(RuntimeError):  # torch.fx's type for this mistake
        torch.fx.Tracer().trace(two_inputs, torch_values)
    with pytest.raises(RuntimeError) as error:
        Tracer().trace(two_inputs, values)
    assert isinstance(error.value, TypeError)  # minifx's own type, as before


def shifted(x: torch.Tensor, pair: tuple) -> dict:
    return {"out": x + pair[0]}


def test_a_structured_trace_gives_the_output_no_type_as_torch_fx():
    # The graph returns the leaves of the result, which `-> dict` does not describe.
    types = {}
    for name, tracer in (("torch.fx", torch.fx.Tracer()), ("minifx", Tracer())):
        ph = torch.fx.PH if name == "torch.fx" else PH
        graph = tracer.trace(shifted, concrete_args={"pair": (ph, 1)})
        types[name] = [node.type for node in graph.nodes if node.op in ("placeholder", "output")]
    assert types["minifx"] == types["torch.fx"]
    assert types["minifx"][-1] is None


def test_flattening_outputs_records_both_structures():
    graph = Graph()
    args = [(1, 2), 3]
    assert has_structured_inputs(args) and not has_structured_inputs([1, 2])
    flat = flattening_outputs(
        graph, lambda pair, z: {"sum": pair[0] + z, "pair": pair}, ["pair", "z"], args
    )
    assert flat((1, 2), 3) == [4, 1, 2]
    info = graph.pytree_info
    assert isinstance(info, PytreeInfo) and info.arg_names == ["pair", "z"]
    assert torch.utils._pytree.tree_unflatten([4, 1, 2], info.out_spec) == {
        "sum": 4,
        "pair": (1, 2),
    }


def test_the_tracer_uses_them_for_star_parameters():
    graph = Tracer().trace(every_kind)
    assert [n.target for n in graph.nodes if n.op == "placeholder"] == [
        "a",
        "b",
        "c",
        "d",
        "*rest",
        "**options",
    ]
