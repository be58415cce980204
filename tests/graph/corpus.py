"""The programs the stage-2 Tracer is compared on against torch.fx.

Each `Case` has a `make()` factory that builds a *fresh* root (a function or
an `nn.Module`) and its `concrete_args`, so the two tracers never share a
module: tracing may store `_tensor_constant0` on its root, and torch.fx's
tracer must not leave anything behind that minifx could pick up.

`tracer(base)` builds the tracer from a base class (`torch.fx.Tracer` or
`minifx.graph.Tracer`), so a custom subclass is written once and built for
both libraries. `mini_aliases` lists target strings that differ on purpose and
are replaced in minifx's printout before comparing (see `concrete_none`).
"""

import functools
import math
from collections import namedtuple
from dataclasses import dataclass
from math import sqrt
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
import torch.fx
import torch.nn as nn
import torch.nn.functional as F

from tests.graph import wrapped_helpers as wh


@dataclass(frozen=True)
class Case:
    """One program to trace.

    Attributes:
        name: the pytest id.
        make: returns a fresh `(root, concrete_args)`; `concrete_args` may
            contain the marker `"PH"`, replaced by each library's own `PH`.
        tracer: builds the tracer from the library's `Tracer` class.
        mini_aliases: `(minifx_text, torch_text)` replacements applied to
            minifx's printout before comparing; only for documented differences.
    """

    name: str
    make: Callable[[], tuple[Any, Any]]
    tracer: Callable[[type], Any] = lambda base: base()
    mini_aliases: tuple[tuple[str, str], ...] = ()


CASES: list[Case] = []


def case(name: str | None = None, *, concrete_args: Any = None, **options: Any) -> Callable:
    """Register a factory: a function (traced itself) or a module class (instantiated)."""

    def register(thing: Callable) -> Callable:
        def make() -> tuple[Any, Any]:
            root = thing() if isinstance(thing, type) else thing
            return root, concrete_args

        CASES.append(Case(name or thing.__name__, make, **options))
        return thing

    return register


def add_case(
    name: str, factory: Callable[[], Any], concrete_args: Any = None, **options: Any
) -> None:
    """Register a case whose root is built by calling `factory()` (fresh each time)."""
    CASES.append(Case(name, lambda: (factory(), concrete_args), **options))


def resolve_ph(concrete_args: Any, ph: Any) -> Any:
    """Replace the marker string `"PH"` by the library's `PH` (torch.fx's or minifx's)."""
    if concrete_args == "PH":
        return ph
    if isinstance(concrete_args, dict):
        return {key: resolve_ph(value, ph) for key, value in concrete_args.items()}
    if isinstance(concrete_args, tuple) and hasattr(concrete_args, "_fields"):  # a namedtuple
        return type(concrete_args)(*(resolve_ph(value, ph) for value in concrete_args))
    if isinstance(concrete_args, (tuple, list)):
        return type(concrete_args)(resolve_ph(value, ph) for value in concrete_args)
    return concrete_args


# == plain functions: operators ======================================================


@case()
def arithmetic(x, y):
    return x + y, x - y, x * y, x / y, x // y, x % y, x**y, x @ y


@case()
def reflected_arithmetic(x):
    return 1 + x, 2 - x, 3 * x, 4 / x, 5 // x, 2**x


@case()
def comparisons_and_bitwise(x, y):
    return (x > 0) & (y < 1), (x == y) | (x != y), x <= y, x >= 2, ~(x > y), x ^ y


@case()
def unary_operators(x):
    return -x, +x, abs(x)


@case()
def chained_arithmetic_names(x):
    # Repeated targets get _1, _2 suffixes: add, add_1, add_2.
    return x + 1 + 2 + 3


# == torch.* and F.* calls, tensor methods ============================================


@case()
def torch_functions(x, y):
    return torch.relu(x), torch.cat([x, y], dim=1), torch.stack((x, y)), torch.where(x > 0, x, y)


@case()
def functional_calls(x, w):
    h = F.linear(x, w)
    return F.softmax(F.gelu(h), dim=-1), F.dropout(h, p=0.1, training=False)


