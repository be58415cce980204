"""`python_code(graph)`: turn a `Graph` into the source of a `forward` method.

Each node becomes one line, named after the node:

    def forward(self, x):
        linear = self.linear(x);  x = None
        relu = torch.relu(linear);  linear = None
        return relu

The text is torch.fx's, byte for byte, for every graph its tracer makes. Two
rules keep the generated code safe and correct whatever the graph holds:

- Every name in the source comes from one `Namespace`: node names become
  variables, and every object the code refers to (a function, a class, a
  constant that has no literal) becomes a *global* with its own name, passed
  to `exec` in a dict. Nothing a node's name or target says is pasted as code:
  a target is looked up and bound, and a path like `torch.relu` is written out
  only after checking that it leads to the very same object.
- A value is set to `None` right after its last use (`x = None`), so that
  memory is freed as early as in eager mode.

What is not this idea lives beside it: `constants.py` writes the constants
that have no plain literal, `annotations.py` the type annotations,
`readable.py` `print_readable`'s comments, and `codegen.py` the `def` line,
the `return` and the other calling-convention hooks.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from typing import Any

import torch

from ..graph.graph import Graph
from ..graph.liveness import last_uses
from ..graph.node import Node, immutable_dict, immutable_list
from ..graph.wrapping import wrap
from ..proxy.names import Namespace
from .annotations import node_annotation, type_annotation
from .codegen import CodeGen, call_hook, codegen_of, mark_keyword_only, transformed_body
from .constants import constant_expression
from .readable import verbose_comment
from .syntax import (
    CUSTOM_BUILTINS,
    INPLACE_OPERATORS,
    LITERAL_TYPES,
    OPERATOR_SYNTAX,
    TORCH_MODULE,
    attribute_chain,
    check_node,
    global_hint,
    is_name,
    parameter_name,
    plain,
    qualified_name,
    refers_to_builtin,
    resolve_torch_path,
)


@dataclass
class PythonCode:
    """The generated source and what it needs to run.

    Attributes:
        src: the source of `def forward(self, ...)`, with `wrap(...)` lines
            before it when the graph calls wrapped functions.
        globals: name -> object, for every global name `src` uses; `exec` the
            source in (a copy of) this dict.
        lineno_map: line of the function, counted from its `def` line (1 is the
            first line after it) -> index of the node that line runs, used to
            say which node an error came from; torch.fx counts the same way.
        prologue_start: the line number of the `def` in `src`.
    """

    src: str
    globals: dict[str, Any]
    lineno_map: dict[int, int] = field(default_factory=dict)
    prologue_start: int = 0


def python_code(graph: Graph, root_module: str = "self", *, verbose: bool = False) -> PythonCode:
    """Generate the Python source of `graph` as a `forward` method.

    `graph.python_code(root_module)` calls this. The graph's `CodeGen` (see
    `graph.set_codegen`) writes the `def` line and the `return`.

    Args:
        graph: the `Graph` to turn into code.
        root_module: the name through which `get_attr` and `call_module`
            targets are reached (`self.layer1.conv`).
        verbose: add comments with each node's stack trace and, where
            `node.meta` holds a tensor (or its metadata), its dtype and shape,
            as `GraphModule.print_readable` shows them.

    Returns:
        The source and its globals.

    Raises:
        ValueError: if a placeholder's target is not a valid parameter name,
            or a node's argument is a node of another graph.
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

        Placeholders' parameter names come first, exactly as written, since
        they are the signature; the names of globals are chosen later and so
        never shadow a local.
        """
        self.names.reserve(self.root_module)
        local: dict[Node, str] = {}
        taken: set[str] = set()
        for node in self.graph.nodes:
            if node.op == "placeholder":
                parameter = parameter_name(node)
                if parameter in taken or (parameter == self.root_module and taken):
                    raise ValueError(
                        f"python_code: placeholder %{node.name} has the parameter name "
                        f"{parameter!r}, which an earlier placeholder (or {self.root_module!r}, "
                        "the module itself) already has; `def forward` cannot take it twice. "
                        "How to fix: give each placeholder its own target."
                    )
                taken.add(parameter)
                self.names.reserve(parameter)
                if node.name == parameter:
                    local[node] = parameter
        for node in self.graph.nodes:
            if node not in local:
                local[node] = self.names.create_name(plain(node.name))
        return local

    def global_name(self, value: Any, hint: str) -> str:
        """The name through which the generated code reaches `value`.

        Objects from torch are written as their path (`torch.relu`) when that
        path really leads to them; everything else is bound as a global.
        """
        if id(value) in self._global_names:
            return self._global_names[id(value)]
        path = self._torch_path(value)
        if path is not None:
            self._global_names[id(value)] = path
            return path
        if refers_to_builtin(hint, value) and hint not in self.names:
            self.names.reserve(hint)
            name = hint
        else:
            name = self.names.create_name(hint)
        self.globals[name] = value
        self._global_names[id(value)] = name
        return name

    # --8<-- [end:names]

    def _torch_path(self, value: Any) -> str | None:
        """`torch.nn.functional.relu` for objects torch exports under that path, else None."""
        module = getattr(value, "__module__", None)
        if (
            value is torch.device
            or not isinstance(module, str)
            or not TORCH_MODULE.match(module)
            or id(torch) not in self._global_names
        ):
            return None
        path = qualified_name(value)
        if path.split(".")[0] != "torch" or resolve_torch_path(path) is not value:
            return None
        return self._global_names[id(torch)] + path[len("torch") :]

    # --8<-- [start:write]
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
        return self._assemble()

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
            if operator_name in INPLACE_OPERATORS:
                statement = INPLACE_OPERATORS[operator_name].format(*map(self._operand, args))
                self.body.append(f"{statement};  {self.local[node]} = {self.expression(args[0])}")
                return
            syntax = OPERATOR_SYNTAX.get(operator_name)
            if syntax and syntax.count("{}") == len(args):
                self._assign(node, syntax.format(*self._operator_operands(operator_name, args)))
                return
        function = self.global_name(target, global_hint(target))
        if (
            target is builtins.getattr
            and len(args) == 2
            and not node.kwargs
            and isinstance(args[1], str)
            and args[1].isidentifier()
        ):
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

    # --8<-- [end:opcodes]

    def _chain(self, base: str, target: str) -> str:
        # Through global_name: `getattr` unless a parameter took that name.
        return attribute_chain(base, target, self.global_name(builtins.getattr, "getattr"))

    def _assign(self, node: Node, expression: str) -> None:
        self.body.append(f"{self.local[node]}{node_annotation(self, node)} = {expression}")

    def _operator_operands(self, operator_name: str, args: tuple) -> list[str]:
        """Operands of an operator; a negative literal before `**` needs brackets."""
        operands = [self.expression(a) for a in args]
        if operator_name == "pow" and operands[0].startswith("-"):
            operands[0] = f"({operands[0]})"
        return operands

    def _operand(self, arg: Any) -> str:
        """An expression that can be followed by `.name` or `[...]`."""
        text = self.expression(arg)
        return f"({text})" if text.startswith("-") or _is_number_literal(arg) else text

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
            return self._node_variable(arg)
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

    def _node_variable(self, node: Node) -> str:
        if node not in self.local:
            raise ValueError(
                f"python_code: an argument refers to %{node.name}, which is not a node of this "
                "graph (was it erased, or copied from another graph without node_copy?). "
                "How to fix: run graph.lint() to find the node that uses it, and pass a node "
                "of this graph instead."
            )
        return self.local[node]

    def _assemble(self) -> PythonCode:
        fn_def = call_hook(
            self.codegen.gen_fn_def,
            mark_keyword_only(self.parameters),
            self.return_annotation,
            root_module=self.root_module,
        )
        wrap_lines = ""
        if self.wrapped:
            wrap_name = self.global_name(wrap, "wrap")
            wrap_lines = "\n".join(f'{wrap_name}("{name}")' for name in self.wrapped)
        head = f"\n{wrap_lines}\n\n{fn_def}\n"
        # The CodeGen's body transformer (graph.on_generate_code), if it has one.
        lines, nodes = transformed_body(
            self.codegen, self.body or ["pass"], self.line_nodes or [None]
        )
        # As torch.fx counts: from the `def` line (1 is the line after it), the line
        # after the body included.
        first = fn_def.count("\n") + 1
        lineno_map = dict(enumerate([*nodes, nodes[-1]], start=first))
        body = "".join(f"    {line}\n" for line in lines)
        return PythonCode(
            head + body + "    ",
            self.globals,
            lineno_map,
            prologue_start=wrap_lines.count("\n") + 4,
        )


def _is_number_literal(arg: Any) -> bool:
    return type(arg) in (int, float, complex)
