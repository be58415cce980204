"""Grader for exercise 2.2: remove no-ops.

The expected printouts are what the same pass produces on torch.fx's graph of
each model (the last test runs the pass on torch.fx's graphs to show it).
"""

import textwrap

import pytest
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.graph import Tracer
from tests.graders.support import explain, explain_graphs

pytestmark = pytest.mark.ch2

SEE = "chapters/02-graph.md#replacing-and-erasing"


@pytest.fixture
def ex(impl):
    return impl.load("ch2_remove_noops")


def _graph_message(what: str, want: str, got: str, hint: str) -> str:
    return explain_graphs(what, want, got, hint, SEE)


class Head(nn.Module):
    """An Identity and a Dropout in a row, then F.dropout: three no-ops in eval mode."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(8, 8)
        self.skip = nn.Identity()
        self.drop = nn.Dropout(0.1)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        y = self.drop(self.skip(self.linear(x))).relu()
        y = F.dropout(y, p=0.2, training=self.training)
        return self.out(y)


class Passthrough(nn.Module):
    """A graph whose only operation is a no-op on the input, returned as the output."""

    def __init__(self):
        super().__init__()
        self.id = nn.Identity()

    def forward(self, x):
        return self.id(x)


class Shared(nn.Module):
    """A no-op with three users, one of them the same no-op again and the output."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)
        self.drop = nn.Dropout2d()

    def forward(self, x):
        y = self.drop(self.linear(x))
        return y + y.sin(), self.drop(y)


class Plain(nn.Module):
    """No no-op at all."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return F.dropout(self.linear(x), training=True).relu()


def _chain():
    return nn.Sequential(nn.Linear(3, 3), nn.Identity(), nn.Dropout(), nn.Identity())


def _golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


CASES = {
    "eval-mode head": (lambda: Head().eval(), 3, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
            %relu : [num_users=1] = call_method[target=relu](args = (%linear,), kwargs = {})
            %out : [num_users=1] = call_module[target=out](args = (%relu,), kwargs = {})
            return out
        """),
    "train-mode head": (lambda: Head().train(), 1, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
            %drop : [num_users=1] = call_module[target=drop](args = (%linear,), kwargs = {})
            %relu : [num_users=1] = call_method[target=relu](args = (%drop,), kwargs = {})
            %dropout : [num_users=1] = call_function[target=torch.nn.functional.dropout](args = (%relu,), kwargs = {p: 0.2, training: True, inplace: False})
            %out : [num_users=1] = call_module[target=out](args = (%dropout,), kwargs = {})
            return out
        """),
    "no-op returned": (Passthrough, 1, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            return x
        """),
    "shared no-op": (lambda: Shared().eval(), 2, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %linear : [num_users=3] = call_module[target=linear](args = (%x,), kwargs = {})
            %sin : [num_users=1] = call_method[target=sin](args = (%linear,), kwargs = {})
            %add : [num_users=1] = call_function[target=operator.add](args = (%linear, %sin), kwargs = {})
            return (add, linear)
        """),
    "chained no-ops": (lambda: _chain().eval(), 3, """
        graph():
            %input_1 : [num_users=1] = placeholder[target=input]
            %_0 : [num_users=1] = call_module[target=0](args = (%input_1,), kwargs = {})
            return _0
        """),
    "nothing to remove": (Plain, 0, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
            %dropout : [num_users=1] = call_function[target=torch.nn.functional.dropout](args = (%linear,), kwargs = {p: 0.5, training: True, inplace: False})
            %relu : [num_users=1] = call_method[target=relu](args = (%dropout,), kwargs = {})
            return relu
        """),
}  # fmt: skip


def _nodes(graph):
    return {node.name: node for node in graph.nodes}


@pytest.mark.parametrize(
    "mode, name, want",
    [("eval", "skip", True), ("eval", "drop", True), ("eval", "dropout", True),
     ("eval", "x", False), ("eval", "linear", False), ("eval", "relu", False), ("eval", "output", False),
     ("train", "skip", True), ("train", "drop", False), ("train", "dropout", False)],
)  # fmt: skip
def test_is_noop(ex, mode, name, want):
    model = Head().train(mode == "train")
    node = _nodes(Tracer().trace(model))[name]
    got = ex.is_noop(node, model)
    assert got is want, explain(
        f"is_noop(%{name}) is {want} for Head in {mode} mode ({node.format_node()})", repr(got),
        "an Identity is always a no-op; dropout (module or F.dropout) only when not training. "
        "Look the module up with root.get_submodule(node.target); return a bool.", SEE)


@pytest.mark.parametrize("case", list(CASES))
def test_remove_noops(ex, case):
    make, count, golden = CASES[case]
    model = make()
    graph = Tracer().trace(model)
    before = str(graph)
    removed = ex.remove_noops(graph, model)
    want = _golden(golden)
    assert str(graph) == want, _graph_message(
        f"the graph after remove_noops ({case})", want, str(graph),
        "for each no-op: node.replace_all_uses_with(node.args[0]), then graph.erase_node(node). "
        "The output node is a user like any other.") + f"\n\nGraph before remove_noops:\n{before}"
    assert removed == count, explain(f"remove_noops returns {count}, the number of nodes erased",
                                     repr(removed), "count each node you erase.", SEE)


@pytest.mark.parametrize("case", list(CASES))
def test_the_graph_still_lints(ex, case):
    make, _, _ = CASES[case]
    model = make()
    graph = Tracer().trace(model)
    ex.remove_noops(graph, model)
    try:
        graph.lint()
    except RuntimeError as error:
        pytest.fail(explain("graph.lint() passes after remove_noops", str(error),
                            "edit only through graph methods (replace_all_uses_with, erase_node); "
                            "never set node.users or the list links yourself.", SEE))


def test_users_are_rewired(ex):
    model = Shared().eval()
    graph = Tracer().trace(model)
    ex.remove_noops(graph, model)
    linear = _nodes(graph).get("linear")
    users = sorted(user.name for user in linear.users) if linear is not None else None
    assert users == ["add", "output", "sin"], explain(
        "%linear.users == {sin, add, output}: the users of both erased dropouts now use %linear",
        f"{users}", "replace_all_uses_with moves every user, the output included.", SEE)


def test_the_pass_runs_on_torch_fx_graphs(ex):
    model = Head().eval()
    graph = torch.fx.Tracer().trace(model)
    removed = ex.remove_noops(graph, model)
    want = _golden(CASES["eval-mode head"][2])
    assert str(graph) == want, _graph_message(
        "on torch.fx's graph of the eval-mode head, the same result", want, str(graph),
        "use only the public Graph and Node API (graph.nodes, node.op, node.target, node.args, "
        "node.kwargs, replace_all_uses_with, erase_node); minifx and torch.fx share it.")
    assert removed == 3, explain("remove_noops returns 3 on torch.fx's graph too", repr(removed),
                                 "count each node you erase.", SEE)
