"""`Graph`'s methods that hand over to chapter 3's code generator.

torch.fx's `Graph` has `python_code`, `set_codegen`, `process_inputs` and
`process_outputs`. Code generation is stage 3, which stage 2 may not import
when it loads: these methods import it *when they are called*, the one
sanctioned exception to the layering rule (it is listed, with its reason, in
`tests/test_architecture.py`). `import minifx.graph` still loads no codegen.

A graph's `CodeGen` decides how its generated function begins (`gen_fn_def`)
and ends (`generate_output`), and how a caller's inputs and outputs map to
the graph's placeholders and output (`process_inputs`, `process_outputs`).
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable


class CodeGenHooks:
    """Mixed into `Graph`: the graph's `CodeGen`, and the methods that use it."""

    _codegen: Any = None  # None: the default, chosen by `minifx.codegen.codegen_of`

    def set_codegen(self, codegen: Any) -> None:
        """Generate this graph's code with `codegen` (a `minifx.codegen.CodeGen`).

        `None` restores the default: a plain `CodeGen`, or the one that puts
        structured inputs and outputs back for a graph traced with structured
        `concrete_args`.
        """
        self._codegen = codegen

    def python_code(self, root_module: str, *, verbose: bool = False) -> Any:
        """The graph's Python source: `minifx.codegen.python_code(self, root_module)`."""
        from ..codegen.python_code import python_code  # stage 3, imported on use

        return python_code(self, root_module, verbose=verbose)

    def process_inputs(self, *args: Any) -> Any:
        """The graph's inputs, made from what a caller passes to the generated function."""
        from ..codegen.codegen import codegen_of  # stage 3, imported on use

        return codegen_of(self).process_inputs(*args)

    def process_outputs(self, out: Any) -> Any:
        """What the generated function returns, made from the graph's output value."""
        from ..codegen.codegen import codegen_of  # stage 3, imported on use

        return codegen_of(self).process_outputs(out)

    def on_generate_code(
        self, make_transformer: Callable[[Any], Any]
    ) -> contextlib.AbstractContextManager:
        """Change the code generated from now on, as torch.fx's hook does.

        `make_transformer(previous)` gets the transformer set before (or `None`) and
        returns a function from the body's lines to new lines (to insert
        `breakpoint()` before every node, say); `recompile()` then uses it. Used as
        a context manager, it restores the previous transformer at the end.
        """
        from ..codegen.codegen import codegen_of  # stage 3, imported on use

        codegen = self._codegen = codegen_of(self)  # the object that keeps the transformer
        previous = codegen._body_transformer
        codegen._body_transformer = make_transformer(previous)

        @contextlib.contextmanager
        def restoring():
            try:
                yield
            finally:
                codegen._body_transformer = previous

        return restoring()
