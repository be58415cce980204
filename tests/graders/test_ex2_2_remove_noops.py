"""Grader for exercise 2.2: remove no-ops.

The models are the grader's own, and the expected printouts are golden: what the pass
must leave of minifx's (and, in the last test, torch.fx's) graph of each model.
"""

import re
import textwrap

import pytest
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.graph import Tracer
from tests.graders.support import (
    call_graded,
    error_line,
    explain,
    explain_graphs,
    graph_text,
    safe_repr,
)

pytestmark = pytest.mark.ch2

SEE = "chapters/02-graph.md#replacing-and-erasing"


@pytest.fixture
def ex(impl):
    return impl.load("ch2_remove_noops")


def _graph_message(what: str, want: str, got: str, hint: str) -> str:
    return explain_graphs(what, want, got, hint, SEE)


def _raised(error: BaseException) -> str:
    lines = str(error).splitlines() or [""]
    return f"{type(error).__name__}: {lines[0]}\n  raised at {error_line(error, outside='(not in your code)')}"


_REWIRE = (
    "point a no-op's users at its input before erasing it: "
    "node.replace_all_uses_with(node.args[0]), then graph.erase_node(node). "
    "replace_all_uses_with reaches inside the output's tuple too."
)


def _error_hint(error: BaseException) -> str:
    """The hint for an error that remove_noops raised."""
    text = str(error)
    if isinstance(error, NotImplementedError):
        return "write it: the stub still raises NotImplementedError."
    if "tried to erase" in text and "users in the graph" in text:
        return _REWIRE
    if "changed size during iteration" in text:
        return (
            "iterate over a copy (list(node.users)), or let node.replace_all_uses_with "
            "move every user."
        )
    return "your code raised at the line shown."


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


def _every_dropout():
    return nn.Sequential(
        nn.Dropout1d(),
        nn.Dropout2d(),
        nn.Dropout3d(),
        nn.AlphaDropout(),
        nn.FeatureAlphaDropout(),
        nn.Dropout(),
    )


