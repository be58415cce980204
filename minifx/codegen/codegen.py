"""`CodeGen`: how a graph's generated function begins and ends.

`python_code` writes one line per node; the `CodeGen` of the graph
(`graph.set_codegen(...)`) writes what surrounds them and says how callers
talk to the result, through torch.fx's hooks:

- `gen_fn_def(free_vars, maybe_return_annotation)`: the `def` line, and any
  lines that bind the placeholders (`free_vars`) from other parameters;
- `generate_output(output_args)`: the `return` statement;
- `additional_globals()`: extra names those lines use;
- `process_inputs(*args)` and `process_outputs(out)`: turn what a caller
  passes into the graph's inputs, and the graph's output into what the caller
  gets, so that `graph.process_outputs(run(*graph.process_inputs(*args)))`
  equals the generated function's result (`Interpreter.run` does this).

The default writes `def forward(self, x, y):` and `return value`. A graph
traced with structured `concrete_args` gets `_PyTreeCodeGen`, whose function
takes the structures and flattens them, and returns the structured output.
"""

from __future__ import annotations

import functools
import inspect
import re
from dataclasses import dataclass, field
from types import FunctionType
from typing import TYPE_CHECKING, Any, Callable

from torch.utils import _pytree as pytree

from ..graph.wrapping import wrap
from . import pytree as fx_pytree_helpers
from .syntax import is_name, plain

if TYPE_CHECKING:
    from ..graph.graph import Graph
    from ..graph.tracer import PytreeInfo
    from .python_code import _SourceWriter


@dataclass
class PythonCode:
    """The generated source and what it needs to run.

    Attributes:
        src: the source of `def forward(self, ...)`, with `wrap(...)` lines
            before it when the graph calls wrapped functions.
        globals: name -> object, for every global name `src` uses; `exec` the
            source in (a copy of) this dict.
        _lineno_map: line of the function, counted from its `def` line (1 is the
            first line after it) -> index of the node that line runs, used to
            say which node an error came from; torch.fx counts the same way.
        _prologue_start: the line number of the `def` in `src`.

    The last two names start with `_` as torch.fx's do (`gm._lineno_map` keeps a
    copy).
    """

    src: str
    globals: dict[str, Any]
    _lineno_map: dict[int, int] = field(default_factory=dict)
    _prologue_start: int = 0


class CodeGen:
    """The default calling convention: one parameter per placeholder, one return value.

    Subclass it and override any hook to generate another convention; for
    example, a `forward(self, args_list)` that unpacks a list:

        class ListCodeGen(CodeGen):
            def gen_fn_def(self, free_vars, maybe_return_annotation):
                return (f"def forward(self, args_list){maybe_return_annotation}:\\n"
                        f"    {', '.join(free_vars)} = args_list")

            def process_inputs(self, *inputs):
                return inputs[0]

        gm.graph.set_codegen(ListCodeGen())
        gm.recompile()   # now gm([a, b]) runs what gm(a, b) ran
    """

    # Set by `graph.on_generate_code`: a function from the body's lines to new lines.
    _body_transformer: Callable[[list[str]], list[str]] | None = None
    # The generated function's name, as in torch.fx; a GraphModule runs only `forward`.
    _func_name: str = "forward"

    def gen_fn_def(
        self, free_vars: list[str], maybe_return_annotation: str, *, root_module: str = "self"
    ) -> str:
        """The function's first line: `def forward(self, x, y) -> T:`.

        Args:
            free_vars: the placeholders as parameters (`x`, `y: int = 2`).
            maybe_return_annotation: `" -> T"`, or `""`.
            root_module: the name of the first parameter, the module whose
                attributes `get_attr` and `call_module` read (minifx only:
                torch.fx always writes `self`).

        Returns:
            Source text; lines after the first are indented by four spaces.
        """
        if not free_vars or free_vars[0] != root_module:
            free_vars.insert(0, root_module)
        return f"def {self._func_name}({', '.join(free_vars)}){maybe_return_annotation}:"

    def generate_output(
        self, output_args: Any, *, repr_fn: Callable[[Any], str] | None = None
    ) -> str:
        """The `return` statement (not indented) for the output value `output_args`.

        Args:
            output_args: the output node's argument: nodes, in any structure.
            repr_fn: turns a value into source (`python_code` passes its own,
                which writes each node as its variable); `repr` by default,
                which writes a node as its name.
        """
        return f"return {(repr_fn or repr)(output_args)}"

    def process_inputs(self, *args: Any) -> Any:
        """The graph's inputs (one per placeholder) for a caller's `args`; here, `args`."""
        return args

    def process_outputs(self, outputs: Any) -> Any:
        """What the generated function returns for the graph's output value; here, that value."""
        return outputs

    def additional_globals(self) -> list[tuple[str, Any]]:
        """`(name, object)` for each global the generated lines use (`[("List", list)]`)."""
        return []


