"""`minifx.interpreter.transformer`: the Transformer, which interprets a graph into a new
one, against torch.fx's.

The corpus: `Transformer(gm).transform()` prints the graph and writes the code of
torch.fx's `Transformer`, prints as the original graph, lints, and runs like eager
mode; node metadata (stack traces, module stacks, a `get_attr`'s origin) is kept as
torch.fx keeps it. `returns_none` is the documented difference: minifx writes an
output node, torch.fx none; both texts are pinned. Then the subclasses of torch.fx's
docs, built on each library's Transformer, that replace one op by another, and
copies of particular modules.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.interpreter import Transformer
from tests.codegen.inputs import INPUTS
from tests.codegen.support import (
    TORCH_FX_CANNOT_COMPILE,
    assert_runs_like_eager,
    minifx_code,
    minifx_printout,
    torch_code,
)
from tests.graph.corpus import CASES, CASES_BY_NAME, Case
from tests.interpreter.support import (
    assert_same_module,
    fn,
    ids,
    listing,
    neg_sigm_swap,
    trace_both,
    with_star_args,
)
from tests.oracle import minifx_module, torch_module, trace_torch

pytestmark = pytest.mark.ch4

RUNNABLE = [c for c in CASES if c.name in INPUTS]


# The one documented difference in the Transformer's output (see test_returns_none_*).
TRANSFORMER_DIFFERS = {
    "returns_none": "minifx writes `return None`; torch.fx writes no output node"
}


# -- the corpus ------------------------------------------------------------------------------


def transformed(c: Case) -> tuple[Any, minifx.GraphModule]:
    traced, gm = minifx_module(c)
    return traced, Transformer(gm).transform()


@pytest.mark.parametrize("c", CASES, ids=ids(CASES))
def test_transformer_graph_and_code_are_torch_fx_transformers(c: Case):
    if c.name in TRANSFORMER_DIFFERS:
        pytest.skip(f"documented difference: {TRANSFORMER_DIFFERS[c.name]} (pinned below)")
    _, new = transformed(c)
    if c.name in TORCH_FX_CANNOT_COMPILE:
        # No torch.fx GraphModule to transform: its copy would print as its traced graph.
        assert minifx_printout(c, new.graph) == str(trace_torch(c).graph)
        return
    theirs = torch.fx.Transformer(torch_module(c)).transform()
    assert minifx_printout(c, new.graph) == str(theirs.graph)
    assert minifx_code(c, new.code) == torch_code(theirs.code)


def without_annotations(printout: str) -> str:
    """A printed graph without its placeholders' type annotations."""
    return re.sub(r"(%\w+ : ).*?(\[num_users=)", r"\1\2", printout)


@pytest.mark.parametrize("c", CASES, ids=ids(CASES))
def test_transformer_copy_prints_as_the_original_and_lints(c: Case):
    """The copy is the original graph, less the type annotations (a Transformer
    records placeholders without them, torch.fx's too: compared above)."""
    _, gm = minifx_module(c)
    new = Transformer(gm).transform()
    new.graph.lint()
    assert str(new.graph) == without_annotations(str(gm.graph))
    assert new.graph is not gm.graph
    assert not set(new.graph.nodes) & set(gm.graph.nodes), "the copy shares nodes with the original"


def test_transformer_copy_drops_annotations_as_torch_fx():
    c = CASES_BY_NAME["defaults_and_annotations"]
    _, gm = minifx_module(c)
    theirs = torch.fx.Transformer(torch_module(c)).transform()
    assert (
        "def forward(self, x : torch.Tensor, scale : float = 2.0, n : int = 3) -> torch.Tensor:"
        in gm.code
    )
    expected_line = "def forward(self, x, scale = 2.0, n = 3):"
    assert expected_line in Transformer(gm).transform().code
    assert expected_line in theirs.code


def test_annotation_stripping_keeps_the_rest():
    """The normalisation above removes annotations only."""
    printout = "    %z : typing.Dict[str, torch.Tensor] [num_users=1] = placeholder[target=z]"
    assert without_annotations(printout) == "    %z : [num_users=1] = placeholder[target=z]"
    assert without_annotations(RETURNS_NONE_GRAPH) == RETURNS_NONE_GRAPH


@pytest.mark.parametrize("c", RUNNABLE, ids=ids(RUNNABLE))
def test_transformed_module_runs_like_eager(c: Case):
    traced, new = transformed(c)
    assert_runs_like_eager(new, traced, c.name)


