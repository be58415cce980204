"""Grader for exercise 5.1: activation memory.

Two oracles: golden data, sizes and peaks written out by hand from the shapes of
small models (with the results that the usual mistakes give, to say which one was
made); and a measurement, an Interpreter that adds up the bytes of the distinct
tensor storages in its `env` right after each node runs, which must agree with the
estimate on models whose values never share memory. The grader never calls the
given `freed_after`: the student's copy may have been edited.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import _pytree as pytree

from minifx.codegen import symbolic_trace
from minifx.interpreter import Interpreter
from minifx.passes.shape_prop import ShapeProp, TensorMetadata
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    oracle_uses,
    plain,
    stub_hint,
)

pytestmark = pytest.mark.ch5

SEE = "chapters/05-shape-prop.md#exercise-51-activation-memory"


# Tools that would do the exercise's work (a node's size), which it asks you to write.
ORACLES = ("get_size_of_node", "get_size_of_all_nodes", "graph_manipulation")


@pytest.fixture
def ex(impl):
    module = impl.load("ch5_activation_memory")
    used = oracle_uses(module, ORACLES)
    if used:
        pytest.fail(
            explain(
                "sizes and peaks worked out from node.meta by your own code",
                f"{Path(module.__file__).parent.name}/{Path(module.__file__).name} uses "
                f"torch.fx's size helpers: {', '.join(used)}",
                "work the sizes out yourself: numel × meta.dtype.itemsize, from tensor_meta; "
                "torch.fx.passes.graph_manipulation is the tool this exercise rebuilds.",
                SEE,
            ),
            pytrace=False,
        )
    return module


# --- running student code --------------------------------------------------------


def _run(what: str, fn, *args):
    """`fn(*args)`, or a failed test that names the student's line."""
    got, raised = call_graded(fn, *args)
    if raised is not None:
        pytest.fail(explain(what, describe_error(raised), stub_hint(raised), SEE), pytrace=False)
    return plain(got, "a plain value: bytes (an int), or (bytes, node name)", what, SEE)


# --- tensor_bytes and nested_bytes -------------------------------------------------


def meta(shape: tuple, dtype: torch.dtype) -> TensorMetadata:
    return TensorMetadata(torch.Size(shape), dtype, False, (), torch.contiguous_format, False, {})


# dtype -> bytes per element, written out (not asked of torch).
ELEMENT_SIZES = {
    torch.float32: 4,
    torch.float64: 8,
    torch.float16: 2,
    torch.bfloat16: 2,
    torch.int8: 1,
    torch.uint8: 1,
    torch.bool: 1,
    torch.int32: 4,
    torch.int64: 8,
    torch.complex64: 8,
    torch.quint8: 1,
    torch.qint32: 4,
}
SHAPES = {(3, 4): 12, (): 1, (0, 5): 0, (2, 3, 4, 5): 120}  # shape -> numel


@pytest.mark.parametrize("dtype", ELEMENT_SIZES, ids=str)
def test_tensor_bytes_per_dtype(ex, dtype):
    size = ELEMENT_SIZES[dtype]
    want = {shape: numel * size for shape, numel in SHAPES.items()}
    got = {
        shape: _run(
            f"tensor_bytes of a {dtype} tensor of shape {shape}: {want[shape]}",
            ex.tensor_bytes,
            meta(shape, dtype),
        )
        for shape in SHAPES
    }
    if got == want:
        return
    if all(got[s] == n * 4 for s, n in SHAPES.items()):
        hint = (
            f"not every element takes 4 bytes: a {dtype} one takes {size}; ask meta.dtype.itemsize."
        )
    elif all(got[s] == n for s, n in SHAPES.items()):
        hint = "that is numel: multiply it by the element size, meta.dtype.itemsize."
    elif got[()] != want[()]:
        hint = (
            "a 0-d tensor (shape ()) has one element: the product of no numbers is 1 (math.prod)."
        )
    else:
        hint = "numel is the product of the shape, times the element size meta.dtype.itemsize."
    pytest.fail(
        explain(f"bytes of {dtype} tensors by shape: {want}", repr(got), hint, SEE), pytrace=False
    )