class _PyTreeCodeGen(CodeGen):
    """For structured `concrete_args`: the function takes the structures, as the
    traced function did, flattens them into the placeholders, and returns the
    structured output (chapter 3, "Structured inputs and outputs").

    Args:
        pytree_info: the graph's `pytree_info`, which the Tracer recorded.
    """

    def __init__(self, pytree_info: PytreeInfo) -> None:
        super().__init__()
        self.pytree_info = pytree_info

    def gen_fn_def(
        self, free_vars: list[str], maybe_return_annotation: str, *, root_module: str = "self"
    ) -> str:
        """`def forward(self, x, pair):`, then `x, pair_1, = fx_pytree.tree_flatten_spec(...)`."""
        arg_names = self._checked_arg_names()
        definition = super().gen_fn_def(
            [plain(name) for name in arg_names], maybe_return_annotation, root_module=root_module
        )
        free_vars = [p for p in free_vars if p != "*"]  # the structures take the keywords
        # A module's `self` is flattened too, as torch.fx does, even with no leaves to take.
        placeholders = ["self", *free_vars] if arg_names[:1] == ["self"] else free_vars
        if not placeholders:
            return definition
        annotated = [p for p in placeholders if ":" in p]
        lines = ["".join(p + "; " for p in annotated), ""] if annotated else []
        names = ", ".join(p.split(":")[0] for p in placeholders)
        lines.append(
            f"{names}, = fx_pytree.tree_flatten_spec([{', '.join(arg_names)}], self._in_spec)"
        )
        return definition + "".join(f"\n    {line}" if line else "\n" for line in lines)

    def generate_output(
        self, output_args: Any, *, repr_fn: Callable[[Any], str] | None = None
    ) -> str:
        """`return pytree.tree_unflatten([...], self._out_spec)`."""
        if self.pytree_info.out_spec is None:
            return super().generate_output(output_args, repr_fn=repr_fn)
        return f"return pytree.tree_unflatten({(repr_fn or repr)(output_args)}, self._out_spec)"

    def process_inputs(self, *inputs: Any) -> list:
        """The leaves of the structured inputs, checked against the traced structure,
        in a list (as torch.fx's; the plain CodeGen returns its arguments' tuple)."""
        info = self.pytree_info
        takes_self = info.arg_names[:1] == ["self"]
        # The spec starts with the module for a traced module; any leaf stands for it.
        leaves = fx_pytree_helpers.tree_flatten_spec(
            [None, *inputs] if takes_self else list(inputs), info.in_spec
        )
        return leaves[1:] if takes_self else leaves

    def process_outputs(self, out: Any) -> Any:
        """The graph's flat output, put back into the traced function's output structure."""
        if self.pytree_info.out_spec is None:
            return out
        return pytree.tree_unflatten(
            list(out) if isinstance(out, (list, tuple)) else [out], self.pytree_info.out_spec
        )

    def additional_globals(self) -> list[tuple[str, Any]]:
        """`fx_pytree` (minifx's checked flattening) and `pytree` (torch's)."""
        return [("fx_pytree", fx_pytree_helpers), ("pytree", pytree)]

    def _checked_arg_names(self) -> list[str]:
        for name in self.pytree_info.arg_names:
            if not is_name(name):
                raise ValueError(
                    f"python_code: graph.pytree_info.arg_names has {name!r}, which is not a "
                    "parameter name, so it cannot appear in `def forward(...)`. How to fix: "
                    "keep the names the Tracer recorded (the traced function's parameters)."
                )
        return list(self.pytree_info.arg_names)


def codegen_of(graph: Graph) -> CodeGen:
    """The `CodeGen` that writes `graph`'s code: the one set with `graph.set_codegen`,
    else `_PyTreeCodeGen` for a graph traced with structured inputs, else `CodeGen()`."""
    if graph._codegen is not None:
        return graph._codegen
    if graph.pytree_info is not None:
        return _PyTreeCodeGen(graph.pytree_info)
    return CodeGen()


# --- how python_code calls the hooks ------------------------------------------------


