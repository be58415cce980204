"""The oracle helpers that many test files share: trace a case of the corpus with torch.fx
and with minifx, build a seeded model and its input, and check that a graph is well formed.

One home for each, so a test file imports them instead of keeping its own copy.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.fx

import minifx.codegen
import minifx.graph
from minifx.interpreter import Interpreter
from tests.graph.corpus import Case, resolve_ph

SEED = 0

# -- tracing one case of the corpus with each library ------------------------------------


@dataclass
class Traced:
    """One case traced by one library.

    Attributes:
        root: the program as written, run in eager mode.
        tracer: the tracer that traced it (`tracer.root` holds the state the graph names).
        graph: the traced graph.
    """

    root: Any
    tracer: Any
    graph: Any

    def eager(self) -> Any:
        """The callable that was traced: `forward`, or the tracer's `traced_func_name`."""
        if isinstance(self.root, torch.nn.Module):
            return getattr(self.root, self.tracer.traced_func_name)
        return self.root


def trace_case(c: Case, base: type, ph: Any) -> Traced:
    """Trace a fresh root of case `c` with a tracer built on `base`."""
    root, concrete_args = c.make()
    tracer = c.tracer(base)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both libraries warn alike about some concrete values
        graph = tracer.trace(root, resolve_ph(concrete_args, ph))
    return Traced(root, tracer, graph)


def trace_minifx(c: Case) -> Traced:
    return trace_case(c, minifx.graph.Tracer, minifx.graph.PH)


def trace_torch(c: Case) -> Traced:
    return trace_case(c, torch.fx.Tracer, torch.fx._symbolic_trace.PH)


def minifx_module(c: Case) -> tuple[Traced, minifx.codegen.GraphModule]:
    traced = trace_minifx(c)
    return traced, minifx.codegen.GraphModule(traced.tracer.root, traced.graph)


def torch_module(c: Case) -> torch.fx.GraphModule:
    traced = trace_torch(c)
    return torch.fx.GraphModule(traced.tracer.root, traced.graph)


# -- models ------------------------------------------------------------------------------


def model_and_input(
    models: dict[str, tuple[Callable[[], torch.nn.Module], tuple[int, ...]]],
    name: str,
    device: str,
    training: bool = False,
) -> tuple[torch.nn.Module, torch.Tensor]:
    """A fresh model of `models[name]` (a factory and an input shape) and an input for it,
    both on `device`, seeded; in eval mode unless `training`."""
    factory, shape = models[name]
    torch.manual_seed(SEED)
    model = factory().to(device).train(training)
    return model, torch.randn(*shape, device=device)


# -- a well-formed graph -----------------------------------------------------------------


def assert_well_formed(
    gm: minifx.codegen.GraphModule, model: Callable[..., Any], *inputs: Any, **tolerance: float
) -> Any:
    """`gm` computes what `model` computes, run by its generated code and by the
    `Interpreter`, and its graph passes `lint()`; returns what the code computed.

    `tolerance` (`rtol`, `atol`) goes to `torch.testing.assert_close`.
    """
    with torch.no_grad():
        expected = model(*inputs)
        from_code = gm(*inputs)
        interpreted = Interpreter(gm).run(*inputs)
    torch.testing.assert_close(from_code, expected, **tolerance)
    torch.testing.assert_close(interpreted, expected, **tolerance)
    gm.graph.lint()
    return from_code
