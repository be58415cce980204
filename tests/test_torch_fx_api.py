"""minifx's public API against the part of torch.fx's that torch.fx keeps backward compatible.

torch.fx marks functions and classes `@compatibility(is_backward_compatible=True)`, and
PyTorch's own tests (`TestFXAPIBackwardCompatibility` in test/test_fx.py) pin their
signatures and their classes' public members. Each of them that minifx offers must have
the same parameters (names, order, kinds, defaults) and members, under the name torch.fx
code reaches it by (`fx.Graph`, `fx.node.map_arg`, `fx.graph_module.reduce_graph_module`),
except for the differences the chapters document, listed below with the chapter. A
documented difference that is gone fails too, so the lists only shrink.
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path
from typing import Any

import pytest
from torch.fx._compatibility import _BACK_COMPAT_OBJECTS

import minifx

pytestmark = pytest.mark.meta

# torch.fx's module -> where code written for torch.fx finds its names with minifx.
MODULES = {
    "torch.fx._symbolic_trace": "minifx._symbolic_trace",
    "torch.fx.graph": "minifx",
    "torch.fx.graph_module": "minifx.graph_module",
    "torch.fx.immutable_collections": "minifx.immutable_collections",
    "torch.fx.interpreter": "minifx.interpreter",
    "torch.fx.node": "minifx.node",
    "torch.fx.passes.shape_prop": "minifx.passes.shape_prop",
    "torch.fx.proxy": "minifx.proxy",
    "torch.fx.subgraph_rewriter": "minifx.subgraph_rewriter",
}
# Passes no chapter builds (chapters/differences.md, "Beyond the chapters").
OUT_OF_SCOPE = (
    "torch.fx.passes.reinplace",
    "torch.fx.passes.runtime_assert",
    "torch.fx.passes.split_module",
)
# A module's objects join _BACK_COMPAT_OBJECTS when it is imported: import them all, so
# that the set does not depend on what other tests imported.
for module in (*MODULES, *OUT_OF_SCOPE):
    importlib.import_module(module)

# Documented differences: torch.fx's name -> the chapter whose differences box lists it.
MISSING = {
    "torch.fx.graph.Graph.create_size_node": "02-graph.md",
    "torch.fx.graph.Graph.create_storage_offset_node": "02-graph.md",
    "torch.fx.graph.Graph.create_stride_node": "02-graph.md",
    "torch.fx.graph.Graph.materialize_symint": "02-graph.md",
    "torch.fx.graph.Graph.materialize_symints": "02-graph.md",
    "torch.fx.node.Node.normalized_arguments": "02-graph.md",
    "torch.fx.proxy.TracerBase.trace_asserts": "01-proxy.md",
    "torch.fx.graph_module.reduce_package_graph_module": "03-codegen.md",
}
OTHER_SIGNATURE = {
    "torch.fx.graph.Graph.python_code": "03-codegen.md",  # only `verbose` of the options
    "torch.fx.node.Node.format_node": "02-graph.md",  # no arguments
}


def name_of(obj: Any) -> str:
    return f"{obj.__module__}.{obj.__qualname__}"


def in_scope() -> list[Any]:
    objects = [o for o in _BACK_COMPAT_OBJECTS if not o.__module__.startswith(OUT_OF_SCOPE)]
    return sorted(objects, key=name_of)


def ours(obj: Any) -> Any:
    """minifx's object for torch.fx's `obj`, or None."""
    value: Any = importlib.import_module(MODULES[obj.__module__])
    for part in obj.__qualname__.split("."):
        value = getattr(value, part, None)
    return value


def parameters(function: Any) -> list[tuple[str, str, str]]:
    def default(value: Any) -> str:
        if value is inspect.Parameter.empty:
            return "-"
        return "a function" if inspect.isfunction(value) else repr(value)

    return [
        (p.name, p.kind.name, default(p.default))
        for p in inspect.signature(function).parameters.values()
    ]


def members(cls: type) -> list[str]:
    """torch.fx's class's public members, as its test lists them (`cls.__dict__`)."""
    return sorted(name for name in vars(cls) if not name.startswith("_"))


def has(cls: type, name: str) -> bool:
    """Whether minifx's class has the member, or its instances do: a `Graph` sets some in
    `__init__` (`owning_module`), where torch.fx's class declares them."""
    return hasattr(cls, name) or (cls is minifx.Graph and hasattr(cls(), name))


def test_every_module_of_torch_fx_s_backward_compatible_api_is_mapped():
    unmapped = {o.__module__ for o in in_scope()} - set(MODULES)
    assert not unmapped, "map these torch.fx modules to minifx's, or list them out of scope"


@pytest.mark.parametrize("theirs", in_scope(), ids=name_of)
def test_minifx_offers_it_with_torch_fx_s_signature_or_members(theirs):
    name = name_of(theirs)
    mine = ours(theirs)
    if name in MISSING:
        assert mine is None, f"{name} exists now: remove it from MISSING"
        return
    assert mine is not None, f"minifx has no {name.replace('torch.fx', 'fx', 1)}"
    if isinstance(theirs, type):
        lacking = [m for m in members(theirs) if not has(mine, m) and f"{name}.{m}" not in MISSING]
        assert not lacking, f"{name}: minifx's class lacks {lacking}"
        gone = [m for m in members(theirs) if has(mine, m) and f"{name}.{m}" in MISSING]
        assert not gone, f"{name}: minifx has {gone} now: remove them from MISSING"
    elif name in OTHER_SIGNATURE:
        assert parameters(mine) != parameters(theirs), f"remove {name} from OTHER_SIGNATURE"
    else:
        assert parameters(mine) == parameters(theirs)


@pytest.mark.parametrize("name, chapter", {**MISSING, **OTHER_SIGNATURE}.items())
def test_each_documented_difference_is_in_its_chapter_s_box(name, chapter):
    text = (Path(__file__).parent.parent / "chapters" / chapter).read_text()
    box = text.split("[start:differences]")[1].split("[end:differences]")[0]
    short = name.rsplit(".", 1)[1]
    spellings = (short, f"{short[:-1]}(s)")  # `materialize_symint(s)` names two
    assert any(s in box for s in spellings), f"{chapter}'s differences box does not name {name}"
