"""`python_code(graph)`: a `Graph` as the source of a `forward` method, torch.fx's text.

One line per node, named after it; operators as Python syntax; every name from one
`Namespace`, objects bound as globals, never pasted as text; `x = None` after a value's
last use. Chapter 3 says what the modules beside this one hold.
"""

from __future__ import annotations

import builtins
from typing import Any

import torch

from ..graph.graph import Graph
from ..graph.liveness import last_uses
from ..graph.node import Node, immutable_dict, immutable_list
from ..proxy.names import Namespace
from . import syntax
from .annotations import node_annotation, type_annotation
from .codegen import CodeGen, PythonCode, assemble, call_hook, codegen_of
from .constants import constant_expression
from .readable import verbose_comment
from .syntax import (
    CUSTOM_BUILTINS,
    INPLACE_OPERATORS,
    LITERAL_TYPES,
    OPERATOR_SYNTAX,
    attribute_chain,
    check_node,
    global_hint,
    is_name,
    is_number_literal,
    parameter_name,
    plain,
)


def python_code(graph: Graph, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
    """Generate the Python source of `graph` as a `forward` method.

    Args:
        graph: the `Graph`; its `CodeGen` writes the `def` line and the `return`.
        root_module: the name `get_attr` and `call_module` targets start from (`self`).
        verbose: add `print_readable`'s comments (stack traces, dtypes and shapes).

    Raises:
        ValueError: for a placeholder target that is no parameter name, or a foreign node.
    """
    return _SourceWriter(graph, root_module, verbose, codegen_of(graph)).write()


class _SourceWriter:
    """Writes one graph's source; one method per opcode emits that opcode's line."""

    def __init__(self, graph: Graph, root_module: str, verbose: bool, codegen: CodeGen) -> None:
        self.graph, self.root_module, self.verbose = graph, root_module, verbose
        self.codegen = codegen
        self.names = Namespace()
        self.globals: dict[str, Any] = {}
        self._global_names: dict[int, str] = {}
        for name, value in codegen.additional_globals():  # used as written: reserved first
            self.names.reserve(name)
            self.globals[name] = value
            self._global_names.setdefault(id(value), name)
        self.parameters: list[tuple[str, bool]] = []  # (text in the signature, has a default)
        self.body: list[str] = []
        self.line_nodes: list[int | None] = []  # for each body line, its node's index
        self.return_annotation = ""
        self.wrapped: dict[str, None] = {}
        self.last_comment: str | None = None
        self.local = self._name_locals()
        for name, (value, _) in CUSTOM_BUILTINS.items():
            self.global_name(value, name)

    # --8<-- [start:names]
    def _name_locals(self) -> dict[Node, str]:
        """Give every node its variable name: its own name, made valid and unique.
        Parameter names come first, as written; globals are named later."""
        self.names.reserve(self.root_module)
        local: dict[Node, str] = {}
        taken: set[str] = set()
        for node in self.graph.nodes:
            if node.op == "placeholder":
                parameter = parameter_name(node)
                if parameter in taken or (parameter == self.root_module and taken):
                    raise syntax.duplicate_parameter(node, parameter, self.root_module)
                taken.add(parameter)
                self.names.reserve(parameter)
                if node.name == parameter:
                    local[node] = parameter
        for node in self.graph.nodes:
            if node not in local:
                local[node] = self.names.create_name(plain(node.name))
        return local

    def global_name(self, value: Any, hint: str | None = None) -> str:
        """The name through which the generated code reaches `value`: its path if it is
        torch's (`torch.relu`), else a global named after `hint` (or `global_hint(value)`)."""
        if id(value) in self._global_names:
            return self._global_names[id(value)]
        path = syntax.torch_path(value, self._global_names.get(id(torch)))
        if path is not None:
            self._global_names[id(value)] = path
            return path
        hint = global_hint(value) if hint is None else hint  # only for a value seen first
        if syntax.refers_to_builtin(hint, value) and hint not in self.names:
            name = hint  # a builtin (`getattr`): written as it is, and kept from locals
            self.names.reserve(name)
        else:
            name = self.names.create_name(hint)  # reserves the name it returns
        self.globals[name] = value
        self._global_names[id(value)] = name
        return name

    # --8<-- [end:names]
    # --8<-- [start:write]
    # --8<-- [task:3.2] "One line per node" points=5 section=03-codegen.md#one-line-per-node
    def write(self) -> PythonCode:
        freed_at = last_uses(self.graph)
        for index, node in enumerate(self.graph.nodes):
            start = len(self.body)
            if self.verbose:  # print_readable: where the nodes came from
                verbose_comment(self, node)
            check_node(node)
            getattr(self, node.op)(node)
            if node.op not in ("placeholder", "output"):
                freed = freed_at.get(node, []) + ([node] if not node.users else [])
                if freed:
                    self.body[-1] += ";  " + " = ".join([self.local[n] for n in freed] + ["None"])
            self.line_nodes.extend([index] * (len(self.body) - start))
        return assemble(self)

    # --8<-- [end:write]
    # --8<-- [start:opcodes]
    def placeholder(self, node: Node) -> None:
        parameter = parameter_name(node)
        default = f" = {self.expression(node.args[0])}" if node.args else ""
        self.parameters.append(
            (f"{plain(node.target)}{node_annotation(self, node)}{default}", bool(node.args))
        )
        if self.local[node] != parameter:
            self.body.append(f"{self.local[node]} = {parameter}")

    def get_attr(self, node: Node) -> None:
        self._assign(node, self._chain(self.root_module, node.target))

    def call_module(self, node: Node) -> None:
        module = self._chain(self.root_module, node.target)
        self._assign(node, f"{module}({self.arguments(node.args, node.kwargs)})")

    def call_method(self, node: Node) -> None:
        receiver, *args = node.args
        method = self._chain(self._operand(receiver), node.target)
        self._assign(node, f"{method}({self.arguments(args, node.kwargs)})")

    def call_function(self, node: Node) -> None:
        target, args = node.target, node.args
        operator_name = getattr(target, "__name__", None)
        if getattr(target, "__module__", None) == "_operator" and not node.kwargs:
            if operator_name in INPLACE_OPERATORS:  # `a += b;  iadd = a`, on one line
                operands = [self._operand(args[0]), *map(self.expression, args[1:])]
                statement = INPLACE_OPERATORS[operator_name].format(*operands)
                self._assign(node, self.expression(args[0]), before=f"{statement};  ")
                return
            spelling = OPERATOR_SYNTAX.get(operator_name)
            if spelling and spelling.count("{}") == len(args):
                self._assign(node, spelling.format(*self._operator_operands(operator_name, args)))
                return
        function = self.global_name(target)
        if target is builtins.getattr and syntax.is_attribute_read(node):  # written x.name
            self._assign(node, self._chain(self._operand(args[0]), args[1]))
            return
        self._assign(node, f"{function}({self.arguments(args, node.kwargs)})")
        if node.meta.get("is_wrapped", False):
            self.wrapped.setdefault(function)

    def output(self, node: Node) -> None:
        if node.type is not None:
            self.return_annotation = f" -> {type_annotation(self, node.type)}"
        # The graph's CodeGen writes the return (by default `return <value>`).
        generate_output = self.codegen.generate_output
        self.body.append(call_hook(generate_output, node.args[0], repr_fn=self.expression))

    # --8<-- [end-task:3.2]
    # --8<-- [end:opcodes]
    def _chain(self, base: str, target: str) -> str:
        # Through global_name: `getattr` unless a parameter took that name.
        return attribute_chain(base, target, self.global_name(builtins.getattr, "getattr"))

    def _assign(self, node: Node, expression: str, before: str = "") -> None:
        self.body.append(f"{before}{self.local[node]}{node_annotation(self, node)} = {expression}")

    def _operator_operands(self, operator_name: str, args: tuple) -> list[str]:
        # A negative literal before `**` needs brackets: -2 ** x is -(2 ** x).
        operands = [self.expression(a) for a in args]
        if operator_name == "pow" and operands[0].startswith("-"):
            operands[0] = f"({operands[0]})"
        return operands

    def _operand(self, arg: Any) -> str:
        """An expression that can be followed by `.name` or `[...]`."""
        text = self.expression(arg)
        return f"({text})" if text.startswith("-") or is_number_literal(arg) else text

    def arguments(self, args: tuple | list, kwargs: dict) -> str:
        """`a, b, key = value`: the call's arguments, as torch.fx spaces them."""
        parts = [self.expression(a) for a in args]
        for key, value in kwargs.items():
            if not isinstance(key, str):
                raise ValueError(f"python_code: keyword argument names must be str, not {key!r}.")
            if is_name(key):
                parts.append(f"{plain(key)} = {self.expression(value)}")
            else:  # `a-b`, `class`: passed through a dict, as Python allows
                parts.append(f"**{{{plain(key)!r}: {self.expression(value)}}}")
        return ", ".join(parts)

    # --8<-- [start:expression]
    def expression(self, arg: Any) -> str:
        """Python source that evaluates to `arg` (a node, a constant or a container)."""
        if isinstance(arg, Node):
            if arg not in self.local:
                raise syntax.foreign_node(arg)
            return self.local[arg]
        if type(arg) in LITERAL_TYPES:
            return repr(arg)
        if isinstance(arg, tuple) and not hasattr(type(arg), "_fields"):
            items = ", ".join(self.expression(a) for a in arg)
            return f"({items},)" if len(arg) == 1 else f"({items})"
        if type(arg) in (list, immutable_list):
            return "[" + ", ".join(self.expression(a) for a in arg) + "]"
        if type(arg) in (dict, immutable_dict):
            items = ", ".join(f"{self.expression(k)}: {self.expression(v)}" for k, v in arg.items())
            return "{" + items + "}"
        # Floats, slices, dtypes, named tuples, ...: see constants.py.
        return constant_expression(self, arg)

    # --8<-- [end:expression]
