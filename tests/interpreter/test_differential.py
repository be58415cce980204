"""Differential tests of stage 4: the corpus through the Interpreter.

Every case of `tests/graph/corpus.py` is traced with each library on fresh
roots (with the stage-3 helpers). Then:

1. `Interpreter(gm).run(*args)` returns what `gm(*args)` and the eager program
   return, types included, and changes its inputs as they do; with
   `garbage_collect_values` on and off. Structured `concrete_args` cases are
   given the structures, as `forward` is.
2. torch.fx's Interpreter returns the same values (after making its
   `immutable_list`/`immutable_dict` plain).
3. `initial_env` and `boxed_run` behave as torch.fx's, with the documented
   differences pinned.

The corpus through `Transformer(gm).transform()` is in test_transformer.py.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
import torch
import torch.fx

import minifx
from minifx.interpreter import Interpreter
from tests.codegen.compare import assert_same
from tests.codegen.inputs import INPUTS, NOT_RUNNABLE, SEED, example
from tests.codegen.support import (
    TORCH_FX_CANNOT_COMPILE,
    run,
)
from tests.graph.corpus import CASES, CASES_BY_NAME, Case
from tests.interpreter.support import (
    AS_POSITIONAL,
    INTERPRETABLE,
    NOT_INTERPRETABLE,
    ids,
    listing,
    plain,
    run_args,
)
from tests.oracle import minifx_module, torch_module, trace_torch

pytestmark = pytest.mark.ch4


def seeded(fn: Any, *args: Any) -> Any:
    """`fn(*args)` right after seeding torch's generator (for dropout)."""
    torch.manual_seed(SEED)
    with warnings.catch_warnings():
        # NamesCollideWithInputsAndOps reads `.T` of a 1-d parameter, deprecated in torch.
        warnings.filterwarnings("ignore", message="The use of `x.T`", category=UserWarning)
        return fn(*args)


def seeded_minifx_module(c: Case) -> tuple[Any, minifx.GraphModule]:
    """`minifx_module(c)` built right after seeding, so that its parameters are
    those of `torch_interpreter(c)`'s root."""
    torch.manual_seed(SEED)
    return minifx_module(c)


def torch_interpreter(c: Case) -> torch.fx.Interpreter:
    """torch.fx's Interpreter on the case, its root built right after seeding: on
    its GraphModule, or, where torch.fx cannot compile the code, on the traced
    root with `graph=`."""
    torch.manual_seed(SEED)
    if c.name in TORCH_FX_CANNOT_COMPILE:
        traced = trace_torch(c)
        return torch.fx.Interpreter(traced.tracer.root, graph=traced.graph)
    return torch.fx.Interpreter(torch_module(c))


# -- which cases run ----------------------------------------------------------------------


def test_every_corpus_case_is_interpreted_or_skipped_with_a_reason():
    names = {c.name for c in CASES}
    with_keywords = {name for name in INPUTS if example(name).kwargs}
    assert with_keywords == set(AS_POSITIONAL) | set(NOT_INTERPRETABLE), (
        "a case passes keywords: add it to AS_POSITIONAL or NOT_INTERPRETABLE in support.py"
    )
    assert not set(AS_POSITIONAL) & set(NOT_INTERPRETABLE)
    assert {c.name for c in INTERPRETABLE} | set(NOT_INTERPRETABLE) | set(NOT_RUNNABLE) == names
    assert not {c.name for c in INTERPRETABLE} & (set(NOT_INTERPRETABLE) | set(NOT_RUNNABLE))


@pytest.mark.parametrize("name", NOT_INTERPRETABLE)
def test_kwargs_placeholder_cases_cannot_run(name: str):
    """Keeps NOT_INTERPRETABLE honest: minifx's `**kwargs` is `{}`, so the lookup is a
    KeyError (with a note on the node); torch.fx's is a list, so indexing it by a str
    is a TypeError."""
    c = CASES_BY_NAME[name]
    _, gm = minifx_module(c)
    args = example(name).args
    with pytest.raises(KeyError) as error:
        Interpreter(gm).run(*args)
    assert error.value.__notes__[0].startswith(
        "While running node %getitem_1 (call_function operator.getitem) in Interpreter:"
    )
    with pytest.raises(TypeError, match="list indices must be integers or slices, not str"):
        torch.fx.Interpreter(torch_module(c)).run(*args)


# -- 1. Interpreter == GraphModule == eager -----------------------------------------------


