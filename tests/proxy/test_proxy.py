"""Unit tests of the Proxy and the tracer interface (`minifx/proxy/proxy.py`)."""

from __future__ import annotations

import pytest
import torch
import torch.fx

from minifx.proxy import (
    Attribute,
    GraphAppendingTracer,
    Proxy,
    Tape,
    TapeRecorder,
    TraceError,
    TracerBase,
    trace_to_tape,
)
from tests.proxy.support import placeholder

pytestmark = pytest.mark.ch1

# -- Attribute --------------------------------------------------------------------


def test_attribute_records_nothing_until_used(tracer, x):
    shape = x.shape
    assert isinstance(shape, Attribute)
    assert (shape.root, shape.attr) == (x, "shape")
    assert [r.name for r in tracer.graph] == ["x"]


@pytest.mark.task("1.6")
def test_attribute_records_getattr_once_and_caches_it(tracer, x):
    shape = x.shape
    first = shape.node
    assert shape.node is first
    assert [(r.name, r.target, r.args) for r in tracer.graph][1:] == [
        ("getattr_1", getattr, (x.node, "shape"))
    ]


@pytest.mark.task("1.6")
def test_calling_an_attribute_records_a_method_not_a_getattr(tracer, x):
    size = x.size(0)
    assert [(r.op, r.target, r.args) for r in tracer.graph][1:] == [
        ("call_method", "size", (x.node, 0))
    ]
    assert size.node.name == "size"


# -- Proxy(node) ------------------------------------------------------------------


def test_proxy_without_tracer_appends_to_the_nodes_tape():
    tape = trace_to_tape(lambda x: x + 1)
    add = tape.records[1]
    proxy = Proxy(add)
    assert isinstance(proxy.tracer, GraphAppendingTracer)
    assert proxy.tracer.graph is tape
    doubled = (proxy * 2).relu()
    assert [r.name for r in tape] == ["x", "add", "output", "mul", "relu"]
    assert doubled.node is tape.records[-1]
    assert tape.records[3].args == (add, 2)


@pytest.mark.task("1.4")
def test_proxy_repr(x):
    assert repr(x) == "Proxy(x)"
    assert repr(x + 1) == "Proxy(add)"


def test_proxies_are_hashable_by_identity(tracer, x):
    y = placeholder(tracer, "y")
    table = {x: "first", y: "second"}
    assert table[x] == "first" and table[y] == "second"
    assert len({x, y, x}) == 2
    assert hash(x) == object.__hash__(x)
    assert [r.name for r in tracer.graph] == ["x", "y"]


def test_calling_a_proxy_records_call_method(tracer, x):
    x(1, key=2)
    record = tracer.graph.records[-1]
    assert (record.op, record.target, record.args, record.kwargs) == (
        "call_method",
        "__call__",
        (x.node, 1),
        {"key": 2},
    )


def test_double_star_records_keys(tracer, x):
    def takes_kwargs(**kwargs):
        return kwargs

    with pytest.raises(TraceError, match="%keys was iterated over"):
        # `**x` first calls x.keys(), which is recorded; iterating over the
        # keys then needs their number, which is unknown.
        takes_kwargs(**x)
    assert (tracer.graph.records[1].op, tracer.graph.records[1].target) == ("call_method", "keys")


@pytest.mark.task("1.5")
def test_tensor_method_through_torch_function_is_a_call_method(tracer, x):
    y = placeholder(tracer, "y")
    result = Proxy.__torch_function__(torch.Tensor.add, (Proxy,), (x, y), {"alpha": 2})
    assert (result.node.op, result.node.target) == ("call_method", "add")
    assert result.node.args == (x.node, y.node)
    assert result.node.kwargs == {"alpha": 2}


@pytest.mark.task("1.5")
def test_torch_function_finds_proxies_in_nested_keyword_arguments(tracer, x):
    y = placeholder(tracer, "y")
    out = torch.cat(tensors=[x, (y + 1)], dim=0)
    assert out.node.target is torch.cat
    assert out.node.kwargs["tensors"] == [x.node, tracer.graph.records[2]]


# -- create_arg -------------------------------------------------------------------


