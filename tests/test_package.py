"""`import minifx as fx`: the lazy re-exports of the root package."""

import pytest

import minifx
import minifx.proxy

pytestmark = pytest.mark.meta


def test_public_names_resolve_to_their_stage():
    assert minifx.Proxy is minifx.proxy.Proxy
    assert minifx.TraceError is minifx.proxy.TraceError
    assert minifx.trace_to_tape is minifx.proxy.trace_to_tape


def test_stages_are_attributes():
    assert minifx.proxy is minifx.proxy  # resolved through __getattr__ when not yet set
    assert "proxy" in dir(minifx) and "Proxy" in dir(minifx)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="module 'minifx' has no attribute 'nope'"):
        minifx.nope  # noqa: B018


@pytest.mark.parametrize(
    "name",
    [
        "annotate",
        "node",
        "immutable_collections",
        "graph_module",
        "_pytree",
        "subgraph_rewriter",
        "_symbolic_trace",
    ],
)
def test_torch_fx_s_module_names_import_as_torch_fx_s_do(name):
    """`from torch.fx.node import Node` (torch.fx's documentation) works with minifx's name."""
    import importlib
    import sys

    import torch.fx

    assert importlib.import_module(f"torch.fx.{name}") is getattr(torch.fx, name)
    ours = importlib.import_module(f"minifx.{name}")
    assert ours is getattr(minifx, name) is sys.modules[f"minifx.{name}"]
    # The module itself, under its one real name, and with its own spec (which the import
    # system would otherwise replace with the alias's).
    assert ours.__name__ != f"minifx.{name}" and ours.__spec__.name == ours.__name__


def test_a_module_name_torch_fx_lacks_does_not_import():
    with pytest.raises(ModuleNotFoundError, match="No module named 'minifx.nope'"):
        import minifx.nope  # noqa: F401


def test_the_documented_imports_of_torch_fx_work_with_minifx():
    from minifx import subgraph_rewriter, symbolic_trace
    from minifx.graph import map_arg
    from minifx.node import Node

    assert subgraph_rewriter.replace_pattern is minifx.replace_pattern
    assert (symbolic_trace, map_arg, Node) == (minifx.symbolic_trace, minifx.map_arg, minifx.Node)


def test_torch_fx_s_module_names_reach_minifx_s_modules():
    # Code written for torch.fx reaches some names through its modules: fx.node.Node,
    # fx.immutable_collections.immutable_list, fx.subgraph_rewriter.replace_pattern, ...
    import torch.fx

    names = ("node", "immutable_collections", "graph_module", "_pytree", "subgraph_rewriter")
    for name in (*names, "_symbolic_trace"):
        module = getattr(minifx, name)
        theirs = getattr(torch.fx, name)
        shared = [
            n
            for n in (
                "Node",
                "immutable_list",
                "immutable_dict",
                "GraphModule",
                "register_pytree_flatten_spec",
                "replace_pattern",
                "PHBase",
                "PHWithMeta",
                "_wrapped_methods_to_patch",
            )
            if hasattr(theirs, n)
        ]
        assert shared and all(hasattr(module, n) for n in shared), (name, shared)
        assert name in dir(minifx)


def test_the_imports_of_pytorch_s_test_fx_work_with_minifx():
    """The header of PyTorch's test/test_fx.py, `torch.fx` written as `minifx`, for what
    minifx covers (not `experimental`, `operator_schemas` or `_compatibility`)."""
    import minifx._pytree
    from minifx import (  # noqa: F401
        PH,
        CodeGen,
        Graph,
        GraphModule,
        Interpreter,
        Node,
        Proxy,
        Tracer,
        Transformer,
        symbolic_trace,
        wrap,
    )
    from minifx._symbolic_trace import PHBase, PHWithMeta, _wrapped_methods_to_patch
    from minifx.immutable_collections import immutable_dict, immutable_list  # noqa: F401
    from minifx.node import Argument, ArgumentT, Target, _format_arg  # noqa: F401
    from minifx.passes import shape_prop  # noqa: F401
    from minifx.proxy import TraceError  # noqa: F401

    assert ArgumentT.__bound__ == Argument
    assert (PHBase, PHWithMeta) == (minifx.PHBase, minifx.PHWithMeta)
    assert _wrapped_methods_to_patch is minifx.graph.wrapping._wrapped_methods_to_patch
