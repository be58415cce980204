"""Errors of stage 4, with their exact messages.

`minifx.interpreter.errors` words them all; these tests pin them through the
Interpreter, the Transformer and `decompose`, which raise them.

An error while running a node keeps its type and its message, and gets one
PEP 678 note that names the node (`%name`, opcode and target), the Interpreter
class, and the node's line of the printed graph (difference 5: torch.fx
rewrites the message, turns a KeyError into a RuntimeError and mentions
tlparse; both are pinned here). Errors raised before any node runs (too many
arguments, a module without a graph, a wrong `boxed_run` count) have no note.
"""

from __future__ import annotations

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.interpreter import Interpreter, decompose

pytestmark = pytest.mark.ch4

ENV_HINT = (
    "The values computed so far are in the interpreter's `env`; "
    "pass garbage_collect_values=False to keep them all."
)


def square(x):
    return torch.mm(x, x)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x).sum(dim=-1) + self.lin.weight


def lookup(d):
    return d["missing"]


def add_relu(x):
    a = x + 1
    return a.relu()


def two_inputs(x, y):
    return x + y


def notes_of(error: BaseException) -> list[str]:
    return getattr(error, "__notes__", [])


# -- an op that raises ------------------------------------------------------------------------


@pytest.mark.task("4.3")
def test_call_function_error_keeps_its_type_and_message_and_names_the_node():
    with pytest.raises(RuntimeError) as error:
        Interpreter(minifx.symbolic_trace(square)).run(torch.ones(2, 3))
    assert error.value.args == ("mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)",)
    assert notes_of(error.value) == [
        "While running node %mm (call_function torch.mm) in Interpreter:\n"
        "    %mm : [num_users=1] = call_function[target=torch.mm](args = (%x, %x), kwargs = {})\n"
        + ENV_HINT
    ]


def test_call_method_error_note():
    with pytest.raises(IndexError) as error:
        Interpreter(minifx.symbolic_trace(lambda x: x.sum(dim=5))).run(torch.ones(2))
    assert error.value.args[0].startswith("Dimension out of range")
    assert notes_of(error.value) == [
        "While running node %sum_1 (call_method sum) in Interpreter:\n"
        "    %sum_1 : [num_users=1] = call_method[target=sum](args = (%x,), kwargs = {dim: 5})\n"
        + ENV_HINT
    ]


def test_call_module_error_note():
    with pytest.raises(RuntimeError) as error:
        Interpreter(minifx.symbolic_trace(Net())).run(torch.ones(2, 4))
    assert str(error.value) == "mat1 and mat2 shapes cannot be multiplied (2x4 and 3x3)"
    assert notes_of(error.value) == [
        "While running node %lin (call_module lin) in Interpreter:\n"
        "    %lin : [num_users=1] = call_module[target=lin](args = (%x,), kwargs = {})\n" + ENV_HINT
    ]


def test_note_names_the_subclass_and_the_stack_trace():
    class Checker(Interpreter):
        pass

    gm = minifx.symbolic_trace(add_relu)
    (relu,) = gm.graph.find_nodes(op="call_method")
    relu.target = "no_such_method"
    relu.stack_trace = '  File "model.py", line 3, in add_relu\n    return a.relu()\n'
    with pytest.raises(AttributeError) as error:
        Checker(gm).run(torch.ones(2))
    assert str(error.value) == "'Tensor' object has no attribute 'no_such_method'"
    assert notes_of(error.value) == [
        "While running node %relu (call_method no_such_method) in Checker:\n"
        "    %relu : [num_users=1] = call_method[target=no_such_method](args = (%add,), kwargs = {})\n"
        "It was traced from:\n"
        '  File "model.py", line 3, in add_relu\n'
        "    return a.relu()\n" + ENV_HINT
    ]


