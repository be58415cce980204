"""Every claim of chapter 2's "Differences from torch.fx" box, checked on both libraries.

Each test runs torch.fx as well as minifx, so that a claim about torch.fx that
stops being true (a new torch.fx, a changed minifx) fails here instead of
misleading the reader. One test per item of the box, in the box's order;
the first line of each docstring is the item.
"""

from __future__ import annotations

import inspect
import operator
import sys
import warnings

import pytest
import torch
import torch.fx

import minifx.graph
from tests.graph.support import MINI, TORCH, chain

pytestmark = pytest.mark.ch2


def test_the_none_check_of_concrete_args_prints_under_minifx_name():
    """The assertion for an input specialised to `None` prints as minifx's `_assert_is_none`."""

    def f(x, val=None):
        return x if val is None else x + val

    theirs = str(torch.fx.Tracer().trace(f, concrete_args={"val": None}))
    ours = str(minifx.graph.Tracer().trace(f, concrete_args={"val": None}))
    assert "target=torch.fx._symbolic_trace._assert_is_none" in theirs
    assert ours == theirs.replace(
        "torch.fx._symbolic_trace._assert_is_none", "minifx.graph.tracer._assert_is_none"
    )


@pytest.mark.parametrize(
    "op, target, args",
    [
        ("call_method", "add_", lambda x: (x, 1)),
        ("call_function", torch.relu_, lambda x: (x,)),
        ("call_function", torch.Tensor.add_, lambda x: (x, 1)),
        ("call_function", torch.ops.aten.add_, lambda x: (x, 1)),
    ],
    ids=["x.add_", "torch.relu_", "torch.Tensor.add_", "aten.add_ packet"],
)
def test_dead_code_elimination_keeps_in_place_calls_by_name(op, target, args):
    """`eliminate_dead_code` keeps unused in-place calls that no schema marks; torch.fx erases them."""
    kept = {}
    for lib in (TORCH, MINI):
        graph = lib.Graph()
        x = graph.placeholder("x")
        graph.create_node(op, target, args(x))
        graph.output(x)
        graph.eliminate_dead_code()
        kept[lib.name] = len(graph.nodes) == 3
    assert kept == {"torch.fx": False, "minifx": True}


def test_call_module_without_an_owning_module_is_pure():
    """`call_module` is pure without an owning module; torch.fx raises `AssertionError`."""
    for lib in (TORCH, MINI):
        graph = lib.Graph()
        graph.output(graph.call_module("lin", (graph.placeholder("x"),)))
        node = graph.find_nodes(op="call_module")[0]
        if lib is TORCH:
            with pytest.raises(AssertionError):
                node.is_impure()
        else:
            assert node.is_impure() is False


def test_lint_checks_more_invariants():
    """`lint()` checks the list's links, the use-def lists and a single output; torch.fx does not."""

    def breakages(lib):
        graph, x, add, relu = chain(lib)
        yield graph, lambda: graph.output(x)  # a second output node
        graph, x, add, relu = chain(lib)
        yield graph, lambda: x.users.pop(add)  # use-def lists out of step with the args
        graph, x, add, relu = chain(lib)
        yield graph, lambda: setattr(relu, "_prev", x)  # a broken backward link

    for (theirs, break_theirs), (ours, break_ours) in zip(breakages(TORCH), breakages(MINI)):
        break_theirs()
        break_ours()
        theirs.lint()  # torch.fx finds nothing wrong
        with pytest.raises(RuntimeError, match=r"invariant (2|5|6)"):
            ours.lint()


def test_format_node_takes_no_arguments():
    """`format_node()` takes no arguments; torch.fx's takes three."""
    assert list(inspect.signature(minifx.graph.Node.format_node).parameters) == ["self"]
    assert list(inspect.signature(torch.fx.Node.format_node).parameters) == [
        "self",
        "placeholder_names",
        "maybe_return_typename",
        "include_tensor_metadata",
    ]


