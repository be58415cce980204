"""The small facts code generation relies on: Python's operator syntax, the
globals every generated function gets, and how objects are named in source.

Kept apart from `python_code.py`, which decides *what* to write; this module
knows *how* Python spells it.
"""

from __future__ import annotations

import builtins
import functools
import keyword
import math
import re
import typing
import unicodedata
from typing import TYPE_CHECKING, Any

import torch
from torch._subclasses.fake_tensor import FakeTensor

from ..graph.errors import MisuseError, NoReceiver
from ..graph.node import target_problem
from ..proxy.ir import qualified_name

# Python's operator syntax is the Proxy's table (stage 1), re-exported with the rest
# of Python's spelling that the code generator imports from here.
from ..proxy.operators import INPLACE_OPERATORS as INPLACE_OPERATORS
from ..proxy.operators import OPERATOR_SYNTAX as OPERATOR_SYNTAX
from . import pytree as fx_pytree_helpers

if TYPE_CHECKING:
    from ..graph.node import Node


# Globals every generated function gets, under these names when they are free.
CUSTOM_BUILTINS = {
    "inf": (math.inf, "from math import inf"),
    "nan": (math.nan, "from math import nan"),
    "NoneType": (type(None), "NoneType = type(None)"),
    "torch": (torch, "import torch"),
    "device": (torch.device, "from torch import device"),
    "fx_pytree": (fx_pytree_helpers, "import minifx.codegen.pytree as fx_pytree"),
    "pytree": (torch.utils._pytree, "import torch.utils._pytree as pytree"),
}

# Values whose repr() is a Python literal that evaluates back to them.
LITERAL_TYPES = (type(None), bool, int, str, bytes, type(...))
TORCH_MODULE = re.compile(r"^torch(\.(?!_dynamo\.|_inductor\.)[^.]+)*$")
DTYPE_ABBREVIATIONS = {
    torch.float64: "f64",
    torch.float32: "f32",
    torch.float16: "f16",
    torch.bfloat16: "bf16",
    torch.int64: "i64",
    torch.int32: "i32",
    torch.int16: "i16",
    torch.int8: "i8",
    torch.uint8: "u8",
    torch.bool: "b8",
    torch.complex64: "c64",
    torch.complex128: "c128",
    # Rarer dtypes, spelled as torch.fx spells them.
    torch.complex32: "c32",
    torch.uint16: "u16",
    torch.uint32: "u32",
    torch.uint64: "u64",
    torch.float8_e5m2: "f8e5m2",
    torch.float8_e4m3fn: "f8e4m3fn",
    torch.float8_e5m2fnuz: "f8e5m2fnuz",
    torch.float8_e4m3fnuz: "f8e4m3fnuz",
    torch.float8_e8m0fnu: "f8e8m0fnu",
    torch.float4_e2m1fn_x2: "f4e2m1fnx2",
    torch.bits1x8: "b1x8",
    torch.bits2x4: "b2x4",
    torch.bits4x2: "b4x2",
    torch.bits8: "b8x1",
    torch.bits16: "b16x1",
}


# The `typing` aliases are the data here (torch.fx writes annotations with them).
TYPING_ORIGINS = {
    list: typing.List,  # noqa: UP006
    dict: typing.Dict,  # noqa: UP006
    set: typing.Set,  # noqa: UP006
    frozenset: typing.FrozenSet,  # noqa: UP006
    tuple: typing.Tuple,  # noqa: UP006
}  # and no `type`: torch.fx writes `typing.Type[int]` as `type[int]`


def is_name(text: Any) -> bool:
    """Whether `text` can be written as a Python name (after a dot, or as a keyword argument).

    Python normalises names (NFKC), so `ﬁ` would be read as `fi`: such a
    name is written as a string instead, which keeps it exact.
    """
    return (
        isinstance(text, str)
        and text.isidentifier()
        and not keyword.iskeyword(text)
        # NFKC leaves ASCII as it is: only other names need the (slower) check.
        and (text.isascii() or unicodedata.normalize("NFKC", text) == text)
    )


def plain(text: Any) -> str:
    """`text` as an exact `str`: a subclass could change how an f-string formats it."""
    return str.__str__(text if isinstance(text, str) else str(text))


