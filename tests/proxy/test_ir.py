"""The IR's vocabulary (`minifx/proxy/ir.py`): opcodes, the line printer and the grammar,
against torch.fx's printer."""

from __future__ import annotations

import builtins
import math
import operator
import typing
from types import SimpleNamespace

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx.proxy.ir as ir
from minifx.proxy import OPCODES, trace_to_tape
from minifx.proxy.ir import NODE_LINE, format_line, format_target
from minifx.proxy.qualnames import qualified_name

pytestmark = pytest.mark.ch1


def helper(x):
    return x


# Targets of every kind: builtins, the operator module, torch functions (C and Python),
# torch.nn.functional, tensor methods (C and Python: split, __rsub__), operators,
# other modules, user functions and classes.
TARGETS = [
    getattr,
    len,
    abs,
    max,
    isinstance,
    int,
    slice,
    range,
    *(
        getattr(operator, name)
        for name in (
            "add",
            "sub",
            "truediv",
            "getitem",
            "not_",
            "iadd",
            "setitem",
            "abs",
            "neg",
            "contains",
            "is_",
        )
    ),
    torch.relu,
    torch.add,
    torch.cat,
    torch.flatten,
    torch.where,
    torch.Size,
    torch.device,
    torch.tensor,
    torch._assert,
    torch.special.erf,
    torch.nn.init.normal_,
    F.relu,
    F.linear,
    F.conv2d,
    F.softmax,
    F.gelu,
    F.dropout,
    F.batch_norm,
    F.layer_norm,
    torch.Tensor.add,
    torch.Tensor.relu,
    torch.Tensor.view,
    torch.Tensor.__getitem__,
    torch.Tensor.__add__,
    torch.Tensor.size,
    torch.Tensor.split,
    torch.Tensor.__rsub__,
    torch.Tensor.unflatten,
    torch.Tensor.norm,
    torch.ops.aten.add.Tensor,
    torch.ops.aten.add,
    torch.ops.aten.relu.default,
    math.sqrt,
    math.floor,
    typing.cast,
    helper,
    nn.Linear,
]


def _id(target):
    return getattr(target, "__qualname__", None) or str(target)


def test_opcodes_are_torch_fx_s():
    # torch.fx's list also holds "root", an opcode no node has (nothing in torch.fx makes one).
    assert set(OPCODES) == set(torch.fx.node._legal_ops) - {"root"}
    assert len(OPCODES) == 6


def test_opcodes_stay_importable_from_the_package():
    import minifx.proxy

    assert minifx.proxy.OPCODES is ir.OPCODES


@pytest.mark.parametrize("target", TARGETS, ids=_id)
def test_format_target_prints_like_torch_fx(target):
    assert format_target(target) == torch.fx.Node._pretty_print_target(target)


@pytest.mark.parametrize(
    "target, printed, qualified",
    [
        (operator.add, "operator.add", "_operator.add"),
        (getattr, "builtins.getattr", "getattr"),
        (torch.relu, "torch.relu", "torch.relu"),
        (torch.Tensor.split, "torch.Tensor.split", "torch.Tensor.split"),
        ("relu", "relu", None),
    ],
)
def test_printed_target_and_qualified_name_differ_only_for_builtins_and_operator(
    target, printed, qualified
):
    # Printing says where a function comes from; generated code calls builtins by
    # name and imports the operator module's functions from `_operator`.
    assert format_target(target) == printed
    if qualified is not None:
        assert qualified_name(target) == qualified


# -- The printer, differential: each torch.fx node printed by minifx's format_line ----


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.scale = nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor, y: int = 3, *, flag: bool = True):
        h = self.linear(x) * self.scale
        parts = torch.split(h, [2, 2], dim=-1)
        z = torch.cat([parts[0], parts[1] * y], dim=-1).sum(dim=-1, keepdim=True)
        return {"out": F.relu(z), "pair": (h.shape, x.dtype)}


