"""Grader for exercise 3.2: lower nn.Linear.

Expected values are golden: the graphs, the generated code, the submodules
and the parameters below were written out once, for the models below. The
parameters must be the model's own objects, and the outputs the eager model's.
"""

import textwrap
import warnings

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from minifx.codegen import symbolic_trace
from minifx.graph import Graph
from tests.graders.support import (
    describe_error,
    exactly,
    explain,
    explain_graphs,
    explain_texts,
    graph_module,
    graph_text,
    refuse_graph_swaps,
    refuse_methods_of_its_own,
    summarize_error,
    tensors_close,
)

pytestmark = pytest.mark.ch3

SEE = "chapters/03-codegen.md#exercise-32-lower-nnlinear"


@pytest.fixture
def ex(impl):
    return impl.load("ch3_lower_linear")


# --- models ---------------------------------------------------------------------------


class Layer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.fc(x)).relu()


class Net(nn.Module):
    """A Linear inside a submodule, next to a LayerNorm (which has a weight and a bias too)
    that must stay, and a Linear head."""

    def __init__(self):
        super().__init__()
        self.layer1 = Layer()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.layer1(x) + x)


class Twice(nn.Module):
    """One Linear called twice; the first call's output has two users."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        y = self.fc(x)
        return self.fc(y.tanh()) + y


def _mlp():
    """Linears at the paths "0" and "2", the second without bias."""
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4, bias=False))


MODELS = {"net": Net, "mlp": _mlp, "twice": Twice}
SHAPES = {"net": (3, 8), "mlp": (3, 8), "twice": (2, 4)}


def _golden(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


GOLDEN = {
    "net": _golden("""
        graph():
            %x : [num_users=2] = placeholder[target=x]
            %layer1_fc_weight : [num_users=1] = get_attr[target=layer1_fc_weight]
            %layer1_fc_bias : [num_users=1] = get_attr[target=layer1_fc_bias]
            %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%x, %layer1_fc_weight, %layer1_fc_bias), kwargs = {})
            %layer1_norm : [num_users=1] = call_module[target=layer1.norm](args = (%linear,), kwargs = {})
            %relu : [num_users=1] = call_method[target=relu](args = (%layer1_norm,), kwargs = {})
            %add : [num_users=1] = call_function[target=operator.add](args = (%relu, %x), kwargs = {})
            %head_weight : [num_users=1] = get_attr[target=head_weight]
            %head_bias : [num_users=1] = get_attr[target=head_bias]
            %linear_1 : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%add, %head_weight, %head_bias), kwargs = {})
            return linear_1
        """),
    "mlp": _golden("""
        graph():
            %input_1 : [num_users=1] = placeholder[target=input]
            %_0_weight : [num_users=1] = get_attr[target=0_weight]
            %_0_bias : [num_users=1] = get_attr[target=0_bias]
            %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%input_1, %_0_weight, %_0_bias), kwargs = {})
            %_1 : [num_users=1] = call_module[target=1](args = (%linear,), kwargs = {})
            %_2_weight : [num_users=1] = get_attr[target=2_weight]
            %linear_1 : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%_1, %_2_weight, None), kwargs = {})
            return linear_1
        """),
    "twice": _golden("""
        graph():
            %x : [num_users=1] = placeholder[target=x]
            %fc_weight : [num_users=1] = get_attr[target=fc_weight]
            %fc_bias : [num_users=1] = get_attr[target=fc_bias]
            %linear : [num_users=2] = call_function[target=torch._C._nn.linear](args = (%x, %fc_weight, %fc_bias), kwargs = {})
            %tanh : [num_users=1] = call_method[target=tanh](args = (%linear,), kwargs = {})
            %fc_weight_1 : [num_users=1] = get_attr[target=fc_weight]
            %fc_bias_1 : [num_users=1] = get_attr[target=fc_bias]
            %linear_1 : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%tanh, %fc_weight_1, %fc_bias_1), kwargs = {})
            %add : [num_users=1] = call_function[target=operator.add](args = (%linear_1, %linear), kwargs = {})
            return add
        """),
}  # fmt: skip

GOLDEN_NET_CODE = _golden("""
    def forward(self, x):
        layer1_fc_weight = self.layer1_fc_weight
        layer1_fc_bias = self.layer1_fc_bias
        linear = torch._C._nn.linear(x, layer1_fc_weight, layer1_fc_bias);  layer1_fc_weight = layer1_fc_bias = None
        layer1_norm = self.layer1.norm(linear);  linear = None
        relu = layer1_norm.relu();  layer1_norm = None
        add = relu + x;  relu = x = None
        head_weight = self.head_weight
        head_bias = self.head_bias
        linear_1 = torch._C._nn.linear(add, head_weight, head_bias);  add = head_weight = head_bias = None
        return linear_1
    """)  # fmt: skip

# gm's submodules after the pass (the root is ''), and its parameters: (name, the path of
# the model's own parameter it must be).
GOLDEN_MODULES = {"net": ["", "layer1", "layer1.norm"], "mlp": ["", "1"], "twice": [""]}
GOLDEN_PARAMETERS = {
    "net": {
        "layer1_fc_weight": "layer1.fc.weight",
        "layer1_fc_bias": "layer1.fc.bias",
        "head_weight": "head.weight",
        "head_bias": "head.bias",
        "layer1.norm.weight": "layer1.norm.weight",
        "layer1.norm.bias": "layer1.norm.bias",
    },
    "mlp": {"0_weight": "0.weight", "0_bias": "0.bias", "2_weight": "2.weight"},
    "twice": {"fc_weight": "fc.weight", "fc_bias": "fc.bias"},
}


# --- student code that raises, and what went wrong -------------------------------------


def _name(value) -> str:
    return f"%{value.name}" if hasattr(value, "op") and hasattr(value, "graph") else repr(value)


def _diagnosis(model: nn.Module, gm, case: str) -> str | None:
    """The hint for the first thing in gm's graph that is not what the golden graph says."""
    kinds = dict(model.named_modules())
    want = GOLDEN[case]
    want_targets = {
        line.split("get_attr[target=")[1].split("]")[0]
        for line in want.splitlines()
        if "get_attr[target=" in line
    }
    nodes = list(gm.graph.nodes)
    get_attrs = [n for n in nodes if n.op == "get_attr"]
    for node in nodes:
        if node.op == "call_module" and isinstance(kinds.get(node.target), nn.Linear):
            lowered = any(
                n.target in (f"{node.target.replace('.', '_')}_weight", f"{node.target}.weight")
                for n in get_attrs
            )
            if lowered:
                return (
                    f"a Linear called twice is lowered at both calls: %{node.name} still "
                    f"calls {node.target}. Lower every call_module node of an nn.Linear, even "
                    "when its parameters are registered already."
                )
            return (
                f"%{node.name} still calls the nn.Linear at {node.target!r}: lower every "
                "call_module node whose module, gm.get_submodule(node.target), is an "
                "nn.Linear."
            )
    for line in want.splitlines():
        if "call_module[target=" in line:
            name = line.split()[0][1:]
            if name not in {n.name for n in nodes}:
                target = line.split("call_module[target=")[1].split("]")[0]
                return (
                    f"only nn.Linear is lowered: %{name} calls the "
                    f"{type(kinds.get(target)).__name__} at {target!r}, which has a weight "
                    "too, and must stay a call_module node."
                )
    parameters, buffers = dict(gm.named_parameters()), dict(gm.named_buffers())
    for node in get_attrs:
        if "." in node.target:
            return (
                f"get_attr[target={node.target}] reads through the Linear, which then stays "
                "on gm: register the parameter on gm as state_name(node.target, 'weight') "
                "(or 'bias') and get_attr that name."
            )
        if node.target not in want_targets:
            linear = kinds.get(node.target.rsplit("_", 1)[0].replace("_", "."))
            no_bias = isinstance(linear, nn.Linear) and linear.bias is None
            if node.target.endswith("_bias") and no_bias:
                return (
                    f"a Linear without bias gets no bias get_attr (%{node.name}): pass None as "
                    "F.linear's bias, as nn.Linear.forward does."
                )
            return (
                f"get_attr[target={node.target}]: name the parameters state_name(node.target, "
                f"'weight') and state_name(node.target, 'bias'): {sorted(want_targets)}."
            )
        if node.target in buffers:
            return (
                f"{node.target} is a buffer of gm: use gm.register_parameter, not "
                "register_buffer, so that it stays a parameter that trains."
            )
        if node.target not in parameters:
            return (
                f"{node.target} is not a parameter of gm: register it with "
                "gm.register_parameter before inserting the get_attr that reads it."
            )
    for node in nodes:
        if node.op != "call_function" or node.target is not F.linear:
            continue
        args = node.args
        if node.kwargs:
            return (
                f"%{node.name} passes {sorted(node.kwargs)} as kwargs: pass (input, weight, "
                "bias) as args, with no kwargs."
            )
        if len(args) == 2:
            return (
                f"%{node.name} has 2 args: pass None as F.linear's bias for a Linear without "
                "one, args (input, weight, None), as nn.Linear.forward does."
            )
        if len(args) == 3 and (
            getattr(args[0], "op", None) == "get_attr" or getattr(args[1], "op", None) != "get_attr"
        ):
            return (
                f"%{node.name}'s args are {tuple(map(_name, args))}: F.linear's args are "
                "(input, weight, bias), input being the module's input, node.args[0]."
            )
        if len(args) == 3 and getattr(args[2], "op", None) == "get_attr":
            order = [n for n in nodes if n in (args[1], args[2], node)]
            if order != [args[1], args[2], node]:
                return (
                    f"insert the weight's get_attr first, then the bias's, then F.linear "
                    f"(%{node.name}): the order of the graph is the order of the code."
                )
    return None