def _train_head_eval_drop():
    model = Head().train()
    model.drop.eval()
    return model


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
    "every dropout layer": (lambda: _every_dropout().eval(), 6, """
        graph():
            %input_1 : [num_users=1] = placeholder[target=input]
            return input_1
        """),
    "eval-mode drop in a training head": (_train_head_eval_drop, 2, """
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %linear : [num_users=1] = call_module[target=linear](args = (%x,), kwargs = {})
            %relu : [num_users=1] = call_method[target=relu](args = (%linear,), kwargs = {})
            %dropout : [num_users=1] = call_function[target=torch.nn.functional.dropout](args = (%relu,), kwargs = {p: 0.2, training: True, inplace: False})
            %out : [num_users=1] = call_module[target=out](args = (%dropout,), kwargs = {})
            return out
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


def _head(mode: str) -> nn.Module:
    """Head in `mode`: "eval", "train", or the root in one mode and `drop` in the other."""
    model = Head().train(mode in ("train", "train, drop eval"))
    if mode == "train, drop eval":
        model.drop.eval()
    if mode == "eval, drop train":
        model.drop.train()
    return model


_NEVER = (
    "only call_module (Identity, dropout layers) and call_function F.dropout nodes can be no-ops."
)
_IDENTITY = "an nn.Identity is a no-op in either mode, training or not."
_OWN_FLAG = (
    "read the dropout layer's own flag, root.get_submodule(node.target).training, "
    "not root.training: a submodule can be in another mode than the root."
)
_DROPOUT_TRAINING = (
    "a dropout layer in training mode (module.training is True) is not a no-op; "
    "it is one only in eval mode."
)
_F_DROPOUT = (
    "F.dropout (node.target is torch.nn.functional.dropout) is a no-op only with "
    "training=False: read node.kwargs['training']."
)
IS_NOOP = [
    # (model, node name, expected, the hint when is_noop gets it wrong)
    ("eval", "skip", True, _IDENTITY),
    ("train", "skip", True, _IDENTITY),
    ("eval", "drop", True, "an nn.Dropout in eval mode (module.training is False) is a no-op; find "
                           "the module with root.get_submodule(node.target)."),
    ("train", "drop", False, _DROPOUT_TRAINING),
    ("train, drop eval", "drop", True, _OWN_FLAG),
    ("eval, drop train", "drop", False, "this dropout layer is in training mode although root is "
                                        "not: it is not a no-op. " + _OWN_FLAG[0].upper() + _OWN_FLAG[1:]),
    ("eval", "dropout", True, _F_DROPOUT),
    ("train", "dropout", False, _F_DROPOUT),
    ("eval", "x", False, _NEVER),
    ("eval", "linear", False, _NEVER),
    ("eval", "relu", False, _NEVER),
    ("eval", "out", False, _NEVER),
    ("eval", "output", False, _NEVER),
]  # fmt: skip
_DROPOUT_KINDS = ["Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]


def _check_is_noop(ex, model, node, want, hint, what):
    got, raised = call_graded(ex.is_noop, node, model)
    if raised is not None:
        if isinstance(raised, NotImplementedError):
            hint = "write it: the stub still raises NotImplementedError."
        elif node.op != "call_module":
            hint = (
                f"%{node.name} is a {node.op} node: look a module up "
                "(root.get_submodule(node.target)) only for call_module nodes."
            )
        else:
            hint = "your code raised at the line shown."
        pytest.fail(
            explain(f"is_noop(%{node.name}) is {want} {what}", _raised(raised), hint, SEE),
            pytrace=False,
        )
    if got not in (True, False):
        hint = "return True or False, not another value."
    assert got is want, explain(
        f"is_noop(%{node.name}) is {want} {what} ({node.format_node()})", repr(got), hint, SEE
    )


@pytest.mark.parametrize(
    "mode, name, want, hint", IS_NOOP, ids=[f"{mode}-{name}" for mode, name, _, _ in IS_NOOP]
)
def test_is_noop(ex, mode, name, want, hint):
    model = _head(mode)
    node = _nodes(Tracer().trace(model))[name]
    _check_is_noop(ex, model, node, want, hint, f"for Head in {mode} mode")


@pytest.mark.parametrize("training", [False, True], ids=["eval", "train"])
def test_is_noop_for_every_dropout_layer(ex, training):
    model = nn.Sequential(*(getattr(nn, kind)() for kind in _DROPOUT_KINDS)).train(training)
    nodes = [node for node in Tracer().trace(model).nodes if node.op == "call_module"]
    for kind, node in zip(_DROPOUT_KINDS, nodes):
        hint = (
            _DROPOUT_TRAINING
            if training
            else f"nn.{kind} is one of DROPOUT_MODULES but not a subclass of nn.Dropout: test "
            "isinstance(module, DROPOUT_MODULES)."
        )
        _check_is_noop(
            ex,
            model,
            node,
            not training,
            hint,
            f"for an nn.{kind} in {'training' if training else 'eval'} mode",
        )


def _names(graph_text: str) -> list[str]:
    return re.findall(r"^\s*%(\w+) :", graph_text, flags=re.M)


def _listed(names: list[str]) -> str:
    return ", ".join(f"%{name}" for name in names)


def _dangling(graph_text: str) -> list[str]:
    """Names that nodes (or the output) read but that no line of `graph_text` defines."""
    defined = set(_names(graph_text))
    used = set(re.findall(r"%(\w+)", " ".join(re.findall(r"\(args = .*", graph_text))))
    used |= set(
        re.findall(r"\w+", " ".join(re.findall(r"^\s*return (.*)", graph_text, flags=re.M)))
    )
    return sorted(used - defined)


_STALE = (
    "reads an erased no-op: take each no-op's input from node.args[0] when you erase it, "
    "not from a list made before the edits (a no-op's input may be an earlier no-op)."
)


def _mismatch_hint(before: str, want: str, got: str) -> str:
    """The hint for a graph that differs from the golden one after the pass."""
    if _dangling(got):
        return f"the graph {_STALE} Erased: {_listed(_dangling(got))}."
    if got == before:
        return (
            "nothing was erased: visit every node of graph.nodes and erase each one for "
            "which is_noop(node, root) is True."
        )
    kept = [n for n in _names(got) if n not in _names(want)]
    lost = [n for n in _names(want) if n not in _names(got)]
    if kept:
        return (
            f"{_listed(kept)} should be gone: erase every no-op, also one that follows "
            "another (if is_noop disagrees, its own test says why)."
        )
    if lost:
        return f"{_listed(lost)} should stay: erase only the nodes for which is_noop is True."
    return _REWIRE


def _run_pass(ex, case):
    """The golden graph, the graph before and after `ex.remove_noops`, and what it returned."""
    make, count, golden = CASES[case]
    model = make()
    graph = Tracer().trace(model)
    before = str(graph)
    removed, raised = call_graded(ex.remove_noops, graph, model)
    if raised is not None:
        pytest.fail(
            explain(
                f"remove_noops to edit the graph ({case})",
                _raised(raised),
                _error_hint(raised),
                SEE,
            )
            + f"\n\nGraph before remove_noops:\n{before}",
            pytrace=False,
        )
    return _golden(golden), count, before, graph, removed


def _count_message(count, removed) -> str:
    hint = (
        "remove_noops returned None: return the number of nodes erased."
        if removed is None
        else "count each node you erase, and return the count."
    )
    return explain(
        f"remove_noops returns {count}, the number of nodes erased", safe_repr(removed), hint, SEE
    )


@pytest.mark.parametrize("case", list(CASES))
def test_remove_noops(ex, case):
    want, count, before, graph, removed = _run_pass(ex, case)
    got = graph_text(graph, f"the graph after remove_noops ({case})", SEE)
    assert got == want, (
        _graph_message(
            f"the graph after remove_noops ({case})",
            want,
            got,
            _mismatch_hint(before, want, got),
        )
        + f"\n\nGraph before remove_noops:\n{before}"
    )
    assert removed == count and type(removed) is int, _count_message(count, removed)


@pytest.mark.parametrize("case", list(CASES))
def test_the_graph_still_lints(ex, case):
    _, count, before, graph, removed = _run_pass(ex, case)
    # A pass that returns no count has not done its work (and an object of its own in
    # place of the count could answer == with True).
    assert type(removed) is int, _count_message(count, removed)
    _, raised = call_graded(graph.lint)
    if raised is not None:
        hint = (
            f"the graph {_STALE}"
            if _dangling(str(graph))
            else "edit only through graph methods (replace_all_uses_with, erase_node); never set "
            "node.users or the list links yourself."
        )
        pytest.fail(
            explain("graph.lint() passes after remove_noops", str(raised), hint, SEE)
            + f"\n\nGraph before remove_noops:\n{before}",
            pytrace=False,
        )


def test_users_are_rewired(ex):
    _, _, _, graph, _ = _run_pass(ex, "shared no-op")
    linear = _nodes(graph).get("linear")
    users = sorted(user.name for user in linear.users) if linear is not None else None
    assert users == ["add", "output", "sin"], explain(
        "%linear.users == {sin, add, output}: the users of both erased dropouts now use %linear",
        f"{users}",
        _REWIRE,
        SEE,
    )


def test_the_pass_runs_on_torch_fx_graphs(ex):
    model = Head().eval()
    graph = torch.fx.Tracer().trace(model)
    removed, raised = call_graded(ex.remove_noops, graph, model)
    if raised is not None:
        pytest.fail(
            explain(
                "remove_noops to edit torch.fx's graph of the eval-mode head",
                _raised(raised),
                _error_hint(raised) + " Use only the Graph and Node "
                "API that minifx and torch.fx share.",
                SEE,
            ),
            pytrace=False,
        )
    want = _golden(CASES["eval-mode head"][2])
    assert str(graph) == want, _graph_message(
        "on torch.fx's graph of the eval-mode head, the same result",
        want,
        str(graph),
        "use only the public Graph and Node API (graph.nodes, node.op, node.target, node.args, "
        "node.kwargs, replace_all_uses_with, erase_node); minifx and torch.fx share it.",
    )
    assert removed == 3 and type(removed) is int, _count_message(3, removed)
