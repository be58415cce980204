"""The rarer arguments a record holds (`minifx/proxy/arguments.py`): named tuples,
subclasses of the containers, slices, ranges, dataclasses and the base types."""

from __future__ import annotations

import collections
import dataclasses

import pytest
import torch

from minifx.proxy import TraceError

pytestmark = pytest.mark.ch1

Point = collections.namedtuple("Point", ["x", "y"])


@pytest.mark.task("1.2")
def test_create_arg_keeps_namedtuples(tracer, x):
    arg = tracer.create_arg(Point(x, 3))
    assert type(arg) is Point
    assert arg == Point(x.node, 3)


@pytest.mark.task("1.2")
def test_create_arg_converts_slices_and_ranges(tracer, x):
    assert tracer.create_arg(slice(x, None, 2)) == slice(x.node, None, 2)
    assert tracer.create_arg(range(1, 5, 2)) == range(1, 5, 2)


@pytest.mark.task("1.2")
def test_create_arg_keeps_base_types(tracer):
    values = [
        1,
        2.5,
        True,
        1j,
        "s",
        None,
        ...,
        torch.float16,
        torch.device("cpu"),
        torch.contiguous_format,
        torch.strided,
    ]
    assert [tracer.create_arg(v) for v in values] == values
    tensor = torch.ones(2)
    assert tracer.create_arg(tensor) is tensor


@pytest.mark.parametrize(
    "value", [object(), {1, 2}, lambda: 0, b"bytes"], ids=["object", "set", "lambda", "bytes"]
)
@pytest.mark.task("1.2")
def test_create_arg_rejects_unsupported_types(tracer, value):
    with pytest.raises(TraceError, match=f"an argument of type {type(value).__qualname__}"):
        tracer.create_arg(value)


def test_subclasses_of_list_and_dict_become_plain_ones(tracer, x):
    class Items(list):
        pass

    arg = tracer.create_arg(Items([x, 1]))
    assert type(arg) is list and arg == [x.node, 1]
    arg = tracer.create_arg(collections.OrderedDict(b=x, a=2))
    assert type(arg) is dict and list(arg.items()) == [("b", x.node), ("a", 2)]


def test_a_dict_subclass_refuses_a_proxy_key(tracer, x):
    with pytest.raises(TraceError, match="%x was used as a dict key"):
        tracer.create_arg(collections.OrderedDict([(x, 1)]))


def test_a_dataclass_becomes_a_record_that_builds_it(tracer, x):
    @dataclasses.dataclass
    class Pair:
        first: object
        second: int

    record = tracer.create_arg(Pair(x, 2))
    assert (record.op, record.target) == ("call_function", Pair)
    assert record.kwargs == {"first": x.node, "second": 2}


def test_an_object_can_convert_itself(tracer, x):
    class Doubled:
        def __fx_create_arg__(self, tracer):
            return ("doubled", tracer.create_arg(x))

    assert tracer.create_arg([Doubled()]) == [("doubled", x.node)]