def _error_hint(error: BaseException, model: nn.Module, gm, case: str) -> str:
    if isinstance(error, NotImplementedError):
        return "write lower_linear: the stub still raises NotImplementedError."
    if "cannot erase" in str(error) or "still had" in str(error):  # minifx's, torch.fx's
        return (
            "point the node's users at the new F.linear node "
            "(node.replace_all_uses_with(call)) before erasing the node."
        )
    return _diagnosis(model, gm, case) or "your code raised at the line shown."


def _stale(gm) -> bool:
    """Whether gm.code is still the code generated before the graph calls F.linear."""
    lowered = any(n.op == "call_function" and n.target is F.linear for n in gm.graph.nodes)
    return lowered and "linear(" not in gm.code


RECOMPILE = (
    "call gm.recompile() after editing the graph: gm.code and forward are still the "
    "code generated before the edit."
)


def _lowered(ex, case: str, model: nn.Module | None = None):
    """(model, gm, warnings): the model, its minifx GraphModule after lower_linear, and the
    warnings the pass gave."""
    model = model if model is not None else MODELS[case]()
    gm = symbolic_trace(model)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            returned = ex.lower_linear(gm)
        except Exception as raised:  # student code: any error becomes a message
            error = raised
        else:
            error = None
    if error is not None:
        pytest.fail(
            explain(
                f"lower_linear(gm) runs ({case})",
                describe_error(error),
                _error_hint(error, model, gm, case),
                SEE,
            ),
            pytrace=False,
        )
    if returned is not gm:
        pytest.fail(
            explain(
                "lower_linear(gm) returns gm itself, edited in place",
                repr(type(returned)),
                "end with `return gm`.",
                SEE,
            ),
            pytrace=False,
        )
    # Printed and run only as minifx's own Graph: one of graded code's could print anything.
    exactly(gm.graph, Graph, "gm.graph after lower_linear", SEE)
    refuse_methods_of_its_own(gm, "gm after lower_linear", SEE)
    return model, gm, [str(w.message) for w in caught]