@pytest.mark.task("1.2")
def test_create_arg_converts_dicts_lists_and_tuples(tracer, x):
    arg = tracer.create_arg({"a": [x, (x, 1)], 2: None})
    assert arg == {"a": [x.node, (x.node, 1)], 2: None}


@pytest.mark.task("1.2")
def test_create_arg_rejects_a_proxy_as_dict_key(tracer, x):
    with pytest.raises(TraceError, match="%x was used as a dict key"):
        tracer.create_arg({x: 1})


@pytest.mark.task("1.2")
def test_create_arg_rejects_a_proxy_inside_a_tuple_key(tracer, x):
    with pytest.raises(TraceError, match="dict key"):
        tracer.create_arg({("k", x): 1})


# -- custom tracers ---------------------------------------------------------------


class Tagged(Proxy):
    """A Proxy subclass a custom tracer hands out."""


class CustomTracer(TracerBase):
    def __init__(self):
        self.graph = Tape()
        self.kinds = []

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        self.kinds.append(kind)
        return super().create_node(kind, target, args, kwargs, name, type_expr)

    def create_proxy(
        self, kind, target, args, kwargs, name=None, type_expr=None, proxy_factory_fn=None
    ):
        return super().create_proxy(
            kind,
            target,
            args,
            kwargs,
            name,
            type_expr,
            proxy_factory_fn=lambda node: Tagged(node, self),
        )

    def to_bool(self, obj):
        return True

    def iter(self, obj):
        return iter([obj[0], obj[1]])


def test_custom_tracer_overrides_are_used():
    tracer = CustomTracer()
    x = placeholder(tracer)
    y = torch.relu(x)
    assert type(x) is Tagged and type(y) is Tagged
    assert tracer.kinds == ["placeholder", "call_function"]


def test_custom_to_bool_records_the_true_branch():
    tracer = CustomTracer()
    x = placeholder(tracer)
    out = x.relu() if x.sum() > 0 else x.neg()
    assert [r.name for r in tracer.graph] == ["x", "sum_1", "gt", "relu"]
    assert out.node.name == "relu"


def test_custom_iter_is_used_by_for_loops():
    tracer = CustomTracer()
    x = placeholder(tracer)
    total = None
    for row in x:
        total = row if total is None else total + row
    assert [r.name for r in tracer.graph] == ["x", "getitem", "getitem_1", "add"]


@pytest.mark.task("1.2")
def test_proxy_factory_and_name_and_type_expr(tracer, x):
    proxy = tracer.create_proxy(
        "call_function",
        torch.relu,
        (x,),
        {},
        name="my_relu",
        type_expr=torch.Tensor,
        proxy_factory_fn=lambda node: Tagged(node, tracer),
    )
    assert type(proxy) is Tagged
    assert (proxy.node.name, proxy.node.type) == ("my_relu", torch.Tensor)


@pytest.mark.task("1.5")
def test_two_tracers_in_one_call_raise():
    x = placeholder(TapeRecorder())
    y = placeholder(TapeRecorder(), "y")
    with pytest.raises(TraceError) as error:
        torch.add(x, y)
    message = str(error.value)
    assert message.startswith("add() received Proxies from 2 tracers.\n")
    assert "Why: each trace records into one graph" in message
    assert "How to fix: use values from one trace per call" in message


# -- TracerBase's members, as torch.fx pins them --------------------------------------


def test_tracer_base_has_torch_fx_s_public_members_and_defaults():
    """torch.fx keeps TracerBase's public members backward compatible (its own test lists
    them); minifx's has each, with the same default, except `trace_asserts` (chapter 1's
    differences: not covered)."""
    theirs = {k: v for k, v in vars(torch.fx.proxy.TracerBase).items() if not k.startswith("_")}
    missing = sorted(k for k in theirs if not hasattr(TracerBase, k))
    assert missing == ["trace_asserts"]
    for name in ("check_mutable_operations", "record_stack_traces", "proxy_buffer_attributes"):
        assert getattr(TracerBase, name) is theirs[name] is False
    assert TracerBase.traced_func_name == theirs["traced_func_name"] == "forward"
    assert GraphAppendingTracer.traced_func_name == "forward"
