"""The `GraphModule` API, its debugging support and retracing, against torch.fx.

Most tests set up the same thing twice, once with `minifx` and once with
`torch.fx` (the oracle), through one function that receives a `Lib`, and
require the same result: the same submodule paths, the same state_dict keys,
the same code, the same printout. Where minifx differs on purpose (a clearer
exception type, a class name kept by deepcopy, notes on exceptions raised by
generated code), the test checks minifx alone and says why.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import io
import linecache
import math
import operator
import os
import pdb
import pickle
import shutil
import subprocess
import sys
import traceback
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import torch
import torch.fx
import torch.fx._pytree
import torch.nn.functional as F
import torch.utils._pytree

import minifx
import minifx.graph
from minifx.codegen import GraphModule, python_code, symbolic_trace
from tests.codegen.support import Pair, add_pair, boxed_sum, pair_sum

pytestmark = pytest.mark.ch3

ROOT = Path(__file__).resolve().parents[2]


# -- the two libraries, behind one interface ---------------------------------------


@dataclass(frozen=True)
class Lib:
    name: str
    Graph: type
    GraphModule: type
    Tracer: type
    symbolic_trace: Callable
    PH: Any


MINI = Lib(
    "minifx", minifx.graph.Graph, GraphModule, minifx.graph.Tracer, symbolic_trace, minifx.graph.PH
)
TORCH = Lib(
    "torch.fx",
    torch.fx.Graph,
    torch.fx.GraphModule,
    torch.fx.Tracer,
    torch.fx.symbolic_trace,
    torch.fx.PH,
)


def differential(build: Callable[[Lib], Any]) -> Any:
    """Run `build` with each library and require equal results; return minifx's."""
    expected = build(TORCH)
    actual = build(MINI)
    assert actual == expected, f"minifx gave {actual!r}\ntorch.fx gave {expected!r}"
    return actual


def keys(gm: torch.nn.Module) -> dict[str, list[str]]:
    """Everything that says what state a module holds, as lists of dotted names."""
    return {
        "modules": [name for name, _ in gm.named_modules()],
        "parameters": [name for name, _ in gm.named_parameters()],
        "buffers": [name for name, _ in gm.named_buffers()],
        "state_dict": list(gm.state_dict()),
    }


def normalise(text: str) -> str:
    """torch.fx registers wrapped functions as `torch.fx._symbolic_trace.wrap(...)`."""
    return text.replace("torch.fx._symbolic_trace.wrap(", "wrap(")


# -- models -----------------------------------------------------------------------


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Linear(4, 4)
        self.unused = torch.nn.Linear(4, 4)  # never called: must not be copied

    def forward(self, x):
        return self.conv(x)


class Net(torch.nn.Module):
    """Dotted call_module targets (`layer1.0.conv`), a parameter, a buffer, an
    attribute read inside a submodule (`head.weight`), and unused state."""

    def __init__(self):
        super().__init__()
        self.layer1 = torch.nn.Sequential(Block(), Block())
        self.head = torch.nn.Linear(4, 4)
        self.scale = torch.nn.Parameter(torch.randn(4))
        self.register_buffer("shift", torch.randn(4))
        self.unused_param = torch.nn.Parameter(torch.randn(4))
        self.register_buffer("unused_buffer", torch.randn(4))
        self.unused_module = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.layer1(x) * self.scale + self.shift
        return torch.relu(y) + self.head.weight.sum()


class Scale(torch.nn.Module):
    """A custom module, kept as a leaf by `LeafTracer` and pickled by to_folder."""

    def __init__(self):
        super().__init__()
        self.factor = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        return x * self.factor


def leaf_tracer(lib: Lib, *leaf_types: type) -> Any:
    class LeafTracer(lib.Tracer):
        def is_leaf_module(self, m, qualname):
            return isinstance(m, leaf_types) or super().is_leaf_module(m, qualname)

    return LeafTracer()


def rows_prefix(x, n):
    """The first `n` rows; `len()` of a Proxy would fail, so it is wrapped.

    Registered with torch.fx.wrap, which both tracers honour, for comparisons.
    """
    return x[: min(len(x), n)]


torch.fx.wrap("rows_prefix")


def first_rows(x, n):
    """The same, registered with minifx.wrap (which torch.fx ignores)."""
    return x[: min(len(x), n)]


minifx.graph.wrap("first_rows")


