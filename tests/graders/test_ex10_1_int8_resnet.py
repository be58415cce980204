"""Grader for exercise 10.1, the capstone: ship a ResNet-18 in int8.

The model is tests/models.py's ResNet-18 (torchvision's layout and layer names), in
training mode as it comes from training, with BatchNorm statistics that are not the
identity. The oracles:

- folding: torch.fx's own `torch.fx.experimental.optimization.fuse` on an eval-mode copy,
  whose printed graph the folded graph must equal, and the eager model's outputs;
- activation bytes of a float graph: torch.fx's `ShapeProp` on that torch.fx graph;
- activation bytes of an int8 graph: golden sizes, worked out by hand for a small conv
  net below, and the golden total of the ResNet's int8 graph (sizes depend only on shapes
  and dtypes: 1 byte per uint8 element, 4 per float32);
- calibration: `torch.ao.quantization.MinMaxObserver`, fed every calibration batch, for
  the scale and zero point of the input;
- the int8 model's outputs: the eager model's, within the error of 8-bit activations.
"""

import copy

import pytest
import torch
import torch.fx
import torch.fx.experimental.optimization as fx_optimization
from torch import nn
from torch.ao.quantization import MinMaxObserver as TorchMinMaxObserver
from torch.fx.passes.shape_prop import ShapeProp as TorchShapeProp
from torch.fx.passes.shape_prop import TensorMetadata as TorchTensorMetadata

from minifx.codegen import GraphModule, symbolic_trace
from minifx.graph import Graph
from minifx.passes.fuse_conv_bn import fuse_conv_bn
from minifx.passes.int8 import QuantizedConv2d, QuantizedLinear
from minifx.passes.observers import MinMaxObserver
from minifx.passes.quantize import convert, prepare
from tests.graders.support import (
    call_graded,
    describe_error,
    explain,
    graph_text,
    not_plain,
    plain,
    refuse_methods_of_its_own,
    safe_repr,
    stub_hint,
    tensors_close,
    tensors_equal,
)
from tests.models import ResNet18

pytestmark = pytest.mark.ch10

SEE = "chapters/capstone.md#the-exercise"
SEE_FOLD = "chapters/06-conv-bn-fusion.md#what-is-left-alone-and-why"
SEE_SHAPES = "chapters/05-shape-prop.md#what-tensor_meta-holds"
SEE_CALIBRATE = "chapters/08-quantization.md#calibration"

SHAPE = (2, 3, 32, 32)
SCALES = (1.0, 2.5, 1.5)  # the second batch has the widest range: calibrate on every batch
INT8_LAYERS = 21  # 20 convolutions (3 of them downsample) and the fc
# Golden: the activation bytes of the ResNet's int8 graph on one (2, 3, 32, 32) batch:
# 41,236 bytes of uint8 (the int8 layers' outputs and the values quantized for them) and
# 142,416 of float32 (adds, relus, pools, flatten, and a dequantize before each).
INT8_TOTAL = 183652


class SmallNet(nn.Module):
    """conv -> relu -> flatten -> fc: an int8 graph small enough to size by hand."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.fc = nn.Linear(64, 2)

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).flatten(1))


SMALL = (1, 3, 4, 4)
# Golden, by hand: each call_* node of SmallNet's int8 graph on a (1, 3, 4, 4) input.
SMALL_INT8 = {
    "quantize": 1 * 3 * 4 * 4,  # the input as uint8: 1 byte per element
    "conv": 1 * 4 * 4 * 4,  # int8 conv, its relu fused: uint8
    "dequantize": 1 * 4 * 4 * 4 * 4,  # float32 for flatten: 4 bytes per element
    "flatten": 1 * 64 * 4,
    "quantize_1": 1 * 64,  # uint8 for the int8 fc
    "fc": 1 * 2,
    "dequantize_1": 1 * 2 * 4,  # float32 for the caller
}


@pytest.fixture
def ex(impl):
    return impl.load("ch10_int8_resnet")


def make_model() -> nn.Module:
    """ResNet-18 fresh from training: training mode, BatchNorms that do something."""
    torch.manual_seed(0)
    model = ResNet18()
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
                module.weight.uniform_(0.5, 1.5)
                module.bias.uniform_(-0.2, 0.2)
    return model.train()


def calibration() -> list[torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return [torch.randn(SHAPE, generator=generator) * scale for scale in SCALES]


def torch_fx_fused(model: nn.Module) -> torch.fx.GraphModule:
    """torch.fx's fusion of an eval-mode copy: the oracle for `fold`."""
    return fx_optimization.fuse(copy.deepcopy(model).eval())