# Every recompile asks for the same paths again, and a model's paths share their parents
# (`layer1.0.conv1`, `layer1.0.bn1`, ...): both are cached. `typed`: a str subclass as
# `base` formats its own way, so it never shares an entry with a str.
@functools.lru_cache(maxsize=4096, typed=True)
def attribute_chain(base: str, target: str, getattr_name: str = "getattr") -> str:
    """`self.layer1.conv` for `layer1.conv`; parts that are not names use `getattr`.

    A part such as `0` (a `Sequential` child) or `class` (a keyword) cannot
    follow a dot, so it is written `getattr(self.layers, "0")`.
    """
    parent, dot, last = plain(target).rpartition(".")
    expression = _parent_chain(base, parent, getattr_name) if dot else base
    return _attribute_step(expression, last, getattr_name)


@functools.lru_cache(maxsize=4096, typed=True)
def _parent_chain(base: str, parent: str, getattr_name: str) -> str:
    expression = base
    for part in parent.split("."):
        expression = _attribute_step(expression, part, getattr_name)
    return expression


def _attribute_step(expression: str, part: str, getattr_name: str) -> str:
    """`expression.part`, or `getattr(expression, "part")` where `part` is not a name."""
    if is_name(part):
        return f"{expression}.{part}"
    return f"{getattr_name}({expression}, {string_literal(part)})"


def string_literal(text: str) -> str:
    """A double-quoted literal, as torch.fx writes attribute names; repr() when that is not safe."""
    if text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'
    return repr(text)


def refers_to_builtin(name: str, value: Any) -> bool:
    """True if `name` is a builtin (or a custom builtin) that is `value` itself."""
    if name in CUSTOM_BUILTINS:
        return CUSTOM_BUILTINS[name][0] is value
    return getattr(builtins, name, None) is value


def global_hint(value: Any) -> str:
    """The name a global starts from: `math.sqrt` -> `math_sqrt` (made valid later)."""
    if callable(value):  # functions and classes
        try:
            return qualified_name(value)
        except Exception:  # an odd callable: its name is only a hint
            return type(value).__name__
    if isinstance(value, torch.Tensor):
        return "_tensor_constant"
    return f"_{type(value).__name__}_constant"


def torch_path(value: Any, torch_name: str | None) -> str | None:
    """`torch.nn.functional.relu` for an object torch exports under that path, with
    `torch` spelled `torch_name` (the generated code's name for the module); else None."""
    module = getattr(value, "__module__", None)
    if (
        value is torch.device
        or not isinstance(module, str)
        or not TORCH_MODULE.match(module)
        or torch_name is None
    ):
        return None
    path = qualified_name(value)
    if path.split(".")[0] != "torch" or resolve_torch_path(path) is not value:
        return None
    return torch_name + path[len("torch") :]


def is_attribute_read(node: Node) -> bool:
    """Whether `node` is `getattr(x, "name")`, which the code writes as `x.name`."""
    args = node.args
    return (
        node.target is builtins.getattr
        and len(args) == 2
        and not node.kwargs
        and isinstance(args[1], str)
        and args[1].isidentifier()
    )


def is_number_literal(arg: Any) -> bool:
    return type(arg) in (int, float, complex)


def resolve_torch_path(path: str) -> Any:
    """Follow a dotted path from `torch`; None if any step is missing."""
    value: Any = torch
    for part in path.split(".")[1:]:
        if not is_name(part):
            return None
        value = getattr(value, part, None)
    return value


def shape_annotation(node: Node) -> str | None:
    """`f32[2, 3]` from a tensor (or tensor metadata) in `node.meta`, as print_readable shows:
    a tensor subclass as `Parameter(f32[2])`, a sparse CSR or CSC tensor not at all."""
    meta = node.meta
    value = meta.get("val", meta.get("tensor_meta", meta.get("example_value")))
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype not in DTYPE_ABBREVIATIONS or shape is None:
        return None
    core = f"{DTYPE_ABBREVIATIONS[dtype]}[{', '.join(str(s) for s in shape)}]"
    if not isinstance(value, torch.Tensor):
        return core  # tensor metadata (ShapeProp's)
    if value.layout in (torch.sparse_csr, torch.sparse_csc):
        return None
    is_plain = type(value) is torch.Tensor or isinstance(value, FakeTensor)  # as torch.fx says
    return core if is_plain else f"{type(value).__name__}({core})"