_A, _B = meta((3, 5), torch.float32), meta((2,), torch.int64)  # 60 and 16 bytes
NESTED = {  # name -> metadata, bytes, the hint if it comes out wrong
    "a TensorMetadata": (
        _A,
        60,
        "a TensorMetadata is a NamedTuple, so a tuple too: test it "
        "before the tuple case and count it with tensor_bytes.",
    ),
    "a tuple": ((_A, _B), 76, "a tuple counts each of its items."),
    "a list": ([_A, _A, _B], 136, "a list counts each of its items, like a tuple."),
    "a dict": ({"out": _A, "aux": _B}, 76, "a dict counts its values."),
    "nested, with ints and None": (
        (_A, [_B, {"rows": 6, "mask": _B}], None),
        92,
        "recurse into tuples, lists and dict values; ints and None count 0.",
    ),
    "an int": (7, 0, "a leaf that is not a TensorMetadata (an int, None) counts 0."),
}


@pytest.mark.parametrize("case", NESTED)
def test_nested_bytes(ex, case):
    value, want, hint = NESTED[case]
    got = _run(f"nested_bytes of {case}: {want}", ex.nested_bytes, value)
    if got != want:
        sizes = [call_graded(ex.tensor_bytes, m)[0] for m in (_A, _B)]
        if sizes != [60, 16]:
            hint = (
                f"fix tensor_bytes first: it gives {sizes} for float32 (3, 5) and int64 (2,), "
                "not [60, 16]."
            )
        elif case != "a TensorMetadata" and call_graded(ex.nested_bytes, _A)[0] != 60:
            hint = NESTED["a TensorMetadata"][2]
    if got != want:
        pytest.fail(explain(f"nested_bytes of {case}: {want}", repr(got), hint, SEE), pytrace=False)


# --- node_bytes ------------------------------------------------------------------