def test_find_nodes_of_call_function_needs_no_target():
    """`find_nodes(op="call_function")` without a target returns every such node."""
    graph, _, add, relu = chain(MINI)
    assert graph.find_nodes(op="call_function") == [add, relu]
    with pytest.raises(AssertionError, match="target must not be None"):
        chain(TORCH)[0].find_nodes(op="call_function")


@pytest.mark.parametrize("misuse", ["unknown opcode", "insert next to", "move", "propagate meta"])
def test_misuse_raises_a_value_error_that_is_also_torch_fx_s_assertion_error(misuse):
    """An unknown opcode, inserting next to or moving a node of another graph, copying meta
    onto a node that has some: torch.fx's `AssertionError`, and minifx's also a `ValueError`."""
    for lib, also in ((TORCH, None), (MINI, ValueError)):
        graph, x, add, _ = chain(lib)
        other = lib.Graph().placeholder("y")
        x.meta["a"] = add.meta["b"] = 1
        action = {
            "unknown opcode": lambda: graph.create_node("bogus", "x"),
            "insert next to": lambda: graph.inserting_before(other),
            "move": lambda: x.prepend(other),
            "propagate meta": lambda: x.replace_all_uses_with(add, propagate_meta=True),
        }[misuse]
        with pytest.raises(AssertionError) as error:
            action()
        assert also is None or isinstance(error.value, also)


def test_print_tabular_needs_no_tabulate(monkeypatch, capsys):
    """`print_tabular()` needs no `tabulate` package; torch.fx's does."""
    monkeypatch.setitem(sys.modules, "tabulate", None)  # as if it were not installed
    with pytest.raises(ImportError):
        chain(TORCH)[0].print_tabular()
    capsys.readouterr()
    chain(MINI)[0].print_tabular()
    assert capsys.readouterr().out.startswith("opcode")


def test_output_node_of_an_empty_graph_raises_the_usual_error():
    """`output_node()` of an empty graph raises its usual error; torch.fx `StopIteration`."""
    with pytest.raises(StopIteration):
        TORCH.Graph().output_node()
    with pytest.raises(ValueError, match="the graph is empty") as error:
        MINI.Graph().output_node()
    assert isinstance(error.value, AssertionError)


def test_find_nodes_sorts_by_walking_the_graph():
    """`find_nodes(sort=True)` walks the graph; torch.fx keeps a sort key on every node."""
    _, x, _, _ = chain(TORCH)
    assert hasattr(x, "_sort_key")
    _, x, _, _ = chain(MINI)
    assert not hasattr(x, "_sort_key")


def test_nodes_compare_by_walking_the_list():
    """Nodes compare by their place in the graph, as in torch.fx, by walking the list on
    from both nodes; torch.fx compares sort keys."""
    orders = []
    for lib in (TORCH, MINI):
        _, x, add, relu = chain(lib)
        x.append(relu)  # now x, relu, add
        orders.append([n.name for n in sorted([add, relu, x])])
        assert (x < relu, relu < add, add < x) == (True, True, False)
    assert orders[0] == orders[1]
    assert not hasattr(x, "_sort_key")


def test_a_node_named_none_is_renamed_as_a_keyword():
    """A node named `None` by hand is called `None_1`, as any keyword or builtin would be;
    torch.fx's graph keeps `None`, so its graph prints `return None`."""
    printed = []
    for lib in (TORCH, MINI):
        graph = lib.Graph()
        x = graph.placeholder("x")
        true = graph.call_function(torch.relu, (x,), name="True")
        assert true.name == "True_1"  # another keyword, renamed in both
        graph.output(graph.call_function(torch.relu, (true,), name="None"))
        printed.append(str(graph))
    assert "%None : [num_users=1]" in printed[0] and printed[0].endswith("return None")
    assert "%None_1 : [num_users=1]" in printed[1] and printed[1].endswith("return None_1")


def test_insert_arg_stores_a_container_read_only():
    """`insert_arg` stores a list read-only, as every stored list; torch.fx stores it as given."""
    stored = {}
    for lib in (TORCH, MINI):
        _, x, add, _ = chain(lib)
        add.insert_arg(0, [x])
        stored[lib.name] = type(add.args[0])
    assert stored["torch.fx"] is list
    assert stored["minifx"] is not list and issubclass(stored["minifx"], list)


