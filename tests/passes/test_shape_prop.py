"""`ShapeProp` against `torch.fx.passes.shape_prop.ShapeProp`, node by node.

Each case traces the same module with both libraries, propagates the same inputs
through each library's ShapeProp, and compares every node's `tensor_meta` and
`type` by node name (the names are the same in both graphs).
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import pytest
import torch
import torch.fx
from torch import nn
from torch._prims_common import is_contiguous_for_memory_format_or_false
from torch.fx.passes import shape_prop as fx_shape_prop

import minifx
from minifx.passes.shape_prop import (
    ShapeProp,
    TensorMetadata,
    extract_tensor_metadata,
    memory_format_of,
)
from tests.models import MLP, EncoderBlock, MobileNetish, ResNet18, ResNet50, WithTransformerEncoder

pytestmark = pytest.mark.ch5


def metadata_by_name(graph: Any) -> dict[str, tuple[Any, Any]]:
    return {n.name: (n.meta.get("tensor_meta", "absent"), n.meta["type"]) for n in graph.nodes}


def propagate_both(root: Callable[[], Any], *inputs: Any) -> tuple[Any, Any]:
    """Trace a fresh `root()` with each library, propagate `inputs`, return both GraphModules."""
    torch.manual_seed(0)
    ours = minifx.symbolic_trace(root())
    torch.manual_seed(0)
    theirs = torch.fx.symbolic_trace(root())
    ours_out = ShapeProp(ours).propagate(*inputs)
    theirs_out = fx_shape_prop.ShapeProp(theirs).propagate(*inputs)
    torch.testing.assert_close(ours_out, theirs_out)
    return ours, theirs


def assert_same_metadata(root: Callable[[], Any], *inputs: Any) -> dict[str, tuple[Any, Any]]:
    ours, theirs = propagate_both(root, *inputs)
    expected = metadata_by_name(theirs.graph)
    found = metadata_by_name(ours.graph)
    assert list(found) == list(expected), "node names differ"
    for name, (meta, kind) in expected.items():
        assert found[name] == (meta, kind), f"%{name}: {found[name]} != torch.fx's {(meta, kind)}"
    return found


def test_fields_mirror_torch_fx():
    assert TensorMetadata._fields == fx_shape_prop.TensorMetadata._fields
    assert (
        TensorMetadata.__annotations__.keys() == fx_shape_prop.TensorMetadata.__annotations__.keys()
    )


MODELS = {
    "resnet18": (ResNet18, (2, 3, 32, 32)),
    "resnet50_width8": (lambda: ResNet50(num_classes=10, width=8), (1, 3, 32, 32)),
    "mobilenetish": (MobileNetish, (2, 3, 16, 16)),
    "mlp": (MLP, (4, 32)),
    "encoder_block": (EncoderBlock, (2, 5, 32)),
    "transformer_leaf": (WithTransformerEncoder, (2, 5, 32)),
}


@pytest.mark.parametrize("name", MODELS)
def test_models_match_torch_fx(name, device):
    factory, shape = MODELS[name]
    x = torch.randn(*shape, device=device)
    found = assert_same_metadata(lambda: factory().to(device).eval(), x)
    assert all(
        meta.shape is not None for meta, _ in found.values() if isinstance(meta, TensorMetadata)
    )
    output_meta, output_type = found["output"]
    assert output_type is torch.Tensor and output_meta.shape[0] == shape[0]


@pytest.mark.task("5.2")
def test_every_tensor_node_gets_metadata_and_parameters_require_grad():
    gm = minifx.symbolic_trace(MLP())
    ShapeProp(gm).propagate(torch.randn(4, 32))
    metas = {n.name: n.meta["tensor_meta"] for n in gm.graph.nodes}
    assert metas["x"] == (
        torch.Size([4, 32]),
        torch.float32,
        False,
        (32, 1),
        torch.contiguous_format,
        False,
        {},
    )
    assert metas["layers_0"].requires_grad and metas["output"].shape == torch.Size([4, 10])


@pytest.mark.task("5.2")
def test_requires_grad_inputs_and_no_grad(device):
    x = torch.randn(3, 4, device=device, requires_grad=True)
    assert assert_same_metadata(lambda: nn.Linear(4, 2).to(device), x)["input_1"][0].requires_grad
    with torch.no_grad():
        found = assert_same_metadata(lambda: nn.Linear(4, 2).to(device), x.detach())
    assert not found["output"][0].requires_grad


class ConvNet(nn.Module):
    def __init__(self, conv: type = nn.Conv2d) -> None:
        super().__init__()
        self.conv = conv(3, 4, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        return y.relu(), y.transpose(1, 2), y[:, :, ::2]


@pytest.mark.task("5.2")
def test_channels_last(device):
    x = torch.randn(2, 3, 8, 8, device=device).to(memory_format=torch.channels_last)
    found = assert_same_metadata(lambda: ConvNet().to(device), x)
    assert found["x"][0].memory_format is torch.channels_last
    assert found["conv"][0].memory_format is torch.channels_last
    assert found["transpose"][0].memory_format is None


def test_channels_last_3d(device):
    x = torch.randn(2, 3, 4, 4, 4, device=device).to(memory_format=torch.channels_last_3d)
    found = assert_same_metadata(lambda: ConvNet(nn.Conv3d).to(device), x)
    assert found["x"][0].memory_format is torch.channels_last_3d


def views(x):
    return x.t(), x[::2], x[:, :1], x.expand(2, 3, 4)[0], x.new_empty(0, 4), x.sum(), x.unsqueeze(0)


@pytest.mark.task("5.2")
def test_views_empty_and_scalar_tensors(device):
    found = assert_same_metadata(lambda: views, torch.randn(3, 4, device=device))
    assert found["output"][0][0].memory_format is None  # x.t()
    assert found["output"][0][5].stride == ()  # a 0-d sum


# Layouts made by permuting a dense tensor: the fastest-moving dimension first.
_ORDERS = {
    "row_major": lambda n: list(range(n)),
    "channels_last": lambda n: [0, *range(2, n), 1],
    "random": None,
}


@pytest.mark.parametrize("sliced", [False, True], ids=["dense", "sliced"])
@pytest.mark.parametrize("order", _ORDERS)
@pytest.mark.parametrize("ndim", [2, 3, 4, 5])
@pytest.mark.parametrize("seed", range(3))
def test_memory_format_agrees_with_torch_on_many_layouts(seed, ndim, order, sliced):
    generator = torch.Generator().manual_seed(seed * 100 + ndim)
    shape = torch.randint(1, 4, (ndim,), generator=generator).tolist()
    dims = (
        _ORDERS[order](ndim)
        if _ORDERS[order]
        else torch.randperm(ndim, generator=generator).tolist()
    )
    # Allocate in the permuted order, then view it back in the logical order.
    x = torch.randn(*[shape[d] for d in dims]).permute(*[dims.index(d) for d in range(ndim)])
    x = x[..., ::2] if sliced else x
    expected = next(
        (
            f
            for f in (torch.contiguous_format, torch.channels_last, torch.channels_last_3d)
            if is_contiguous_for_memory_format_or_false(x, memory_format=f)
        ),
        None,
    )
    assert memory_format_of(x) == expected


def quantize_per_tensor(x):
    q = torch.quantize_per_tensor(x, 0.05, 3, torch.quint8)
    return q, q.dequantize()


def quantize_per_channel(x, scales, zero_points):
    q = torch.quantize_per_channel(x, scales, zero_points, 1, torch.qint8)
    return torch.dequantize(q) + 1, q


_QUANTIZED_DEPRECATED = pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor:UserWarning")


@_QUANTIZED_DEPRECATED
def test_quantized_per_tensor():
    found = assert_same_metadata(lambda: quantize_per_tensor, torch.randn(2, 3))
    meta = found["quantize_per_tensor"][0]
    assert meta.is_quantized and meta.dtype is torch.quint8
    assert meta.qparams == {"qscheme": torch.per_tensor_affine, "scale": 0.05, "zero_point": 3}


@_QUANTIZED_DEPRECATED
def test_quantized_per_channel():
    scales, zero_points = torch.tensor([0.1, 0.2, 0.3]), torch.tensor([0, 1, -1])
    found = assert_same_metadata(
        lambda: quantize_per_channel, torch.randn(2, 3), scales, zero_points
    )
    assert found["quantize_per_channel"][0].qparams == {
        "qscheme": torch.per_channel_affine,
        "scale": pytest.approx([0.1, 0.2, 0.3]),
        "zero_point": [0, 1, -1],
        "axis": 1,
    }


def test_sparse_tensors_have_no_strides():
    found = assert_same_metadata(lambda: lambda x: x.to_sparse(), torch.eye(3))
    assert found["to_sparse"][0].stride == () and found["to_sparse"][0].memory_format is None


class Pair(NamedTuple):
    first: Any
    second: Any


def nested(x):
    a, b = x.chunk(2)
    return Pair(a, [b, {"sum": x.sum(), "rows": x.size(0), "none": None}])


@pytest.mark.task("5.2")
def test_nested_outputs_keep_their_structure(device):
    found = assert_same_metadata(lambda: nested, torch.randn(4, 3, device=device))
    chunk, chunk_type = found["chunk"]
    assert chunk_type is tuple and [m.shape for m in chunk] == [torch.Size([2, 3])] * 2
    output, output_type = found["output"]
    assert output_type is Pair and isinstance(output, Pair)
    assert output.second[1]["rows"] == 4 and output.second[1]["none"] is None
    assert isinstance(output.second[1]["sum"], TensorMetadata)


def sizes(x):
    rows = x.size(0)
    return x.reshape(rows, -1), x.shape, x.dim()


@pytest.mark.task("5.2")
def test_values_without_tensors_get_a_type_but_no_tensor_meta():
    found = assert_same_metadata(lambda: sizes, torch.randn(2, 3, 4))
    assert found["size"] == ("absent", int)
    assert found["getattr_1"] == ("absent", torch.Size)
    assert found["dim"] == ("absent", int)


def test_tensors_stay_on_their_device(device):
    gm = minifx.symbolic_trace(nn.Linear(4, 2).to(device))
    out = ShapeProp(gm).propagate(torch.randn(3, 4, device=device))
    assert out.device.type == device and gm.weight.device.type == device


@pytest.mark.task("5.1")
def test_extract_tensor_metadata_of_a_plain_tensor():
    assert extract_tensor_metadata(
        torch.zeros(2, 3, dtype=torch.float16)
    ) == fx_shape_prop._extract_tensor_metadata(torch.zeros(2, 3, dtype=torch.float16))


def test_failing_node_is_named_like_torch_fx(capsys):
    ours = minifx.symbolic_trace(nn.Linear(4, 2))
    theirs = torch.fx.symbolic_trace(nn.Linear(4, 2))
    with pytest.raises(RuntimeError) as fx_info:
        fx_shape_prop.ShapeProp(theirs).propagate(torch.randn(3, 5))
    capsys.readouterr()  # torch.fx prints the traceback; minifx chains the cause instead
    with pytest.raises(RuntimeError) as info:
        ShapeProp(ours).propagate(torch.randn(3, 5))
    first_line, cause, hint = str(info.value).split("\n")
    # torch.fx's Interpreter appends "While executing ..." to the message; minifx's adds a note.
    assert first_line == str(fx_info.value).split("\n")[0]
    assert first_line == (
        "ShapeProp error for: node=%linear : [num_users=1] = call_function"
        "[target=torch._C._nn.linear](args = (%input_1, %weight, %bias), kwargs = {}) "
        "with meta={}"
    )
    assert cause == f"    RuntimeError: {info.value.__cause__}"
    assert "mat1 and mat2 shapes cannot be multiplied" in cause
    assert hint == (
        "Shape propagation runs the model on the example inputs given to propagate(); "
        "check that they have the number, shapes, dtypes and device the model's forward expects."
    )
    assert capsys.readouterr().err == ""


def test_fake_mode_is_not_supported():
    with pytest.raises(NotImplementedError) as info:
        ShapeProp(minifx.symbolic_trace(nn.ReLU()), fake_mode=object())
    assert str(info.value) == (
        "ShapeProp(gm, fake_mode=...): minifx does not implement fake tensors. Call ShapeProp(gm) "
        "and propagate real example inputs (small ones are enough: only shapes, dtypes and layouts "
        "are recorded)."
    )


@pytest.mark.task("5.2")
def test_propagate_returns_the_output_and_can_run_twice():
    gm = minifx.symbolic_trace(nn.Linear(4, 2))
    prop = ShapeProp(gm)
    x = torch.randn(3, 4)
    torch.testing.assert_close(prop.propagate(x), gm(x))
    prop.propagate(torch.randn(7, 4))
    assert gm.graph.find_nodes(op="output")[0].meta["tensor_meta"].shape == torch.Size([7, 2])