@pytest.mark.parametrize("c", INTERPRETABLE, ids=ids(INTERPRETABLE))
def test_interpreter_runs_like_graph_module_and_eager(c: Case):
    traced, gm = minifx_module(c)
    eager_inputs, gm_inputs = example(c.name), example(c.name)
    expected = seeded(lambda: run(traced.eager(), eager_inputs, eager=True))
    from_code = seeded(lambda: run(gm, gm_inputs))
    for gc in (True, False):
        where = f"Interpreter(garbage_collect_values={gc})"
        interpreter_inputs = example(c.name)
        actual = seeded(
            Interpreter(gm, garbage_collect_values=gc).run, *run_args(c.name, interpreter_inputs)
        )
        assert_same(actual, from_code, f"{where} vs GraphModule")
        assert_same(actual, expected, f"{where} vs eager")
        assert_same(interpreter_inputs.args, eager_inputs.args, f"{where}: inputs after the call")


@pytest.mark.parametrize("c", INTERPRETABLE, ids=ids(INTERPRETABLE))
def test_torch_fx_interpreter_returns_the_same(c: Case):
    _, gm = seeded_minifx_module(c)
    ours_inputs, theirs_inputs = example(c.name), example(c.name)
    ours = seeded(Interpreter(gm).run, *run_args(c.name, ours_inputs))
    theirs = seeded(torch_interpreter(c).run, *run_args(c.name, theirs_inputs))
    assert_same(ours, plain(theirs))
    assert_same(ours_inputs.args, theirs_inputs.args, "inputs after the call")


def test_structured_concrete_args_take_the_structures():
    """`run` flattens `(x, (t, 3))` as `forward` does; `enable_io_processing=False`
    takes the flat leaves instead (torch.fx alike)."""
    c = CASES_BY_NAME["concrete_ph_in_structure"]
    _, gm = minifx_module(c)
    x, pair = example(c.name).args
    expected = x + pair[0] * 3
    torch.testing.assert_close(Interpreter(gm).run(x, pair), expected)
    flat = Interpreter(gm).run(x, pair[0], 3, enable_io_processing=False)
    theirs = torch.fx.Interpreter(torch_module(c)).run(x, pair[0], 3, enable_io_processing=False)
    assert_same(flat, [expected])
    assert_same(flat, plain(theirs))


def test_structured_concrete_args_check_the_structure():
    """Difference 8: a structure that does not match is a TypeError."""
    _, gm = minifx_module(CASES_BY_NAME["concrete_dict_with_ph"])
    with pytest.raises(TypeError):
        Interpreter(gm).run(torch.ones(2), [torch.ones(2)])


def list_argument_types(base: type, gm: Any) -> tuple[list[type], Any]:
    """The type of torch.cat's first argument as `base` hands it over, and the result."""
    seen = []

    class Recording(base):
        def call_function(self, target, args, kwargs):
            seen.append(type(args[0]))
            return super().call_function(target, args, kwargs)

    return seen, Recording(gm).run(torch.ones(1))


def test_lists_given_and_returned_are_plain():
    """Difference 4: minifx hands ops (and returns) plain lists, as generated code
    does; torch.fx its immutable_list."""
    ours_seen, ours = list_argument_types(Interpreter, minifx.symbolic_trace(listing))
    theirs_seen, theirs = list_argument_types(
        torch.fx.Interpreter, torch.fx.symbolic_trace(listing)
    )
    assert ours_seen == [list] and type(ours) is list
    assert theirs_seen == [torch.fx.immutable_collections.immutable_list]
    assert type(theirs) is torch.fx.immutable_collections.immutable_list
    assert_same(ours, plain(theirs))


# -- 3. initial_env and boxed_run -------------------------------------------------------------


def chain(x, y):
    a = x + 1
    b = torch.relu(a)
    unused = x * 2  # noqa: F841 (an unused value)
    return b + y


def node(graph: Any, name: str) -> Any:
    return next(n for n in graph.nodes if n.name == name)


class Recorder:
    """A mixin that records the names of the nodes `run_node` runs."""

    def run_node(self, n: Any) -> Any:
        self.ran.append(n.name)
        return super().run_node(n)


class MiniRecorder(Recorder, Interpreter):
    ran: list


class TorchRecorder(Recorder, torch.fx.Interpreter):
    ran: list


def recording(cls: type, gm: Any) -> Any:
    interpreter = cls(gm)
    interpreter.ran = []
    return interpreter


def test_initial_env_skips_the_nodes_it_holds_as_torch_fx():
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    x, y, relu = torch.randn(3), torch.randn(3), torch.full((3,), 10.0)
    ours, theirs = recording(MiniRecorder, gm), recording(TorchRecorder, tgm)
    env = {node(gm.graph, "relu"): relu}
    result = ours.run(x, y, initial_env=env)
    expected = theirs.run(x, y, initial_env={node(tgm.graph, "relu"): relu})
    torch.testing.assert_close(result, relu + y)
    torch.testing.assert_close(result, expected)
    assert ours.ran == theirs.ran == ["x", "y", "add", "mul", "add_1", "output"]
    assert ours.env is env, "run() fills the caller's dict, as torch.fx does"


