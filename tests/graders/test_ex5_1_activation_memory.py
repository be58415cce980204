"""Grader for exercise 5.1: activation memory.

Two oracles: sizes and peaks written out by hand from the shapes of small
models; and a measurement, an Interpreter that adds up the bytes of the
distinct tensor storages in its `env` right after each node runs, which must
agree with the estimate on models whose values never share memory.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils import _pytree as pytree

from minifx.codegen import symbolic_trace
from minifx.interpreter import Interpreter
from minifx.passes.shape_prop import ShapeProp, TensorMetadata
from tests.graders.support import explain

pytestmark = pytest.mark.ch5

SEE = "chapters/05-shape-prop.md#exercise-51-activation-memory"


@pytest.fixture
def ex(impl):
    return impl.load("ch5_activation_memory")


def meta(shape: tuple, dtype: torch.dtype) -> TensorMetadata:
    return TensorMetadata(torch.Size(shape), dtype, False, (), torch.contiguous_format, False, {})


# dtype -> bytes per element, written out (not asked of torch).
ELEMENT_SIZES = {torch.float32: 4, torch.float64: 8, torch.float16: 2, torch.bfloat16: 2,
                 torch.int8: 1, torch.uint8: 1, torch.bool: 1, torch.int32: 4, torch.int64: 8,
                 torch.complex64: 8, torch.quint8: 1, torch.qint32: 4}


@pytest.mark.parametrize("dtype", ELEMENT_SIZES, ids=str)
def test_tensor_bytes_per_dtype(ex, dtype):
    cases = {(3, 4): 12, (): 1, (0, 5): 0, (2, 3, 4, 5): 120}
    got = {shape: ex.tensor_bytes(meta(shape, dtype)) for shape in cases}
    want = {shape: numel * ELEMENT_SIZES[dtype] for shape, numel in cases.items()}
    assert got == want, explain(
        f"bytes of {dtype} tensors by shape: {want}", repr(got),
        "numel is the product of the shape (1 for (), 0 with a 0 dimension) times the element "
        "size: meta.dtype.itemsize.", SEE)


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
        x.double()                                   # unused: dropped as soon as it runs
        return a, [b, {"rows": x.size(0)}]


def propagated(model: nn.Module, *inputs: torch.Tensor):
    gm = symbolic_trace(model)
    ShapeProp(gm).propagate(*inputs)
    return gm


def _bytes_by_node(ex, gm) -> dict[str, int]:
    return {node.name: ex.node_bytes(node) for node in gm.graph.nodes}


NODE_BYTES = {
    # float32 (4, 16) in, (4, 32) hidden, (4, 8) out
    "chain": (Chain, (4, 16), {"x": 256, "fc1": 512, "relu": 512, "fc2": 128, "output": 0}),
    # (2, 3, 8, 8) float32 in = 1536 bytes; every other value (2, 8, 8, 8) = 4096 bytes
    "branches": (Branches, (2, 3, 8, 8), {"x": 1536, "conv": 4096, "sigmoid": 4096, "tanh": 4096,
                                          "mul": 4096, "add": 4096, "output": 0}),
    # (6, 5) float32 = 120 bytes; chunk: two (3, 5) halves; double: float64; size: an int
    "nested": (Nested, (6, 5), {"x": 120, "chunk": 120, "getitem": 60, "getitem_1": 60,
                                "double": 240, "size": 0, "output": 0}),
}


@pytest.mark.parametrize("case", NODE_BYTES)
def test_node_bytes(ex, case):
    model, shape, want = NODE_BYTES[case]
    got = _bytes_by_node(ex, propagated(model(), torch.randn(shape)))
    assert got == want, explain(
        f"node_bytes of each node of the {case} model: {want}", repr(got),
        "the value's tensor_meta gives shape and dtype; a tuple of tensors counts each one "
        "(a TensorMetadata is a tuple too: test it first); ints count 0, the output node 0.", SEE)


PEAKS = {
    "chain": (Chain, (4, 16), (512 + 512, "relu")),           # fc1 and relu alive together
    "branches": (Branches, (2, 3, 8, 8), (4 * 4096, "mul")),  # conv, sigmoid, tanh, mul
    "nested": (Nested, (6, 5), (120 + 120 + 240, "double")),  # x, chunk and the dead double
}


@pytest.mark.parametrize("case", PEAKS)
def test_peak_memory_by_hand(ex, case):
    model, shape, want = PEAKS[case]
    got = ex.peak_memory(propagated(model(), torch.randn(shape)).graph)
    assert got == want, explain(
        f"peak_memory of the {case} model: (bytes, node) = {want}", repr(got),
        "add a node's bytes when it runs, take the total before dropping freed_after(graph)[node] "
        "(the inputs are still alive while it computes), and keep the first node that reaches "
        "the largest total.", SEE)


class LiveBytes(Interpreter):
    """Measures the bytes of the distinct storages alive in `env` after each node runs."""

    def __init__(self, gm: nn.Module) -> None:
        super().__init__(gm)
        self.samples: list[tuple[int, str]] = []

    def run_node(self, n):
        value = super().run_node(n)
        leaves = pytree.tree_leaves([list(self.env.values()), value])
        storages = {t.untyped_storage().data_ptr(): t.untyped_storage().nbytes()
                    for t in leaves if isinstance(t, torch.Tensor)}
        self.samples.append((sum(storages.values()), n.name))
        return value


def measured_peak(gm: nn.Module, *inputs: torch.Tensor) -> tuple[int, str]:
    live = LiveBytes(gm)
    live.run(*inputs)
    peak = max(total for total, _ in live.samples)
    return peak, next(name for total, name in live.samples if total == peak)


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


MEASURED = {
    "convnet": (ConvNet, (2, 3, 12, 12), torch.float32),
    "residual_mlp": (ResidualMLP, (5, 24), torch.float32),
    "residual_mlp_fp16": (ResidualMLP, (5, 24), torch.float16),
    "mixed_dtypes": (MixedDtypes, (4, 7), torch.float32),
    "branches": (Branches, (1, 3, 9, 9), torch.float32),
}


@pytest.mark.parametrize("case", MEASURED)
def test_peak_agrees_with_measurement(ex, case, device):
    model, shape, dtype = MEASURED[case]
    if dtype == torch.float16 and device == "cpu" and not _cpu_runs_half():
        pytest.skip("this CPU build has no float16 LayerNorm")
    torch.manual_seed(0)
    module = model().to(device, dtype).eval()
    x = torch.randn(shape, device=device, dtype=dtype)
    gm = propagated(module, x)
    want = measured_peak(gm, x)
    got = ex.peak_memory(gm.graph)
    assert got == want, explain(
        f"the peak a measurement finds while running the {case} model on {device}: {want}",
        repr(got), "count every value from its node until freed_after drops it, including the "
        "inputs (placeholders); measure before the drops.", SEE)


def _cpu_runs_half() -> bool:
    try:
        nn.LayerNorm(4).half()(torch.randn(2, 4, dtype=torch.float16))
        return True
    except RuntimeError:
        return False


class Views(nn.Module):
    """Three views of `x` alive at once: one storage, counted three more times by the estimate."""

    def forward(self, x):
        a, b, c = x.t(), x.view(-1), x[0]
        return a.sum() + b.sum() + c.sum()


def test_views_make_the_estimate_an_upper_bound(ex):
    x = torch.randn(8, 8)
    gm = propagated(Views(), x)
    want = (3 * 256 + 32, "getitem")  # x, its transpose, its flat view, its first row
    got = ex.peak_memory(gm.graph)
    measured, _ = measured_peak(gm, x)
    assert got == want and measured < want[0], explain(
        f"{want}: each view counted as a new tensor, above the measured {measured} "
        "(views share their base's memory, which tensor_meta cannot show)",
        repr(got), "count each node's own tensor_meta, views included.", SEE)


def test_peak_follows_the_example_inputs(ex):
    gm = symbolic_trace(Chain())
    peaks = []
    for batch in (1, 4, 10):
        ShapeProp(gm).propagate(torch.randn(batch, 16))
        peaks.append(ex.peak_memory(gm.graph))
    want = [(batch * 2 * 32 * 4, "relu") for batch in (1, 4, 10)]
    assert peaks == want, explain(
        f"one GraphModule propagated with batches of 1, 4 and 10 rows: {want}", repr(peaks),
        "read the sizes from node.meta, which the last ShapeProp run wrote.", SEE)


def test_missing_metadata_is_a_clear_error(ex):
    gm = symbolic_trace(Chain())
    message = ("node %x has no shape metadata (node.meta['type'] is missing): run "
               "ShapeProp(gm).propagate(*example_inputs) on the GraphModule before measuring it.")
    for measure in (lambda: ex.node_bytes(next(iter(gm.graph.nodes))), lambda: ex.peak_memory(gm.graph)):
        with pytest.raises(ValueError) as info:
            measure()
        assert str(info.value) == message, explain(
            f"ValueError({message!r})", repr(str(info.value)),
            "check node.meta for 'type' and raise missing_metadata(node).", SEE)
