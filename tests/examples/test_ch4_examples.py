"""The longer examples of chapter 4, checked against torch.fx running the same ideas.

- `examples/ch4_shape_prop.py`: both shape propagations must record, for every node, the
  shape and dtype that `torch.fx.passes.shape_prop.ShapeProp` records in `tensor_meta`,
  and return what the model returns.
- `examples/ch4_transforms.py`: each Interpreter or Transformer must do what the same class
  body on `torch.fx.Interpreter` / `torch.fx.Transformer` does (outputs, printed graphs,
  code), and `decompose` what the loop of torch.fx's documentation makes of the same rules.
"""

from __future__ import annotations

import operator
from typing import Any, Callable

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn
from torch.fx.passes.shape_prop import ShapeProp as FxShapeProp
from torch.fx.passes.shape_prop import TensorMetadata

from examples.ch4_shape_prop import ShapeProp, TinyCNN, shape_prop_by_hand
from examples.ch4_transforms import (
    RELU_RULES,
    NegSigmoidSwap,
    NegSigmoidSwapTransformer,
    ReluToGelu,
    relu_decomposition,
)
from minifx.codegen import symbolic_trace
from minifx.graph import PH
from minifx.interpreter import Interpreter, Transformer, decompose
from tests.codegen.test_models import MODELS
from tests.interpreter.support import neg_sigm_swap
from tests.oracle import SEED, model_and_input

pytestmark = pytest.mark.ch4

SHAPE_MODELS = {**MODELS, "tiny_cnn": (TinyCNN, (2, 3, 16, 16))}


# -- shape propagation -------------------------------------------------------------------


def fx_shapes(model: nn.Module, x: torch.Tensor) -> tuple[list[str], dict[str, tuple]]:
    """torch.fx's node names, and (shape, dtype) by node name where ShapeProp found a tensor."""
    traced = torch.fx.symbolic_trace(model)
    FxShapeProp(traced).propagate(x)
    shapes = {
        n.name: (n.meta["tensor_meta"].shape, n.meta["tensor_meta"].dtype)
        for n in traced.graph.nodes
        if isinstance(n.meta.get("tensor_meta"), TensorMetadata)
    }
    return [n.name for n in traced.graph.nodes], shapes


def recorded_shapes(gm) -> tuple[list[str], dict[str, tuple]]:
    """minifx's node names, and the (shape, dtype) recorded by `record_shape` by node name."""
    shapes = {
        n.name: (n.meta["shape"], n.meta["dtype"]) for n in gm.graph.nodes if "shape" in n.meta
    }
    return [n.name for n in gm.graph.nodes], shapes


PROPAGATIONS: dict[str, Callable[..., Any]] = {
    "by_hand": shape_prop_by_hand,
    "interpreter": lambda gm, x: ShapeProp(gm).propagate(x),
}


@pytest.mark.parametrize("propagation", PROPAGATIONS)
@pytest.mark.parametrize("name", SHAPE_MODELS)
def test_shape_prop_records_what_torch_fx_shape_prop_records(name, propagation, device):
    factory, shape = SHAPE_MODELS[name]
    torch.manual_seed(SEED)
    model = factory().to(device).eval()
    x = torch.randn(*shape, device=device)
    gm = symbolic_trace(model)
    with torch.no_grad():
        out = PROPAGATIONS[propagation](gm, x)
        expected = model(x)
    assert torch.equal(out, expected)
    assert recorded_shapes(gm) == fx_shapes(model, x)


def test_the_two_shape_props_record_the_same_meta():
    torch.manual_seed(SEED)
    model, x = TinyCNN().eval(), torch.randn(2, 3, 16, 16)
    by_hand, interpreted = symbolic_trace(model), symbolic_trace(model)
    shape_prop_by_hand(by_hand, x)
    ShapeProp(interpreted).propagate(x)
    assert [n.meta for n in by_hand.graph.nodes] == [n.meta for n in interpreted.graph.nodes]
    # Every node of TinyCNN computes a tensor, the output node's value included.
    assert all("shape" in n.meta for n in by_hand.graph.nodes)


