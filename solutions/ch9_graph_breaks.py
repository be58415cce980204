"""Exercise 9.1: Count graph breaks (solution).

A backend sees one graph per call: Dynamo calls it once for each graph it
captures, so a backend that only records what it is handed is a graph-break
counter. It returns `gm.forward`, the graph's own generated code, so that
the compiled function still computes what the eager one does.
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

    # --8<-- [start:solution]
    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list) -> object:
        """Record `gm`'s summary, and return what runs it: its generated `forward`."""
        self.graphs.append(summarize(gm))
        return gm.forward

    def graph_breaks(self) -> int:
        """The graph breaks of the one call this counter has seen: a break ends one
        graph and starts the next, so one fewer than the graphs (0 if none)."""
        return max(len(self.graphs) - 1, 0)


def summarize(gm: torch.fx.GraphModule) -> GraphSummary:
    """The `GraphSummary` of one graph."""
    nodes = list(gm.graph.nodes)
    inputs = sum(node.op == "placeholder" for node in nodes)
    ops = tuple(op_name(node) for node in nodes if node.op.startswith("call_"))
    return GraphSummary(inputs, ops)


def op_name(node: torch.fx.Node) -> str:
    """`relu` for `torch.relu`, `mul` for `operator.mul`; a method's or module's target as is."""
    return node.target if isinstance(node.target, str) else node.target.__name__


# --8<-- [end:solution]
