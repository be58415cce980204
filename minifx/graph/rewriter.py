"""`RewritingTracer`: a Tracer that first makes `assert` statements traceable.

`assert x.dim() == 2` asks a Proxy for a Python `bool`, which stops a trace
(chapter 1). torch.fx's `torch.fx.experimental.rewriter.RewritingTracer`
rewrites the source of the traced code before running it, and so does this
one:

- `assert test, msg` becomes `torch._assert(test, msg)`, which a Proxy
  records as a `call_function` node (`msg` is `""` when absent);
- an annotated assignment `y: T = value` becomes `y = annotate(value, T)`,
  which sets the type of the value's node (`minifx/graph/annotation.py`).

Rewriting a function takes three steps (`rewrite`): parse its source into
an AST, transform the AST (`AssertsAndAnnotations`), and run the rewritten
`def` statement in the function's own globals and closure, so that the new
function sees what the old one saw: `wrap`ped functions (which the tracer
patches in those globals), closure variables and `super()`. A function with
nothing to rewrite is traced as it is. A root module with something to
rewrite is traced as a copy whose class has the rewritten `forward`; a
submodule the tracer traces through runs its rewritten `forward`
(`call_module`).

This module is not on chapter 2's teaching path; the chapter points to it.
"""

from __future__ import annotations
import __future__

import ast
import contextlib
import inspect
from types import CellType, CodeType, FunctionType
from typing import Any, Callable, Iterator

import torch

from .annotation import annotate
from .graph import Graph
from .tracer import Tracer

# The names the rewritten code calls. The rebuilt function's closure binds them to
# `torch._assert` and `annotate`, so the user's module need not import either.
_ASSERT = "_minifx_assert"
_ANNOTATE = "_minifx_annotate"


class RewritingTracer(Tracer):
    """A `Tracer` that rewrites `assert` statements and annotated assignments before
    tracing, as torch.fx's `torch.fx.experimental.rewriter.RewritingTracer` does.

        class M(nn.Module):
            def forward(self, x, y):
                assert x.dim() == y.dim(), "rank mismatch"   # recorded, not run
                return x + y

        graph = RewritingTracer().trace(M())   # ... %_assert = torch._assert(%eq, ...)

    `tracer.root` is then a copy of the module (sharing its parameters and
    submodules) whose class has the rewritten `forward`, or the module itself
    if there was nothing to rewrite; build the GraphModule from it:
    `GraphModule(tracer.root, graph)`.
    """

    def trace(
        self, root: torch.nn.Module | Callable, concrete_args: dict | tuple | None = None
    ) -> Graph:
        """Rewrite `root`'s traced function (see `rewrite`), then trace as `Tracer.trace`."""
        if isinstance(root, torch.nn.Module):
            root = _copy_with_rewritten_method(root, self.traced_func_name)
        else:
            root = rewrite(root)
        return super().trace(root, concrete_args)

    def call_module(self, m: torch.nn.Module, forward: Callable, args: tuple, kwargs: dict) -> Any:
        """Like `Tracer.call_module`; a submodule traced through runs its rewritten `forward`."""

        def rewritten_forward(*args: Any, **kwargs: Any) -> Any:
            with _rewritten_forward(m):
                return forward(*args, **kwargs)

        return super().call_module(m, rewritten_forward, args, kwargs)


class AssertsAndAnnotations(ast.NodeTransformer):
    """Turns `assert`s and annotated assignments into calls a Proxy can record.

    Attributes:
        rewritten: how many statements it rewrote.
    """

    def __init__(self) -> None:
        self.rewritten = 0

    def visit_Assert(self, node: ast.Assert) -> ast.Expr:
        """`assert test, msg` -> `torch._assert(test, msg)`."""
        self.rewritten += 1
        call = _call(_ASSERT, node.test, node.msg or ast.Constant(""))
        return ast.copy_location(ast.Expr(value=call), node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.stmt:
        """`target: T = value` -> `target = annotate(value, T)`; `target: T` alone stays."""
        if node.value is None:
            return node  # a declaration: there is no value to annotate
        self.rewritten += 1
        call = _call(_ANNOTATE, node.value, node.annotation)
        return ast.copy_location(ast.Assign(targets=[node.target], value=call), node)


def _call(name: str, *args: ast.expr) -> ast.Call:
    return ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=list(args), keywords=[])


# --- rewriting one function ------------------------------------------------------------


def rewrite(fn: Any) -> Any:
    """`fn` with its `assert`s and annotated assignments rewritten.

    `fn` itself comes back when there is nothing to rewrite: no such statement,
    a lambda, or no function at all (the Tracer then reports what is wrong).

    Raises:
        OSError: if the source of `fn` cannot be found.
    """
    if not isinstance(fn, FunctionType) or fn.__name__ == "<lambda>":
        return fn
    definition = _parse_definition(fn)
    transformer = AssertsAndAnnotations()
    transformer.visit(definition)
    if not transformer.rewritten:
        return fn
    return _run_definition(definition, inspect.unwrap(fn))