@case()
def tensor_methods(x):
    return (
        x.relu().sum(dim=1, keepdim=True),
        x.view(2, -1),
        x.transpose(0, 1).contiguous(),
        x.permute(1, 0),
    )


@case()
def method_on_result_of_function(x):
    return torch.sigmoid(x).mean().item


# == indexing and shapes ==============================================================


@case()
def index_int(x):
    return x[0]


@case()
def index_tuple_with_slice(x):
    return x[0, 1:]


@case()
def index_ellipsis_none(x):
    return x[..., None]


@case()
def index_step_and_proxy(x, i):
    return x[:, ::2], x[i], x[:i]


@case()
def shape_and_size(x):
    return x.shape, x.size(), x.size(0), x.shape[0], x.dim()


@case()
def reshape_with_traced_shape(x):
    return x.view(x.shape[0], -1), x.reshape(x.size(0), x.size(1) * 2, -1)


@case()
def chunk_unpacked(x):
    a, b = x.chunk(2)
    return a * b


@case()
def split_unpacked_three(x):
    a, b, c = torch.split(x, 1, dim=0)
    return a + b + c


# == keyword arguments, dtype and device constants ====================================


@case()
def keyword_arguments(x):
    return (
        torch.sum(x, dim=0, keepdim=True),
        x.clamp(min=0.0, max=1.0),
        torch.topk(x, k=2, largest=False),
    )


@case()
def dtype_and_device_constants(x):
    return (
        x.to(torch.float64),
        x.to(dtype=torch.int32),
        x.to(device=torch.device("cpu")),
        torch.ones_like(x, dtype=torch.float16),
        x.dtype,
        x.device,
    )


@case()
def memory_format_and_layout_constants(x):
    return x.contiguous(memory_format=torch.channels_last), torch.zeros_like(
        x, layout=torch.strided
    )


# == containers in arguments and outputs ==============================================


@case()
def nested_containers_out(x, y):
    return {"sum": x + y, "parts": [x, (y, x * y)], "empty": ()}


@case()
def containers_in_arguments(x, y):
    return torch.cat((x, y), dim=0) + torch.stack([x, y]).sum(0), torch.einsum("ij,jk->ik", x, y)


Pair = namedtuple("Pair", ["first", "second"])


@case()
def namedtuple_output(x):
    return Pair(x.relu(), x.sigmoid())


@case()
def list_output(x):
    return [x, x + 1]


@case()
def constant_output(x):
    # The output does not use the input at all.
    return 3


@case()
def proxy_in_dict_value_argument(x):
    return torch.nn.functional.pad(x, [1, 1]), x.new_full((2, 2), fill_value=1.5)


# == the signature: defaults, annotations, keyword-only, *args, **kwargs ==============


@case()
def defaults_and_annotations(x: torch.Tensor, scale: float = 2.0, n: int = 3) -> torch.Tensor:
    return x * scale + n


@case()
def optional_annotation(x: Optional[torch.Tensor], y: "torch.Tensor") -> tuple:
    return x, y


@case()
def keyword_only_parameters(x, *, alpha=1.0, beta):
    return x * alpha + beta


@case()
def star_args_and_kwargs(x, *args, **kwargs):
    return x + args[0] + kwargs["bias"]


@case()
def input_named_like_builtins(input, sum, list):
    # Placeholders named like builtins are renamed (input_1, sum_1, list_1) as torch.fx does.
    return input + sum + list


# == math autowrap =====================================================================


@case()
def math_on_traced_shape(x):
    return x / math.sqrt(x.shape[-1])


@case()
def math_on_placeholder(x, n):
    return x * math.log(n) + math.floor(n)


@case()
def from_math_import_sqrt(x):
    # `from math import sqrt` puts math.sqrt in this module's globals: autowrapped too.
    return x * sqrt(x.size(0))


# == concrete_args ======================================================================


def flagged(x, flag):
    return x.relu() if flag else x.sigmoid()


def repeated(x, n):
    for _ in range(n):
        x = x * 2
    return x


def optional_bias(x, bias):
    if bias is not None:
        x = x + bias
    return x


def paired(x, pair):
    return x + pair[0] * pair[1]


def two_inputs(x, y=None):
    return x if y is None else x + y