def torch_fx_bytes(gm: torch.fx.GraphModule, example: torch.Tensor) -> dict[str, int]:
    """The activation bytes of each call_* node, from torch.fx's ShapeProp."""
    TorchShapeProp(gm).propagate(example)
    sizes = {}
    for node in gm.graph.nodes:
        meta = node.meta.get("tensor_meta")
        if node.op.startswith("call_") and isinstance(meta, TorchTensorMetadata):
            sizes[node.name] = meta.shape.numel() * meta.dtype.itemsize
    return sizes


def small_int8() -> nn.Module:
    """SmallNet in int8, by the grader's own chain of minifx's passes: an input for
    `activation_bytes`, built without the student's functions."""
    torch.manual_seed(0)
    prepared = prepare(SmallNet().eval())
    with torch.no_grad():
        prepared(torch.randn(SMALL))
    return convert(prepared)


def _call(what: str, fn, *args, hint: str = "your code raised at the line shown."):
    got, error = call_graded(fn, *args)
    if error is not None:
        pytest.fail(
            explain(what, describe_error(error), stub_hint(error, fn.__name__, hint), SEE),
            pytrace=False,
        )
    return got


def _fail(expected: str, got: str, hint: str, see: str = SEE) -> None:
    pytest.fail(explain(expected, got, hint, see), pytrace=False)


def _batchnorms(gm: nn.Module) -> list[str]:
    return [name for name, m in gm.named_modules() if isinstance(m, nn.BatchNorm2d)]


def _same_model(model: nn.Module, before: dict, training: bool) -> str:
    """'' if `model` is as it was, else what changed."""
    if model.training != training:
        return f"model.training is {model.training}, was {training}"
    after = model.state_dict()
    changed = [k for k in before if not tensors_equal(before[k], after.get(k, torch.empty(0)))]
    missing = [k for k in before if k not in after]
    if changed or missing:
        return f"model's state changed: {(changed + missing)[:3]}"
    return ""


# --- the chain, run once per grading run -----------------------------------------------


@pytest.fixture(scope="module")
def shipped(impl):
    """(model, model's state before, the student's Shipped or None, the error or None)."""
    ex = impl.load("ch10_int8_resnet")
    model = make_model()
    before = copy.deepcopy(model.state_dict())
    got, error = call_graded(ex.ship, model, calibration())
    return model, before, got, error


def _shipped(ex, shipped):
    model, before, got, error = shipped
    if error is not None:
        _fail(
            "ship(model, calibration) returns a Shipped",
            describe_error(error),
            stub_hint(error, "ship (and the functions it chains)"),
        )
    # Byte counts of graded code's own type could answer == with True: exact ints only.
    if (
        not isinstance(got, ex.Shipped)
        or not all(isinstance(m, GraphModule) for m in (got.model, got.folded))
        or not_plain((got.float_bytes, got.int8_bytes), (int,)) is not None
    ):
        _fail(
            "ship(model, calibration) returns a Shipped of two GraphModules and two byte counts",
            safe_repr(got, 300),
            "return Shipped(int8_model, folded, float_bytes, int8_bytes), the byte counts ints.",
        )
    return model, before, got


@pytest.fixture(scope="module")
def folding(impl):
    """(model, model's state before, what the student's fold returned, or the error)."""
    ex = impl.load("ch10_int8_resnet")
    model = make_model()
    before = copy.deepcopy(model.state_dict())
    return (model, before, *call_graded(ex.fold, model))


@pytest.fixture(scope="module")
def quantizing(impl):
    """(the folded model it was given, its graph before, what quantize returned, or the error)."""
    ex = impl.load("ch10_int8_resnet")
    folded = fuse_conv_bn(symbolic_trace(copy.deepcopy(make_model()).eval()))
    before = str(folded.graph)
    return (folded, before, *call_graded(ex.quantize, folded, calibration()))