def traced_with_meta(library: Any) -> Any:
    """`listing` traced by `library`, each node given a stack trace and other meta."""
    gm = library.symbolic_trace(listing)
    for n in gm.graph.nodes:
        n.stack_trace = f'  File "model.py", line 1, in listing\n    {n.name}\n'
        n.meta["custom"] = n.name
    return gm


def test_transformer_copies_stack_traces_as_torch_fx():
    """Difference 6: both copy each node's stack trace (and module stack) and the meta
    fields torch.fx copies (`custom`, `source_fn_stack`, ...) to the nodes recorded for it
    (not to placeholders), and all of the output node's meta; torch.fx also adds
    `from_node` and `seq_nr`, minifx does not."""
    ours = Transformer(traced_with_meta(minifx)).transform()
    theirs = torch.fx.Transformer(traced_with_meta(torch.fx)).transform()
    assert [n.stack_trace for n in ours.graph.nodes] == [n.stack_trace for n in theirs.graph.nodes]
    assert [n.stack_trace is None for n in ours.graph.nodes] == [True, False, False, False]
    assert [sorted(n.meta) for n in ours.graph.nodes] == [
        [],
        ["custom", "stack_trace"],
        ["custom", "stack_trace"],
        ["custom", "stack_trace"],
    ]
    assert [sorted(n.meta) for n in theirs.graph.nodes][1] == [
        "custom",
        "from_node",
        "seq_nr",
        "stack_trace",
    ]
    assert [n.meta.get("custom") for n in ours.graph.nodes] == [
        n.meta.get("custom") for n in theirs.graph.nodes
    ]
    assert list(ours.graph.nodes)[-1].meta["custom"] == "output"


def test_transformer_keeps_a_get_attr_s_meta_as_torch_fx():
    class Weighted(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(1, 1))

        def forward(self, x):
            return self.weight + x

    metas = []
    for library in (torch.fx, minifx):
        gm = library.symbolic_trace(Weighted())
        attr = next(n for n in gm.graph.nodes if n.op == "get_attr")
        attr.meta.update(nn_module_stack="self", stack_trace="trace", source_fn_stack="source")
        new = library.Transformer(gm).transform()
        attr = next(n for n in new.graph.nodes if n.op == "get_attr")
        metas.append(
            {k: attr.meta.get(k) for k in ("nn_module_stack", "stack_trace", "source_fn_stack")}
        )
    assert (
        metas[0]
        == metas[1]
        == {"nn_module_stack": "self", "stack_trace": "trace", "source_fn_stack": "source"}
    )