def _check_graph(ex, case: str, what: str):
    model, gm, _ = _lowered(ex, case)
    got = graph_text(gm.graph, f"gm.graph after lower_linear ({case})", SEE)
    if got != GOLDEN[case]:
        hint = _diagnosis(model, gm, case) or "compare the graphs line by line."
        pytest.fail(explain_graphs(what, GOLDEN[case], got, hint, SEE), pytrace=False)
    return model, gm


# --- tests ----------------------------------------------------------------------------


def _require_lowering(gm, case: str, what: str) -> None:
    """Fail unless the pass lowered the case's Linear layers: a pass that does nothing would
    pass `what` (a graph that lints, the eager outputs, no warning) without doing the
    exercise."""
    nodes = list(gm.graph.nodes)
    left = [
        n.name
        for n in nodes
        if n.op == "call_module" and isinstance(_submodule(gm, n.target), nn.Linear)
    ]
    lowered = any(  # an F.linear call that reads its weight through a get_attr node
        n.op == "call_function" and n.target is F.linear and _reads_state(n.args[1:2])
        for n in nodes
    )
    if left or not lowered:
        pytest.fail(
            explain(
                f"{what} ({case}), from a pass that also lowers the Linear layers",
                f"call_module node(s) of nn.Linear {left} still in the graph"
                if left
                else "no call_function node of F.linear that reads its weight through get_attr",
                "a pass that does nothing passes this check too: lower the Linear layers "
                "first (see test_graph), then this test counts.",
                SEE,
            ),
            pytrace=False,
        )


