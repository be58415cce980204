"""Property tests (hypothesis) of code generation.

Random graphs are built node by node with `minifx.graph.Graph`, and the same
calls build a `torch.fx.Graph` alongside. The vocabulary: 1-3 placeholders;
`operator.add/mul/sub/neg`, `torch.relu`, `torch.sort` (a tuple) read with
`operator.getitem`, tensor indexing with ints, slices, `None` and `...`,
`torch.cat` on lists and tuples, the methods `sum(dim=..., keepdim=...)` and
`clamp(min=..., max=...)`, and `total`, a function taking nested lists, tuples
and dicts of nodes and constants (negative numbers, inf, nan, None, slices,
strings). A node is added only if it runs on the example inputs, so every
graph can be run. Some nodes stay unused; the output is a node, a constant, or
a nested tuple/list/dict of them. For each graph:

1. `python_code`'s source compiles and is torch.fx's code for the twin graph.
2. The GraphModule returns what a small reference evaluator returns, running
   the graph node by node (`map_arg` over an environment).
3. The source frees every value right after its last use, checked on its
   syntax tree, independently of how codegen decides it.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any, Callable

import pytest
import torch
import torch.fx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import minifx.codegen
import minifx.graph
from minifx.graph import map_arg
from tests.codegen.compare import assert_same

pytestmark = pytest.mark.ch3

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def total(structure: Any) -> torch.Tensor:
    """The sum of every tensor and number in a nested structure; other leaves count 0.

    Module-level, so generated code reaches it as a global, and it accepts
    whatever constants a node's arguments may hold.
    """
    if isinstance(structure, torch.Tensor):
        return structure.sum()
    if isinstance(structure, dict):
        return total(list(structure.values()))
    if isinstance(structure, (list, tuple)):
        return sum((total(item) for item in structure), torch.zeros(()))
    if isinstance(structure, (int, float)) and not isinstance(structure, bool):
        return torch.tensor(float(structure))
    return torch.zeros(())


NUMBERS = st.sampled_from([0, 1, 2, -1, -3, 0.5, -2.5, 1e-3, True, math.inf, -math.inf, math.nan])
SMALL_INTS = st.sampled_from([None, 0, 1, 2, -1, -2])
SLICES = st.builds(slice, SMALL_INTS, SMALL_INTS, st.sampled_from([None, 1, 2]))
INDEX_PARTS = st.one_of(st.sampled_from([0, 1, -1, None, ...]), SLICES)
INDICES = st.one_of(INDEX_PARTS, st.lists(INDEX_PARTS, min_size=1, max_size=3).map(tuple))
CONSTANTS = st.one_of(NUMBERS, st.none(), SLICES, st.sampled_from(["a", ""]))

# Placeholder names: some are also node names or builtins (`sum`, `input`).
NAMES = ["p0", "p1", "x", "input", "sum", "add", "relu_1", "total"]
# Names of globals the generated code uses. As parameters they would shadow the
# global in torch.fx's code (`def forward(self, torch)` then calls `torch.relu`
# on the input); minifx renames the global instead. Only the run is checked.
SHADOWING_NAMES = ["torch", "inf", "nan", "device"]


class Twin:
    """A minifx graph and a torch.fx graph built by the same calls, with each
    node's value on the example inputs.

    Attributes:
        ours, theirs: the minifx and the torch.fx graph.
        twin: minifx node -> the torch.fx node made by the same call.
        values: minifx node -> its value.
        inputs: the example inputs, one per placeholder.
    """

    def __init__(self, placeholders: list[str]) -> None:
        self.ours, self.theirs = minifx.graph.Graph(), torch.fx.Graph()
        self.twin: dict[Any, Any] = {}
        self.values: dict[Any, Any] = {}
        generator = torch.Generator().manual_seed(0)
        self.inputs = [torch.randn(2, 3, generator=generator) for _ in placeholders]
        for name, value in zip(placeholders, self.inputs):
            node = self.ours.placeholder(name)
            self.twin[node], self.values[node] = self.theirs.placeholder(name), value

    def nodes(self, kind: type) -> list[Any]:
        """The nodes whose value is a `kind` (a plain tensor, or a tuple)."""
        return [n for n, v in self.values.items() if isinstance(v, kind)]

    def add(self, op: str, target: Any, args: tuple, kwargs: dict) -> None:
        """Add the node to both graphs, if it runs on the current values."""
        try:
            value = run_node(op, target, *map_arg((args, kwargs), self.values.__getitem__))
        except (RuntimeError, IndexError, TypeError, ValueError):
            return  # shapes that do not fit, an index out of range...: no node
        ours = self.ours.create_node(op, target, args, kwargs)
        args, kwargs = map_arg((args, kwargs), self.twin.__getitem__)
        self.twin[ours] = self.theirs.create_node(op, target, args, kwargs)
        self.values[ours] = value

    def output(self, result: Any) -> None:
        self.ours.output(result)
        self.theirs.output(map_arg(result, self.twin.__getitem__))


def run_node(op: str, target: Any, args: tuple, kwargs: dict) -> Any:
    """Run one call_function or call_method node on values."""
    if op == "call_method":
        receiver, *rest = args
        return getattr(receiver, target)(*rest, **kwargs)
    return target(*args, **kwargs)


def evaluate(graph: minifx.graph.Graph, inputs: list[torch.Tensor]) -> Any:
    """The reference: run `graph` node by node, each node's arguments from `env`."""
    env: dict[Any, Any] = {}
    placeholders = iter(inputs)
    for node in graph.nodes:
        args, kwargs = map_arg((node.args, node.kwargs), env.__getitem__)
        if node.op == "placeholder":
            env[node] = next(placeholders)
        elif node.op == "output":
            return plain(args[0])
        else:
            env[node] = run_node(node.op, node.target, args, kwargs)
    raise AssertionError("the graph has no output node")


