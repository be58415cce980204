"""Copies of a GraphModule that torch.fx programs make: deepcopy with cycles, DataParallel replicas.

Each test runs the same program with torch.fx and with minifx and requires the
same observable result (issue 16, repros 1d and 1f).
"""

from __future__ import annotations

import copy

import pytest
import torch
import torch.fx

import minifx.codegen

pytestmark = pytest.mark.ch3

LIBRARIES = {"minifx": minifx.codegen.symbolic_trace, "torch.fx": torch.fx.symbolic_trace}


class Scaled(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.scale = torch.nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        return torch.relu(self.lin(x)) * self.scale


@pytest.mark.parametrize("library", LIBRARIES)
def test_deepcopy_of_a_module_whose_meta_refers_to_itself(library):
    gm = LIBRARIES[library](Scaled())
    gm.meta["self"] = gm
    gm.meta["nested"] = {"again": [gm]}
    copied = copy.deepcopy(gm)
    assert copied is not gm
    assert copied.meta["self"] is copied and copied.meta["nested"]["again"][0] is copied
    assert copied.lin is not gm.lin and copied.code == gm.code
    x = torch.randn(2, 3)
    torch.testing.assert_close(copied(x), gm(x))


@pytest.mark.parametrize("library", LIBRARIES)
def test_deepcopy_of_a_submodule_that_refers_to_its_parent(library):
    parent = LIBRARIES[library](Scaled())
    child = LIBRARIES[library](torch.nn.ReLU())
    child.meta["parent"] = parent
    parent.meta["child"] = child
    copied = copy.deepcopy(parent)
    assert copied.meta["child"].meta["parent"] is copied


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_data_parallel_replica_runs_and_shares_the_state(library):
    gm = LIBRARIES[library](Scaled())
    replica = gm._replicate_for_data_parallel()
    assert replica._is_replica and not getattr(gm, "_is_replica", False)
    assert replica.lin is gm.lin and replica.scale is gm.scale and replica.graph is gm.graph
    assert isinstance(replica, type(gm).__mro__[1]) and type(replica) is not type(gm)
    x = torch.randn(2, 3)
    torch.testing.assert_close(replica(x), gm(x))


def test_a_replica_of_a_relu_runs_as_in_the_issue():
    results = [
        library(torch.nn.ReLU())._replicate_for_data_parallel()(torch.tensor([-1.0, 2.0]))
        for library in LIBRARIES.values()
    ]
    assert all(torch.equal(result, torch.tensor([0.0, 2.0])) for result in results)


def _replicate_outcome(gm: torch.nn.Module, detach: bool) -> object:
    """`"ran"` if a replica of `gm` on GPU 0 computes what `gm` computes, else the error."""
    x = torch.randn(2, 3, device="cuda")
    try:
        (replica,) = torch.nn.parallel.replicate(gm, [0], detach)
    except Exception as error:  # the outcome compared with torch.fx's, not a failure
        return type(error), str(error)
    torch.testing.assert_close(replica(x), gm(x))
    return "ran"


@pytest.mark.skipif(torch.cuda.device_count() < 1, reason="DataParallel replication needs a GPU")
@pytest.mark.parametrize("detach", [True, False])
def test_replicate_onto_a_gpu_behaves_like_torch_fx(detach):
    """DataParallel replicates with `detach=not torch.is_grad_enabled()`.

    Detached replicas run in both libraries. Without detaching, torch.fx's GraphModule
    refuses the replica's non-leaf parameter copies with a TypeError (seen with torch
    2.11 on an H200, where a plain `nn.Module` replicates): minifx must do what torch.fx
    does either way.
    """
    outcomes = {
        name: _replicate_outcome(trace(Scaled()).cuda(), detach)
        for name, trace in LIBRARIES.items()
    }
    assert outcomes["minifx"] == outcomes["torch.fx"]
    if detach:
        assert outcomes["minifx"] == "ran"


# --- minifx.codegen.copying's helpers (pickling itself: test_source.py, test_graph_module.py)


def test_graph_module_inherits_its_copying_methods() -> None:
    from minifx.codegen.copying import CopyingMixin

    assert issubclass(minifx.codegen.GraphModule, CopyingMixin)
    gm = minifx.codegen.symbolic_trace(Scaled())
    assert type(gm).__deepcopy__ is CopyingMixin.__deepcopy__


def test_tracer_of_drops_a_tracer_class_that_cannot_be_pickled_by_name() -> None:
    import minifx.graph
    from minifx.codegen.copying import tracer_of

    class LocalTracer(minifx.graph.Tracer):
        pass

    graph = LocalTracer().trace(Scaled())
    assert tracer_of(graph) == (None, {})
    assert tracer_of(minifx.graph.Tracer().trace(Scaled()))[0] is minifx.graph.Tracer


def test_import_block_imports_torch_and_names_each_function() -> None:
    from minifx.codegen.copying import import_block

    block = import_block({"torch": torch, "copy_deepcopy": copy.deepcopy})
    assert block.split("\n")[:2] == ["from copy import deepcopy as copy_deepcopy", "import torch"]


def test_a_pickled_graph_module_is_rebuilt_by_retracing_its_code() -> None:
    import pickle

    gm = minifx.codegen.symbolic_trace(Scaled())
    loaded = pickle.loads(pickle.dumps(gm))
    assert loaded.code == gm.code
    x = torch.randn(2, 3)
    torch.testing.assert_close(loaded(x), gm(x))


@pytest.mark.parametrize("library", LIBRARIES)
def test_a_pickle_calls_reduce_graph_module_with_the_body_and_imports(library) -> None:
    """torch.fx pickles a GraphModule as `reduce_graph_module(body, import_block)`, a
    function of `fx.graph_module` that torch.fx keeps backward compatible; so does minifx."""
    import inspect

    import minifx

    module = {"minifx": minifx.graph_module, "torch.fx": torch.fx.graph_module}[library]
    gm = LIBRARIES[library](Scaled())
    function, (body, imports) = gm.__reduce__()
    assert function is module.reduce_graph_module
    assert list(inspect.signature(function).parameters) == ["body", "import_block"]
    assert "_graph" not in body and body["_code"] == gm.code
    assert "import torch" in imports.split("\n")
    rebuilt = function(body, imports)
    assert rebuilt.code == gm.code
    # The class name, which torch.fx reads from the body but does not put there (chapter 3's
    # differences: minifx's unpickled module keeps its name).
    name = {"minifx": "Scaled", "torch.fx": "GraphModule"}[library]
    assert body.get("_graphmodule_cls_name", "GraphModule") == type(rebuilt).__name__ == name
    x = torch.randn(2, 3)
    torch.testing.assert_close(rebuilt(x), gm(x))


@pytest.mark.parametrize("library", LIBRARIES)
def test_deepcopy_sets_the_user_preserved_attributes_of_meta_on_the_copy(library) -> None:
    """torch.fx's deepcopy sets each attribute of `meta["_user_preserved_attributes"]` on the
    copy (torch.ao's prepare_fx keeps the `preserved_attributes` it is given there); other
    plain attributes are not copied, in both."""
    import minifx

    module = {"minifx": minifx.graph_module, "torch.fx": torch.fx.graph_module}[library]
    assert module._USER_PRESERVED_ATTRIBUTES_KEY == "_user_preserved_attributes"
    gm = LIBRARIES[library](Scaled())
    gm.meta[module._USER_PRESERVED_ATTRIBUTES_KEY] = {"note": "kept", "sizes": [1, 2]}
    gm.plain = "dropped"
    copied = copy.deepcopy(gm)
    assert copied.note == "kept" and copied.sizes == [1, 2]
    assert copied.sizes is copied.meta[module._USER_PRESERVED_ATTRIBUTES_KEY]["sizes"]
    assert copied.sizes is not gm.meta[module._USER_PRESERVED_ATTRIBUTES_KEY]["sizes"]
    assert not hasattr(copied, "plain")


class TrainOrEval(torch.nn.Module):
    """A model whose graph depends on its mode, as torchvision's GoogLeNet with aux heads."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.aux = torch.nn.Linear(3, 2)

    def forward(self, x):
        y = torch.relu(self.lin(x))
        if self.training:
            return y, self.aux(y)
        return y


def dual_graph_module_class(fx):
    """torchvision's `DualGraphModule` (feature_extraction.py), written against `fx`: a
    GraphModule with its own `__init__` that skips GraphModule's, and a `__deepcopy__` built
    on `fx.graph_module`'s `_CodeOnlyModule`, `_copy_attr` and `_USER_PRESERVED_ATTRIBUTES_KEY`."""
    graph_module = fx.graph_module

    class DualGraphModule(fx.GraphModule):
        def __init__(self, root, train_graph, eval_graph, class_name="GraphModule"):
            super(fx.GraphModule, self).__init__()
            self.__class__.__name__ = class_name
            self.train_graph, self.eval_graph = train_graph, eval_graph
            for node in [*train_graph.nodes, *eval_graph.nodes]:
                if node.op in ("get_attr", "call_module"):
                    graph_module._copy_attr(root, self, node.target)
            self.train()
            self.graph = train_graph

        def train(self, mode=True):
            if mode != self.training:
                self.graph = self.train_graph if mode else self.eval_graph
            return super().train(mode=mode)

        def __deepcopy__(self, memo):
            res = type(self).__new__(type(self))
            memo[id(self)] = res
            fake_mod = graph_module._CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
            state = fake_mod.__dict__
            DualGraphModule.__init__(res, fake_mod, state["train_graph"], state["eval_graph"])
            res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
            preserved = res.meta.get(graph_module._USER_PRESERVED_ATTRIBUTES_KEY, {})
            for name, attr in preserved.items():
                setattr(res, name, attr)
            return res

    return DualGraphModule


def test_a_graph_module_built_and_deep_copied_as_torchvision_does_behaves_as_torch_fx_s():
    import minifx

    model, x = TrainOrEval(), torch.randn(2, 3)
    seen = {}
    for name, fx in (("minifx", minifx), ("torch.fx", torch.fx)):
        graphs = {mode: fx.Tracer().trace(model.train(mode)) for mode in (True, False)}
        dual = dual_graph_module_class(fx)(model, graphs[True], graphs[False], "TrainOrEval")
        dual.meta = {fx.graph_module._USER_PRESERVED_ATTRIBUTES_KEY: {"note": "kept"}}
        copied = copy.deepcopy(dual)
        assert copied.lin is not dual.lin and copied.note == "kept"
        train_code = copied.code
        copied.eval()
        torch.testing.assert_close(copied(x), model.eval()(x))
        seen[name] = (train_code, copied.code, sorted(dict(copied.named_modules())))
    assert seen["minifx"] == seen["torch.fx"]