def _reads_state(args: tuple) -> bool:
    return bool(args) and getattr(args[0], "op", None) == "get_attr"


def _submodule(gm, target: str) -> nn.Module | None:
    try:
        return gm.get_submodule(target)
    except AttributeError:  # a node whose module the pass deleted: not a Linear any more
        return None


def test_the_net_calls_f_linear(ex):
    _check_graph(ex, "net", "both Linears of Net lowered to get_attr nodes and F.linear")


@pytest.mark.parametrize("case", ["mlp", "twice"])
def test_graph(ex, case):
    _check_graph(
        ex,
        case,
        f"the graph after lower_linear ({case}: "
        + ("a Linear without bias" if case == "mlp" else "a Linear called twice")
        + ")",
    )


def test_generated_code_calls_f_linear(ex):
    _, gm = _check_graph(ex, "net", "both Linears of Net lowered")
    got = "\n".join(line.rstrip() for line in gm.code.strip("\n").splitlines()).rstrip()
    if got != GOLDEN_NET_CODE:
        pytest.fail(
            explain_texts(
                "gm.code, generated again after the edit",
                GOLDEN_NET_CODE,
                got,
                RECOMPILE if _stale(gm) else "compare the code line by line.",
                SEE,
                kind="code",
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(MODELS))
def test_linear_submodules_are_deleted(ex, case):
    model, gm, _ = _lowered(ex, case)
    got = [name for name, _ in gm.named_modules()]
    want = GOLDEN_MODULES[case]
    if got != want:
        hint = _diagnosis(model, gm, case) or (
            "after the graph edit, gm.delete_all_unused_submodules() removes the modules no "
            "node uses any more: the Linears."
        )
        pytest.fail(
            explain(
                f"gm's submodules ({case}), named: {want} (the root is ''); no "
                "Linear, every other stays",
                repr(got),
                hint,
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", ["net", "mlp"])
def test_parameters_are_the_models_own(ex, case):
    model, gm, _ = _lowered(ex, case)
    own = dict(model.named_parameters())
    want = GOLDEN_PARAMETERS[case]
    got = dict(gm.named_parameters())
    if sorted(got) != sorted(want):
        hint = _diagnosis(model, gm, case) or (
            "gm.register_parameter(state_name(node.target, 'weight'), linear.weight), and the "
            "same for the bias; then delete_all_unused_submodules() drops the Linears' own names."
        )
        pytest.fail(
            explain(f"gm's parameters named {sorted(want)}", repr(sorted(got)), hint, SEE),
            pytrace=False,
        )
    copied = [name for name, path in want.items() if got[name] is not own[path]]
    if copied:
        pytest.fail(
            explain(
                "each parameter of gm is the model's own nn.Parameter object (so training gm trains "
                "the model)",
                f"copies or new tensors under {copied}",
                "register linear.weight itself: no .clone(), .data, .detach() or nn.Parameter(...).",
                SEE,
            ),
            pytrace=False,
        )


def test_parameters_are_registered_before_they_are_read(ex):
    _, gm, caught = _lowered(ex, "net")
    _require_lowering(gm, "net", "no warning from graph.get_attr")
    late = [
        message
        for message in caught
        if message.startswith("Attempted to insert a get_attr Node with no underlying reference")
    ]
    if late:
        pytest.fail(
            explain(
                "no warning from graph.get_attr: each parameter is on gm when its get_attr is "
                "inserted",
                late[0],
                "register the parameters on gm before inserting the get_attr nodes that read them.",
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(MODELS))
def test_graph_still_lints(ex, case):
    model, gm, _ = _lowered(ex, case)
    _require_lowering(gm, case, "gm.graph.lint() passes")
    try:
        gm.graph.lint()
    except RuntimeError as error:
        hint = _diagnosis(model, gm, case) or (
            "edit through the graph's methods (get_attr, call_function, replace_all_uses_with, "
            "erase_node), with the parameters registered on gm before the get_attr nodes."
        )
        pytest.fail(
            explain(
                f"gm.graph.lint() passes after lower_linear ({case})",
                str(error).splitlines()[0],
                hint,
                SEE,
            ),
            pytrace=False,
        )


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_the_eager_model_s(ex, case, device):
    torch.manual_seed(0)
    model = MODELS[case]().to(device)
    x = torch.randn(SHAPES[case], device=device)
    want = model(x)
    model, gm, _ = _lowered(ex, case, model)
    _require_lowering(gm, case, "gm(x) equals the eager model's output")
    if _stale(gm):  # it would run the code from before the edit: the eager model's
        pytest.fail(
            explain(
                f"gm runs the lowered graph's code ({case})",
                "gm.code is still the code generated before the edit (it calls no linear)",
                RECOMPILE,
                SEE,
            ),
            pytrace=False,
        )
    graph_module(gm, f"lower_linear's GraphModule ({case})", SEE)  # runs its graph's code
    try:
        got = gm(x)
    except Exception as error:  # the student's graph, run
        got = None
        raised = summarize_error(error)
    if not tensors_close(got, want, atol=1e-6):
        hint = _diagnosis(model, gm, case)  # a stale forward was refused above
        pytest.fail(
            explain(
                f"gm(x) equals the eager model's output ({case}): {want}",
                raised if got is None else repr(got),
                hint or "compare gm.graph with the golden graph.",
                SEE,
            ),
            pytrace=False,
        )


def test_the_pass_runs_on_torch_fx_graph_modules(ex):
    model = Net()
    gm = torch.fx.symbolic_trace(model)
    try:
        ex.lower_linear(gm)
    except Exception as error:  # student code: any error becomes a message
        raised = error
    else:
        raised = None
    if raised is not None:
        hint = _error_hint(raised, model, gm, "net")
        if hint == "your code raised at the line shown.":
            hint = (
                "use only the API minifx shares with torch.fx (gm.get_submodule, "
                "gm.register_parameter, graph.inserting_before, graph.get_attr, "
                "graph.call_function, ...)."
            )
        pytest.fail(
            explain(
                "lower_linear runs on torch.fx's GraphModule of Net",
                describe_error(raised),
                hint,
                SEE,
            ),
            pytrace=False,
        )
    refuse_graph_swaps()  # before the nodes are read: a patch could put itself back then
    got = [
        (n.name, n.op, getattr(n.target, "__name__", n.target), tuple(map(_name, n.args)))
        for n in gm.graph.nodes
    ]
    want = [
        ("x", "placeholder", "x", ()),
        ("layer1_fc_weight", "get_attr", "layer1_fc_weight", ()),
        ("layer1_fc_bias", "get_attr", "layer1_fc_bias", ()),
        ("linear", "call_function", "linear", ("%x", "%layer1_fc_weight", "%layer1_fc_bias")),
        ("layer1_norm", "call_module", "layer1.norm", ("%linear",)),
        ("relu", "call_method", "relu", ("%layer1_norm",)),
        ("add", "call_function", "add", ("%relu", "%x")),
        ("head_weight", "get_attr", "head_weight", ()),
        ("head_bias", "get_attr", "head_bias", ()),
        ("linear_1", "call_function", "linear", ("%add", "%head_weight", "%head_bias")),
        ("output", "output", "output", ("%linear_1",)),
    ]
    if got != want:
        wrong = next((g, w) for g, w in zip([*got, None, None], [*want, None, None]) if g != w)
        pytest.fail(
            explain(
                f"on torch.fx's GraphModule of Net, the same graph; the first node "
                f"that differs: {wrong[1]}",
                repr(wrong[0]),
                _diagnosis(model, gm, "net") or "compare with the golden graph of Net.",
                SEE,
            ),
            pytrace=False,
        )