class Chain(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(16, 32), nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Branches(nn.Module):
    """`conv` stays alive until the last add: three values of its size at once."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return torch.sigmoid(y) * torch.tanh(y) + y


class Nested(nn.Module):
    """A tuple of tensors (chunk), an int (size), a dead value, nested outputs."""

    def forward(self, x):
        a, b = x.chunk(2)
        x.double()  # unused: dropped as soon as it runs
        return a, [b, {"rows": x.size(0)}]


class Ties(nn.Module):
    """Values of one size in a row: the peak (input and relu) comes back at add and mul."""

    def forward(self, x):
        return (torch.relu(x) + 1) * 2


class Grows(nn.Module):
    """The last value is the largest: the peak is where it is made, next to its input."""

    def forward(self, x):
        return x.repeat(4, 1)


class Views(nn.Module):
    """Three views of `x` alive at once: one storage, counted three more times by the estimate."""

    def forward(self, x):
        a, b, c = x.t(), x.view(-1), x[0]
        return a.sum() + b.sum() + c.sum()


def propagated(model: nn.Module, *inputs: torch.Tensor):
    gm = symbolic_trace(model)
    ShapeProp(gm).propagate(*inputs)
    return gm


# name -> model, input shape, the bytes of each node's value (float32 unless said).
NODE_BYTES = {
    # (4, 16) in, (4, 32) hidden, (4, 8) out
    "chain": (Chain, (4, 16), {"x": 256, "fc1": 512, "relu": 512, "fc2": 128, "output": 0}),
    # (2, 3, 8, 8) in = 1536 bytes; every other value (2, 8, 8, 8) = 4096 bytes
    "branches": (
        Branches,
        (2, 3, 8, 8),
        {
            "x": 1536,
            "conv": 4096,
            "sigmoid": 4096,
            "tanh": 4096,
            "mul": 4096,
            "add": 4096,
            "output": 0,
        },
    ),
    # (6, 5) = 120 bytes; chunk: two (3, 5) halves; double: float64; size: an int
    "nested": (
        Nested,
        (6, 5),
        {
            "x": 120,
            "chunk": 120,
            "getitem": 60,
            "getitem_1": 60,
            "double": 240,
            "size": 0,
            "output": 0,
        },
    ),
    # (3, 5) = 60 bytes each
    "ties": (Ties, (3, 5), {"x": 60, "relu": 60, "add": 60, "mul": 60, "output": 0}),
    # (3, 5) in, (12, 5) out
    "grows": (Grows, (3, 5), {"x": 60, "repeat": 240, "output": 0}),
    # (8, 8) = 256 bytes, its transpose and flat view too, its first row 32; sums 0-d: 4
    "views": (
        Views,
        (8, 8),
        {
            "x": 256,
            "t": 256,
            "view": 256,
            "getitem": 32,
            "sum_1": 4,
            "sum_2": 4,
            "add": 4,
            "sum_3": 4,
            "add_1": 4,
            "output": 0,
        },
    ),
}


def _parameter_bytes(gm) -> dict[str, int]:
    """call_module node -> the bytes of its module's parameters (not activations)."""
    return {
        n.name: sum(p.numel() * p.element_size() for p in gm.get_submodule(n.target).parameters())
        for n in gm.graph.nodes
        if n.op == "call_module"
    }


def _node_bytes_hint(got: dict, want: dict, parameters: dict[str, int]) -> str:
    wrong = {name for name in want if got.get(name) != want[name]}
    if (
        wrong
        and wrong <= set(parameters)
        and all(got.get(name) == want[name] + parameters[name] for name in wrong)
    ):
        return (
            "parameters are not activations: count the node's value (its tensor_meta), not "
            "the weights of the module it calls."
        )
    if got.get("output") != 0:
        return "the output node counts 0: it returns values that other nodes made and were counted."
    if all(got.get(name) == 0 for name in want):
        return (
            "a TensorMetadata is a NamedTuple, so a tuple too: test it before the tuple case "
            "(or nothing counts)."
        )
    if "x" in wrong and got.get("x") == 0:
        return "count the inputs too: a placeholder's value is a tensor that takes memory."
    if "chunk" in wrong:
        return "a node that returns a tuple of tensors counts each of them (nested_bytes)."
    if wrong & {"t", "view", "getitem"} and "x" not in wrong:
        return "a view counts as a tensor of its own shape: read each node's own tensor_meta."
    return "the value's tensor_meta gives shape and dtype: numel × meta.dtype.itemsize."


def _student_node_bytes(ex, graph) -> dict:
    """What the student's node_bytes gives each node (an exception where it raised)."""
    return {
        node.name: (lambda r: r[0] if r[1] is None else r[1])(call_graded(ex.node_bytes, node))
        for node in graph.nodes
    }


@pytest.mark.parametrize("case", NODE_BYTES)
def test_node_bytes(ex, case):
    model, shape, want = NODE_BYTES[case]
    gm = propagated(model(), torch.randn(shape))
    got = {
        node.name: _run(
            f"node_bytes(%{node.name}) of the {case} model: {want[node.name]}", ex.node_bytes, node
        )
        for node in gm.graph.nodes
    }
    if got != want:
        pytest.fail(
            explain(
                f"node_bytes of each node of the {case} model: {want}",
                repr(got),
                _node_bytes_hint(got, want, _parameter_bytes(gm)),
                SEE,
            ),
            pytrace=False,
        )


# --- peak_memory, by hand ----------------------------------------------------------


_NO_FREE = (
    "drop the values in freed_after(graph)[node] once the node has run: a value is "
    "alive only until its last use."
)
_AFTER = (
    "take the total right after the node runs and before the drops: its inputs are "
    "still alive while it computes."
)
_LAST = "keep the first node whose run reaches the largest total (compare with >, not >=)."
_INPUTS = "count the inputs too: a placeholder's value is alive until its last use."

# name -> (peak bytes, node), and what the usual mistakes give instead -> the hint for each
# (with node_bytes right: a wrong node_bytes gets its own hint first).
PEAKS = {
    "chain": (
        (512 + 512, "relu"),  # fc1 and relu alive together
        {(1408, "fc2"): _NO_FREE, (512, "fc1"): _AFTER},
    ),
    "branches": (
        (4 * 4096, "mul"),  # conv, sigmoid, tanh, mul
        {(22016, "add"): _NO_FREE, (12288, "tanh"): _AFTER},
    ),
    "nested": (
        (120 + 120 + 240, "double"),  # x, chunk and the dead double
        {(600, "double"): _NO_FREE, (300, "getitem"): _AFTER, (360, "double"): _INPUTS},
    ),
    "ties": (
        (60 + 60, "relu"),  # x and relu; again at add and mul
        {(120, "mul"): _LAST, (120, "add"): _INPUTS, (240, "mul"): _NO_FREE, (60, "x"): _AFTER},
    ),
    "grows": (
        (60 + 240, "repeat"),  # x and its four copies
        {
            (240, "repeat"): "too few bytes: count the inputs too, and take the total before "
            "the drops: x is still alive while repeat computes."
        },
    ),
}


def _peak_hint(ex, gm, got, want, node_bytes: dict, known: dict[tuple, str]) -> str:
    """The hint for a wrong peak: node_bytes first, then the known mistakes, then the symptom."""
    counted = _student_node_bytes(ex, gm.graph)
    if counted != node_bytes:
        name = next(name for name in node_bytes if counted.get(name) != node_bytes[name])
        why = _node_bytes_hint(counted, node_bytes, _parameter_bytes(gm))
        return (
            f"fix node_bytes first: node_bytes(%{name}) is {counted.get(name)!r}, its value "
            f"takes {node_bytes[name]} bytes. {why}"
        )
    if got in known:
        return known[got]
    if not (isinstance(got, tuple) and len(got) == 2):
        return "return a tuple: (peak bytes, name of the first node that reaches it)."
    if got[0] == want[0]:
        return _LAST if isinstance(got[1], str) else "the second item is the node's name, a str."
    if got[0] > want[0]:
        return f"too many bytes: {_NO_FREE}"
    return (
        "too few bytes: count every value, inputs included, from its node until freed_after "
        "drops it, and take the total before the drops."
    )


@pytest.mark.parametrize("case", PEAKS)
def test_peak_memory_by_hand(ex, case):
    want, known = PEAKS[case]
    model, shape, node_bytes = NODE_BYTES[case]
    gm = propagated(model(), torch.randn(shape))
    what = f"peak_memory of the {case} model: (bytes, node) = {want}"
    got = _run(what, ex.peak_memory, gm.graph)
    if got != want:
        pytest.fail(
            explain(what, repr(got), _peak_hint(ex, gm, got, want, node_bytes, known), SEE),
            pytrace=False,
        )


def test_views_make_the_estimate_an_upper_bound(ex):
    model, shape, node_bytes = NODE_BYTES["views"]
    x = torch.randn(shape)
    gm = propagated(model(), x)
    want = (3 * 256 + 32, "getitem")  # x, its transpose, its flat view, its first row
    measured, _ = measured_peak(gm, x)
    what = (
        f"{want}: each view counted as a new tensor, above the {measured} bytes a measurement "
        "finds (views share their base's memory, which tensor_meta cannot show)"
    )
    got = _run(what, ex.peak_memory, gm.graph)
    if got == want:
        return
    if isinstance(got, tuple) and got and got[0] == measured:
        hint = (
            "that is what a measurement finds: estimate from node.meta instead, each node's "
            "tensor_meta counted as its own tensor, views included."
        )
    else:
        hint = _peak_hint(
            ex,
            gm,
            got,
            want,
            node_bytes,
            {(820, "add_1"): _NO_FREE, (768, "view"): _AFTER, (548, "sum_1"): _INPUTS},
        )
    pytest.fail(explain(what, repr(got), hint, SEE), pytrace=False)


# --- peak_memory, against a measurement --------------------------------------------


class LiveBytes(Interpreter):
    """Measures the bytes of the distinct storages alive in `env` after each node runs.

    It also measures what the usual mistakes would count, to say which one was made
    (the inputs left out, the total taken after the drops, nothing dropped), and the
    bytes of each node's own value.
    """

    def __init__(self, gm: nn.Module) -> None:
        super().__init__(gm)
        self.samples: list[tuple[int, str]] = []
        self.without_inputs: list[tuple[int, str]] = []
        self.after_drops: list[tuple[int, str]] = []
        self.never_dropped: list[tuple[int, str]] = []
        self.value_bytes: dict[str, int] = {}
        self.inputs: set[int] = set()
        self.ever: dict[int, int] = {}

    @staticmethod
    def _storages(*values) -> dict[int, int]:
        return {
            t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
            for t in pytree.tree_leaves(list(values))
            if isinstance(t, torch.Tensor)
        }

    def run_node(self, n):
        if self.samples:  # the previous node's drops are done: env is what stays alive
            self.after_drops.append(
                (sum(self._storages(list(self.env.values())).values()), self.samples[-1][1])
            )
        value = super().run_node(n)
        storages = self._storages(list(self.env.values()), value)
        own = self._storages(value)
        self.value_bytes[n.name] = 0 if n.op == "output" else sum(own.values())
        if n.op == "placeholder":
            self.inputs |= set(own)
        self.ever.update(storages)
        self.samples.append((sum(storages.values()), n.name))
        self.without_inputs.append(
            (sum(b for p, b in storages.items() if p not in self.inputs), n.name)
        )
        self.never_dropped.append((sum(self.ever.values()), n.name))
        return value


def _first_max(samples: list[tuple[int, str]]) -> tuple[int, str]:
    peak = max(total for total, _ in samples)
    return peak, next(name for total, name in samples if total == peak)


def measured_peak(gm: nn.Module, *inputs: torch.Tensor) -> tuple[int, str]:
    live = LiveBytes(gm)
    live.run(*inputs)
    return _first_max(live.samples)


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        y = F.relu(self.bn(self.conv1(x)))
        return self.head(F.relu(self.conv2(y)).mean(dim=(2, 3)))


class ResidualMLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.fc2, self.norm = nn.Linear(24, 96), nn.Linear(96, 24), nn.LayerNorm(24)

    def forward(self, x):
        return self.norm(x + self.fc2(F.gelu(self.fc1(x))))


class MixedDtypes(nn.Module):
    """bool, int64 and float64 values next to float32 ones."""

    def forward(self, x):
        y = x * 2
        mask = y > 0
        index = y.argmax(dim=1)
        wide = torch.where(mask, y, 0.0).to(torch.float64)
        return wide.sum(1) + index


MEASURED = {  # models whose values never share memory: the estimate is exact
    "convnet": (ConvNet, (2, 3, 12, 12), torch.float32),
    "residual_mlp": (ResidualMLP, (5, 24), torch.float32),
    "residual_mlp_fp16": (ResidualMLP, (5, 24), torch.float16),
    "mixed_dtypes": (MixedDtypes, (4, 7), torch.float32),
    "branches": (Branches, (1, 3, 9, 9), torch.float32),
}


@pytest.mark.parametrize("case", MEASURED)
def test_peak_agrees_with_measurement(ex, case, device):
    model, shape, dtype = MEASURED[case]
    torch.manual_seed(0)
    module = model().to(device, dtype).eval()
    x = torch.randn(shape, device=device, dtype=dtype)
    gm = propagated(module, x)
    live = LiveBytes(gm)
    live.run(x)
    want = _first_max(live.samples)
    what = f"the peak a measurement finds while running the {case} model on {device}: {want}"
    got = _run(what, ex.peak_memory, gm.graph)
    if got == want:
        return
    known = {
        _first_max(live.never_dropped): _NO_FREE,
        _first_max(live.after_drops): _AFTER,
        _first_max(live.without_inputs): _INPUTS,
    }
    known.pop(want, None)
    pytest.fail(
        explain(what, repr(got), _peak_hint(ex, gm, got, want, live.value_bytes, known), SEE),
        pytrace=False,
    )


def test_peak_follows_the_example_inputs(ex):
    gm = symbolic_trace(Chain())
    peaks = []
    for batch in (1, 4, 10):
        ShapeProp(gm).propagate(torch.randn(batch, 16))
        peaks.append(
            _run(
                f"peak_memory of Chain after ShapeProp with a batch of {batch}: "
                f"{(batch * 2 * 32 * 4, 'relu')}",
                ex.peak_memory,
                gm.graph,
            )
        )
    want = [(batch * 2 * 32 * 4, "relu") for batch in (1, 4, 10)]
    if peaks == want:
        return
    if len(set(map(repr, peaks))) == 1:
        hint = "read the sizes from node.meta at each call: the last ShapeProp run rewrote them."
    else:  # the batch of 10 of the last run: x 640 bytes, fc1 and relu 1280, fc2 320
        node_bytes = {"x": 640, "fc1": 1280, "relu": 1280, "fc2": 320, "output": 0}
        hint = _peak_hint(
            ex,
            gm,
            peaks[-1],
            want[-1],
            node_bytes,
            {(3520, "fc2"): _NO_FREE, (1280, "fc1"): _AFTER},
        )
    pytest.fail(
        explain(
            f"one GraphModule propagated with batches of 1, 4 and 10 rows: {want}",
            repr(peaks),
            hint,
            SEE,
        ),
        pytrace=False,
    )


# --- no metadata -------------------------------------------------------------------


MESSAGE = (
    "node %x has no shape metadata (node.meta['type'] is missing): run "
    "ShapeProp(gm).propagate(*example_inputs) on the GraphModule before measuring it."
)


@pytest.mark.parametrize("function", ["node_bytes", "peak_memory"])
def test_missing_metadata_is_a_clear_error(ex, function):
    gm = symbolic_trace(Chain())
    arg = next(iter(gm.graph.nodes)) if function == "node_bytes" else gm.graph
    got, raised = call_graded(getattr(ex, function), arg)
    what = f"{function} of a graph ShapeProp never ran on raises ValueError({MESSAGE!r})"
    if raised is None:
        pytest.fail(
            explain(
                what,
                f"it returned {got!r}",
                "raise missing_metadata(node) when 'type' is not in node.meta: "
                "a size of 0 would hide that ShapeProp never ran.",
                SEE,
            ),
            pytrace=False,
        )
    if isinstance(raised, NotImplementedError) or not isinstance(raised, ValueError):
        pytest.fail(
            explain(
                what,
                describe_error(raised),
                stub_hint(
                    raised,
                    otherwise="check 'type' in node.meta first, and raise missing_metadata(node).",
                ),
                SEE,
            ),
            pytrace=False,
        )
    if str(raised).startswith("node %") and "has no shape metadata" in str(raised):
        hint = (
            "check every node, the inputs (placeholders) included: %x is the first node "
            "without metadata."
        )
    else:
        hint = "raise missing_metadata(node), the given error, for the first node without metadata."
    if str(raised) != MESSAGE:
        pytest.fail(explain(what, repr(str(raised)), hint, SEE), pytrace=False)