class UsesWrapAndMath(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        return first_rows(self.lin(x), 2) * math.sqrt(x.shape[-1])


def x4():
    return torch.randn(2, 4, generator=torch.Generator().manual_seed(0))


# -- copying state from the root ---------------------------------------------------


@pytest.mark.task("3.3")
@pytest.mark.parametrize(
    "targets",
    [
        ["layer1.0.conv", "head.weight", "scale", "shift"],
        ["head", "head.weight"],  # the whole module first: its weight comes with it
        ["head.weight", "head"],  # the weight first: `head` is a plain module holding it
        ["layer1.1.conv.weight", "layer1.1.conv.bias", "layer1"],
    ],
)
def test_copy_attr_installs_what_torch_fx_s_copy_attr_installs(targets):
    # _copy_attr alone, into an empty module: no GraphModule, no generated code (task 3.4).
    from minifx.codegen.graph_module import _copy_attr

    root = Net()

    def copied(copy_attr: Callable) -> dict:
        gm = torch.nn.Module()
        for target in targets:
            copy_attr(root, gm, target)
        shared = {
            name: value is root.get_submodule(name)
            for name, value in gm.named_modules()
            if name and type(value) is not torch.nn.Module
        }
        shared |= {
            name: value is root.get_parameter(name)
            for name, value in gm.named_parameters(remove_duplicate=False)
        }
        shared |= {name: value is root.get_buffer(name) for name, value in gm.named_buffers()}
        return {**keys(gm), "shared": shared}

    state = copied(_copy_attr)
    assert state == copied(torch.fx.graph_module._copy_attr)
    assert all(state["shared"].values()), "the root's own objects, not copies"


# The module paths a GraphModule of `Net` holds when its graph uses layer1 (and its root).
LAYER1_PATHS = ["", "layer1", "layer1.0", "layer1.0.conv", "layer1.1", "layer1.1.conv"]


def test_copies_only_the_state_the_graph_uses_as_torch_fx_does():
    root = Net()
    state = differential(lambda lib: keys(lib.symbolic_trace(root)))
    assert state["modules"] == [*LAYER1_PATHS, "head"]
    assert state["buffers"] == ["shift"]
    gm = symbolic_trace(root)
    assert "unused_param" not in gm.state_dict() and not hasattr(gm, "unused_module")
    assert not hasattr(gm.get_submodule("layer1.0"), "unused")
    torch.testing.assert_close(gm(x4()), root(x4()))


def feature_extractor(lib: Lib, root: torch.nn.Module, wanted: list[str]) -> torch.nn.Module:
    """What torchvision's `create_feature_extractor` does: trace, return the `wanted` nodes
    in a dict instead of the output, drop what they do not need, and build a GraphModule
    from the root again, which copies only the state the smaller graph uses."""
    gm = lib.GraphModule(root, lib.Tracer().trace(root), "Net")
    graph = gm.graph
    for node in [n for n in reversed(graph.nodes) if n.op == "output"]:
        graph.erase_node(node)
    nodes = list(graph.nodes)
    with graph.inserting_after(nodes[-1]):
        graph.output({name: n for n in nodes for name in wanted if n.name == name})
    graph.eliminate_dead_code()
    gm.recompile()
    return lib.GraphModule(root, graph, "Net")


def test_a_feature_extractor_built_from_an_edited_graph_as_torch_fx():
    root = Net()
    wanted = ["layer1_1_conv", "mul"]

    def build(lib: Lib) -> tuple[str, dict[str, list[str]]]:
        extractor = feature_extractor(lib, root, wanted)
        return normalise(extractor.code), keys(extractor)

    code, state = differential(build)
    assert "return {'layer1_1_conv': layer1_1_conv, 'mul': mul}" in code
    assert "head" not in code and "shift" not in code, "dead code was dropped"
    assert state["modules"] == LAYER1_PATHS, "the head is dead code"
    features = feature_extractor(MINI, root, wanted)(x4())
    expected = feature_extractor(TORCH, root, wanted)(x4())
    assert list(features) == wanted
    torch.testing.assert_close(features, expected)
    torch.testing.assert_close(features["mul"], root.layer1(x4()) * root.scale)


def test_shares_the_root_objects_and_adds_plain_modules_on_dotted_paths():
    root = Net()
    gm = symbolic_trace(root)
    assert getattr(gm.layer1, "0").conv is getattr(root.layer1, "0").conv
    assert gm.scale is root.scale and gm.shift is root.shift
    assert gm.head.weight is root.head.weight
    # `layer1`, `layer1.0` and `head` are only paths: empty nn.Modules, as in torch.fx.
    tgm = torch.fx.symbolic_trace(root)
    for name in ("layer1", "layer1.0", "head"):
        assert type(gm.get_submodule(name)) is type(tgm.get_submodule(name)) is torch.nn.Module
    assert "shift" in dict(gm.named_buffers()) and "scale" in dict(gm.named_parameters())


def test_a_called_module_is_installed_whole_even_when_an_attribute_inside_is_read():
    # call_module `a` and get_attr `a.weight`: gm.a is root.a, not a copy of its path.
    def build(lib):
        root = torch.nn.Module()
        root.a = torch.nn.Linear(3, 3)
        root.a.extra = torch.nn.ReLU()
        for order in ((0, 1), (1, 0)):
            g = lib.Graph()
            x = g.placeholder("x")
            nodes = [lambda: g.get_attr("a.weight"), lambda: g.call_module("a", (x,))]
            made = [nodes[i]() for i in order]
            g.output(tuple(made))
            gm = lib.GraphModule(root, g)
            assert gm.a is root.a, lib.name
        return keys(gm)

    differential(build)


@pytest.mark.parametrize("training", [True, False])
def test_the_training_flag_is_copied(training):
    root = Net().train(training)
    assert differential(lambda lib: lib.symbolic_trace(root).training) is training


def test_a_dict_root_installs_each_target_at_its_dotted_path():
    lin, weight, table = torch.nn.Linear(3, 3), torch.nn.Parameter(torch.ones(3)), torch.ones(3)

    def build(lib):
        g = lib.Graph()
        x = g.placeholder("x")
        y = g.call_module("a.b", (x,))
        w = g.get_attr("w")
        t = g.get_attr("a.table")  # a plain tensor inside a path: becomes a buffer
        g.output(g.call_function(operator.add, (g.call_function(operator.mul, (y, w)), t)))
        gm = lib.GraphModule({"a.b": lin, "w": weight, "a.table": table, "spare": lin}, g)
        assert gm.a.b is lin and gm.w is weight and gm.a.table is table
        return keys(gm), gm(torch.ones(3)).tolist()

    state, _ = differential(build)
    assert state["buffers"] == ["a.table"] and state["parameters"] == [
        "w",
        "a.b.weight",
        "a.b.bias",
    ]


def test_a_missing_target_in_a_module_root_is_an_attribute_error_naming_node_and_target():
    g = minifx.graph.Graph()
    x = g.placeholder("x")
    g.output(g.call_module("layer1.0.nope", (x,)))
    with pytest.raises(AttributeError) as info:
        GraphModule(Net(), g)
    assert str(info.value) == (
        "GraphModule: node %layer1_0_nope (call_module) refers to 'layer1.0.nope', but the "
        "root module has no attribute 'nope' on that path (Block has none). How to fix: add "
        "the attribute to the root (for a submodule, gm.add_submodule), or correct the "
        "node's target."
    )
    # torch.fx raises an AttributeError too, from nn.Module, naming neither node nor target.
    tg = torch.fx.Graph()
    tg.output(tg.call_module("layer1.0.nope", (tg.placeholder("x"),)))
    with pytest.raises(AttributeError):
        torch.fx.GraphModule(Net(), tg)


def test_a_missing_key_in_a_dict_root_is_a_runtime_error_as_in_torch_fx_with_a_clear_message():
    g = minifx.graph.Graph()
    g.output(g.get_attr("a.w"))
    with pytest.raises(RuntimeError) as info:
        GraphModule({"a": torch.nn.Module(), "w": torch.ones(1)}, g)
    assert str(info.value) == (
        "GraphModule: node %a_w (get_attr) refers to 'a.w', but the root dict has no such key "
        "(it has ['a', 'w']). How to fix: add the object under that exact dotted name."
    )
    # torch.fx raises the same type, with a message that names neither the keys nor the fix.
    tg = torch.fx.Graph()
    tg.output(tg.get_attr("a.w"))
    with pytest.raises(RuntimeError, match="not provided in ``root``"):
        torch.fx.GraphModule({"a": torch.nn.Module(), "w": torch.ones(1)}, tg)


@pytest.mark.parametrize("root", [None, [("w", torch.ones(1))], "module"])
def test_a_root_that_is_neither_module_nor_dict_is_a_type_error(root):
    g = minifx.graph.Graph()
    g.output(g.placeholder("x"))
    with pytest.raises(
        TypeError,
        match=r"root must be an nn\.Module or a dict from target "
        f"to object, not {type(root).__name__}",
    ):
        GraphModule(root, g)
    # minifx differs on purpose: torch.fx raises RuntimeError("Unsupported type ...").
    tg = torch.fx.Graph()
    tg.output(tg.placeholder("x"))
    with pytest.raises(RuntimeError, match="Unsupported type"):
        torch.fx.GraphModule(root, tg)


# -- recompile, code, printing -------------------------------------------------------


class ReluNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return F.relu(self.lin(torch.relu(x))) + torch.relu(x)


class GeluNet(ReluNet):
    def forward(self, x):
        return F.gelu(self.lin(F.gelu(x))) + F.gelu(x)


def relu_to_gelu(lib: Lib, model: torch.nn.Module) -> torch.nn.Module:
    """The torch.fx documentation's first transform: swap every relu call for gelu."""
    gm = lib.symbolic_trace(model)
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in (torch.relu, F.relu):
            node.target = F.gelu
            node.kwargs = {}  # F.relu's `inplace=False` means nothing to gelu
    gm.recompile()
    return gm


@pytest.mark.task("3.4")
def test_relu_to_gelu_recompiles_to_the_gelu_model_as_in_torch_fx():
    model = ReluNet()
    reference = GeluNet()
    reference.load_state_dict(model.state_dict())

    def build(lib):
        gm = relu_to_gelu(lib, model)
        torch.testing.assert_close(gm(x4()), reference(x4()))
        return gm.code

    code = differential(build)
    # The nodes keep their names (`relu`, `relu_1`); only the calls change.
    assert "torch.relu(" not in code and "functional.relu(" not in code
    assert code.count("torch._C._nn.gelu(") == 3  # where F.gelu lives, as torch.fx writes it
    gm = relu_to_gelu(MINI, model)
    assert gm.code == python_code(gm.graph).src


@pytest.mark.task("3.4")
def test_assigning_a_graph_recompiles_and_takes_ownership():
    def build(lib):
        gm = lib.symbolic_trace(ReluNet())
        g = lib.Graph()
        x = g.placeholder("x")
        g.output(g.call_module("lin", (g.call_function(torch.neg, (x,)),)))
        before = gm.code
        gm.graph = g
        assert gm.graph is g and g.owning_module is gm and gm.code != before
        torch.testing.assert_close(gm(x4()), gm.lin(-x4()))
        return gm.code

    differential(build)


def test_assigning_something_else_than_a_graph_is_a_type_error():
    gm = symbolic_trace(ReluNet())
    with pytest.raises(TypeError, match="GraphModule.graph must be a minifx Graph, not Graph"):
        gm.graph = torch.fx.Graph()


def test_misuses_of_graph_module_raise_torch_fx_s_types_too():
    """GraphModule(3, graph) is torch.fx's RuntimeError, `gm.graph = 3` its AssertionError;
    minifx's errors are TypeErrors as well."""
    for library in (torch.fx, minifx.codegen):
        gm = library.symbolic_trace(ReluNet())
        with pytest.raises(RuntimeError):
            library.GraphModule(3, gm.graph)
        with pytest.raises(AssertionError):
            gm.graph = 3


@pytest.mark.task("3.4")
def test_code_is_python_code_of_the_graph_and_torch_fx_code():
    root = Net()
    code = differential(lambda lib: lib.symbolic_trace(root).code)
    gm = symbolic_trace(root)
    assert code == gm.code == python_code(gm.graph, "self").src
    assert code.startswith("\n\n\ndef forward(self, x):\n")


def nested(lib: Lib) -> torch.nn.Module:
    """A GraphModule whose child `inner` is itself a GraphModule, called as a leaf."""

    class Inner(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)

        def forward(self, x):
            return rows_prefix(self.lin(x), 2) * math.sqrt(2)

    class Outer(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Inner()

        def forward(self, x):
            return torch.sigmoid(self.inner(x)).sum(dim=0, keepdim=True)

    torch.manual_seed(0)
    outer = Outer()
    outer.inner = lib.GraphModule(outer.inner, leaf_tracer(lib).trace(outer.inner), "Inner")
    return lib.GraphModule(outer, leaf_tracer(lib, lib.GraphModule).trace(outer), "Outer")


def test_print_readable_is_torch_fx_text_with_nested_graph_modules(capsys):
    text = differential(lambda lib: normalise(nested(lib).print_readable(print_output=False)))
    assert text.startswith("class Outer(torch.nn.Module):\n    def forward(self, x):\n")
    assert "\n    class Inner(torch.nn.Module):\n" not in text  # named after the attribute
    assert '\n    class inner(torch.nn.Module):\n        wrap("tests_codegen_' in text
    assert nested(MINI).print_readable() == text
    assert capsys.readouterr().out == text + "\n"


def test_print_readable_shows_shapes_from_meta_as_torch_fx():
    def build(lib):
        g = lib.Graph()
        x = g.placeholder("x")
        x.meta["val"] = torch.empty(2, 3)
        y = g.call_function(torch.relu, (x,))
        y.meta["val"] = torch.empty(2, 3, dtype=torch.float16)
        g.output(y)
        return lib.GraphModule(torch.nn.Module(), g).print_readable(print_output=False)

    assert 'relu: "f16[2, 3]" = torch.relu(x)' in differential(build)


def test_str_is_the_module_repr_then_the_code_as_in_torch_fx():
    root = Net()
    text = differential(lambda lib: str(lib.symbolic_trace(root)))
    assert text.startswith("Net(\n  (layer1): Module(\n")
    assert text.endswith("# To see more debug info, please use `graph_module.print_readable()`")


# -- adding and deleting submodules --------------------------------------------------


def edited(lib: Lib, edit: Callable[[torch.nn.Module], Any]) -> tuple:
    torch.manual_seed(0)
    gm = lib.symbolic_trace(Net())
    result = edit(gm)
    return result, [name for name, _ in gm.named_modules()]


@pytest.mark.parametrize(
    "target",
    [
        "new",
        "new.deep.relu",
        "layer1.0.extra",
        "layer1.0.conv",
        "shift.x",
        "scale.x",
        "layer1.0.conv.weight.x",
    ],
)
def test_add_submodule_as_torch_fx(target):
    result, modules = differential(
        lambda lib: edited(lib, lambda gm: gm.add_submodule(target, torch.nn.ReLU()))
    )
    assert result == (target.split(".")[0] not in ("shift", "scale") and "weight" not in target)


@pytest.mark.parametrize(
    "target",
    [
        "layer1.0.conv",
        "layer1",
        "head",
        "nope",
        "layer1.7",
        "layer1.0.conv.weight",
        "scale",
        "shift",
        "head.weight.x",
    ],
)
def test_delete_submodule_as_torch_fx(target):
    result, modules = differential(lambda lib: edited(lib, lambda gm: gm.delete_submodule(target)))
    assert result == (target in ("layer1.0.conv", "layer1", "head"))


def remove_calls(gm: torch.nn.Module, target: str) -> None:
    """Bypass the call_module nodes of `target`, then recompile."""
    for node in list(gm.graph.nodes):
        if node.op == "call_module" and node.target == target:
            node.replace_all_uses_with(node.args[0])
            gm.graph.erase_node(node)
    gm.recompile()


@pytest.mark.parametrize(
    "edit",
    [
        lambda gm: None,
        lambda gm: (
            gm.add_submodule("extra.deep", torch.nn.ReLU()),
            gm.add_submodule("layer1.0.spare", torch.nn.ReLU()),
        ),
        lambda gm: remove_calls(gm, "layer1.0.conv"),
        lambda gm: remove_calls(gm, "layer1.1.conv"),
        lambda gm: (remove_calls(gm, "layer1.0.conv"), remove_calls(gm, "layer1.1.conv")),
    ],
    ids=[
        "nothing-unused",
        "added-unused",
        "one-call-removed",
        "other-call-removed",
        "both-calls-removed",
    ],
)
def test_delete_all_unused_submodules_as_torch_fx(edit):
    def build(lib):
        return edited(lib, lambda gm: (edit(gm), gm.delete_all_unused_submodules())[1])

    differential(build)


def test_delete_all_unused_submodules_keeps_the_children_of_a_called_module():
    def build(lib):
        root = torch.nn.Module()
        root.block = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
        g = lib.Graph()
        g.output(g.call_module("block", (g.placeholder("x"),)))
        gm = lib.GraphModule(root, g)
        gm.add_submodule("lonely", torch.nn.ReLU())
        gm.delete_all_unused_submodules()
        return [name for name, _ in gm.named_modules()]

    assert differential(build) == ["", "block", "block.0", "block.1"]


# -- copying and pickling -----------------------------------------------------------


def decorated(lib: Lib) -> tuple[torch.nn.Module, list]:
    """A traced Net with meta, an unused-but-present submodule and a state_dict hook."""
    torch.manual_seed(0)
    gm = lib.symbolic_trace(Net())
    gm.meta["notes"] = ["traced"]
    gm.add_submodule("spare", torch.nn.Tanh())
    calls: list = []
    gm._register_state_dict_hook(lambda module, state, prefix, local: calls.append(prefix))
    return gm, calls


def test_deepcopy_has_its_own_graph_and_state_and_keeps_meta_and_hooks():
    def build(lib):
        gm, calls = decorated(lib)
        copied = copy.deepcopy(gm)
        assert copied.graph is not gm.graph and copied.graph.owning_module is copied
        assert all(node.graph is copied.graph for node in copied.graph.nodes)
        assert str(copied.graph) == str(gm.graph) and copied.code == gm.code
        assert copied.meta == gm.meta and copied.meta["notes"] is not gm.meta["notes"]
        assert copied.scale is not gm.scale and copied.shift is not gm.shift
        torch.testing.assert_close(copied(x4()), gm(x4()))
        with torch.no_grad():
            copied.scale.add_(1)
        assert not torch.equal(copied(x4()), gm(x4())), "the copy's parameter is not its own"
        copied.state_dict()
        assert calls == [""], "the state_dict hook was not kept"
        return keys(copied)

    assert "spare" in differential(build)["modules"]  # present but unused: kept


def test_deepcopy_keeps_the_class_name():
    # minifx differs on purpose: torch.fx's deepcopy is always named `GraphModule`.
    copied = copy.deepcopy(symbolic_trace(Net()))
    assert type(copied).__name__ == "Net" and isinstance(copied, GraphModule)
    assert type(copy.deepcopy(torch.fx.symbolic_trace(Net()))).__name__ == "GraphModule"


def test_copy_shares_graph_and_state():
    def build(lib):
        gm, _ = decorated(lib)
        shallow = copy.copy(gm)
        assert shallow.graph is gm.graph and shallow.meta is gm.meta
        assert shallow.scale is gm.scale and shallow.layer1 is not gm.layer1
        assert getattr(shallow.layer1, "0").conv is getattr(gm.layer1, "0").conv
        assert shallow.code == gm.code and type(shallow) is not type(gm)
        torch.testing.assert_close(shallow(x4()), gm(x4()))
        return keys(shallow)

    assert "spare" not in differential(build)["modules"]  # only what the graph uses


def round_trip(gm: torch.nn.Module) -> torch.nn.Module:
    return pickle.loads(pickle.dumps(gm))


def test_pickle_round_trip_as_torch_fx():
    def build(lib):
        gm, _ = decorated(lib)
        gm._state_dict_hooks.clear()  # the hook is a lambda: not picklable
        loaded = round_trip(gm)
        torch.testing.assert_close(loaded(x4()), gm(x4()))
        assert loaded.code == gm.code and str(loaded.graph) == str(gm.graph)
        assert loaded.graph.owning_module is loaded and loaded.scale is not gm.scale
        return keys(loaded), loaded.code

    state, _ = differential(build)
    assert "spare" in state["modules"]  # present but unused: kept, as torch.fx keeps it


def test_pickle_keeps_wrapped_functions_and_math_calls():
    torch.manual_seed(0)
    gm = symbolic_trace(UsesWrapAndMath())
    assert gm.code.startswith('\nwrap("tests_codegen_test_graph_module_first_rows")\n')
    assert "math_sqrt(" in gm.code
    loaded = round_trip(gm)
    assert loaded.code == gm.code and str(loaded.graph) == str(gm.graph)
    x = torch.randn(5, 3)
    torch.testing.assert_close(loaded(x), gm(x))
    assert loaded(x).shape == (2, 3)


def test_pickle_of_code_calling_a_lambda_or_local_function_is_a_pickling_error():
    def local(t):
        return t * 2

    for function, name in ((lambda t: t + 1, "_lambda_"), (local, "local")):
        g = minifx.graph.Graph()
        g.output(g.call_function(function, (g.placeholder("x"),)))
        gm = GraphModule(torch.nn.Module(), g)
        with pytest.raises(pickle.PicklingError) as info:
            pickle.dumps(gm)
        message = str(info.value)
        assert message.startswith("The generated code refers to tests_codegen_test_graph_module_")
        assert name in message and "cannot be imported by name" in message
        assert "use a module-level function instead of a lambda or local function" in message


# torch's own TreeSpec pickling warns about LeafSpec in some versions; not ours to fix.
@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_structured_concrete_args_call_and_pickle_as_torch_fx():
    a, b = torch.ones(2), torch.full((2,), 3.0)

    def build(lib):
        gm = lib.symbolic_trace(add_pair, concrete_args={"d": {"a": lib.PH, "b": lib.PH}})
        out = gm({"a": a, "b": b, "ignored": None})
        assert out["sum"].tolist() == [4.0, 4.0] and out["diff"].tolist() == [-2.0, -2.0]
        # Pickling retraces the code without concrete_args: the lookups become
        # getitem nodes, and the output is no longer rebuilt from a spec.
        loaded = round_trip(gm)
        again = loaded({"a": a, "b": b})
        assert again["sum"].tolist() == [4.0, 4.0]
        return gm.code, loaded.code

    code, loaded_code = differential(build)
    assert "fx_pytree.tree_flatten_spec([d], self._in_spec)" in code
    assert "getitem = d['a']" in loaded_code


def test_a_namedtuple_of_ph_accepts_the_namedtuple_as_torch_fx_does():
    # Issue 16, repro 1c: the traced module used to reject the correct input.
    def build(lib):
        gm = lib.symbolic_trace(pair_sum, concrete_args={"p": Pair(lib.PH, lib.PH)})
        return gm(Pair(torch.ones(2), torch.ones(2))).tolist(), gm(
            (torch.ones(2), torch.ones(2))
        ).tolist()

    assert differential(build) == ([2.0, 2.0], [2.0, 2.0])  # a plain tuple is read by position too


class Boxed:
    """A class registered with pytree (and torch.fx's flatten-spec registry, which torch.fx
    needs to retrace), used as a structured concrete_args input."""

    def __init__(self, a, b):
        self.a, self.b = a, b


torch.utils._pytree.register_pytree_node(
    Boxed, lambda box: ([box.a, box.b], None), lambda children, _: Boxed(*children)
)
torch.fx._pytree.register_pytree_flatten_spec(Boxed, lambda box, _: [box.a, box.b])


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_a_registered_class_of_ph_traces_retraces_and_pickles_as_in_torch_fx():
    box = Boxed(torch.ones(2), torch.full((2,), 2.0))

    def build(lib):
        gm = lib.symbolic_trace(boxed_sum, concrete_args={"x": Boxed(lib.PH, lib.PH)})
        retraced = lib.symbolic_trace(gm)  # the flattening is recorded: box.a, box.b
        again = lib.symbolic_trace(retraced, concrete_args={"x": Boxed(lib.PH, lib.PH)})
        results = [m(box).tolist() for m in (gm, retraced, again, round_trip(again))]
        return results, [n.op for n in retraced.graph.nodes]

    results, ops = differential(build)
    assert results == [[3.0, 3.0]] * 4
    assert ops == ["placeholder", "call_function", "call_function", "call_function", "output"]


# -- to_folder -----------------------------------------------------------------------


class Folded(torch.nn.Module):
    """What to_folder must rebuild: a Linear (from its repr), a custom leaf module
    (pickled), a top-level parameter and buffer, a wrapped function and math.sqrt."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = Scale()
        self.weight = torch.nn.Parameter(torch.randn(3))
        self.register_buffer("offset", torch.randn(3))

    def forward(self, x):
        y = self.scale(self.lin(x)) * self.weight + self.offset
        return first_rows(y, 2) + math.sqrt(x.shape[0])


def import_folder(folder: Path, module_name: str = "FxModule") -> type:
    """Import `folder` as a package (its parent on sys.path) and return the class."""
    sys.path.insert(0, str(folder.parent))
    try:
        package = importlib.import_module(folder.name)
    finally:
        sys.path.remove(str(folder.parent))
    return getattr(package, module_name)


def fresh_name() -> str:
    return f"folded_{uuid.uuid4().hex}"


@pytest.mark.filterwarnings("ignore:Was not able to save")  # `scale` is pickled
def test_to_folder_writes_a_package_that_imports_and_runs(tmp_path):
    torch.manual_seed(0)
    model = Folded()
    gm = GraphModule(model, leaf_tracer(MINI, Scale).trace(model), "Folded")
    folder = tmp_path / fresh_name()
    gm.to_folder(folder, "Saved")
    assert sorted(p.name for p in folder.iterdir()) == [
        "__init__.py",
        "module.py",
        "scale.pt",
        "state_dict.pt",
    ]
    source = (folder / "module.py").read_text()
    assert "torch.nn.Linear(in_features=3, out_features=3, bias=True)" in source
    assert '\nwrap("tests_codegen_test_graph_module_first_rows")\n' in source  # module level
    assert "\n    def forward(self, x):\n        lin = self.lin(x)\n" in source
    saved = import_folder(folder, "Saved")()
    assert type(saved).__name__ == "Saved" and not isinstance(saved, GraphModule)
    assert type(saved.scale) is Scale and type(saved.lin) is torch.nn.Linear
    assert keys(saved) == keys(gm)
    x = torch.randn(4, 3)
    torch.testing.assert_close(saved(x), model(x))
    torch.testing.assert_close(saved(x), gm(x))


@pytest.mark.filterwarnings("ignore:Was not able to save")  # `scale` is pickled
def test_to_folder_output_can_be_moved(tmp_path):
    torch.manual_seed(0)
    model = Folded()
    gm = GraphModule(model, leaf_tracer(MINI, Scale).trace(model))
    gm.to_folder(tmp_path / "first")
    moved = tmp_path / "elsewhere" / fresh_name()
    moved.parent.mkdir()
    shutil.move(tmp_path / "first", moved)
    x = torch.randn(4, 3)
    torch.testing.assert_close(import_folder(moved)()(x), model(x))


@pytest.mark.filterwarnings("ignore:Was not able to save")  # `scale` is pickled
def test_to_folder_runs_in_a_fresh_interpreter(tmp_path):
    torch.manual_seed(0)
    model = Folded()
    gm = GraphModule(model, leaf_tracer(MINI, Scale).trace(model))
    gm.to_folder(tmp_path / "saved")
    x = torch.arange(12.0).reshape(4, 3)
    torch.save(gm(x), tmp_path / "expected.pt")
    script = (
        "import torch; from saved import FxModule; x = torch.arange(12.0).reshape(4, 3); "
        "torch.testing.assert_close(FxModule()(x), torch.load('expected.pt')); print('ok')"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr


@pytest.mark.filterwarnings("ignore:.*LeafSpec.*:FutureWarning")
def test_to_folder_keeps_structured_concrete_args(tmp_path):
    gm = symbolic_trace(add_pair, concrete_args={"d": {"a": minifx.graph.PH, "b": minifx.graph.PH}})
    folder = tmp_path / fresh_name()
    gm.to_folder(folder)
    saved = import_folder(folder)()
    a, b = torch.ones(2), torch.full((2,), 3.0)
    out = saved({"a": a, "b": b})
    assert list(out) == ["sum", "diff"] and out["diff"].tolist() == [-2.0, -2.0]
    with pytest.raises(TypeError, match="should be a dict with keys"):
        saved({"a": a})


def test_to_folder_of_code_calling_a_lambda_is_a_pickling_error(tmp_path):
    g = minifx.graph.Graph()
    g.output(g.call_function(lambda t: t + 1, (g.placeholder("x"),)))
    with pytest.raises(pickle.PicklingError, match="cannot be imported by name"):
        GraphModule(torch.nn.Module(), g).to_folder(tmp_path / "lambda")


# -- debugging generated code ----------------------------------------------------------


class Square(torch.nn.Module):
    def forward(self, x):
        y = x + 1
        return torch.matmul(y, y)  # fails unless x is square


class CallsSquare(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Square()

    def forward(self, x):
        return self.inner(x * 2) - 1


def failure(gm: torch.nn.Module) -> BaseException:
    with pytest.raises(RuntimeError) as info:
        gm(torch.ones(2, 3))
    return info.value


def test_a_traceback_through_generated_code_shows_the_generated_line():
    gm = symbolic_trace(Square())
    error = failure(gm)
    text = "".join(traceback.format_exception(error))
    assert f'File "{gm._source_file}", line 6, in forward\n' in text
    assert "    matmul = torch.matmul(add, add);  add = None\n" in text
    assert linecache.getlines(gm._source_file) == gm.code.splitlines(keepends=True)
    frames = traceback.extract_tb(error.__traceback__)
    generated = [frame for frame in frames if frame.filename == gm._source_file]
    assert [frame.line for frame in generated] == ["matmul = torch.matmul(add, add);  add = None"]


def test_inspect_getsource_and_linecache_know_the_generated_forward():
    gm = symbolic_trace(Square())
    forward = type(gm).forward
    assert inspect.getsource(forward) == gm.code.strip("\n").rstrip() + "\n"
    assert forward.__code__.co_filename in linecache.cache
    linecache.checkcache()  # what tracebacks do first: the entry must survive it
    assert linecache.getline(forward.__code__.co_filename, 5) == "    add = x + 1;  x = None\n"


def test_an_exception_in_generated_code_gets_a_note_naming_the_node():
    gm = symbolic_trace(Square())
    assert failure(gm).__notes__ == [
        "While running node %matmul (call_function torch.matmul) in the generated forward of Square, "
        "line 6:\n    matmul = torch.matmul(add, add);  add = None\n"
        "print(gm.code) shows the whole function; print(gm.graph) shows the nodes."
    ]


def test_nested_graph_modules_each_add_their_note():
    outer = GraphModule(CallsSquare(), leaf_tracer(MINI, Square).trace(CallsSquare()), "Outer")
    outer.inner = symbolic_trace(Square())
    notes = failure(outer).__notes__
    assert len(notes) == 2
    assert notes[0].startswith(
        "While running node %matmul (call_function torch.matmul) in the "
        "generated forward of Square, line 6:"
    )
    assert notes[1].startswith(
        "While running node %inner (call_module inner) in the generated "
        "forward of Outer, line 6:\n    inner = self.inner(mul);  mul = None"
    )


def test_an_error_outside_generated_code_gets_no_note():
    gm = symbolic_trace(Square())
    with pytest.raises(TypeError) as info:
        gm(torch.ones(2, 2), torch.ones(2, 2))  # too many arguments: fails before the body
    assert not getattr(info.value, "__notes__", [])


def test_pdb_post_mortem_lists_the_generated_lines():
    gm = symbolic_trace(Square())
    error = failure(gm)
    out = io.StringIO()
    debugger = pdb.Pdb(stdin=io.StringIO("l\nq\n"), stdout=out, nosigint=True, readrc=False)
    debugger.use_rawinput = False
    debugger.reset()
    # `q` sets sys.settrace(None), which would also switch off coverage's tracer.
    tracer = sys.gettrace()
    try:
        debugger.interaction(None, error.__traceback__)  # what pdb.post_mortem does
    finally:
        sys.settrace(tracer)
    listing = out.getvalue()
    # pdb shows a file name that does not end in ">" as a path, as it does for torch.fx's.
    assert f"> {os.path.abspath(gm._source_file)}(6)forward()\n" in listing
    assert "  5  \t    add = x + 1;  x = None\n" in listing
    assert "  6  ->\t    matmul = torch.matmul(add, add);  add = None\n" in listing


# -- retracing and classes ------------------------------------------------------------


def test_symbolic_trace_of_a_graph_module_gives_the_same_graph():
    def build(lib):
        gm = lib.symbolic_trace(Net())
        again = lib.symbolic_trace(gm)
        assert again.code == gm.code
        torch.testing.assert_close(again(x4()), gm(x4()))
        return str(again.graph)

    assert differential(build) == str(symbolic_trace(Net()).graph)


def scaled_sum(x, y):
    return (x * 2 + y).sum()


def test_symbolic_trace_names_the_module_after_the_function_or_class():
    gm = symbolic_trace(scaled_sum)
    assert type(gm).__name__ == type(gm).__qualname__ == "scaled_sum"
    assert gm._get_name() == "scaled_sum" and repr(gm) == "scaled_sum()"
    assert type(symbolic_trace(Net())).__name__ == "Net"
    assert type(torch.fx.symbolic_trace(scaled_sum)).__name__ == "scaled_sum"


def test_each_graph_module_has_its_own_class_and_forward():
    root = ReluNet()
    first, second = symbolic_trace(root), symbolic_trace(root)
    assert type(first) is not type(second) and type(first).__name__ == type(second).__name__
    assert isinstance(first, GraphModule) and issubclass(type(first), GraphModule)
    assert type(first).forward is not type(second).forward
    relu_to_gelu_in_place(second)
    assert "gelu" in second.code and "gelu" not in first.code
    torch.testing.assert_close(first(x4()), root(x4()))  # untouched by the other's recompile
    # A GraphModule built from a GraphModule gets its own class too.
    third = GraphModule(first, copy.deepcopy(first.graph))
    assert type(third) is not type(first) and type(third).__bases__ == (GraphModule,)


def relu_to_gelu_in_place(gm: GraphModule) -> None:
    for node in gm.graph.nodes:
        if node.target in (torch.relu, F.relu):
            node.target, node.kwargs = F.gelu, {}
    gm.recompile()


def test_stage_three_names_are_exported_lazily():
    script = (
        "import sys, minifx\n"
        "assert not any(m.startswith('minifx.') for m in sys.modules), sorted(sys.modules)\n"
        "import minifx.codegen as codegen\n"
        "assert minifx.GraphModule is codegen.GraphModule\n"
        "assert minifx.symbolic_trace is codegen.symbolic_trace\n"
        "assert minifx.python_code is codegen.python_code\n"
        "assert minifx.PythonCode is codegen.PythonCode\n"
        "assert {'GraphModule', 'symbolic_trace', 'python_code'} <= set(dir(minifx))\n"
        "print('ok')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
    assert minifx.GraphModule is GraphModule and minifx.symbolic_trace is symbolic_trace


# The hooks torch.fx's GraphModule offers torch.compile's internals: documented as absent.
PRIVATE_NODE_HOOKS = (
    "_register_create_node_hook",
    "_register_erase_node_hook",
    "_register_replace_node_hook",
    "_register_deepcopy_hook",
    "_set_replace_hook",
)


def test_torch_fx_s_private_node_hooks_are_a_documented_absence():
    """PyTorch's test/fx/test_fx_node_hook.py registers create/erase-node hooks on a
    GraphModule; minifx's has none, and chapters/differences.md says so. If minifx gets
    them, this fails: then compare the hooks' calls with torch.fx's instead."""
    theirs, ours = torch.fx.symbolic_trace(ReluNet()), symbolic_trace(ReluNet())
    page = (ROOT / "chapters" / "differences.md").read_text()
    for name in PRIVATE_NODE_HOOKS:
        assert callable(getattr(theirs, name)), f"torch.fx has no {name} any more"
        assert not hasattr(ours, name), f"minifx has {name} now"
        assert f"`{name}`" in page, f"chapters/differences.md does not name {name}"


def test_torchscript_compiles_torch_fx_s_graph_module_not_minifx_s_as_documented():
    """PyTorch's TestVisionTracing scripts each traced model with `torch.jit.script`;
    minifx's GraphModule does not script, and chapters/differences.md says so. If it
    starts to, this fails: then compare the scripted outputs with torch.fx's instead."""
    model, x = ReluNet(), torch.randn(2, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch.jit.script is deprecated in torch 2.13
        scripted = torch.jit.script(torch.fx.symbolic_trace(model))
        assert torch.equal(scripted(x), model(x))
        with pytest.raises(Exception):  # noqa: B017 (TorchScript's errors vary by cause)
            torch.jit.script(symbolic_trace(model))
    page = (ROOT / "chapters" / "differences.md").read_text()
    assert "`torch.jit.script(gm)`" in page