add_case("concrete_bool", lambda: flagged, {"flag": True})
add_case("concrete_int", lambda: repeated, {"n": 3})
# The assertion recorded for an input specialised to None calls a module-private
# helper, printed with its qualified name; minifx's lives in minifx.graph.tracer.
# That one string differs on purpose and is mapped back before comparing.
add_case(
    "concrete_none",
    lambda: optional_bias,
    {"bias": None},
    mini_aliases=(
        ("minifx.graph.tracer._assert_is_none", "torch.fx._symbolic_trace._assert_is_none"),
    ),
)
add_case("concrete_ph_in_structure", lambda: paired, {"pair": ("PH", 3)})
add_case("concrete_tuple_form", lambda: two_inputs, ("PH", "PH"))
add_case("concrete_ph_only", lambda: flagged, {"x": "PH", "flag": False})


# == wrap: torch.fx.wrap registrations (honoured by both) ===============================


@case()
def torch_fx_wrapped_by_name(x):
    return wh.rows_prefix(x, 2) + 1


@case()
def torch_fx_wrapped_decorator_with_kwargs(x, y):
    return wh.scale_if_positive(x + y, scale=3.0)


@case()
def torch_fx_wrapped_keywords_only_proxy(x):
    return wh.rows_prefix(n=3, x=x)


@case()
def torch_fx_wrapped_without_proxy(x):
    # No Proxy among the arguments: the helper runs now, and its result is a constant.
    return x + wh.rows_prefix(torch.ones(4), 2)


add_case("torch_fx_wrapped_builtin_len", lambda: wh.zeros_like_rows)


# == wrap: minifx.wrap registrations, compared with torch.fx's autowrap_functions =======


def _torch_autowraps_mini_wrapped(base: type) -> Any:
    """torch.fx ignores minifx.wrap; autowrap_functions is its way to record the same call."""
    if base is torch.fx.Tracer:
        return base(autowrap_functions=wh.MINI_WRAPPED)
    return base()


add_case(
    "minifx_wrapped_by_name", lambda: wh.uses_mini_rows_prefix, tracer=_torch_autowraps_mini_wrapped
)
add_case(
    "minifx_wrapped_decorator",
    lambda: wh.uses_mini_clamp_positive,
    tracer=_torch_autowraps_mini_wrapped,
)


class WrapsInSubmodule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = wh.MiniWrappedBlock()

    def forward(self, x):
        return self.block(x).sum()


add_case("minifx_wrapped_in_submodule", WrapsInSubmodule, tracer=_torch_autowraps_mini_wrapped)


# == modules ============================================================================


class Block(nn.Module):
    def __init__(self, width: int = 4) -> None:
        super().__init__()
        self.lin = nn.Linear(width, width)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.lin(x)) + x


@case()
class NestedUserModules(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.first = Block()
        self.second = Block()
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.second(self.first(x)))


add_case("sequential_root", lambda: nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2)))
add_case("sequential_of_user_blocks", lambda: nn.Sequential(Block(), Block()))


@case()
class SequentialIteratedAndIndexed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.seq = nn.Sequential(nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 4))

    def forward(self, x):
        for layer in self.seq:
            x = layer(x)
        return self.seq[0](x) + self.seq[-1](x) + self.seq(x)