class Inner(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.gain = torch.nn.Parameter(torch.ones(3))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.gain


class Outer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(self.inner(x)) + 1


def module_stacks_after_transform(library: Any) -> list:
    tracer = library.Tracer()
    tracer.record_stack_traces = True
    root = Outer()
    gm = library.GraphModule(root, tracer.trace(root))
    new = library.Transformer(gm).transform()
    return [
        (n.name, n.meta.get("nn_module_stack"), n.stack_trace is not None) for n in new.graph.nodes
    ]


def test_transformer_keeps_the_module_stacks_the_tracer_recorded_as_torch_fx():
    ours = module_stacks_after_transform(minifx)
    assert ours == module_stacks_after_transform(torch.fx)
    by_name = {name: stack for name, stack, _ in ours}
    assert list(by_name["inner_lin_1"]) == ["inner@1", "inner.lin@1"]  # not the Transformer's own
    assert by_name["add"] is None and [traced for *_, traced in ours].count(True) == 8


def test_transformer_keeps_a_get_attr_s_origin_as_torch_fx():
    # PyTorch's test_transformer_preserves_nn_module_stack_for_get_attr, on both libraries.
    for library in (minifx, torch.fx):
        gm = library.symbolic_trace(Inner())
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                node.meta["nn_module_stack"] = "self"
                node.meta["stack_trace"] = "stack_trace"
        new = library.Transformer(gm).transform()
        (gain,) = [n for n in new.graph.nodes if n.op == "get_attr"]
        assert gain.meta["nn_module_stack"] == "self" and gain.meta["stack_trace"] == "stack_trace"


RETURNS_NONE_GRAPH = """graph():
    %x : [num_users=1] = placeholder[target=x]
    %add_ : [num_users=0] = call_method[target=add_](args = (%x, 1), kwargs = {})"""


def test_returns_none_minifx_writes_an_output_node():
    """Difference 7: the program returns None; minifx's copy still returns it."""
    _, new = transformed(CASES_BY_NAME["returns_none"])
    assert str(new.graph) == RETURNS_NONE_GRAPH + "\n    return None"
    assert (
        new.code == "\n\n\ndef forward(self, x):\n    add_ = x.add_(1);  x = add_ = None\n"
        "    return None\n    "
    )


def test_returns_none_torch_fx_writes_no_output_node():
    """So that a change in torch.fx is noticed: its copy has no output node."""
    new = torch.fx.Transformer(torch_module(CASES_BY_NAME["returns_none"])).transform()
    assert str(new.graph) == RETURNS_NONE_GRAPH
    assert new.code == "\n\n\ndef forward(self, x):\n    add_ = x.add_(1);  x = add_ = None\n    "


def test_transformer_keeps_the_tracer_class():
    """Difference 7: the new graph keeps the old graph's tracer class (used by pickling)."""
    c = CASES_BY_NAME["custom_tracer_leaf_by_path"]
    _, gm = minifx_module(c)
    new = Transformer(gm).transform()
    assert new.graph._tracer_cls is gm.graph._tracer_cls
    assert new.graph._tracer_cls is not minifx.graph.Tracer


# -- the docs' sigmoid/neg swap ---------------------------------------------------------------


@pytest.mark.task("4.4")
def test_neg_sigm_swap_transformer():
    gm, tgm = trace_both(lambda: fn)
    ours = neg_sigm_swap(Transformer)(gm).transform()
    theirs = neg_sigm_swap(torch.fx.Transformer)(tgm).transform()
    assert_same_module(ours, theirs)
    assert [n.target for n in ours.graph.nodes][1:3] == [torch.neg, "sigmoid"]
    x = torch.randn(3, 4)
    torch.testing.assert_close(ours(x), torch.neg(x).sigmoid())
    torch.testing.assert_close(ours(x), theirs(x))


# -- Transformers that replace an op -----------------------------------------------------------


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3, bias=False)

    def forward(self, x):
        h = torch.relu(self.fc1(x))
        h = h.view(h.size(0), -1)
        return F.relu(self.fc2(h)).sigmoid()


def relu_to_gelu(base: type) -> type:
    class ReluToGelu(base):
        def call_function(self, target, args, kwargs):
            if target in (torch.relu, F.relu):
                return F.gelu(args[0])
            return super().call_function(target, args, kwargs)

    return ReluToGelu


def linear_to_functional(base: type) -> type:
    class LinearToFunctional(base):
        """`self.fcN(x)` becomes `F.linear(x, self.fcN.weight, self.fcN.bias)`."""

        def call_module(self, target, args, kwargs):
            submodule = self.fetch_attr(target)
            if not isinstance(submodule, nn.Linear):
                return super().call_module(target, args, kwargs)
            weight = self.get_attr(f"{target}.weight", (), {})
            bias = self.get_attr(f"{target}.bias", (), {}) if submodule.bias is not None else None
            return F.linear(args[0], weight, bias)

    return LinearToFunctional


def view_to_reshape(base: type) -> type:
    class ViewToReshape(base):
        def call_method(self, target, args, kwargs):
            if target == "view":
                return super().call_method("reshape", args, kwargs)
            return super().call_method(target, args, kwargs)

    return ViewToReshape


def reference(net: Net, x: torch.Tensor) -> torch.Tensor:
    """Net's forward written with `reshape` instead of `view`."""
    return F.relu(net.fc2(F.relu(net.fc1(x)).reshape(x.size(0), -1))).sigmoid()


REWRITES = {
    "relu_to_gelu": relu_to_gelu,
    "linear_to_functional": linear_to_functional,
    "view_to_reshape": view_to_reshape,
}


@pytest.mark.parametrize("rewrite", REWRITES)
def test_rewrite_is_torch_fx_rewrite(rewrite: str):
    gm, tgm = trace_both(Net)
    ours = REWRITES[rewrite](Transformer)(gm).transform()
    theirs = REWRITES[rewrite](torch.fx.Transformer)(tgm).transform()
    assert_same_module(ours, theirs)
    x = torch.randn(2, 4)
    torch.testing.assert_close(ours(x), theirs(x))