def stack_summary(stack_trace: str | None) -> str | None:
    """`File: model.py:12 in forward, code: return x + 1` from a stack trace's last frame."""
    if not stack_trace:
        return None
    lines = stack_trace.strip().split("\n")
    frame = re.compile(r'^File "(.+)", line (\d+), in (.+)$')
    for index in range(len(lines) - 2, -1, -1):
        match = frame.match(lines[index].strip())
        if match:
            file, line, function = match.groups()
            return f"File: {file}:{line} in {function}, code: {lines[index + 1].strip()}"
    return None


# A parameter in `def forward(...)`: a name, maybe after `*` or `**`.
def parameter_name(node: Node) -> str:
    """The placeholder's parameter name without `*`; it must be a valid parameter (any
    Python identifier, `é` too, as `def` takes it)."""
    target = node.target
    text = plain(target) if isinstance(target, str) else ""
    name = text.lstrip("*")
    if len(text) - len(name) > 2 or not name.isidentifier() or keyword.iskeyword(name):
        # A target that is no str at all is also the AssertionError torch.fx raises.
        raise (ValueError if isinstance(target, str) else MisuseError)(
            f"python_code: placeholder %{node.name} has target {target!r}, which is not a valid "
            "Python parameter name, so it cannot appear in `def forward(...)`. "
            "How to fix: give the placeholder an identifier as its target (optionally "
            "with a leading * or **), for example graph.placeholder('x')."
        )
    return name


class NoReturnValue(ValueError, IndexError):
    """An output node without its argument; also the `IndexError` torch.fx raises."""


class UnknownOpcode(ValueError, NotImplementedError):
    """A node whose opcode is none of the six; also the `NotImplementedError` torch.fx raises."""


def check_node(node: Any) -> None:
    """Refuse, with a clear message, a node whose opcode's line cannot be written. Where
    torch.fx raises for the node too, the error is also of its type (mostly `AssertionError`)."""
    problem, kind, op = None, MisuseError, node.op  # op read once: this runs for every node
    rule = target_problem(op, node.target)  # invariant 1's rule, from stage 2
    if rule == "an opcode":
        problem, kind = f"{op!r} is none of the six opcodes", UnknownOpcode
    elif rule == "a str" and op != "output":  # torch.fx never reads an output's target
        problem = "its target must be a str (a name, an attribute path or a method name)"
    elif op == "call_method" and not node.args:
        problem, kind = "a call_method node needs its receiver as args[0]", NoReceiver
    elif rule == "a callable":
        problem = "its target must be callable"
    elif op == "output" and len(node.args) != 1:
        problem = "an output node has exactly one argument, the returned value"
        kind = ValueError if node.args else NoReturnValue
    if problem:
        raise kind(
            f"python_code: cannot write %{node.name} ({node.op}, target "
            f"{node.target!r}): {problem}. How to fix: correct the node, then run "
            "graph.lint() to check the rest of the graph."
        )


def duplicate_parameter(node: Node, parameter: str, root_module: str) -> ValueError:
    """The error for a placeholder whose parameter name is taken already."""
    return ValueError(
        f"python_code: placeholder %{node.name} has the parameter name "
        f"{parameter!r}, which an earlier placeholder (or {root_module!r}, "
        "the module itself) already has; `def forward` cannot take it twice. "
        "How to fix: give each placeholder its own target."
    )


def foreign_node(node: Node) -> ValueError:
    """The error for an argument that is a node of another graph."""
    return ValueError(
        f"python_code: an argument refers to %{node.name}, which is not a node of this "
        "graph (was it erased, or copied from another graph without node_copy?). "
        "How to fix: run graph.lint() to find the node that uses it, and pass a node "
        "of this graph instead."
    )


def syntax_error_note(error: SyntaxError) -> str:
    """The note added when generated code does not compile: which line, and how to see it."""
    return (
        f"The generated code of this graph does not compile; line {error.lineno} "
        f"is:\n    {(error.text or '').strip()}\nprint the code with "
        "minifx.codegen.python_code(graph).src, and fix the graph's node."
    )