def call_hook(method: Callable[..., Any], *args: Any, **optional: Any) -> Any:
    """Call a CodeGen hook with the optional keywords it accepts, as torch.fx does:
    a subclass may leave out `repr_fn` or minifx's `root_module`."""
    function = getattr(method, "__func__", method)  # a method's function: the same each time
    if isinstance(function, FunctionType):
        accepted = _parameter_names(function)
    else:  # another callable, maybe unhashable: asked each time
        accepted = frozenset(inspect.signature(method).parameters)
    return method(*args, **{key: value for key, value in optional.items() if key in accepted})


@functools.lru_cache(maxsize=256)  # the same few hooks come back on every recompile
def _parameter_names(function: FunctionType) -> frozenset[str]:
    return frozenset(inspect.signature(function).parameters)


def mark_keyword_only(parameters: list[tuple[str, bool]]) -> list[str]:
    """The parameters' texts, given `(text, has a default)` for each, with a `*` before
    one that has no default but follows one that has: it was keyword-only
    (`def f(x, *, a=1, b)`), and without the `*` Python would refuse the signature
    (torch.fx writes it without)."""
    texts, keyword_only, after_default = [], False, False
    for text, has_default in parameters:
        keyword_only = keyword_only or text.startswith("*")
        if after_default and not has_default and not keyword_only:
            texts.append("*")
            keyword_only = True
        after_default = after_default or has_default
        texts.append(text)
    return texts


def assemble(writer: _SourceWriter) -> PythonCode:
    """The whole source: `wrap(...)` lines, the CodeGen's `def` line, then the body."""
    fn_def = call_hook(
        writer.codegen.gen_fn_def,
        mark_keyword_only(writer.parameters),
        writer.return_annotation,
        root_module=writer.root_module,
    )
    wrap_lines = ""
    if writer.wrapped:
        wrap_name = writer.global_name(wrap, "wrap")
        wrap_lines = "\n".join(f'{wrap_name}("{name}")' for name in writer.wrapped)
    head = f"\n{wrap_lines}\n\n{fn_def}\n"
    # The CodeGen's body transformer (graph.on_generate_code), if it has one.
    lines, nodes = transformed_body(
        writer.codegen, writer.body or ["pass"], writer.line_nodes or [None]
    )
    lines, nodes = without_leading_blank_lines(lines, nodes)
    # As torch.fx counts: from the `def` line (1 is the line after it), the line
    # after the body included.
    first = fn_def.count("\n") + 1
    lineno_map = dict(enumerate([*nodes, nodes[-1]], start=first))
    body = "    " + "\n    ".join(lines) + "\n" if lines else ""  # each line indented, ended
    return PythonCode(
        head + body + "    ",
        writer.globals,
        lineno_map,
        _prologue_start=wrap_lines.count("\n") + 4,
    )


def without_leading_blank_lines(
    lines: list[str], nodes: list[int | None]
) -> tuple[list[str], list[int | None]]:
    """The body without the blank lines it starts with (a verbose comment's, when it comes
    first), as torch.fx strips them after the body transformer; the last line stays."""
    blank = 0
    while blank < len(lines) - 1 and not lines[blank]:
        blank += 1
    return lines[blank:], nodes[blank:]


# The marker before a node's lines while a body transformer works on them.
_COUNTER = re.compile(r"# COUNTER: (\d+)")


def transformed_body(
    codegen: CodeGen, lines: list[str], nodes: list[int | None]
) -> tuple[list[str], list[int | None]]:
    """The body's lines and the index of the node each line runs, after the
    CodeGen's body transformer (`graph.on_generate_code`), if it has one.

    As torch.fx does, the transformer gets the lines with a `# COUNTER: i`
    marker before the lines of node i, so that the lines it adds or moves
    still map to their nodes; the markers are taken out after.
    """
    # getattr: a CodeGen-like object need not have the attribute until a transformer is set.
    transform = getattr(codegen, "_body_transformer", None)
    if transform is None:
        return lines, nodes
    marked, previous = [], None
    for line, node in zip(lines, nodes):
        if node is not None and node != previous:
            marked.append(f"# COUNTER: {node}\n")
            previous = node
        marked.append(f"{line}\n")
    lines, nodes, current = [], [], None
    for line in "".join(transform(marked)).split("\n")[:-1]:
        counter = _COUNTER.fullmatch(line)
        if counter:
            current = int(counter.group(1))
        else:
            lines.append(line)
            nodes.append(current)
    return lines, nodes
