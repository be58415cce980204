"""`minifx.graph.proxyable`: classes made with `ProxyableClassMeta`, against torch.fx.

Building such a class from Proxies records one `call_function` node; built from
constants, the instance is stored on the root. Each program is traced by torch.fx
and by minifx; the graphs must print alike.
"""

from __future__ import annotations

import pytest
import torch

import minifx
import minifx.graph
from tests.graph.proxyable_programs import PROXYABLE, pair_class, pair_from_constants
from tests.graph.support import LIBRARIES

pytestmark = pytest.mark.ch2


@pytest.mark.parametrize("program", PROXYABLE, ids=lambda p: p.__name__)
def test_proxyable_classes_trace_as_in_torch_fx(program):
    printed = {}
    for name, fx in LIBRARIES.items():
        fn, _ = program(fx)
        printed[name] = str(fx.Tracer().trace(fn))
    assert printed["minifx"] == printed["torch.fx"]


def test_a_proxyable_instance_made_of_constants_is_stored_on_the_root():
    fn, TensorPair = pair_from_constants(minifx)
    tracer = minifx.graph.Tracer()
    graph = tracer.trace(fn)
    constant = tracer.root._TensorPair_constant_0
    assert isinstance(constant, TensorPair) and torch.equal(constant.right, torch.ones(5, 3))
    assert [n.target for n in graph.nodes if n.op == "get_attr"] == ["_TensorPair_constant_0"]


def test_a_proxyable_class_without_proxies_is_built_as_usual():
    TensorPair = pair_class(minifx.ProxyableClassMeta)
    pair = TensorPair(torch.ones(1), torch.zeros(1))
    assert type(pair) is TensorPair and torch.equal(pair.add(pair).left, torch.full((1,), 2.0))
    assert minifx.ProxyableClassMeta is minifx.graph.ProxyableClassMeta


def test_outside_a_trace_only_minifx_records_a_construction_from_proxies():
    # minifx differs on purpose: a Proxy among the arguments is enough to record the call;
    # torch.fx first checks that a symbolic trace is running, and builds the object otherwise.
    made = {}
    for name, fx in LIBRARIES.items():
        graph = fx.Graph()
        x = fx.Proxy(graph.placeholder("x"))
        made[name] = (pair_class(fx.ProxyableClassMeta)(x, x), x)
    ours, x = made["minifx"]
    assert isinstance(ours, minifx.Proxy) and ours.node.target.__name__ == "TensorPair"
    assert ours.node.args == (x.node, x.node)
    theirs, x = made["torch.fx"]
    assert type(theirs).__name__ == "TensorPair" and theirs.left is x


def test_fresh_attribute_names_are_torch_fx_s():
    names = {}
    for name, fx in LIBRARIES.items():
        tracer = fx.Tracer()
        tracer.trace(pair_from_constants(fx)[0])
        names[name] = [
            tracer.get_fresh_qualname("_TensorPair_constant_"),
            tracer.get_fresh_qualname("_tensor_constant"),
        ]
    assert names["minifx"] == names["torch.fx"] == ["_TensorPair_constant_1", "_tensor_constant0"]