def test_key_error_stays_a_key_error():
    """Difference 5: torch.fx raises a RuntimeError from the KeyError, its message rewritten."""
    with pytest.raises(KeyError) as error:
        Interpreter(minifx.symbolic_trace(lookup)).run({})
    assert error.value.args == ("missing",)
    assert notes_of(error.value) == [
        "While running node %getitem (call_function operator.getitem) in Interpreter:\n"
        "    %getitem : [num_users=1] = call_function[target=operator.getitem]"
        "(args = (%d, missing), kwargs = {})\n" + ENV_HINT
    ]
    with pytest.raises(RuntimeError) as theirs:
        torch.fx.Interpreter(torch.fx.symbolic_trace(lookup)).run({})
    assert isinstance(theirs.value.__cause__, KeyError)
    assert str(theirs.value).startswith(
        "missing\n\nWhile executing %getitem : [num_users=1] = call_function"
        "[target=operator.getitem](args = (%d, missing), kwargs = {})\nOriginal traceback:\nNone\n"
        "Use tlparse to see full graph."
    )


def test_extra_traceback_false_adds_no_note():
    interpreter = Interpreter(minifx.symbolic_trace(square))
    interpreter.extra_traceback = False
    with pytest.raises(RuntimeError) as error:
        interpreter.run(torch.ones(2, 3))
    assert notes_of(error.value) == []
    assert str(error.value) == "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"


def test_error_in_a_nested_graph_module():
    """The inner GraphModule's generated code adds its note (stage 3), then the
    Interpreter running the outer graph adds one for its call_module node."""
    graph = minifx.Graph()
    x = graph.placeholder("x")
    graph.output(graph.call_function(torch.add, (graph.call_module("inner", (x,)), 1)))
    root = nn.Module()
    root.inner = minifx.symbolic_trace(square)
    outer = minifx.GraphModule(root, graph)
    with pytest.raises(RuntimeError) as error:
        Interpreter(outer).run(torch.ones(2, 3))
    assert str(error.value) == "mat1 and mat2 shapes cannot be multiplied (2x3 and 2x3)"
    assert notes_of(error.value) == [
        "While running node %mm (call_function torch.mm) in the generated forward of square, "
        "line 5:\n    mm = torch.mm(x, x);  x = None\n"
        "print(gm.code) shows the whole function; print(gm.graph) shows the nodes.",
        "While running node %inner (call_module inner) in Interpreter:\n"
        "    %inner : [num_users=1] = call_module[target=inner](args = (%x,), kwargs = {})\n"
        + ENV_HINT,
    ]


# -- arguments ------------------------------------------------------------------------------------


def test_missing_argument():
    with pytest.raises(RuntimeError) as error:
        Interpreter(minifx.symbolic_trace(two_inputs)).run(torch.ones(2))
    assert str(error.value) == (
        "Expected positional argument for parameter y, but one was not passed in: run() got no "
        "value for 'y', which has no default. Pass one positional argument per placeholder of "
        "the graph, in order."
    )
    assert notes_of(error.value) == [
        "While running node %y (placeholder y) in Interpreter:\n"
        "    %y : [num_users=1] = placeholder[target=y]\n" + ENV_HINT
    ]
    with pytest.raises(
        RuntimeError,
        match="^Expected positional argument for parameter y, but one was not passed in!",
    ):
        torch.fx.Interpreter(torch.fx.symbolic_trace(two_inputs)).run(torch.ones(2))


@pytest.mark.task("4.3")
def test_too_many_arguments():
    """Difference 2: torch.fx ignores the extra argument."""

    class Mine(Interpreter):
        pass

    with pytest.raises(TypeError) as error:
        Mine(minifx.symbolic_trace(two_inputs)).run(torch.ones(2), torch.ones(2), torch.ones(2))
    assert str(error.value) == (
        "Mine.run() got 3 arguments, but the graph takes 2 (%x, %y). "
        "Pass one value per placeholder."
    )
    assert notes_of(error.value) == []
    theirs = torch.fx.Interpreter(torch.fx.symbolic_trace(two_inputs))
    torch.testing.assert_close(
        theirs.run(torch.ones(2), torch.ones(2), torch.ones(2)), torch.full((2,), 2.0)
    )


