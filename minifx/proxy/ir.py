# --8<-- [start:grammar]
"""The IR's vocabulary: its six opcodes and the one printer of its lines.

Chapter 1's tape and chapter 2's graph hold the same kind of line,
`name = op[target](*args, **kwargs)`, and print it the same way, with this
module. `str(graph)` prints exactly what torch.fx prints:

    graph():
        %x : [num_users=1] = placeholder[target=x]
        %w : [num_users=1] = get_attr[target=linear.weight]
        %add : [num_users=1] = call_function[target=operator.add](args = (%x, %w), kwargs = {})
        return add

The printed form's grammar (`"..."` is literal text, `[...]` optional,
`(...)*` repeated, `str(v)` is Python's `str` of a value):

    printout  = "graph():" ("\n    " line)*         the tape's header is "tape():"
    line      = "return " str(args[0])               the output node
              | "%" name " : " [type " "] "[num_users=" count "]"
                " = " opcode "[target=" target "]" tail
    opcode    = "placeholder" | "get_attr" | "call_function" | "call_method" | "call_module"
    tail      = ""                                   get_attr; a placeholder without default
              | "(default=" str(args[0]) ")"        a placeholder with a default
              | "(args = " tuple ", kwargs = " dict ")"    the three call_* opcodes
    arg       = "%" name | tuple | list | dict | str(value)
    tuple     = "()" | "(" arg ",)" | "(" arg (", " arg)+ ")"
    list      = "[" [arg (", " arg)*] "]"
    dict      = "{" [str(key) ": " arg (", " str(key) ": " arg)*] "}"
    target    = the string itself                     placeholder, get_attr, call_method, call_module
              | module "." name                       call_function: operator.add, torch.relu,
                                                      builtins.getattr, torch.Tensor.add
    type      = int | torch.Tensor | typing.List[int] | ...   (`type_repr` of the annotation)

A tape line is the same less `[num_users=N]`: `%x = placeholder[target=x]`,
and `%x : int = placeholder[target=x]` when the parameter is annotated.
`NODE_LINE` is the grammar of a node's line as a regular expression.
"""
# --8<-- [end:grammar]

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Callable

from .qualnames import qualified_name, type_repr

if TYPE_CHECKING:
    from .interfaces import IRNode

OPCODES = ("placeholder", "get_attr", "call_function", "call_method", "call_module", "output")

# A node's line (not `return ...`), for `fullmatch`; `[num_users=N]` is optional for the tape.
NODE_LINE = re.compile(
    r"%(?P<name>[A-Za-z_]\w*)"
    r"(?: : (?:(?P<type>[^\[].*?) ?)?(?:\[num_users=(?P<num_users>\d+)\])?)?"
    r" = (?P<op>placeholder|get_attr|call_function|call_method|call_module)"
    r"\[target=(?P<target>[^\]]*)\]"
    r"(?P<tail>\(default=.*\)|\(args = \(.*\), kwargs = \{.*\}\))?"
)


# --8<-- [start:format_line]
def format_line(node: IRNode, leaf: Callable[[Any], str], num_users: int | None = None) -> str:
    """`node` (a `Record` or a `Node`) as a line of the printout, in torch.fx's format.

    Args:
        node: the line's record or node.
        leaf: prints an argument that is no list, tuple or dict (a record as `%name`).
        num_users: printed as `[num_users=N]` when given (the tape does not count users).
    """
    if node.op == "output":
        return f"return {node.args[0]}"  # Python's str; a node's repr is its name
    # torch.fx tests a placeholder's type for truth and the others' for None.
    typed = node.type if node.op == "placeholder" else node.type is not None
    notes = []
    if typed:
        notes.append(type_repr(node.type))
    if num_users is not None:
        notes.append(f"[num_users={num_users}]")
    annotation = f" : {' '.join(notes)}" if notes else ""
    head = f"%{node.name}{annotation} = {node.op}[target={format_target(node.target)}]"
    if node.op == "placeholder":
        return head + (f"(default={node.args[0]})" if node.args else "")
    if node.op == "get_attr":
        return head
    return f"{head}(args = {format_arg(node.args, leaf)}, kwargs = {format_arg(node.kwargs, leaf)})"


# --8<-- [end:format_line]


def format_arg(arg: Any, leaf: Callable[[Any], str]) -> str:
    """Print an argument as torch.fx does: containers item by item, the rest with `leaf`."""
    if hasattr(arg, "_custom_fx_repr_fn"):  # torch.fx's hook: a value that prints itself
        return arg._custom_fx_repr_fn()
    if isinstance(arg, list):
        return "[" + ", ".join(format_arg(a, leaf) for a in arg) + "]"
    if isinstance(arg, tuple):
        items = ", ".join(format_arg(a, leaf) for a in arg)
        return f"({items},)" if len(arg) == 1 else f"({items})"
    if isinstance(arg, dict):
        return "{" + ", ".join(f"{k}: {format_arg(v, leaf)}" for k, v in arg.items()) + "}"
    return leaf(arg)


def format_target(target: Any) -> str:
    """Print a target as torch.fx does: a string as it is, a function by its qualified
    name, but `builtins.getattr` and `operator.add` (code calls them `getattr`, `_operator.add`)."""
    if isinstance(target, str):
        return target
    module, name = getattr(target, "__module__", None), getattr(target, "__name__", None)
    if name is not None and module == "builtins":
        return f"builtins.{name}"
    if name is not None and module == "_operator":
        return f"operator.{name}"
    return qualified_name(target)