def test_initial_env_drops_values_after_their_last_use():
    """Not a listed difference: minifx drops %add after %relu (its last use) even
    though %relu came from initial_env; torch.fx skips the drop for a pre-filled
    node, so %add stays in its env, and so does the unused %mul (difference 3)."""
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    args = torch.randn(3), torch.randn(3)
    ours, theirs = Interpreter(gm), torch.fx.Interpreter(tgm)
    ours.run(*args, initial_env={node(gm.graph, "relu"): torch.zeros(3)})
    theirs.run(*args, initial_env={node(tgm.graph, "relu"): torch.zeros(3)})
    assert [n.name for n in ours.env] == ["output"]
    assert sorted(n.name for n in theirs.env) == ["add", "mul", "output"]


def test_initial_env_with_placeholders_takes_the_remaining_arguments():
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    x, y = torch.randn(3), torch.randn(3)
    result = Interpreter(gm).run(y, initial_env={node(gm.graph, "x"): x})
    expected = torch.fx.Interpreter(tgm).run(y, initial_env={node(tgm.graph, "x"): x})
    torch.testing.assert_close(result, chain(x, y))
    torch.testing.assert_close(result, expected)


def test_initial_env_with_placeholders_refuses_extra_arguments():
    """Difference 2: torch.fx ignores the extra argument; minifx counts open placeholders."""
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    x, y = torch.randn(3), torch.randn(3)
    with pytest.raises(
        TypeError,
        match=r"^Interpreter.run\(\) got 2 arguments, but the graph "
        r"takes 1 \(%y\)\. Pass one value per placeholder\.$",
    ):
        Interpreter(gm).run(y, y, initial_env={node(gm.graph, "x"): x})
    ignored = torch.fx.Interpreter(tgm).run(y, y, initial_env={node(tgm.graph, "x"): x})
    torch.testing.assert_close(ignored, chain(x, y))


@pytest.mark.parametrize("c", INTERPRETABLE, ids=ids(INTERPRETABLE))
def test_boxed_run_is_run_and_clears_the_list(c: Case):
    """Where the example gives one value per placeholder (no defaults used, no
    structures), boxed_run returns what run returns, in both libraries; otherwise
    both refuse the count, or both fail to rebuild the structured inputs."""
    _, gm = seeded_minifx_module(c)
    args = list(run_args(c.name, example(c.name)))
    placeholders = gm.graph.find_nodes(op="placeholder")
    # Separate inputs for each run: some programs change them in place.
    ours_list, theirs_list = list(args), list(run_args(c.name, example(c.name)))
    if len(args) != len(placeholders):
        with pytest.raises(RuntimeError, match="^boxed_run got"):
            Interpreter(gm).boxed_run(ours_list)
        with pytest.raises(RuntimeError, match="^Interpreter.boxed_run expected"):
            torch_interpreter(c).boxed_run(theirs_list)
        assert len(ours_list) == len(theirs_list) == len(args), "a refused list is left as it was"
        return
    # boxed_run fills placeholders with leaves, but run() then expects the structures.
    assert gm.graph.pytree_info is None, "a structured case whose example matches the leaf count"
    expected = seeded(Interpreter(gm).run, *run_args(c.name, example(c.name)))
    ours = seeded(Interpreter(gm).boxed_run, ours_list)
    theirs = seeded(torch_interpreter(c).boxed_run, theirs_list)
    assert ours_list == [] and theirs_list == []
    assert_same(ours, expected)
    assert_same(ours, plain(theirs))


def test_boxed_run_wrong_count_messages():
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    for count, detail in [(1, "missing arguments"), (3, "extra arguments")]:
        ours, theirs = [torch.ones(1)] * count, [torch.ones(1)] * count
        with pytest.raises(RuntimeError) as error:
            Interpreter(gm).boxed_run(ours)
        assert str(error.value) == (
            f"boxed_run got {count} arguments, but the graph has 2 placeholders (%x, %y): "
            f"{'extra' if count > 2 else 'missing'} arguments. Pass exactly one value per "
            "placeholder, in order."
        )
        with pytest.raises(RuntimeError) as error:
            torch.fx.Interpreter(tgm).boxed_run(theirs)
        assert str(error.value) == (
            "Interpreter.boxed_run expected 2 arguments for placeholders "
            f"but received {count} ({detail})"
        )
        assert len(ours) == len(theirs) == count


def test_run_twice_starts_afresh():
    """Each run() starts a new env and a new argument iterator, in torch.fx too."""
    gm, tgm = minifx.symbolic_trace(chain), torch.fx.symbolic_trace(chain)
    ours, theirs = Interpreter(gm), torch.fx.Interpreter(tgm)
    for x, y in [(torch.randn(3), torch.randn(3)), (torch.randn(3), torch.randn(3))]:
        result = ours.run(x, y)
        torch.testing.assert_close(result, chain(x, y))
        torch.testing.assert_close(result, theirs.run(x, y))
        assert [n.name for n in ours.env] == ["output"]