def test_too_many_arguments_for_a_graph_without_placeholders():
    with pytest.raises(
        TypeError,
        match=r"^Interpreter.run\(\) got 1 arguments, but the graph "
        r"takes 0 \(none\)\. Pass one value per placeholder\.$",
    ):
        Interpreter(minifx.symbolic_trace(lambda: torch.ones(2))).run(torch.ones(2))


def test_star_args_take_any_number_of_arguments():
    gm = minifx.symbolic_trace(lambda x, *rest: x + torch.stack(rest).sum())
    ones = [torch.ones(1)] * 3
    torch.testing.assert_close(Interpreter(gm).run(torch.ones(1), *ones), torch.full((1,), 4.0))


def test_boxed_run_wrong_count():
    args = [torch.ones(2)]
    with pytest.raises(RuntimeError) as error:
        Interpreter(minifx.symbolic_trace(lambda: torch.ones(2))).boxed_run(args)
    assert str(error.value) == (
        "boxed_run got 1 arguments, but the graph has 0 placeholders "
        "(none): extra arguments. Pass exactly one value per placeholder, "
        "in order."
    )
    assert notes_of(error.value) == []
    assert len(args) == 1, "the list is cleared only when the run starts"


# -- attributes -------------------------------------------------------------------------------------


def test_fetch_attr_of_a_missing_path():
    interpreter = Interpreter(minifx.symbolic_trace(Net()))
    with pytest.raises(RuntimeError) as error:
        interpreter.fetch_attr("lin.scale")
    assert str(error.value) == (
        "the graph reads 'lin.scale', but the module has no attribute 'lin.scale'. Add it to "
        "the module (setattr, add_submodule), or fix the node's target."
    )
    with pytest.raises(RuntimeError) as error:
        interpreter.fetch_attr("encoder.lin.weight")
    assert str(error.value) == (
        "the graph reads 'encoder.lin.weight', but the module has no attribute 'encoder'. Add it "
        "to the module (setattr, add_submodule), or fix the node's target."
    )


def test_get_attr_node_of_a_missing_parameter():
    """`lin` replaced by a module without a weight: %lin runs, %lin_weight fails."""
    gm = minifx.symbolic_trace(Net())
    gm.lin = nn.Identity()
    with pytest.raises(RuntimeError) as error:
        Interpreter(gm).run(torch.ones(3, 3))
    assert str(error.value) == (
        "the graph reads 'lin.weight', but the module has no attribute 'lin.weight'. Add it to "
        "the module (setattr, add_submodule), or fix the node's target."
    )
    assert notes_of(error.value) == [
        "While running node %lin_weight (get_attr lin.weight) in Interpreter:\n"
        "    %lin_weight : [num_users=1] = get_attr[target=lin.weight]\n" + ENV_HINT
    ]


def test_module_without_a_graph():
    with pytest.raises(AttributeError):  # torch.fx reads module.graph; minifx's error is one too
        torch.fx.Interpreter(nn.Linear(2, 2))
    with pytest.raises(TypeError) as error:
        Interpreter(nn.Linear(2, 2))
    assert isinstance(error.value, AttributeError)
    assert str(error.value) == (
        "Interpreter needs a minifx Graph to run, but the Linear it got has no `graph` attribute. "
        "Pass a minifx GraphModule (minifx.symbolic_trace(module)), or the graph itself: "
        "Interpreter(module, graph=graph)."
    )