def test_shape_prop_records_nothing_for_values_that_are_not_tensors():
    # EncoderBlock unpacks x.shape (a torch.Size, then ints) and chunk's tuple.
    model, x = model_and_input(MODELS, "encoder_block", "cpu")
    gm = symbolic_trace(model)
    ShapeProp(gm).propagate(x)
    kinds = {n.name: "shape" in n.meta for n in gm.graph.nodes}
    assert kinds["getattr_1"] is False and kinds["chunk"] is False
    assert kinds["getitem_3"] is True  # the first chunk, q


def test_shape_prop_by_hand_takes_a_get_attr_at_a_dotted_path():
    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = nn.Linear(3, 2)

        def forward(self, x):
            return x @ self.inner.weight.T

    model, x = Outer(), torch.randn(4, 3)
    gm = symbolic_trace(model)
    assert [n.target for n in gm.graph.find_nodes(op="get_attr")] == ["inner.weight"]
    assert torch.equal(shape_prop_by_hand(gm, x), model(x))
    assert recorded_shapes(gm) == fx_shapes(model, x)


# -- the sigmoid / neg swap --------------------------------------------------------------


# The body of NegSigmoidSwap on torch.fx's Interpreter and Transformer: the oracles.
FxNegSigmoidSwap = neg_sigm_swap(torch.fx.Interpreter)
FxNegSigmoidSwapTransformer = neg_sigm_swap(torch.fx.Transformer)


def sigmoid_neg(x):
    return torch.sigmoid(x).neg()


def both_orders(x):
    return torch.sigmoid(x.neg()) + x.neg().sigmoid() * torch.sigmoid(x)


class SwapModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return torch.sigmoid(self.linear(x)).neg() - self.linear.bias.neg()


SWAP_PROGRAMS = {"sigmoid_neg": sigmoid_neg, "both_orders": both_orders, "module": SwapModule}


def build(program: Any) -> Any:
    """A fresh, seeded instance of a module class; a function as it is."""
    torch.manual_seed(SEED)
    return program() if isinstance(program, type) else program


@pytest.mark.parametrize("name", SWAP_PROGRAMS)
def test_neg_sigmoid_swap_runs_like_torch_fx(name):
    program, x = build(SWAP_PROGRAMS[name]), torch.randn(3, 4)
    out = NegSigmoidSwap(symbolic_trace(program)).run(x)
    assert torch.equal(out, FxNegSigmoidSwap(torch.fx.symbolic_trace(program)).run(x))


def test_neg_sigmoid_swap_computes_neg_then_sigmoid():
    x = torch.randn(3, 4)
    assert torch.equal(NegSigmoidSwap(symbolic_trace(sigmoid_neg)).run(x), torch.neg(x).sigmoid())


@pytest.mark.parametrize("name", SWAP_PROGRAMS)
def test_neg_sigmoid_swap_transformer_records_torch_fx_graph_and_code(name):
    program, x = build(SWAP_PROGRAMS[name]), torch.randn(3, 4)
    gm = symbolic_trace(program)
    old_code = gm.code
    new = NegSigmoidSwapTransformer(gm).transform()
    fx_new = FxNegSigmoidSwapTransformer(torch.fx.symbolic_trace(program)).transform()
    assert str(new.graph) == str(fx_new.graph)
    assert new.code == fx_new.code
    assert torch.equal(new(x), NegSigmoidSwap(gm).run(x))
    assert gm.code == old_code, "transform() must leave the old GraphModule as it was"
    new.graph.lint()


# -- relu -> gelu ------------------------------------------------------------------------


class FxReluToGelu(torch.fx.Transformer):
    """ReluToGelu's body on torch.fx's Transformer."""

    def call_function(self, target, args, kwargs):
        if target in (torch.relu, F.relu) and not kwargs.get("inplace", False):
            return F.gelu(args[0])
        return super().call_function(target, args, kwargs)


def relu_neg(x):
    return torch.relu(x).neg()


def functional_relus(x):
    return F.relu(x) + torch.relu(x * 2)


def untouched_relus(x):
    # In-place relu and the method form are left alone.
    y = x * 1
    return F.relu(y, inplace=True) + x.relu()


class ReluModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear, self.act = nn.Linear(4, 4), nn.ReLU()

    def forward(self, x):
        return self.act(self.linear(x)) + F.relu(self.linear(x))


RELU_PROGRAMS = {
    "relu_neg": relu_neg,
    "functional": functional_relus,
    "untouched": untouched_relus,
    "module": ReluModule,
}


# name -> the program computed eagerly, with gelu wherever ReluToGelu puts it.
GELU_EAGER: dict[str, Callable[[Any, torch.Tensor], torch.Tensor]] = {
    "relu_neg": lambda program, x: F.gelu(x).neg(),
    "functional": lambda program, x: F.gelu(x) + F.gelu(x * 2),
    "untouched": lambda program, x: program(x),
    "module": lambda m, x: m.act(m.linear(x)) + F.gelu(m.linear(x)),
}


@pytest.mark.parametrize("name", RELU_PROGRAMS)
def test_relu_to_gelu_records_torch_fx_graph_and_code(name):
    program = build(RELU_PROGRAMS[name])
    new = ReluToGelu(symbolic_trace(program)).transform()
    fx_new = FxReluToGelu(torch.fx.symbolic_trace(program)).transform()
    assert str(new.graph) == str(fx_new.graph)
    assert new.code == fx_new.code


@pytest.mark.parametrize("name", RELU_PROGRAMS)
def test_relu_to_gelu_computes_gelu_where_the_program_calls_relu(name):
    program, x = build(RELU_PROGRAMS[name]), torch.randn(3, 4)
    new = ReluToGelu(symbolic_trace(program)).transform()
    assert torch.equal(new(x.clone()), GELU_EAGER[name](program, x.clone()))


@pytest.mark.parametrize("name", RELU_PROGRAMS)
def test_relu_to_gelu_computes_what_chapter_3s_graph_edit_computes(name):
    program, x = build(RELU_PROGRAMS[name]), torch.randn(3, 4)
    edited = symbolic_trace(program)
    for node in edited.graph.nodes:  # chapter 3's edit, with its in-place relus left alone
        if (
            node.op == "call_function"
            and node.target in (torch.relu, F.relu)
            and not node.kwargs.get("inplace", False)
        ):
            node.target, node.kwargs = F.gelu, {}
    edited.recompile()
    transformed = ReluToGelu(symbolic_trace(program)).transform()
    assert torch.equal(transformed(x.clone()), edited(x.clone()))


def test_relu_to_gelu_shares_the_old_modules_state():
    gm = symbolic_trace(build(ReluModule))
    new = ReluToGelu(gm).transform()
    assert new.linear is gm.linear and new.act is gm.act
    assert [n.target for n in new.graph.find_nodes(op="call_module")] == ["linear", "act", "linear"]


# -- decompose ---------------------------------------------------------------------------


def fx_decompose(model: Any, rules: dict) -> torch.fx.GraphModule:
    """The decomposition loop of torch.fx's documentation (rules get only `node.args`)."""
    old_tracer = torch.fx.Tracer()  # the docs pass `model` as the root; a function needs this
    graph = old_tracer.trace(model)
    new_graph = torch.fx.Graph()
    env: dict = {}
    tracer = torch.fx.proxy.GraphAppendingTracer(new_graph)
    for node in graph.nodes:
        if node.op == "call_function" and node.target in rules:
            args = torch.fx.node.map_arg(node.args, lambda n: torch.fx.Proxy(env[n.name], tracer))
            env[node.name] = rules[node.target](*args).node
        else:
            env[node.name] = new_graph.node_copy(node, lambda n: env[n.name])
    return torch.fx.GraphModule(old_tracer.root, new_graph)


class Block(nn.Module):
    """The chapter's example."""

    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.linear(x)) + x


def relu_everywhere(x):
    y = torch.relu(x - 1)
    return {"a": F.relu(y), "b": (y, torch.sigmoid(F.relu(x * 3)))}


DECOMPOSE_PROGRAMS = {"block": Block, "relu_everywhere": relu_everywhere, "relu_neg": relu_neg}


