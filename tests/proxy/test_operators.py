"""Python's operator table (`minifx/proxy/operators.py`): torch.fx's, what each entry
means, and that the Proxy records exactly the table's operators."""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx.graph

from minifx.proxy import Proxy, trace_to_tape
from minifx.proxy.operators import (
    COMPARISONS,
    INPLACE_OPERATORS,
    OPERATOR_SYNTAX,
    REFLECTABLE_OPERATORS,
    UNARY_OPERATORS,
)

pytestmark = pytest.mark.ch1

# torch.fx also lists "div", which Python 3's operator module no longer has.
FX_ONLY = {"div"}


def test_the_table_is_torch_fx_s():
    assert OPERATOR_SYNTAX == {
        name: syntax for name, syntax in torch.fx.graph.magic_methods.items() if name not in FX_ONLY
    }
    assert INPLACE_OPERATORS == torch.fx.graph.inplace_methods


def test_reflectable_operators_are_torch_fx_s_less_getitem():
    # torch.fx also defines Proxy.__rgetitem__, which Python never calls.
    fx = set(torch.fx.graph.reflectable_magic_methods) - FX_ONLY - {"getitem"}
    assert set(REFLECTABLE_OPERATORS) == fx


def test_the_groups_make_up_the_table():
    assert OPERATOR_SYNTAX == {
        **REFLECTABLE_OPERATORS,
        **COMPARISONS,
        "getitem": "{}[{}]",
        **UNARY_OPERATORS,
    }


def _operands(name: str) -> dict:
    if name in ("getitem", "setitem"):
        return {"a": [5, 6], "b": 1, "c": 7}
    if name in ("matmul", "imatmul"):
        return {"a": torch.tensor([[6.0, 3.0], [1.0, 2.0]]), "b": torch.eye(2) * 2}
    return {"a": 6, "b": 2}


@pytest.mark.parametrize("name", OPERATOR_SYNTAX)
def test_each_syntax_means_its_operator_function(name):
    values, syntax = _operands(name), OPERATOR_SYNTAX[name]
    names = ["a", "b"][: syntax.count("{}")]
    result = eval(syntax.format(*names), dict(values))
    expected = getattr(operator, name)(*(values[n] for n in names))
    assert torch.equal(torch.as_tensor(result), torch.as_tensor(expected))


@pytest.mark.parametrize("name", INPLACE_OPERATORS)
def test_each_inplace_syntax_means_its_operator_function(name):
    syntax = INPLACE_OPERATORS[name]
    names = ["a", "b", "c"][: syntax.count("{}")]
    namespace = _operands(name)
    exec(syntax.format(*names), namespace)
    values = _operands(name)
    returned = getattr(operator, name)(*(values[n] for n in names))
    expected = values["a"] if name == "setitem" else returned
    assert torch.equal(torch.as_tensor(namespace["a"]), torch.as_tensor(expected))


@pytest.mark.parametrize("name", OPERATOR_SYNTAX)
@pytest.mark.task("1.4")
def test_the_proxy_records_every_operator_of_the_table(name):
    dunder = f"__{name.strip('_')}__"
    others = [1] * (OPERATOR_SYNTAX[name].count("{}") - 1)  # x + 1, x[1], -x
    tape = trace_to_tape(lambda x: getattr(x, dunder)(*others))
    call = tape.records[1]
    assert (call.op, call.target) == ("call_function", getattr(operator, name))


@pytest.mark.parametrize("name", REFLECTABLE_OPERATORS)
@pytest.mark.task("1.4")
def test_the_proxy_records_reflected_operators_with_the_arguments_in_order(name):
    tape = trace_to_tape(lambda x: getattr(x, f"__r{name.strip('_')}__")(2))
    x, call = tape.records[:2]
    assert (call.target, call.args) == (getattr(operator, name), (2, x))


def test_the_proxy_has_no_other_reflected_operators_than_the_table_s():
    operators = {name.strip("_") for name in OPERATOR_SYNTAX}
    reflected = {name for name in vars(Proxy) if name.startswith("__r") and name[3:-2] in operators}
    assert reflected == {f"__r{name.strip('_')}__" for name in REFLECTABLE_OPERATORS}


@pytest.mark.task("1.4")
def test_abs_is_recorded_though_it_has_no_syntax():
    tape = trace_to_tape(lambda x: abs(x))
    assert tape.records[1].target is operator.abs
    assert "abs" not in OPERATOR_SYNTAX


@pytest.mark.task("1.3")
def test_proxies_hash_by_identity_despite_a_recording_eq():
    proxy = Proxy(trace_to_tape(lambda x: x).records[0])
    assert hash(proxy) == object.__hash__(proxy)
    assert {proxy: 1}[proxy] == 1
