"""Copying and pickling Proxies (`minifx/proxy/copying.py`): nothing is recorded."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch.fx

from minifx.proxy import Proxy
from minifx.proxy.copying import CopyableProxy

pytestmark = pytest.mark.ch1


def test_a_proxy_is_copyable(x):
    assert isinstance(x, CopyableProxy)


def test_deepcopy_records_nothing_and_copies_the_record(tracer, x):
    copied = copy.deepcopy(x)
    assert isinstance(copied, Proxy) and copied is not x
    # As torch.fx's: the copy holds copies of the record and of the tracer.
    assert copied.node is not x.node and copied.node.name == x.node.name
    assert copied.tracer is not x.tracer
    assert [r.name for r in tracer.graph] == ["x"]


def test_deepcopy_shares_what_cannot_be_copied(tracer, x):
    class Uncopyable:
        def __deepcopy__(self, memo):
            raise RuntimeError("no copies")

    tracer.extra = Uncopyable()
    copied = copy.deepcopy(x)
    assert copied.tracer.extra is tracer.extra


def test_deepcopy_of_a_torch_fx_proxy_also_copies_the_node():
    graph = torch.fx.Graph()
    proxy = torch.fx.Proxy(graph.placeholder("x"))
    copied = copy.deepcopy(proxy)
    assert copied.node is not proxy.node and copied.node.name == proxy.node.name


def test_pickle_state_round_trips(x):
    state = x.__getstate__()
    clone = Proxy.__new__(Proxy)
    clone.__setstate__(dict(state))
    assert clone.node is x.node and clone.tracer is x.tracer


def test_pickle_round_trips_and_records_nothing(tracer, x):
    clone = pickle.loads(pickle.dumps(x))
    assert isinstance(clone, Proxy) and clone.node.name == "x"
    assert [r.name for r in clone.tracer.graph] == ["x"]
    assert [r.name for r in tracer.graph] == ["x"]