def flat_outputs(out: Any) -> list[torch.Tensor]:
    return torch.utils._pytree.tree_leaves(out)


@pytest.mark.parametrize("name", DECOMPOSE_PROGRAMS)
def test_decompose_records_what_torch_fxs_documented_loop_records(name):
    program = build(DECOMPOSE_PROGRAMS[name])
    new, fx_new = decompose(program, RELU_RULES), fx_decompose(program, RELU_RULES)
    assert str(new.graph) == str(fx_new.graph)
    assert new.code == fx_new.code
    new.graph.lint()


@pytest.mark.parametrize("name", DECOMPOSE_PROGRAMS)
def test_decompose_computes_what_the_program_computes(name):
    program, x = build(DECOMPOSE_PROGRAMS[name]), torch.randn(3, 4)
    new = decompose(program, RELU_RULES)
    assert not [n for n in new.graph.nodes if n.target in (torch.relu, F.relu)]
    for got, expected in zip(flat_outputs(new(x)), flat_outputs(program(x)), strict=True):
        assert torch.equal(got, expected)


def test_the_relu_rule_gets_f_relus_kwargs():
    seen = []

    def spy(x, inplace=False):
        seen.append(inplace)
        return relu_decomposition(x, inplace)

    decompose(lambda x: F.relu(x) + torch.relu(x), {F.relu: spy, torch.relu: spy})
    assert seen == [False, False]
    new = decompose(lambda x: F.relu(x), {F.relu: spy})
    assert [n.target for n in new.graph.find_nodes(op="call_function")] == [
        operator.gt,
        operator.mul,
    ]


class RuleTransformer(Transformer):
    """The chapter's remark: a Transformer whose call_function applies RELU_RULES."""

    def call_function(self, target, args, kwargs):
        if target in RELU_RULES:
            return RELU_RULES[target](*args, **kwargs)
        return super().call_function(target, args, kwargs)


@pytest.mark.parametrize("name", DECOMPOSE_PROGRAMS)
def test_a_transformer_calling_the_rules_records_what_decompose_records(name):
    program = build(DECOMPOSE_PROGRAMS[name])
    transformed = RuleTransformer(symbolic_trace(program)).transform()
    assert str(transformed.graph) == str(decompose(program, RELU_RULES).graph)


# -- initial_env, as the chapter describes it ---------------------------------------------


def difference(x, y):
    return x - y


def test_a_placeholder_in_initial_env_takes_no_argument_like_torch_fx():
    gm, fx_gm = symbolic_trace(difference), torch.fx.symbolic_trace(difference)
    x_node, fx_x_node = gm.graph.find_nodes(op="placeholder")[0], next(iter(fx_gm.graph.nodes))
    ten, two = torch.tensor(10.0), torch.tensor(2.0)
    out = Interpreter(gm).run(two, initial_env={x_node: ten})
    assert torch.equal(out, torch.fx.Interpreter(fx_gm).run(two, initial_env={fx_x_node: ten}))
    assert torch.equal(out, torch.tensor(8.0))


def test_the_initial_env_dict_becomes_env():
    gm = symbolic_trace(difference)
    given: dict = {}
    interpreter = Interpreter(gm)
    interpreter.run(torch.tensor(1.0), torch.tensor(2.0), initial_env=given)
    assert interpreter.env is given
    assert [n.name for n in given] == ["output"]


# -- boxed_run of a structured concrete_args graph (a bug found while writing chapter 4) --


def scale_by(x, pair):
    return x * pair[0] * pair[1]


def test_boxed_run_of_a_structured_concrete_args_graph_runs_like_torch_fx():
    gm = symbolic_trace(scale_by, concrete_args={"pair": (PH, 2)})
    fx_gm = torch.fx.symbolic_trace(scale_by, concrete_args={"pair": (torch.fx.PH, 2)})
    expected = torch.fx.Interpreter(fx_gm).boxed_run([torch.ones(1), 3.0, 2])
    assert torch.equal(expected, torch.tensor([6.0]))
    inputs = [torch.ones(1), 3.0, 2]
    assert torch.equal(Interpreter(gm).boxed_run(inputs), expected)
    assert inputs == []