def _parse_definition(fn: FunctionType) -> ast.FunctionDef:
    """The `def` statement of `fn` (decorators included), with the line numbers of its file."""
    try:
        lines, first_line = inspect.getsourcelines(fn)
    except OSError as error:
        raise OSError(
            f"RewritingTracer cannot rewrite {fn.__qualname__}: its source code is not "
            f"available ({error}). It rewrites the asserts in the source, so define the "
            "function in a file, or trace it with Tracer if it has no assert."
        ) from error
    source = "".join(lines)
    indented = source[0].isspace()
    if indented:
        # A method's source is indented. It parses as the body of an `if`, which keeps
        # every line as it is (dedenting would change multi-line strings and columns).
        source = "if True:\n" + source
    tree = ast.parse(source)
    definition = tree.body[0].body[0] if indented else tree.body[0]
    ast.increment_lineno(definition, first_line - 1 - indented)
    return definition


def _run_definition(definition: ast.FunctionDef, original: FunctionType) -> FunctionType:
    """Run the rewritten `def` statement in `original`'s globals and closure; return its function.

    The statement is compiled inside two functions:

        def _outer():
            k = _minifx_assert = _minifx_annotate = None   # original's closure variables
            def _define():
                <the rewritten def forward(...)>
                return forward

    so the names `original` reads from its closure are free variables of
    `_define`. `_define` is then made a function whose closure cells are
    `original`'s own, and called: its `def` (with any decorators) builds the
    new function in the right environment.
    """
    names = [*original.__code__.co_freevars, _ASSERT, _ANNOTATE]
    module = ast.parse(
        f"def _outer():\n    {' = '.join(names)} = None\n"
        f"    def _define():\n        return {definition.name}\n"
    )
    define = module.body[0].body[1]
    define.body.insert(0, definition)
    # The user's file name and line numbers: tracebacks and stack traces show their lines.
    # The module's `from __future__ import annotations`, if any, still applies.
    code = compile(
        ast.fix_missing_locations(module),
        original.__code__.co_filename,
        "exec",
        flags=original.__code__.co_flags & __future__.annotations.compiler_flag,
        dont_inherit=True,
    )
    define_code = _code_named(_code_named(code, "_outer"), "_define")
    cells = {
        **dict(zip(original.__code__.co_freevars, original.__closure__ or ())),
        _ASSERT: CellType(torch._assert),
        _ANNOTATE: CellType(annotate),
    }
    closure = tuple(cells[name] for name in define_code.co_freevars)
    rewritten = FunctionType(define_code, original.__globals__, "_define", None, closure)()
    inspect.unwrap(rewritten).__qualname__ = original.__qualname__
    return rewritten


def _code_named(code: CodeType, name: str) -> CodeType:
    """The code object of the function `name` defined directly in `code`."""
    return next(
        const for const in code.co_consts if isinstance(const, CodeType) and const.co_name == name
    )


# --- modules ---------------------------------------------------------------------------


def _copy_with_rewritten_method(module: torch.nn.Module, name: str) -> torch.nn.Module:
    """A copy of `module` whose class is a subclass with the method `name` rewritten.

    `module` itself comes back if there is nothing to rewrite. The copy shares the
    parameters, buffers and submodules of `module`, but not its dictionaries of them,
    so constants the tracer stores on the copy leave `module` unchanged.
    """
    cls = type(module)
    method = getattr(cls, name, None)
    rewritten = rewrite(method)
    if rewritten is method:
        return module
    subclass = type(cls)(
        cls.__name__,
        (cls,),
        {name: rewritten, "__module__": cls.__module__, "__qualname__": cls.__qualname__},
    )
    copy = subclass.__new__(subclass)
    copy.__dict__.update(
        {
            key: value.copy() if isinstance(value, dict) else value
            for key, value in vars(module).items()
        }
    )
    return copy


@contextlib.contextmanager
def _rewritten_forward(module: torch.nn.Module) -> Iterator[None]:
    """Make `module.forward` its class's `forward`, rewritten, for the duration of the block.

    `nn.Module.__call__` (with its hooks) calls `self.forward`, and an attribute of the
    instance comes before the class's method. A module with a `forward` of its own,
    nothing to rewrite, or no source to rewrite is left as it is.
    """
    function = type(module).forward
    try:
        rewritten = function if "forward" in vars(module) else rewrite(function)
    except OSError:
        rewritten = function  # no source: an assert in it fails as with Tracer
    if rewritten is function:
        yield
        return
    vars(module)["forward"] = rewritten.__get__(module)
    try:
        yield
    finally:
        del vars(module)["forward"]
