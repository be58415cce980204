"""Differential tests: `trace_to_tape` against `torch.fx.symbolic_trace`.

Every function of the corpus is traced twice, by torch.fx (the oracle) and by
minifx's stage 1, and the two recordings must agree record for record: same
name, same opcode, same target, and the same returned structure.
"""

from __future__ import annotations

import operator
import re

import pytest
import torch
import torch.fx
import torch.nn.functional as F

from minifx.proxy import Record, trace_to_tape

pytestmark = pytest.mark.ch1


# -- the corpus: small plain functions, no parameters, no tensor constants --------


def arithmetic(x, y):
    return (x + y, x - y, x * y, x / y, x // y, x % y, x**y, x @ y)


def arithmetic_with_numbers(x):
    return x + 1, x - 2.5, x * 3, x / 4, x // 5, x % 6, x**2


def reflected_arithmetic(x):
    return 1 + x, 2 - x, 3 * x, 4 / x, 5 // x, 6 % x, 2**x


def comparisons(x, y):
    return x == y, x != y, x < y, x <= y, x > y, x >= y


def comparisons_with_numbers_on_the_left(x):
    # Python turns `0 < x` into `x > 0`: both recorders see the swapped form.
    return 0 < x, 1 <= x, 2 > x, 3 >= x, 4 == x, 5 != x


def bitwise(x, y):
    return x & y, x | y, x ^ y, x << y, x >> y, ~x


def reflected_bitwise(x):
    return 1 & x, 2 | x, 3 ^ x, 1 << x, 8 >> x


def unary(x):
    return -x, +x, abs(x)


def index_int(x):
    return x[0]


def index_tuple_with_slice(x):
    return x[0, 1:]


def index_ellipsis_none(x):
    return x[..., None]


def index_step_slice(x):
    return x[:, ::2]


def index_with_proxy(x, y):
    return x[y]


def slice_with_proxy_bound(x, n):
    return x[:n]


def torch_positional(x, y):
    return torch.add(x, y)


def torch_keyword_proxy(x, y):
    return torch.add(x, other=y, alpha=2)


def torch_cat_list(x, y):
    return torch.cat([x, y])


def torch_stack_tuple_dim(x, y):
    return torch.stack((x, y), dim=1)


def torch_nested_calls(x, y):
    return torch.cat([torch.relu(x), torch.sigmoid(y) * 2], dim=0)


def torch_where(x, y):
    return torch.where(x > 0, x, y)


def functional_calls(x):
    return F.softmax(F.relu(x, inplace=False), dim=-1)


def functional_linear(x, w, b):
    return F.linear(x, w, bias=b)


def tensor_methods(x):
    return x.relu(), x.view(2, -1), x.sum(dim=0, keepdim=True)


def chained_methods(x):
    return x.relu().sum(1).mean().neg()


def attributes_as_values(x):
    return x.shape, x.dtype, x.T


def attribute_shape_index(x):
    return x.view(x.shape[0], -1)


def attribute_dtype_argument(x, y):
    return y.to(x.dtype)


def unused_attribute(x):
    x.shape  # noqa: B018 - never used, so never recorded
    x.dtype  # noqa: B018
    return x + 1


def method_of_attribute(x):
    return x.size(0), x.size()


def unpacking_chunk(x):
    a, b = x.chunk(2)
    return a * b


def unpacking_three(x):
    a, b, c = x.split(1)
    return c, b, a


def returns_tuple(x):
    return x.relu(), x.sigmoid()


def returns_list(x):
    return [x.relu(), x.sigmoid()]


def returns_dict(x):
    return {"relu": x.relu(), "sigmoid": x.sigmoid()}


def returns_nested(x, y):
    return {"pair": (x + y, [x - y]), "none": None, "number": 3}


def returns_string(x):
    return (x, "a", 1.5, None, torch.float32)


def annotated(x: torch.Tensor, y: int = 2) -> torch.Tensor:
    return x + y


def returns_input(x):
    return x


def keyword_only(x, *, scale):
    return x * scale


def defaulted(x, y=3):
    return x + y


def three_inputs(x, y, z):
    return torch.addmm(z, x, y)


def dedup_add(x):
    return x + 1 + 2 + 3 + 4


def dedup_getitem(x):
    a, b = x.chunk(2)
    return x[0] + a[1] + b[..., 0]


def dedup_builtin_names(x):
    return abs(x) + abs(x.relu()) + x**2 + (x + 1) ** 3


def dedup_getattr(x):
    return x.shape, x.shape, x.dtype


def dedup_float_method(x):
    return x.float() + x.float().float()


def dunders_called_by_name(x, y):
    # Written out, a dunder is a method call, or the operator it stands for (as in torch.fx).
    x.__setitem__(0, y)
    x.__setitem__(
        slice(1, None),
        y,
    )
    return (
        x.__int__(),
        x.__float__(),
        x.__index__(),
        x.__int__().__float__(),
        x.__getitem__(0),
        x.__add__(1),
        x.__radd__(2),
        x.__neg__(),
        x.__abs__(),
        x.__setitem__(x.__index__(), x.shape.__int__()),
    )


def long_chain(x, y):
    h = torch.relu(x @ y + 1)
    h = F.dropout(h, p=0.5, training=False)
    h = h.view(h.shape[0], -1).sum(dim=1, keepdim=True)
    a, b = h.chunk(2)
    return torch.cat([a * 2, 1 - b], dim=0).softmax(dim=0)


def unpacking_shape(x):
    h, w = x.shape
    return x.view(h * w)


def attributes_as_torch_arguments(x):
    return torch.zeros(x.shape, dtype=x.dtype), x.new_zeros(x.size())


def in_place_methods(x):
    return x.add_(1).mul_(2)


def method_arguments(x):
    return x.to(torch.float16), x.to("cpu"), x.flatten(start_dim=1)


def advanced_indexing(x):
    return x[x > 0], x[[0, 1]], x[(0,)], x[0:1, None, ...]


def torch_misc(x, y):
    return torch.max(x, dim=0), F.pad(x, (1, 1)), torch.einsum("ij,jk->ik", x, y)


def shape_arithmetic(x):
    return x.shape[-1] // 2 + x.ndim


def repeated_tuple(x):
    return torch.cat((x,) * 3)


def lambda_function(x):
    return (lambda v: v.exp() - 1)(x)


CORPUS = [
    arithmetic,
    arithmetic_with_numbers,
    reflected_arithmetic,
    comparisons,
    comparisons_with_numbers_on_the_left,
    bitwise,
    reflected_bitwise,
    unary,
    index_int,
    index_tuple_with_slice,
    index_ellipsis_none,
    index_step_slice,
    index_with_proxy,
    slice_with_proxy_bound,
    torch_positional,
    torch_keyword_proxy,
    torch_cat_list,
    torch_stack_tuple_dim,
    torch_nested_calls,
    torch_where,
    functional_calls,
    functional_linear,
    tensor_methods,
    chained_methods,
    attributes_as_values,
    attribute_shape_index,
    attribute_dtype_argument,
    unused_attribute,
    method_of_attribute,
    unpacking_chunk,
    unpacking_three,
    returns_tuple,
    returns_list,
    returns_dict,
    returns_nested,
    returns_input,
    keyword_only,
    defaulted,
    three_inputs,
    dedup_add,
    dedup_getitem,
    dedup_builtin_names,
    dedup_getattr,
    dedup_float_method,
    dunders_called_by_name,
    long_chain,
    lambda_function,
    unpacking_shape,
    attributes_as_torch_arguments,
    in_place_methods,
    method_arguments,
    advanced_indexing,
    torch_misc,
    shape_arithmetic,
    repeated_tuple,
    returns_string,
    annotated,
]


# -- comparing a torch.fx graph with a tape ---------------------------------------


def named(value):
    """`value` with every Node or Record replaced by its name, containers kept."""
    if isinstance(value, (torch.fx.Node, Record)):
        return ("%", value.name)
    if isinstance(value, (list, tuple)):
        return (
            type(value)(named(v) for v in value)
            if not hasattr(value, "_fields")
            else type(value)(*(named(v) for v in value))
        )
    if isinstance(value, dict):
        return {k: named(v) for k, v in value.items()}
    if isinstance(value, slice):
        return ("slice", named(value.start), named(value.stop), named(value.step))
    return value


def summary(records):
    """`(name, op, target)` per record; for `output`, the op and the returned structure."""
    return [
        (r.op, named(r.args[0])) if r.op == "output" else (r.name, r.op, r.target) for r in records
    ]


def full_summary(records):
    """Every field of every record, with records replaced by their names."""
    return [(r.name, r.op, r.target, named(r.args), named(r.kwargs)) for r in records]


def fx_graph(fn):
    return torch.fx.symbolic_trace(fn).graph


@pytest.mark.parametrize("fn", CORPUS, ids=lambda fn: fn.__name__)
def test_names_ops_and_targets_match_torch_fx(fn):
    assert summary(trace_to_tape(fn)) == summary(fx_graph(fn).nodes)


@pytest.mark.parametrize("fn", CORPUS, ids=lambda fn: fn.__name__)
def test_args_and_kwargs_match_torch_fx(fn):
    assert full_summary(trace_to_tape(fn)) == full_summary(fx_graph(fn).nodes)


def test_corpus_covers_every_python_operator():
    recorded = {r.target for fn in CORPUS for r in trace_to_tape(fn) if r.op == "call_function"}
    operators = {
        operator.add,
        operator.sub,
        operator.mul,
        operator.truediv,
        operator.floordiv,
        operator.mod,
        operator.pow,
        operator.matmul,
        operator.eq,
        operator.ne,
        operator.lt,
        operator.le,
        operator.gt,
        operator.ge,
        operator.and_,
        operator.or_,
        operator.xor,
        operator.lshift,
        operator.rshift,
        operator.invert,
        operator.neg,
        operator.pos,
        operator.abs,
        operator.getitem,
        getattr,
    }
    assert operators - recorded == set()


def test_deduplicated_names_appear_in_the_corpus():
    names = {r.name for fn in CORPUS for r in trace_to_tape(fn)}
    expected = {
        "add",
        "add_1",
        "add_3",
        "getitem_2",
        "abs_1",
        "abs_2",
        "getattr_1",
        "getattr_2",
        "float_1",
        "float_3",
        "pow_1",
        "pow_2",
    }
    assert expected - names == set()


# -- printed forms ----------------------------------------------------------------

_NUM_USERS = re.compile(r"(?: :)? \[num_users=\d+\]")


def fx_lines(fn):
    text = _NUM_USERS.sub("", str(fx_graph(fn)))
    return text.replace("graph():", "tape():", 1).splitlines()


# Functions that return a dict or a string, and annotated ones, are compared in their
# own tests below.
PRINTED = [
    arithmetic,
    reflected_bitwise,
    index_tuple_with_slice,
    index_ellipsis_none,
    index_step_slice,
    slice_with_proxy_bound,
    torch_keyword_proxy,
    torch_stack_tuple_dim,
    tensor_methods,
    attributes_as_values,
    unpacking_chunk,
    returns_list,
    defaulted,
    long_chain,
    advanced_indexing,
    torch_misc,
]


@pytest.mark.parametrize("fn", PRINTED, ids=lambda fn: fn.__name__)
def test_printed_tape_matches_printed_graph(fn):
    assert str(trace_to_tape(fn)).splitlines() == fx_lines(fn)


def test_printed_tape_golden():
    assert str(trace_to_tape(defaulted)) == (
        "tape():\n"
        "    %x = placeholder[target=x]\n"
        "    %y = placeholder[target=y](default=3)\n"
        "    %add = call_function[target=operator.add](args = (%x, %y), kwargs = {})\n"
        "    return add"
    )


@pytest.mark.parametrize(
    "fn", [returns_dict, returns_nested, returns_string], ids=lambda fn: fn.__name__
)
def test_printed_return_of_dict_matches_torch_fx(fn):
    assert str(trace_to_tape(fn)).splitlines()[-1] == fx_lines(fn)[-1]


def test_annotated_placeholders_match_torch_fx():
    tape = trace_to_tape(annotated)
    assert [r.type for r in tape][:2] == [n.type for n in fx_graph(annotated).nodes][:2]
    assert str(tape).splitlines() == fx_lines(annotated)
