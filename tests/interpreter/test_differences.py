"""Every claim of chapter 4's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx as well as minifx, so that a claim about torch.fx that
stops being true (a new torch.fx, a changed minifx) fails here instead of
misleading the reader. One test per claim, in the box's order; the first line
of each docstring quotes it.

Claims pinned elsewhere, by tests that run torch.fx too:

- `run()` with more arguments than open placeholders raises a `TypeError`, torch.fx
  ignores the extra ones; a missing argument raises `RuntimeError` in both:
  tests/interpreter/test_errors.py::test_too_many_arguments, ::test_missing_argument,
  tests/interpreter/test_differential.py::test_initial_env_with_placeholders_refuses_extra_arguments
- when values are dropped from `env` (at once if unused; after their last use, also
  the output node's; after a node given in `initial_env` too):
  tests/interpreter/test_memory.py::test_unused_value_is_dropped_at_once,
  ::test_drop_lists_are_torch_fx_plus_unused_values, ::test_after_run_env_holds_only_the_output,
  tests/interpreter/test_differential.py::test_initial_env_drops_values_after_their_last_use
- lists handed to operations and returned are plain (dicts: below):
  tests/interpreter/test_differential.py::test_lists_given_and_returned_are_plain
- a `KeyError` stays a `KeyError` (torch.fx: a `RuntimeError` that mentions tlparse):
  tests/interpreter/test_errors.py::test_key_error_stays_a_key_error
- what a Transformer copies into `meta`, and that it adds no `from_node` or `seq_nr`:
  tests/interpreter/test_transformer.py::test_transformer_copies_stack_traces_as_torch_fx
- a Transformer writes an output node for a program that returns `None`:
  tests/interpreter/test_transformer.py::test_returns_none_minifx_writes_an_output_node,
  ::test_returns_none_torch_fx_writes_no_output_node
"""

from __future__ import annotations

import inspect
import operator

import pytest
import torch
import torch.fx
import torch.fx.experimental.proxy_tensor
import torch.fx.interpreter
import torch.nn.functional as F
from torch import nn

import minifx
from minifx.interpreter import decompose

pytestmark = pytest.mark.ch4

LIBRARIES = (torch.fx, minifx)


def star_args(x, *rest):
    return x, rest


def star_kwargs(x, **options):
    return x, options


def test_variadic_placeholders_get_a_tuple_and_an_empty_dict():
    """A `*args` placeholder gets a tuple of the remaining arguments (torch.fx: a list), and a
    `**kwargs` placeholder gets `{}` (torch.fx gives it the leftover positional arguments as
    a list)."""
    results = {}
    for lib in LIBRARIES:
        results[lib.__name__] = [
            lib.Interpreter(lib.symbolic_trace(star_args)).run(1, 2, 3),
            lib.Interpreter(lib.symbolic_trace(star_kwargs)).run(1),
        ]
    assert results["minifx"] == [(1, (2, 3)), (1, {})]
    assert results["torch.fx"] == [(1, [2, 3]), (1, [])]
    leftover = torch.fx.Interpreter(torch.fx.symbolic_trace(star_kwargs)).run(1, 2, 3)
    assert leftover == (1, [2, 3])


def test_an_output_given_in_initial_env_is_returned():
    """An output node given in `initial_env` is not run, like any node given there, and
    `run()` returns its value; torch.fx skips it too, so its `run()` ends without
    returning, and gives `None`."""
    results = {}
    for lib in LIBRARIES:
        gm = lib.symbolic_trace(star_args)
        output = gm.graph.find_nodes(op="output")[0]
        results[lib.__name__] = lib.Interpreter(gm).run(1, 2, initial_env={output: "given"})
    assert results == {"minifx": "given", "torch.fx": None}


def containers(items, table):
    """Report the types of the list and the dict it gets."""
    return type(items), type(table)


def test_lists_and_dicts_given_and_returned_are_plain():
    """Lists and dicts passed to operations and returned are plain, mutable ones, as in the
    generated code, so `Interpreter(gm).run(x)` returns what `gm(x)` returns, type for type;
    torch.fx passes its `immutable_list` and `immutable_dict`."""
    interpreted, generated = {}, {}
    for lib in LIBRARIES:
        graph = lib.Graph()
        x = graph.placeholder("x")
        seen = graph.call_function(containers, ([x], {"x": x}))
        graph.output({"seen": seen, "list": [x]})
        gm = lib.GraphModule(torch.nn.Module(), graph)
        for results, out in ((interpreted, lib.Interpreter(gm).run(1)), (generated, gm(1))):
            results[lib.__name__] = (*out["seen"], type(out), type(out["list"]))
    immutable = torch.fx.immutable_collections
    assert interpreted["torch.fx"] == (
        immutable.immutable_list,
        immutable.immutable_dict,
        immutable.immutable_dict,
        immutable.immutable_list,
    )
    assert (
        interpreted["minifx"]
        == generated["minifx"]
        == generated["torch.fx"]
        == (list, dict, dict, list)
    )


def dot(x):
    return torch.dot(x, x)


def test_an_error_keeps_its_message_and_gets_a_note():
    """An error while running a node keeps its type and message and gets a PEP 678 note
    naming the node. torch.fx rewrites the message (`args[0]`), turns a `KeyError` into a
    `RuntimeError`, and mentions tlparse."""
    errors = {}
    for lib in LIBRARIES:
        with pytest.raises(TypeError) as error:
            lib.Interpreter(lib.symbolic_trace(dot)).run(5)
        errors[lib.__name__] = error.value
    theirs, ours = errors["torch.fx"], errors["minifx"]
    original = str(ours)
    assert "While executing %dot" not in original and "tlparse" not in original
    assert ours.__notes__[0].startswith("While running node %dot (call_function torch.dot)")
    assert str(theirs).startswith(original + "\n\nWhile executing %dot : ")
    assert "Use tlparse to see full graph." in str(theirs)
    assert not hasattr(theirs, "__notes__")