def test_torch_fx_graph_module_is_refused():
    """torch.fx names a GraphModule's class after the traced function."""
    with pytest.raises(TypeError) as error:
        Interpreter(torch.fx.symbolic_trace(square))
    assert str(error.value) == (
        "Interpreter needs a minifx Graph to run, but the square it got has a `graph` of "
        "type torch.fx.graph.Graph. Pass a minifx GraphModule (minifx.symbolic_trace(module)), "
        "or the graph itself: Interpreter(module, graph=graph)."
    )


# -- values that are not there ------------------------------------------------------------------

NO_VALUE = (
    "which has no value: it comes later in the graph, or was dropped after what the "
    "interpreter computed as its last use. Run graph.lint() to check the order."
)


def test_input_that_comes_later_in_the_graph():
    gm = minifx.symbolic_trace(add_relu)
    (add,) = gm.graph.find_nodes(op="call_function")
    (relu,) = gm.graph.find_nodes(op="call_method")
    add.prepend(relu)  # %relu now runs before %add, its input
    with pytest.raises(RuntimeError) as error:
        Interpreter(gm).run(torch.ones(2))
    assert str(error.value) == f"%relu uses %add, {NO_VALUE}"
    assert notes_of(error.value) == [
        "While running node %relu (call_method relu) in Interpreter:\n"
        "    %relu : [num_users=1] = call_method[target=relu](args = (%add,), kwargs = {})\n"
        + ENV_HINT
    ]


def test_graph_edited_after_the_interpreter_was_made():
    """The last uses are computed once, in __init__: a use added later finds its
    value dropped, in torch.fx too."""
    gm, tgm = minifx.symbolic_trace(add_relu), torch.fx.symbolic_trace(add_relu)
    ours, theirs = Interpreter(gm), torch.fx.Interpreter(tgm)
    for graph in (gm.graph, tgm.graph):
        add = next(n for n in graph.nodes if n.name == "add")
        output = next(n for n in graph.nodes if n.op == "output")
        with graph.inserting_before(output):
            graph.call_function(torch.neg, (add,))
    with pytest.raises(RuntimeError) as error:
        ours.run(torch.ones(2))
    assert str(error.value) == f"%neg uses %add, {NO_VALUE}"
    assert notes_of(error.value)[0].startswith("While running node %neg (call_function torch.neg)")
    with pytest.raises(RuntimeError, match="^Node neg referenced nonexistent value add!"):
        theirs.run(torch.ones(2))
    torch.testing.assert_close(Interpreter(gm).run(torch.ones(2)), torch.full((2,), 2.0))


# -- decompose -------------------------------------------------------------------------------------


class ReluModule(nn.Module):
    def forward(self, x):
        return F.relu(x)


RELU_LINE = (
    "%relu : [num_users=1] = call_function[target=torch.nn.functional.relu]"
    "(args = (%x,), kwargs = {inplace: False})"
)
RULE_HINT = "A rule gets the node's arguments as Proxies and must only do what a Proxy can record."


def test_decompose_rule_without_the_keywords():
    """Difference 9: rules get the kwargs too, so a rule must accept `inplace`."""

    def relu_decomposition(x):
        return (x > 0) * x

    with pytest.raises(TypeError) as error:
        decompose(ReluModule(), {F.relu: relu_decomposition})
    assert str(error.value) == (
        "test_decompose_rule_without_the_keywords.<locals>."
        "relu_decomposition() got an unexpected keyword argument 'inplace'"
    )
    assert notes_of(error.value) == [
        f"While applying the rule 'relu_decomposition' to node %relu: {RELU_LINE}\n{RULE_HINT}"
    ]


def test_decompose_rule_that_cannot_be_traced():
    def to_int(x, inplace=False):
        return int(x)

    with pytest.raises(minifx.TraceError) as error:
        decompose(ReluModule(), {F.relu: to_int})
    assert str(error.value).startswith(
        "%x was converted to an int (int(), range() or a list index)."
    )
    assert notes_of(error.value) == [
        f"While applying the rule 'to_int' to node %relu: {RELU_LINE}\n{RULE_HINT}"
    ]