def plain(value: Any) -> Any:
    """`value` with the read-only lists and dicts a node stores made plain ones."""
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(plain(v) for v in value)
    return value


# -- drawing one node: each maker returns (op, target, args, kwargs) or None ----------


def pick(data: Any, nodes: list[Any]) -> Any:
    """One of `nodes`, often one of the latest two, so that chains form as in real graphs."""
    return data.draw(st.one_of(st.sampled_from(nodes[-2:]), st.sampled_from(nodes)))


def draw_operand(data: Any, twin: Twin) -> Any:
    """A tensor node, or now and then a number."""
    return data.draw(st.one_of(st.just(pick(data, twin.nodes(torch.Tensor))), NUMBERS))


def binary(data: Any, twin: Twin) -> tuple | None:
    a, b = pick(data, twin.nodes(torch.Tensor)), draw_operand(data, twin)
    if data.draw(st.booleans()):
        a, b = b, a
    target = data.draw(st.sampled_from([operator.add, operator.mul, operator.sub]))
    return "call_function", target, (a, b), {}


def unary(data: Any, twin: Twin) -> tuple:
    target = data.draw(st.sampled_from([operator.neg, torch.relu]))
    return "call_function", target, (pick(data, twin.nodes(torch.Tensor)),), {}


def sort(data: Any, twin: Twin) -> tuple:
    x = pick(data, twin.nodes(torch.Tensor))
    return "call_function", torch.sort, (x,), {"dim": data.draw(st.sampled_from([0, -1]))}


def item_of_tuple(data: Any, twin: Twin) -> tuple | None:
    tuples = twin.nodes(tuple)
    if not tuples:
        return None
    index = data.draw(st.sampled_from([0, 1, -1, -2]))
    return "call_function", operator.getitem, (pick(data, tuples), index), {}


def index(data: Any, twin: Twin) -> tuple:
    x = pick(data, twin.nodes(torch.Tensor))
    return "call_function", operator.getitem, (x, data.draw(INDICES)), {}


def cat(data: Any, twin: Twin) -> tuple:
    parts = data.draw(st.lists(st.sampled_from(twin.nodes(torch.Tensor)), min_size=1, max_size=3))
    sequence = tuple(parts) if data.draw(st.booleans()) else parts
    return "call_function", torch.cat, (sequence,), {"dim": data.draw(st.sampled_from([0, 1, -1]))}


def sum_method(data: Any, twin: Twin) -> tuple:
    x = pick(data, twin.nodes(torch.Tensor))
    kwargs = {"dim": data.draw(st.sampled_from([0, 1, -1])), "keepdim": data.draw(st.booleans())}
    return "call_method", "sum", (x,), kwargs


def clamp_method(data: Any, twin: Twin) -> tuple:
    x = pick(data, twin.nodes(torch.Tensor))
    return "call_method", "clamp", (x,), {"min": data.draw(NUMBERS), "max": data.draw(NUMBERS)}


def nested(data: Any, leaves: st.SearchStrategy) -> Any:
    """A nested structure of lists, tuples and dicts over `leaves`."""
    return data.draw(
        st.recursive(
            leaves,
            lambda inner: st.one_of(
                st.lists(inner, max_size=3),
                st.lists(inner, max_size=3).map(tuple),
                st.dictionaries(st.sampled_from(["a", "b", "key"]), inner, max_size=2),
            ),
            max_leaves=6,
        )
    )