@pytest.fixture(scope="module")
def oracle():
    """torch.fx's fusion of the model, and the activation bytes of its nodes on a batch."""
    fused = torch_fx_fused(make_model())
    return fused, torch_fx_bytes(fused, calibration()[0])


def _result(what: str, fn_name: str, run: tuple):
    *_, got, error = run
    if error is not None:
        _fail(what, describe_error(error), stub_hint(error, fn_name))
    # A minifx GraphModule with a minifx Graph, so that str(graph) and the module's calls
    # are minifx's, not those of an object of graded code's.
    if not (isinstance(got, GraphModule) and type(got.graph) is Graph):
        _fail(what, f"a {type(got).__name__}: {safe_repr(got)}", "return a minifx GraphModule.")
    refuse_methods_of_its_own(got, what, SEE)
    return got


# --- fold ---------------------------------------------------------------------------


def test_fold_is_torch_fx_s_fusion(folding, oracle):
    folded = _result("fold(model) returns the folded GraphModule", "fold", folding)
    want = str(oracle[0].graph)
    got = graph_text(folded.graph, "fold(model).graph", SEE_FOLD)
    if got != want:
        left = _batchnorms(folded) if isinstance(folded, nn.Module) else []
        hint = (
            f"{len(left)} BatchNorm(s) are left ({left[0]}, ...): fuse_conv_bn leaves a "
            "training-mode BatchNorm alone; fold an eval-mode copy, "
            "copy.deepcopy(model).eval()."
            if left
            else "trace with symbolic_trace, then fuse_conv_bn, and nothing else."
        )
        _fail(
            "the graph of torch.fx's fuse on an eval-mode copy (no batch_norm node)",
            f"a graph of {got.count(chr(10))} lines that differs; first lines:\n"
            + "\n".join(got.splitlines()[:4]),
            hint,
            SEE_FOLD if left else SEE,
        )


def test_fold_computes_what_the_model_computes(folding):
    folded = _result("fold(model) returns the folded GraphModule", "fold", folding)
    model = make_model()
    x = calibration()[0]
    want = copy.deepcopy(model).eval()(x)
    got, error = call_graded(folded, x)
    if error is not None or not tensors_close(got, want, atol=1e-5):
        _fail(
            "folded(x) equals the eval-mode model's output, up to float rounding",
            describe_error(error) if error else f"differs by {(got - want).abs().max():.3g}",
            "fold an eval-mode copy: a training-mode model normalizes with the batch's "
            "statistics, not the running ones.",
            SEE_FOLD,
        )


def test_fold_leaves_the_model_as_it_was(folding):
    _result("fold(model) returns the folded GraphModule", "fold", folding)
    model, before, *_ = folding
    changed = _same_model(model, before, training=True)
    if changed:
        _fail(
            "model unchanged: still in training mode, same parameters and buffers",
            changed,
            "fold a copy: copy.deepcopy(model).eval(); model.eval() would switch the "
            "caller's model, which is still being trained, to eval mode.",
        )


# --- activation_bytes -----------------------------------------------------------------


def _bytes_hint(got: dict, want: dict, numels: dict | None = None) -> str:
    if not isinstance(got, dict):
        return "return a dict: node name -> bytes."
    extra = [name for name in got if name not in want]
    if extra:
        return (
            f"{extra[0]!r} is no call_* node with a tensor: leave out placeholders, get_attr "
            "nodes and the output."
        )
    missing = [name for name in want if name not in got]
    if missing:
        return f"every call_* node whose tensor_meta is a TensorMetadata counts ({missing[0]!r})."
    if numels and all(got[n] == numels[n] for n in got):
        return "bytes are shape.numel() * dtype.itemsize: numel() counts elements, not bytes."
    if all(got[n] == 4 * numels[n] for n in got) if numels else False:
        return "an int8 or uint8 element is 1 byte: use dtype.itemsize, not 4."
    return "bytes are shape.numel() * dtype.itemsize of each node's tensor_meta."


def _plain_bytes(got):
    return plain(got, "a dict, node name (a str) -> bytes (an int)", "activation_bytes", SEE_SHAPES)


