"""`minifx.codegen.annotations`: type annotations in generated code, as torch.fx writes them."""

import typing
from typing import Dict, List, Optional

import pytest
import torch
import torch.fx

import minifx.codegen
import minifx.graph

pytestmark = pytest.mark.ch3


def annotated(
    x: torch.Tensor,
    n: int,
    names: List[str],
    table: Dict[str, int],
    maybe: Optional[torch.Tensor],
    pair: tuple[int, int] | None,
) -> torch.Tensor:
    return x


def test_placeholder_types_are_written_as_torch_fx_writes_them() -> None:
    ours = minifx.codegen.symbolic_trace(annotated)
    theirs = torch.fx.symbolic_trace(annotated)
    assert ours.code == theirs.code
    assert "n : int" in ours.code and "names : typing_List[str]" in ours.code


@pytest.mark.parametrize(
    "annotation",
    [
        typing.Type[int],
        type[torch.Tensor],
        typing.Tuple[int, ...],
        typing.FrozenSet[str],
        typing.Optional[typing.List[typing.Tuple[int, torch.Tensor]]],
        dict[str, list[torch.Tensor]],
        typing.Literal["a", 1],
        int | None,
    ],
    ids=repr,
)
def test_typing_generics_are_written_as_torch_fx_writes_them(annotation) -> None:
    codes = []
    for lib in (torch.fx, minifx.codegen):
        graph = (torch.fx.Graph if lib is torch.fx else minifx.graph.Graph)()
        x = graph.placeholder("x", type_expr=annotation)
        graph.output(graph.call_function(torch.relu, (x,), type_expr=annotation))
        codes.append(lib.GraphModule(torch.nn.Module(), graph).code)
    assert codes[1] == codes[0]


def test_the_output_type_becomes_the_return_annotation() -> None:
    gm = minifx.codegen.symbolic_trace(annotated)
    output = next(n for n in gm.graph.nodes if n.op == "output")
    output.type = torch.Tensor
    code = gm.recompile().src
    assert "-> torch.Tensor:" in code
    theirs = torch.fx.symbolic_trace(annotated)
    next(n for n in theirs.graph.nodes if n.op == "output").type = torch.Tensor
    assert code == theirs.recompile().src


def test_every_class_an_annotation_names_is_a_global_of_the_code() -> None:
    code = minifx.codegen.python_code(minifx.codegen.symbolic_trace(annotated).graph)
    for name in ("typing_List", "typing_Dict", "typing_Union"):
        assert name in code.globals


def scaled(
    recipe: torch.nn.functional.ScalingType | list[torch.nn.functional.ScalingType],
) -> torch.nn.functional.SwizzleType:
    return recipe


def test_a_torch_class_is_reached_by_the_name_torch_exports_it_under() -> None:
    # As in F.scaled_mm's signature, which test_fx's functional sweep traces: the class
    # is `_ScalingType`, torch.nn.functional exports it as `ScalingType`.
    ours = minifx.codegen.symbolic_trace(scaled)
    assert ours.code == torch.fx.symbolic_trace(scaled).code
    assert "recipe : torch.nn.functional.ScalingType|list[torch.nn.functional.ScalingType]" in (
        ours.code
    )
    assert ours(1) == 1