def test_relu_to_gelu_code():
    gm, _ = trace_both(Net)
    new = relu_to_gelu(Transformer)(gm).transform()
    assert (
        new.code
        == """


def forward(self, x):
    fc1 = self.fc1(x);  x = None
    gelu = torch._C._nn.gelu(fc1);  fc1 = None
    size = gelu.size(0)
    view = gelu.view(size, -1);  gelu = size = None
    fc2 = self.fc2(view);  view = None
    gelu_1 = torch._C._nn.gelu(fc2);  fc2 = None
    sigmoid = gelu_1.sigmoid();  gelu_1 = None
    return sigmoid
    """
    )
    net, x = gm, torch.randn(2, 4)
    expected = F.gelu(net.fc2(F.gelu(net.fc1(x)).view(2, -1))).sigmoid()
    torch.testing.assert_close(new(x), expected)


def test_linear_to_functional_code_and_state():
    gm, _ = trace_both(Net)
    new = linear_to_functional(Transformer)(gm).transform()
    assert (
        new.code
        == """


def forward(self, x):
    fc1_weight = self.fc1.weight
    fc1_bias = self.fc1.bias
    linear = torch._C._nn.linear(x, fc1_weight, fc1_bias);  x = fc1_weight = fc1_bias = None
    relu = torch.relu(linear);  linear = None
    size = relu.size(0)
    view = relu.view(size, -1);  relu = size = None
    fc2_weight = self.fc2.weight
    linear_1 = torch._C._nn.linear(view, fc2_weight, None);  view = fc2_weight = None
    relu_1 = torch.nn.functional.relu(linear_1, inplace = False);  linear_1 = None
    sigmoid = relu_1.sigmoid();  relu_1 = None
    return sigmoid
    """
    )
    assert new.fc1.weight is gm.fc1.weight, "the new module shares the old one's parameters"
    x = torch.randn(2, 4)
    torch.testing.assert_close(new(x), gm(x))


def test_view_to_reshape_runs_like_the_reference():
    gm, _ = trace_both(Net)
    new = view_to_reshape(Transformer)(gm).transform()
    assert [n.target for n in new.graph.find_nodes(op="call_method")] == [
        "size",
        "reshape",
        "sigmoid",
    ]
    x = torch.randn(2, 4)
    torch.testing.assert_close(new(x), reference(gm, x))


# -- Transformer copies of particular modules -------------------------------------------------------


def with_constant(x):
    return x + torch.tensor([1.0, 2.0])


class SharedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(self.lin(x))


def with_default(x, scale=2.0, shift: int = 1):
    return x * scale + shift


def copies(make: Any) -> tuple[minifx.GraphModule, minifx.GraphModule, torch.fx.GraphModule]:
    """The original, minifx's Transformer copy, and torch.fx's, compared as code."""
    gm, tgm = trace_both(make)
    new, theirs = Transformer(gm).transform(), torch.fx.Transformer(tgm).transform()
    assert_same_module(new, theirs)
    return gm, new, theirs


@pytest.mark.task("4.4")
def test_transformer_copy_with_a_tensor_constant():
    gm, new, theirs = copies(lambda: with_constant)
    assert new.code.splitlines()[4] == "    _tensor_constant0 = self._tensor_constant0"
    assert new._tensor_constant0 is gm._tensor_constant0
    assert theirs._tensor_constant0 is not None
    x = torch.randn(2)
    torch.testing.assert_close(new(x), with_constant(x))


@pytest.mark.task("4.4")
def test_transformer_copy_with_a_submodule_used_twice():
    gm, new, _ = copies(SharedTwice)
    assert [n.name for n in new.graph.find_nodes(op="call_module")] == ["lin", "lin_1"]
    assert [n.target for n in new.graph.find_nodes(op="call_module")] == ["lin", "lin"]
    assert [name for name, _ in new.named_children()] == ["lin"]
    assert new.lin is gm.lin
    x = torch.randn(2, 3)
    torch.testing.assert_close(new(x), gm.lin(gm.lin(x)))


@pytest.mark.task("4.4")
def test_transformer_copy_keeps_placeholder_defaults():
    _, new, _ = copies(lambda: with_default)
    assert "def forward(self, x, scale = 2.0, shift = 1):" in new.code
    x = torch.randn(2)
    torch.testing.assert_close(new(x), with_default(x))
    torch.testing.assert_close(new(x, 3.0, 2), with_default(x, 3.0, 2))


def test_transformer_copy_keeps_star_args():
    _, new, _ = copies(lambda: with_star_args)
    assert "def forward(self, x, *rest):" in new.code
    x, a, b = torch.randn(3), torch.randn(3), torch.randn(3)
    torch.testing.assert_close(new(x, a, b), with_star_args(x, a, b))