def test_activation_bytes_of_a_float_graph(ex, oracle):
    gm = fuse_conv_bn(symbolic_trace(copy.deepcopy(make_model()).eval()))
    x = calibration()[0]
    want = oracle[1]
    got = _plain_bytes(_call("activation_bytes(folded, x)", ex.activation_bytes, gm, x))
    if got != want:
        numels = {name: size // 4 for name, size in want.items()}
        _fail(
            f"the bytes of each call_* node, as torch.fx's ShapeProp gives them "
            f"({len(want)} nodes, {sum(want.values())} bytes)",
            repr(got)[:300],
            _bytes_hint(got, want, numels),
            SEE_SHAPES,
        )


def test_activation_bytes_of_an_int8_graph(ex):
    gm = small_int8()
    got = _plain_bytes(
        _call("activation_bytes(int8_model, x)", ex.activation_bytes, gm, torch.randn(SMALL))
    )
    if got != SMALL_INT8:
        numels = {"quantize": 48, "conv": 64, "dequantize": 64, "flatten": 64}
        numels |= {"quantize_1": 64, "fc": 2, "dequantize_1": 2}
        hint = _bytes_hint(got, SMALL_INT8, numels)
        if isinstance(got, dict) and got.get("quantize") == 4 * SMALL_INT8["quantize"]:
            hint = "an int8 or uint8 element is 1 byte: use dtype.itemsize, not 4."
        _fail(
            f"the bytes of each call_* node of an int8 conv net: {SMALL_INT8}",
            repr(got)[:400],
            hint,
            SEE_SHAPES,
        )


# --- quantize -------------------------------------------------------------------------


def _layers(gm: nn.Module) -> tuple[int, list[str], list[str]]:
    int8 = sum(isinstance(m, (QuantizedConv2d, QuantizedLinear)) for m in gm.modules())
    left = [n for n, m in gm.named_modules() if isinstance(m, (nn.Conv2d, nn.Linear))]
    observers = [n for n, m in gm.named_modules() if isinstance(m, MinMaxObserver)]
    return int8, left, observers


def test_quantize_converts_every_conv_and_linear(quantizing):
    got = _result("quantize(folded, calibration) returns the int8 model", "quantize", quantizing)
    if not isinstance(got, nn.Module):
        _fail("an int8 GraphModule", repr(got)[:200], "return convert(prepared).")
    int8, left, observers = _layers(got)
    if int8 != INT8_LAYERS or left or observers:
        hint = (
            "convert the calibrated model: return convert(prepared), not prepared."
            if observers
            else "prepare, calibrate, then convert: every Conv2d and Linear becomes an int8 layer."
        )
        _fail(
            f"{INT8_LAYERS} int8 layers (QuantizedConv2d, QuantizedLinear), no float Conv2d or "
            "Linear, no observer",
            f"{int8} int8 layers; float: {left[:3]}; observers: {observers[:3]}",
            hint,
            SEE_CALIBRATE,
        )


def test_quantize_calibrates_on_every_batch(quantizing):
    batches = calibration()
    got = _result("quantize(folded, calibration) returns the int8 model", "quantize", quantizing)
    oracle = TorchMinMaxObserver(quant_min=0, quant_max=127, dtype=torch.quint8)
    for batch in batches:
        oracle(batch)
    scale, zero_point = (float(v) for v in oracle.calculate_qparams())
    got_scale = getattr(got, "x_scale", None)
    got_zero = getattr(got, "x_zero_point", None)
    if (
        not isinstance(got_scale, torch.Tensor)
        or not isinstance(got_zero, torch.Tensor)
        or abs(float(got_scale) - scale) > 1e-6 * scale
        or float(got_zero) != zero_point
    ):
        first = TorchMinMaxObserver(quant_min=0, quant_max=127, dtype=torch.quint8)
        first(batches[0])
        hint = (
            "the range covers only the first batch: run every batch of calibration through "
            "the prepared model."
            if isinstance(got_scale, torch.Tensor)
            and abs(float(got_scale) - float(first.calculate_qparams()[0])) < 1e-6
            else "calibrate the prepared model on the batches of calibration, then convert it."
        )
        _fail(
            f"the input's scale and zero point, from the range of all {len(batches)} batches, "
            f"as torch.ao's MinMaxObserver gives them: {scale:.6g}, {zero_point:g}",
            f"{got_scale!r}, {got_zero!r}"[:300],
            hint,
            SEE_CALIBRATE,
        )


def test_quantize_leaves_the_folded_model_as_it_was(quantizing):
    _result("quantize(folded, calibration) returns the int8 model", "quantize", quantizing)
    folded, before, *_ = quantizing
    if graph_text(folded.graph, "the folded model's graph after quantize", SEE) != before:
        _fail(
            "folded unchanged",
            "its graph changed",
            "prepare copies the model; quantize the copy.",
        )


# --- ship -------------------------------------------------------------------------------


def test_ship_folds_before_it_quantizes(ex, shipped):
    _, _, got = _shipped(ex, shipped)
    left = _batchnorms(got.model) + _batchnorms(got.folded)
    int8, floats, observers = _layers(got.model)
    if left or int8 != INT8_LAYERS or floats or observers:
        hint = (
            "fold before you quantize: the BatchNorms must be gone when prepare runs, or they "
            "stay float ops between int8 ones."
            if left
            else "quantize the folded model, calibrated, and return convert's result."
        )
        _fail(
            f"shipped.model: {INT8_LAYERS} int8 layers and no BatchNorm; shipped.folded: no "
            "BatchNorm",
            f"{int8} int8 layers; BatchNorms: {left[:3]}; float layers: {floats[:3]}",
            hint,
        )


def test_ship_measures_the_folded_float_graph(ex, shipped, oracle):
    model, _, got = _shipped(ex, shipped)
    x = calibration()[0]
    want = sum(oracle[1].values())
    if got.float_bytes != want:
        unfolded = torch.fx.symbolic_trace(copy.deepcopy(model).eval())
        hint = (
            "measure the folded model, the one you quantize: its BatchNorms are gone."
            if got.float_bytes == sum(torch_fx_bytes(unfolded, x).values())
            else "float_bytes is the sum of activation_bytes(folded, calibration[0])."
        )
        _fail(
            f"shipped.float_bytes: {want}, torch.fx's ShapeProp of the folded graph",
            repr(got.float_bytes),
            hint,
        )


def test_ship_measures_the_int8_graph(ex, shipped):
    _, _, got = _shipped(ex, shipped)
    if got.int8_bytes != INT8_TOTAL:
        hint = (
            "measure the int8 model, shipped.model, for int8_bytes."
            if got.int8_bytes == got.float_bytes
            else "int8_bytes is the sum of activation_bytes(int8_model, calibration[0])."
        )
        _fail(f"shipped.int8_bytes: {INT8_TOTAL}", repr(got.int8_bytes), hint)


def test_ship_stays_close_to_the_eager_model(ex, shipped):
    model, _, got = _shipped(ex, shipped)
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(4, 3, 32, 32, generator=generator)
    want = copy.deepcopy(model).eval()(x)
    out, error = call_graded(got.model, x)
    # Exactly a Tensor: a subclass could answer every torch function through __torch_function__.
    if error is not None or type(out) is not torch.Tensor or out.shape != want.shape:
        _fail(
            f"shipped.model(x) returns a tensor of shape {tuple(want.shape)}",
            describe_error(error) if error else repr(out)[:200],
            "shipped.model is the int8 GraphModule: it takes a batch as the model does.",
        )
    error_size = (out - want).abs().max().item()
    bound = 0.15 * want.abs().max().item()
    if error_size > bound:
        _fail(
            f"the int8 model's outputs within {bound:.3g} of the eval-mode model's "
            "(15 % of their range)",
            f"off by up to {error_size:.3g}",
            "calibrate on every batch, fold an eval-mode copy, and quantize the folded model.",
        )


def test_ship_leaves_the_model_as_it_was(ex, shipped):
    model, before, _ = _shipped(ex, shipped)
    changed = _same_model(model, before, training=True)
    if changed:
        _fail(
            "model unchanged: still in training mode, same parameters and buffers",
            changed,
            "fold a copy: copy.deepcopy(model).eval().",
        )