def total_of_structure(data: Any, twin: Twin) -> tuple:
    nodes = st.sampled_from(list(twin.values))
    leaves = st.one_of(nodes, nodes, CONSTANTS)
    return "call_function", total, (nested(data, leaves),), {}


MAKERS: list[Callable[[Any, Twin], tuple | None]] = [
    binary,
    unary,
    sort,
    item_of_tuple,
    index,
    cat,
    sum_method,
    clamp_method,
    total_of_structure,
]


def build(data: Any, names: list[str] = NAMES) -> Twin:
    """A random graph (and its torch.fx twin), placeholders named from `names`."""
    twin = Twin(data.draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)))
    for _ in range(data.draw(st.integers(1, 10))):
        made = data.draw(st.sampled_from(MAKERS))(data, twin)
        if made is not None:
            twin.add(*made)
    # The output mostly uses nodes nothing uses yet, but leaves some unused.
    unused = st.sampled_from([n for n in twin.values if not n.users] or list(twin.values))
    leaves = st.one_of(unused, unused, st.sampled_from(list(twin.values)), NUMBERS, st.none())
    twin.output(nested(data, leaves))
    return twin


# -- checking the generated source's syntax tree ----------------------------------------


def assert_frees_after_last_use(src: str) -> None:
    """Every local is set to None exactly once, on the line of its last read.

    Exceptions, as in torch.fx: a value the `return` statement reads is not
    freed; a computed value nobody reads is freed on its own line; an input
    nobody reads is never freed. An input is a parameter, or the local a
    parameter is copied to when its node was renamed (`input_1 = input`);
    that copy is not a read.
    """
    function = next(s for s in ast.parse(src).body if isinstance(s, ast.FunctionDef))
    parameters = {a.arg for a in function.args.args[1:]}
    defined: dict[str, int] = {}
    freed: dict[str, list[int]] = {}
    last_read: dict[str, int] = {}
    returned: set[str] = set()
    inputs = set(parameters)  # the parameters, and the placeholders' locals
    for statement in function.body:
        if isinstance(statement, ast.Return):
            returned = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}
            continue
        assert isinstance(statement, ast.Assign), ast.dump(statement)
        names = [target.id for target in statement.targets]
        if isinstance(statement.value, ast.Constant) and statement.value.value is None:
            for name in names:
                freed.setdefault(name, []).append(statement.lineno)
            continue
        (name,) = names
        defined[name] = statement.lineno
        if isinstance(statement.value, ast.Name) and statement.value.id in parameters:
            inputs.add(name)
            continue  # `input_1 = input`: a renamed placeholder, which frees nothing
        for read in ast.walk(statement.value):
            if isinstance(read, ast.Name):
                last_read[read.id] = statement.lineno
    local_names = parameters | set(defined)
    assert set(freed) <= local_names, (
        f"frees a name that is not a local: {set(freed) - local_names}"
    )
    for name in local_names:
        if name in returned or (name in inputs and name not in last_read):
            expected = []
        else:
            expected = [last_read.get(name, defined.get(name))]
        assert freed.get(name, []) == expected, (
            f"{name}: freed on lines {freed.get(name)}, expected {expected}\n{src}"
        )


# -- the properties -------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_generated_code_is_torch_fx_code_and_compiles(data):
    twin = build(data)
    src = minifx.codegen.python_code(twin.ours).src
    compile(src, "<generated>", "exec")
    assert src == twin.theirs.python_code("self").src


@SETTINGS
@given(st.data())
def test_graph_module_returns_what_the_reference_evaluator_returns(data):
    twin = build(data, NAMES + SHADOWING_NAMES)
    twin.ours.lint()
    gm = minifx.codegen.GraphModule(torch.nn.Module(), twin.ours)
    assert_same(gm(*twin.inputs), evaluate(twin.ours, twin.inputs))


@SETTINGS
@given(st.data())
def test_values_are_freed_right_after_their_last_use(data):
    twin = build(data, NAMES + SHADOWING_NAMES)
    assert_frees_after_last_use(minifx.codegen.python_code(twin.ours).src)


def test_free_check_notices_a_missing_free():
    """The syntax-tree check fails on code that keeps a value alive."""
    with pytest.raises(AssertionError, match="x: freed on lines None"):
        assert_frees_after_last_use("def forward(self, x):\n    y = x + 1\n    return y\n")


def test_free_check_notices_an_early_free():
    with pytest.raises(AssertionError, match="x: freed on lines"):
        assert_frees_after_last_use(
            "def forward(self, x):\n    y = x + 1;  x = None\n    z = x * 2\n    return (y, z)\n"
        )
