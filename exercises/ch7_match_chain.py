"""Exercise 7.2: Match a chain of ops.

`replace_pattern` finds a pattern by walking backwards from its last node. Write
the simplest matcher of that kind by hand: find every chain of `call_function`
nodes whose targets are a given sequence, such as `(torch.relu, torch.neg)` for
`torch.neg(torch.relu(x))`.

Read first: chapters/07-subgraph-rewriting.md#exercise-72-match-a-chain-of-ops
Grade with: `make grade CH=7`
"""

from collections.abc import Callable, Sequence

from minifx.graph import Graph, Node


def find_chains(graph: Graph, targets: Sequence[Callable]) -> list[list[Node]]:
    """Every non-overlapping chain of `call_function` nodes with these targets, in order.

    A chain is a list of nodes `[n1, ..., nk]`, one per target (`k == len(targets)`), with:

    - `ni.op == "call_function"` and `ni.target is targets[i - 1]`;
    - each later node's *first* argument is the node before it:
      `n(i+1).args[0] is ni`;
    - the no-escape rule: every node but the last is used by the next node only
      (`list(ni.users) == [n(i+1)]`). The last node may have any users.

    Chains must not overlap. Like `replace_pattern`, consider the candidate last
    nodes in graph order and keep a chain only if it shares no node with a chain
    already kept (the first one wins).

    Returns:
        The chains, in graph order of their last nodes; `[]` if there is none.
    """
    raise NotImplementedError(
        "Exercise 7.2: find_chains is not written yet; "
        "see chapters/07-subgraph-rewriting.md#exercise-72-match-a-chain-of-ops"
    )
