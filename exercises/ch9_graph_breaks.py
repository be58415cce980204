"""Exercise 9.1: Count graph breaks.

`torch.compile` hands every graph that TorchDynamo captures to a backend: any
callable that takes a `torch.fx.GraphModule` and example inputs and returns
something to run instead. A backend that only records what it is handed sees
how Dynamo split a function: one graph per segment, a graph break between two
segments. Write `GraphCounter`, such a backend, and `summarize`, which
describes one graph by its inputs and its operations. The grader compiles
functions with your backend (`torch.compile(fn, backend=counter)`), calls
them, and compares what your counter saw with `torch._dynamo.explain`.

Read first: chapters/09-limits.md#exercise-91-count-graph-breaks
Grade with: `make grade CH=9`
"""

from typing import NamedTuple

import torch
import torch.fx


# --8<-- [start:given]
class GraphSummary(NamedTuple):
    """One graph that Dynamo handed the backend.

    Attributes:
        inputs: The number of `placeholder` nodes.
        ops: The name of each `call_function`, `call_method` and `call_module`
            node's target, in graph order: `target.__name__` for a function
            (`"relu"`, `"mul"`), the target itself for a method or a module
            (`"sum"`).
    """

    inputs: int
    ops: tuple[str, ...]


class GraphCounter:
    """A `torch.compile` backend that records every graph it is handed.

    Use one counter per compiled function:
    `torch.compile(fn, backend=counter)`.

    Attributes:
        graphs: A `GraphSummary` per graph handed to the backend, in order.
    """

    def __init__(self) -> None:
        self.graphs: list[GraphSummary] = []

    # --8<-- [end:given]

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> object:
        """Record `summarize(gm)` in `self.graphs`, and return a callable that runs
        the graph: its generated code, `gm.forward`, as chapter 9's `show_graph` does.
        """
        raise NotImplementedError(
            "Exercise 9.1: GraphCounter.__call__ is not written yet; "
            "see chapters/09-limits.md#exercise-91-count-graph-breaks"
        )

    def graph_breaks(self) -> int:
        """The graph breaks of the one call of a compiled function that this counter
        has seen. Each break ends a graph and starts the next one; 0 if no graph was
        handed at all.
        """
        raise NotImplementedError(
            "Exercise 9.1: GraphCounter.graph_breaks is not written yet; "
            "see chapters/09-limits.md#exercise-91-count-graph-breaks"
        )


def summarize(gm: torch.fx.GraphModule) -> GraphSummary:
    """The `GraphSummary` of one graph: its placeholders, and the name of the target
    of each `call_function`, `call_method` and `call_module` node, in graph order.
    """
    raise NotImplementedError(
        "Exercise 9.1: summarize is not written yet; "
        "see chapters/09-limits.md#exercise-91-count-graph-breaks"
    )
