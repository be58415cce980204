"""`minifx.codegen.python_code`: a graph as the source of `forward`, against torch.fx.

`python_code(graph)` straight from a traced graph, without a GraphModule: torch.fx's
text for every opcode, globals that are enough to run it, another name for the root,
and the line map from each line of the source to its node. The corpus is compared
as GraphModule code in test_differential.py; hostile names, targets and constants in
test_safety.py and test_syntax.py.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx

import minifx
import minifx.graph
from minifx.codegen import python_code, symbolic_trace
from tests.codegen.support import Net

pytestmark = pytest.mark.ch3


@pytest.mark.task("3.2")
def test_python_code_with_another_root_name():
    # minifx's method Graph.python_code(root_module) calls this function.
    # minifx differs on purpose: torch.fx keeps `def forward(self, ...)` while the body
    # uses `model.lin`, so its code cannot run; minifx names the first parameter `model`.
    model = Net()
    src = python_code(minifx.graph.Tracer().trace(model), root_module="model").src
    fx_src = torch.fx.Tracer().trace(model).python_code(root_module="model").src
    assert src.startswith("\n\n\ndef forward(model, x):\n    lin = model.lin(x);  x = None\n")
    assert fx_src == src.replace("def forward(model, x)", "def forward(self, x)")
    assert minifx.graph.Tracer().trace(model).python_code(root_module="model").src == src


class EveryOpcode(torch.nn.Module):
    """A placeholder with a default, get_attr, call_module, call_method, call_function
    (operator syntax, an in-place operator, torch functions, a getitem) and a tuple output."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = torch.nn.Parameter(torch.ones(3))

    def forward(self, x, y=2):
        h = self.lin(x) * self.scale
        h += 1
        view = h.view(-1, 3)
        return torch.cat([view, -view], dim=0)[0], torch.relu(h) ** y, x


@pytest.mark.task("3.2")
def test_python_code_of_every_opcode_is_torch_fx_s():
    # python_code straight from the traced graph: no GraphModule (tasks 3.3 and 3.4).
    model = EveryOpcode()
    code = python_code(minifx.graph.Tracer().trace(model))
    assert code.src == torch.fx.Tracer().trace(model).python_code(root_module="self").src
    assert "relu = y = None" in code.src  # values are freed after their last use
    namespace = dict(code.globals)
    exec(code.src, namespace)
    x = torch.randn(2, 3)
    for got, want in zip(namespace["forward"](model, x.clone()), model(x.clone())):
        torch.testing.assert_close(got, want)


@pytest.mark.task("3.2")
def test_python_code_globals_are_enough_to_exec_the_source():
    model = Net()
    code = python_code(minifx.graph.Tracer().trace(model))
    namespace = dict(code.globals)
    exec(code.src, namespace)
    x = torch.randn(2, 3)
    torch.testing.assert_close(namespace["forward"](model, x), model(x))
    assert set(code.globals) >= {"torch"}
    assert all(isinstance(name, str) and name.isidentifier() for name in code.globals)


def test_the_line_map_points_each_line_at_its_node():
    gm = symbolic_trace(Net())
    code = python_code(gm.graph)
    lines = code.src.split("\n")
    nodes = list(gm.graph.nodes)
    # Counted from the def line, as in torch.fx: 1 to 5 for the five nodes, and 6 for the
    # line after the body.
    assert code._prologue_start == 4 and sorted(code._lineno_map) == [1, 2, 3, 4, 5, 6]
    for lineno, index in list(code._lineno_map.items())[:-1]:
        node = nodes[index]
        line = lines[code._prologue_start + lineno - 1].strip()
        if node.op == "output":
            assert line == "return sum_1"
        else:
            assert line.startswith(f"{node.name} = "), (lineno, node.name, line)


def in_place_graph(fx, function, *operands, type_expr=None):
    """`function(a, *operands)` on placeholders `a` and `b`, returning `a` (built in `fx`)."""
    graph = fx.Graph()
    a, b = graph.placeholder("a"), graph.placeholder("b")
    operands = [b if operand == "b" else operand for operand in operands]
    graph.call_function(function, (a, *operands), {}, type_expr=type_expr)
    graph.output(a)
    return fx.GraphModule(torch.nn.Module(), graph)


@pytest.mark.parametrize(
    "function, operands, type_expr",
    [
        (operator.imul, ("b",), None),  # PyTorch's test_imul_code_print
        (operator.imul, ("b",), torch.Tensor),
        (operator.iadd, (2,), None),
        (operator.isub, (-1.5,), torch.Tensor),
        (operator.ipow, (-2,), None),
        (operator.setitem, (0, "b"), None),
        (operator.setitem, (-1, 2.5), torch.Tensor),
        (operator.setitem, ((0, slice(None, 1)), "b"), None),
    ],
)
def test_in_place_operators_are_written_as_torch_fx_writes_them(function, operands, type_expr):
    # `a *= b;  imul = a`: the statement, then the node's name (with its type, if it has
    # one) for the value; literal operands are written plainly, as torch.fx writes them.
    ours = in_place_graph(minifx, function, *operands, type_expr=type_expr)
    theirs = in_place_graph(torch.fx, function, *operands, type_expr=type_expr)
    assert ours.code == theirs.code
    a, b = torch.arange(1.0, 7.0).reshape(2, 3), torch.tensor(3.0)
    torch.testing.assert_close(ours(a.clone(), b), theirs(a.clone(), b))


add_one = lambda a: a + 1  # noqa: E731 (a lambda with a name: what is tested)


def test_a_lambda_target_is_called_by_the_name_it_was_assigned_to():
    def build(library):
        graph = library.Graph()
        graph.output(graph.call_function(add_one, (graph.placeholder("x"),)))
        return str(graph), library.GraphModule(torch.nn.Module(), graph).code

    assert build(minifx) == build(torch.fx)
    assert "tests_codegen_test_python_code_add_one(x)" in build(minifx)[1]