def _models():
    def plain(a, b):
        return torch.relu(a + b).view(-1) * 2, -a, a[0, 1:], 1 - b

    graph = torch.fx.Graph()
    x = graph.placeholder("x", type_expr=torch.Tensor)
    w = graph.get_attr("w", type_expr=torch.Tensor)
    s = graph.call_function(operator.add, (x, w), type_expr=torch.Tensor)
    graph.call_method("relu", (s,))  # unused: [num_users=0]
    graph.output((s, [x, {"k": w}]), type_expr=tuple[torch.Tensor, list])
    return {
        "net": torch.fx.symbolic_trace(_Net()).graph,
        "plain": torch.fx.symbolic_trace(plain).graph,
        "by_hand": graph,
    }


MODELS = _models()


def _stand_ins(graph: torch.fx.Graph) -> dict:
    """A plain object per torch.fx node, holding only what the printer reads."""
    copies: dict = {}
    for node in graph.nodes:
        args, kwargs = torch.fx.node.map_arg((node.args, node.kwargs), lambda n: copies[n])
        copies[node] = SimpleNamespace(
            name=node.name,
            op=node.op,
            target=node.target,
            args=args,
            kwargs=kwargs,
            type=node.type,
            graph=None,
        )
    return copies


def _leaf(arg) -> str:
    return f"%{arg.name}" if isinstance(arg, SimpleNamespace) else str(arg)


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_format_line_prints_each_node_as_torch_fx(model):
    graph = MODELS[model]
    copies = _stand_ins(graph)
    for node in graph.nodes:
        line = format_line(copies[node], leaf=_leaf, num_users=len(node.users))
        expected = node.format_node()
        if node.op == "output":  # a stand-in's repr is not its name; torch.fx's Node's is
            expected = f"return {torch.fx.node.map_arg(node.args[0], lambda n: copies[n])}"
        assert line == expected


# -- The grammar: every line torch.fx prints parses, and the parts are right -----------


def _check_line(line: str, with_users: bool) -> None:
    if line.startswith("return "):
        return
    match = NODE_LINE.fullmatch(line)
    assert match, f"does not follow the grammar: {line!r}"
    assert (match["num_users"] is not None) == with_users, line
    tail, op = match["tail"] or "", match["op"]
    if op == "get_attr":
        assert tail == "", line
    elif op == "placeholder":
        assert tail == "" or tail.startswith("(default="), line
    else:
        assert tail.startswith("(args = ("), line


@pytest.mark.parametrize("model", MODELS, ids=str)
def test_every_line_of_torch_fx_s_printout_follows_the_grammar(model):
    header, *lines = str(MODELS[model]).split("\n")
    assert header == "graph():"
    assert all(line.startswith("    ") for line in lines)
    for line in lines:
        _check_line(line.removeprefix("    "), with_users=True)


def test_the_tape_follows_the_grammar_without_num_users():
    def f(x, y=2):
        return torch.relu(x * y)[0], x.size(-1), {"k": [x, 1]}

    f.__annotations__["y"] = int  # a type, not the string this file's annotations would be

    header, *lines = str(trace_to_tape(f)).split("\n")
    assert header == "tape():"
    for line in lines:
        _check_line(line.removeprefix("    "), with_users=False)
    assert lines[1] == "    %y : int = placeholder[target=y](default=2)"


def test_the_grammar_names_the_opcodes_and_its_example_parses():
    doc = ir.__doc__
    for opcode in OPCODES[:-1]:
        assert f'"{opcode}"' in doc
    example = [line.strip() for line in doc.split("\n") if line.strip().startswith("%")]
    assert len(example) == 3
    for line in example:
        _check_line(line, with_users=True)


def test_a_line_that_breaks_the_grammar_does_not_parse():
    for line in [
        "%x : [num_users=1] placeholder[target=x]",  # no " = "
        "%x : [num_users=1] = call_fn[target=f](args = (), kwargs = {})",
        "%1x = placeholder[target=x]",
        "%add = call_function[target=operator.add](args = %x, kwargs = {})",
    ]:
        assert NODE_LINE.fullmatch(line) is None, line


def test_builtins_never_print_bare():
    assert format_target(builtins.getattr) == "builtins.getattr"
