"""Exercise 7.2: Match a chain of ops (solution).

Each chain is grown backwards from its last node, as `replace_pattern` grows a
match from its anchor: a node's first argument has one producer, while a node
may have many users, so walking towards producers never has to choose.
"""

from collections.abc import Callable, Sequence

from minifx.graph import Graph, Node


# --8<-- [start:solution]
def find_chains(graph: Graph, targets: Sequence[Callable]) -> list[list[Node]]:
    """Every non-overlapping chain of `call_function` nodes with these targets, in order."""
    chains: list[list[Node]] = []
    taken: set[Node] = set()
    for last in graph.nodes:
        chain = chain_ending_at(last, targets)
        if chain is not None and taken.isdisjoint(chain):
            chains.append(chain)
            taken.update(chain)
    return chains


def chain_ending_at(last: Node, targets: Sequence[Callable]) -> list[Node] | None:
    """The chain whose last node is `last`, or None if there is none."""
    chain = [last]
    for _ in targets[:-1]:  # one step back for each target before the last
        first = chain[0].args[0] if chain[0].args else None
        if not isinstance(first, Node) or list(first.users) != [chain[0]]:
            return None  # not computed by a node, or it escapes: used by someone else too
        chain.insert(0, first)
    return chain if all(is_call(n, t) for n, t in zip(chain, targets)) else None


def is_call(node: Node, target: Callable) -> bool:
    return node.op == "call_function" and node.target is target


# --8<-- [end:solution]