@case()
class ModuleListLoop(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = layer(x) * (i + 1)
        return self.layers[1](x)


@case()
class ModuleListOfUserBlocksByRange(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        for i in range(len(self.blocks)):
            x = self.blocks[i](x)
        return x


@case()
class ModuleDictIndexedAndIterated(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.heads = nn.ModuleDict({"cls": nn.Linear(4, 3), "box": nn.Linear(4, 2)})

    def forward(self, x):
        outs = {name: head(x) for name, head in self.heads.items()}
        return outs, self.heads["cls"](x).softmax(-1)


@case()
class ModuleCalledTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(self.lin(x))


@case()
class SharedSubmoduleTwoNames(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(4, 4)
        self.decoder = self.encoder  # the same module under a second name

    def forward(self, x):
        return self.decoder(self.encoder(x))


@case()
class ModuleCalledWithKeywords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, q, kv):
        out, _ = self.attn(q, kv, kv, need_weights=False)
        return out


# == parameters, buffers, tensor attributes and constants ==============================


@case()
class ParameterUsedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))

    def forward(self, x):
        # One get_attr: parameter reads are cached for the whole trace.
        return x @ self.weight + self.weight.sum()


@case()
class SubmoduleParameterDirectly(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return F.linear(x, self.lin.weight * 2, self.lin.bias) + self.lin.weight.t()


@case()
class BufferUsedTwice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("mean", torch.zeros(4))

    def forward(self, x):
        # Two get_attr nodes: buffers are not cached (proxy_buffer_attributes is False).
        return (x - self.mean) * self.mean


@case()
class NestedBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.BatchNorm1d(4)

    def forward(self, x):
        return x - self.norm.running_mean


@case()
class PlainTensorAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.ones(3)

    def forward(self, x):
        return x * self.scale + self.scale


@case()
class NestedPlainTensorAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Module()
        self.inner.offset = torch.arange(3.0)

    def forward(self, x):
        return x + self.inner.offset


@case()
def tensor_constant_in_forward(x):
    return x + torch.tensor([1.0, 2.0, 3.0])


@case()
class TwoTensorConstants(nn.Module):
    def forward(self, x):
        return x * torch.tensor([2.0]) + torch.zeros(3)


@case()
class ParameterAndBufferNamedLikeBuiltins(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.sum = nn.Parameter(torch.ones(3))
        self.input = nn.Parameter(torch.ones(3))
        self.register_buffer("len", torch.zeros(3))

    def forward(self, x):
        return x + self.sum * self.input - self.len


@case()
class SubmoduleNamedLikeKeyword(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.add_module("class", nn.ReLU())
        self.add_module("lambda", nn.Linear(3, 3))

    def forward(self, x):
        return getattr(self, "class")(getattr(self, "lambda")(x))


class BasicBlockLike(nn.Module):
    """A tiny ResNet BasicBlock (conv-bn-relu-conv-bn + identity)."""

    def __init__(self, channels: int = 4) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


@case()
class LayerNamesWithDots(nn.Module):
    """`layer1.0.conv1` becomes the node name `layer1_0_conv1`."""

    def __init__(self) -> None:
        super().__init__()
        self.layer1 = nn.Sequential(BasicBlockLike(), BasicBlockLike())

    def forward(self, x):
        return self.layer1(x)


# == static control flow ===============================================================


@case()
class FlagAttributeIf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.use_bias = True
        self.residual = False
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if self.use_bias:
            y = y + 1
        if self.residual:
            y = y + x
        return y


@case()
class RangeLoopAttribute(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.depth = 3

    def forward(self, x):
        for step in range(self.depth):
            x = torch.tanh(x) * step
        return x


@case()
class TrainingFlagDropout(nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.5, training=self.training)


# == custom Tracer subclasses: the same logic built on both base classes ================


def blocks_are_leaves(base: type) -> Any:
    class BlockLeafTracer(base):
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            return isinstance(m, Block) or super().is_leaf_module(m, module_qualified_name)

    return BlockLeafTracer()


def linear_is_not_a_leaf(base: type) -> Any:
    class ThroughLinearTracer(base):
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            if isinstance(m, nn.Linear):
                return False
            return super().is_leaf_module(m, module_qualified_name)

    return ThroughLinearTracer()


def only_path_first_is_leaf(base: type) -> Any:
    class PathTracer(base):
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            return module_qualified_name == "first" or super().is_leaf_module(
                m, module_qualified_name
            )

    return PathTracer()


add_case("custom_tracer_user_block_leaf", NestedUserModules, tracer=blocks_are_leaves)
add_case("custom_tracer_trace_through_linear", NestedUserModules, tracer=linear_is_not_a_leaf)
add_case("custom_tracer_leaf_by_path", NestedUserModules, tracer=only_path_first_is_leaf)


# == realistic small models ============================================================

add_case("resnet_basic_block", BasicBlockLike)


@case()
class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


@case()
class SelfAttention(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dim = dim

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.dim)
        weights = torch.softmax(scores, dim=-1)
        return self.proj(weights @ v)


@case()
class AttentionWithTracedScale(nn.Module):
    def forward(self, q, k, v):
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.size(-1))
        return F.softmax(scores, dim=-1) @ v


@case()
class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3),
            nn.ReLU(),
        )
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.classifier = nn.Linear(16, 10)

    def forward(self, x):
        x = self.pool(self.features(x))
        x = torch.flatten(x, 1)
        return self.classifier(x)


@case()
class ConvNetFlattenMethod(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.flatten = nn.Flatten()

    def forward(self, x):
        return self.flatten(self.pool(self.conv(x))) + self.pool(x).view(x.size(0), -1).sum()


@case()
class TransformerEncoderLayerLeaf(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.layer(x))


@case()
class ForwardWithDefaultsAndAnnotations(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(
        self, x: torch.Tensor, scale: float = 0.5, *, mask: Optional[torch.Tensor] = None
    ) -> torch.Tensor:
        return self.lin(x) * scale + mask


@case()
class ForwardStarArgs(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, *inputs, **options):
        return self.lin(inputs[0]) * options["gain"]


@case()
class ForwardInputNamedInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm1d(4)

    def forward(self, input):
        return self.bn(input)


@case()
class ModuleReturnsNamedTupleAndDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        return {"pair": Pair(h, x), "list": [h.relu(), (h.sum(),)]}


@case(concrete_args={"use_head": False})
class ModuleWithConcreteFlag(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x, use_head: bool = True):
        x = self.body(x)
        return self.head(x) if use_head else x


@case()
class ModuleTensorConstantAndParameterMixed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(4))
        self.register_buffer("beta", torch.zeros(4))
        self.eps = torch.tensor(1e-5)

    def forward(self, x):
        var = x.var(-1, keepdim=True)
        return (x - x.mean(-1, keepdim=True)) / torch.sqrt(var + self.eps) * self.gamma + self.beta


# == more signatures, roots and annotations ===========================================


def _passes_through(fn: Callable) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


@case()
class DecoratedForward(nn.Module):
    """The tracer reads the signature through functools.wraps (inspect.unwrap)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    @_passes_through
    def forward(self, x, gain=2.0):
        return self.lin(x) * gain


@case()
def typing_annotations(
    x: List[int], y: Tuple[int, ...], z: Dict[str, torch.Tensor], w: Optional[int] = None
) -> List[torch.Tensor]:
    return [x, y, z, w]


add_case("lambda_root", lambda: lambda x: x * 2 + 1)


@case()
def no_inputs():
    return torch.ones(2) * 3


@case()
def returns_none(x):
    x.add_(1)
    return None


@case()
def inplace_methods(x):
    return x.add_(1).relu_().mul_(x)


@case()
def method_read_then_called(x):
    size = x.size
    return size(0), x.T, x.mT


@case()
def shape_unpacked(x):
    n, c = x.shape[:2]
    return x.view(n, c, -1)


@case()
def interpolate_keywords(x):
    return F.interpolate(x, scale_factor=2, mode="nearest"), torch.div(x, 2, rounding_mode="floor")


@case()
def torch_ops_aten_call(x):
    # An operator overload packet and an overload, called directly (torchvision-style ops).
    return torch.ops.aten.relu(x), torch.ops.aten.add.Tensor(x, x)


# == more concrete_args ==================================================================


def scaled(x, n=3):
    return x * n


def keyword_only_count(x, *, n=3):
    return x * n


def configured(x, cfg):
    return x * cfg["gain"] + cfg["bias"] + cfg["steps"]


def summed(x, ys):
    return x + ys[0] + ys[1]


add_case("concrete_overrides_default", lambda: scaled, {"n": 2})
add_case("concrete_ph_keeps_default", lambda: scaled, {"n": "PH"})
add_case("concrete_keyword_only", lambda: keyword_only_count, {"n": 4})
add_case(
    "concrete_dict_with_ph", lambda: configured, {"cfg": {"gain": "PH", "bias": "PH", "steps": 2}}
)
add_case("concrete_list_of_ph", lambda: summed, {"ys": ["PH", "PH"]})

# A named tuple of PH: the GraphModule must accept the named tuple (torch.fx issue 16, 1c).
Point = namedtuple("Point", "x y")


def point_sum(x, p):
    return x * p.x + p.y


add_case("concrete_namedtuple_of_ph", lambda: point_sum, {"p": Point("PH", "PH")})


class StarArgsForward(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, *inputs):
        return self.lin(inputs[0]) + inputs[1]


# torch.fx's rule for a forward that takes only *args: a concrete_args tuple gives
# one placeholder per element, named input_0, input_1, ...
add_case("concrete_tuple_for_star_args_forward", StarArgsForward, ("PH", "PH"))


# == more module state =====================================================================


@case()
class TensorConstantUsedTwice(nn.Module):
    def forward(self, x):
        c = torch.tensor([1.0, 2.0])
        return x + c + c


@case()
class TiedWeights(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = nn.Linear(3, 3)
        self.decoder = nn.Linear(3, 3)
        self.decoder.weight = self.encoder.weight  # one Parameter, two paths

    def forward(self, x):
        return x @ self.decoder.weight + self.encoder.weight.sum()


@case()
class ParameterListAndDict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ps = nn.ParameterList([nn.Parameter(torch.ones(3)) for _ in range(2)])
        self.pd = nn.ParameterDict({"a": nn.Parameter(torch.ones(3))})

    def forward(self, x):
        for p in self.ps:
            x = x + p
        return x * self.ps[0] + self.pd["a"]


@case()
class NamesCollideWithInputsAndOps(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.x = nn.Parameter(torch.ones(2))  # same name as the input
        self.add = nn.ReLU()  # same name as the operator.add node

    def forward(self, x):
        return self.add(x + self.x) + self.x.T.shape[0] + self.x.data


@case()
class LSTMOutputUnpacked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lstm = nn.LSTM(3, 3)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


@case()
class EmbeddingWithPositions(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)
        self.pos = nn.Parameter(torch.zeros(1, 5, 4))

    def forward(self, ids):
        return self.emb(ids) + self.pos[:, : ids.size(1)]


class MyLinear(nn.Linear):
    """Defined outside torch.nn, so not a leaf: its inherited forward is traced."""


@case()
class UserSubclassOfLinear(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = MyLinear(3, 3)
        self.identity = nn.Identity()

    def forward(self, x):
        return self.identity(self.lin(x)) + self.lin.weight.shape[0]


class Hooked(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.lin.register_forward_hook(lambda module, inputs, output: output * 2)
        self.register_forward_pre_hook(lambda module, inputs: (inputs[0] + 1,))

    def forward(self, x):
        return self.lin(x)


@case()
class HooksOnTracedThroughModule(nn.Module):
    """Hooks of a traced-through module run (and are recorded); a leaf's do not."""

    def __init__(self) -> None:
        super().__init__()
        self.hooked = Hooked()

    def forward(self, x):
        return self.hooked(x)


@case()
class ModuleAndParameterIntoWrappedHelper(nn.Module):
    """A module argument becomes a get_attr of the module; a parameter, of the parameter."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.w = nn.Parameter(torch.ones(2))

    def forward(self, x):
        return wh.rows_prefix(x, self.lin), wh.rows_prefix(self.w, 2) + x


# == more tracer options and subclasses ======================================================


def _buffers_as_proxies(base: type) -> Any:
    class CachedBufferTracer(base):
        proxy_buffer_attributes = True  # buffers are then read once, like parameters

    return CachedBufferTracer()


def _traces_encode(base: type) -> Any:
    class EncodeTracer(base):
        traced_func_name = "encode"

    return EncodeTracer()


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)

    def forward(self, x):
        return x

    def encode(self, x, scale=1):
        return self.lin(x) * scale


def item_plus_one(x):
    """Untraceable: `int()` of a Proxy fails, so it must be recorded as one call."""
    return int(x.sum().item()) + 1


def calls_item_plus_one(x):
    return x * item_plus_one(x)


class Untraceable(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x


class UsesUntraceableLeaves(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.leaf = Untraceable()
        self.seq = nn.Sequential(Untraceable(), nn.ReLU())

    def forward(self, x):
        return self.seq(self.leaf(x))


def _untraceable_is_leaf(base: type) -> Any:
    class UntraceableLeafTracer(base):
        def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
            return isinstance(m, Untraceable) or super().is_leaf_module(m, module_qualified_name)

    return UntraceableLeafTracer()


add_case("proxy_buffer_attributes_tracer", BufferUsedTwice, tracer=_buffers_as_proxies)
add_case("traced_func_name_tracer", Encoder, tracer=_traces_encode)
add_case(
    "autowrap_functions_both",
    lambda: calls_item_plus_one,
    tracer=lambda base: base(autowrap_functions=(item_plus_one,)),
)
add_case(
    "autowrap_modules_empty",
    lambda: lambda x: x + math.sqrt(2.0),
    tracer=lambda base: base(autowrap_modules=()),
)
add_case("custom_tracer_untraceable_leaf", UsesUntraceableLeaves, tracer=_untraceable_is_leaf)


# == constructs of torchvision's models ========================================================
# torchvision is not a dependency. minifx and torch.fx were compared once on every torchvision
# classification, segmentation, video and quantizable model (same graphs, code and outputs);
# these small programs keep what those models do that the cases above did not already do.


@case()
def channel_shuffle(x):
    # shufflenet_v2: four sizes unpacked from x.size(), then view / transpose / view.
    batch, channels, height, width = x.size()
    x = x.view(batch, 2, channels // 2, height, width)
    x = torch.transpose(x, 1, 2).contiguous()
    return x.view(batch, -1, height, width)


@case()
class ClassToken(nn.Module):
    """vit_b_16: a shape check with torch._assert, then a class token expanded to the batch."""

    def __init__(self) -> None:
        super().__init__()
        self.class_token = nn.Parameter(torch.zeros(1, 1, 4))

    def forward(self, x):
        n, c, h, w = x.shape
        torch._assert(h == 2, f"Wrong image height! Expected 2 but got {h}!")
        x = x.reshape(n, c, h * w).permute(0, 2, 1)
        batch_class_token = self.class_token.expand(n, -1, -1)
        return torch.cat([batch_class_token, x], dim=1)[:, 0]


@case()
class QuantizableSkipAdd(nn.Module):
    """torchvision's quantizable models: a FloatFunctional's `add` *method* is called, not
    its forward, so the tracer runs through it and records its observer submodule."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 2, 1)
        self.skip_add = torch.ao.nn.quantized.FloatFunctional()

    def forward(self, x):
        return self.skip_add.add(self.conv(x), x)


@case()
class SegmentationHead(nn.Module):
    """fcn / deeplabv3: the result upsampled to the input's size, in a dict. (torchvision
    builds an OrderedDict, which both libraries' GraphModules return as a plain dict.)"""

    def __init__(self) -> None:
        super().__init__()
        self.backbone = nn.Conv2d(2, 3, 3, stride=2, padding=1)
        self.classifier = nn.Conv2d(3, 2, 1)

    def forward(self, x):
        input_shape = x.shape[-2:]
        result = {}
        y = self.classifier(self.backbone(x))
        result["out"] = F.interpolate(y, size=input_shape, mode="bilinear", align_corners=False)
        return result


@case()
def relative_position_index(x):
    # maxvit / swin: an index computed from constants only runs now and becomes a tensor
    # constant; only the indexing of the input is recorded.
    coords = torch.stack(torch.meshgrid([torch.arange(2), torch.arange(2)], indexing="ij"))
    index = coords.flatten(1).sum(0)
    return x[:, index]


@case()
def is_scripting_branch(x):
    # googlenet / inception_v3: torch.jit.is_scripting() is False while tracing, so the eager
    # branch is taken and nothing is recorded for the test.
    if torch.jit.is_scripting():
        return x
    return x * 0.5 + 0.1


@case()
def wrapped_pair_unpacked(x):
    # mvit: a wrapped helper returns a pair, unpacked at once (two getitem nodes).
    x, rank_before = wh.with_batch_dim(x, 3)
    return wh.without_batch_dim(x.relu(), rank_before)


CASES_BY_NAME = {c.name: c for c in CASES}