def test_there_is_no_progress_bar(monkeypatch, capsys):
    """There is no progress bar (torch.fx opens a tqdm bar on every `run`, shown when
    `torch.fx.config.disable_progress` is False)."""
    monkeypatch.setattr(torch.fx.config, "disable_progress", False)  # show torch.fx's bar
    for lib in LIBRARIES:
        lib.Interpreter(lib.symbolic_trace(dot)).run(torch.ones(2))
        written = capsys.readouterr().err
        assert ("100" in written) is (lib is torch.fx), (lib.__name__, written)  # 100%
    opened = []
    real_tqdm = torch.fx.interpreter.tqdm
    monkeypatch.setattr(
        torch.fx.interpreter,
        "tqdm",
        lambda *args, **kwargs: opened.append(kwargs) or real_tqdm(*args, **kwargs),
    )
    monkeypatch.setattr(torch.fx.config, "disable_progress", True)  # the default: hidden
    torch.fx.Interpreter(torch.fx.symbolic_trace(dot)).run(torch.ones(2))
    assert [bar["disable"] for bar in opened] == [True]  # opened all the same


class ReluNet(nn.Module):
    def forward(self, x):
        return x.relu()


def test_a_transformer_keeps_the_tracer_class():
    """[A Transformer's] new graph keeps the old graph's tracer class, which pickling uses
    (torch.fx's new graph has none)."""
    classes = {}
    for lib in LIBRARIES:
        tracer_class = type("LeafTracer", (lib.Tracer,), {})
        root = ReluNet()
        gm = lib.GraphModule(root, tracer_class().trace(root))
        assert gm.graph._tracer_cls is tracer_class
        classes[lib.__name__] = (lib.Transformer(gm).transform().graph._tracer_cls, tracer_class)
    assert classes["minifx"][0] is classes["minifx"][1]
    assert classes["torch.fx"][0] is None


def with_pair(x, pair):
    return x + pair["a"] - pair["b"]


def structured(lib):
    return lib.symbolic_trace(with_pair, concrete_args={"pair": {"a": lib.PH, "b": lib.PH}})


X, A, B = torch.tensor([1.0]), torch.tensor([10.0]), torch.tensor([100.0])
EXPECTED = X + A - B


def test_run_checks_the_structure_of_structured_inputs():
    """For a graph traced with structured `concrete_args`, `run()` checks the inputs'
    structure with `minifx.codegen.pytree.tree_flatten_spec` and raises a clear `TypeError`
    for another one; torch.fx flattens whatever it gets (a dict whose keys come in another
    order swaps the inputs; minifx reads a dict by its keys, as the generated code does)."""
    theirs = torch.fx.Interpreter(structured(torch.fx))
    ours = minifx.Interpreter(structured(minifx))
    assert torch.equal(theirs.run(X, [A, B]), EXPECTED)  # a list where a dict was traced
    with pytest.raises(TypeError, match=r"the inputs\[1\] should be a dict with keys \['a', 'b'\]"):
        ours.run(X, [A, B])
    # A dict whose keys come in another order: torch.fx swaps the inputs, minifx reads by key.
    assert torch.equal(theirs.run(X, {"b": B, "a": A}), X + B - A)
    assert torch.equal(ours.run(X, {"b": B, "a": A}), EXPECTED)
    for lib in LIBRARIES:  # the generated code reads by key in both
        assert torch.equal(structured(lib)(X, {"b": B, "a": A}), EXPECTED)


def test_run_without_arguments_flattens_nothing_in_both():
    """`run()` with no arguments flattens nothing, in both: the inputs are then in
    `initial_env`, as `boxed_run` puts them."""
    for lib in LIBRARIES:
        gm = structured(lib)
        placeholders = gm.graph.find_nodes(op="placeholder")
        leaves = dict(zip(placeholders, (X, A, B)))
        assert torch.equal(lib.Interpreter(gm).run(initial_env=leaves), EXPECTED)
        assert torch.equal(lib.Interpreter(gm).boxed_run([X, A, B]), EXPECTED)


class Relu(nn.Module):
    def forward(self, x):
        return F.relu(x)


def test_decompose_is_minifx_s_and_passes_the_kwargs():
    """`decompose` is a function of minifx; torch.fx has none: [...]
    `torch.fx.experimental.proxy_tensor.decompose` is something else, a context manager for
    `make_fx`'s decomposition tables. minifx passes the kwargs too, so `F.relu`'s
    `inplace=False` reaches the rule.

    The documentation's example (the loop, which passes only `node.args`) is not part of
    the installed torch, so only the absence of such a function from torch.fx is checked.
    """
    assert not hasattr(torch.fx, "decompose") and not hasattr(torch.fx.interpreter, "decompose")
    other = torch.fx.experimental.proxy_tensor.decompose
    assert list(inspect.signature(other).parameters) == ["decomposition_table"]
    assert hasattr(other(None), "__enter__")  # a context manager, not a graph rewrite
    received = []

    def relu(x, **kwargs):
        received.append(kwargs)
        return (x > 0) * x

    gm = decompose(Relu(), {F.relu: relu})
    assert received == [{"inplace": False}]
    assert [n.target for n in gm.graph.nodes if n.op == "call_function"] == [
        operator.gt,
        operator.mul,
    ]