@pytest.mark.parametrize("path", ["missing", "layer.missing", "layer.weight"])
def test_call_module_of_a_missing_submodule_warns(path):
    """`graph.call_module(path)` with nothing at `path` warns, and says nothing for a
    parameter; torch.fx raises `get_submodule`'s `AttributeError` for both."""
    root = torch.nn.Module()
    root.layer = torch.nn.Linear(1, 1)
    with pytest.raises(AttributeError):
        torch.fx.Graph(owning_module=root).call_module(path)
    graph = minifx.graph.Graph(owning_module=root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        node = graph.call_module(path)
    assert node.target == path
    assert len(caught) == (path != "layer.weight")


@pytest.mark.parametrize(
    "owner, name",
    [
        ("Node", "normalized_arguments"),
        ("Graph", "create_size_node"),
        ("Graph", "create_stride_node"),
        ("Graph", "create_storage_offset_node"),
        ("Graph", "materialize_symint"),
        ("Graph", "materialize_symints"),
    ],
)
def test_no_schema_or_symbolic_shape_helpers(owner, name):
    """There is no `Node.normalized_arguments`, and no `Graph.create_size_node`, [...]
    `materialize_symint(s)`."""
    assert hasattr(getattr(torch.fx, owner), name)
    assert not hasattr(getattr(minifx.graph, owner), name)


class MakesAConstant(torch.nn.Module):
    def forward(self, x):
        return x + torch.ones(1)


class HasConstantZero(MakesAConstant):
    def __init__(self):
        super().__init__()
        self._tensor_constant0 = torch.zeros(1)


def test_a_new_constant_takes_the_first_free_name_on_every_trace():
    """A new constant takes the first free name on every trace; torch.fx's
    `get_fresh_qualname` counts on from the number an earlier trace reached."""
    names = {}
    for name, tracer_class in (("torch.fx", torch.fx.Tracer), ("minifx", minifx.graph.Tracer)):
        # A root without `_tensor_constant0` starts torch.fx's counter again from 0.
        tracer_class().trace(MakesAConstant())
        graphs = [tracer_class().trace(HasConstantZero()) for _ in range(3)]
        names[name] = [n.target for g in graphs for n in g.nodes if n.op == "get_attr"]
    assert names == {
        "torch.fx": ["_tensor_constant1", "_tensor_constant2", "_tensor_constant3"],
        "minifx": ["_tensor_constant1"] * 3,
    }


class ScalesByItsWeight(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(3))
        self.register_buffer("offset", torch.ones(3))

    def forward(self, x):
        return x + self.offset * self.weight.shape[0]


def test_a_buffer_is_read_through_a_plain_proxy_when_parameter_shapes_are_constant():
    """With `param_shapes_constant=True` and `proxy_buffer_attributes = True`, a buffer is
    read through a plain Proxy; torch.fx's trace fails with `AssertionError`."""

    class TorchTracer(torch.fx.Tracer):
        proxy_buffer_attributes = True

    class MiniTracer(minifx.graph.Tracer):
        proxy_buffer_attributes = True

    with pytest.raises(AssertionError, match="Expected Parameter"):
        TorchTracer(param_shapes_constant=True).trace(ScalesByItsWeight())
    graph = MiniTracer(param_shapes_constant=True).trace(ScalesByItsWeight())
    mul = next(iter(graph.find_nodes(op="call_function", target=operator.mul)))
    assert [str(arg) for arg in mul.args] == ["offset", "3"]  # the weight's shape, read


def test_what_is_no_longer_a_difference():
    """Claims the box used to make, now false: both raise TypeError, both keep torch.rand."""
    for lib in (TORCH, MINI):
        graph, x, _, _ = chain(lib)
        node = graph.call_function(torch.cat, ([x, x],))
        with pytest.raises(TypeError):
            node.args[0].append(x)
        rand = graph.call_function(torch.rand, (2,))
        assert rand.is_impure() and rand.is_impure(impure_random=False)
