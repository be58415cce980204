"""Grader for exercise 7.2: Match a chain of ops.

Chains are written out by node name for small graphs with branches, escapes,
overlapping candidates, methods and binary ops; on random graphs of unary ops the
oracle is torch.fx's own matcher (`SubgraphMatcher`, as `replace_pattern` runs it),
whose matches are exactly the chains there.
"""

import operator
import random

import pytest
import torch
import torch.fx
from torch.fx.passes.utils.matcher_utils import SubgraphMatcher

from minifx.codegen import symbolic_trace
from tests.graders.support import explain

pytestmark = pytest.mark.ch7

SEE = "chapters/07-subgraph-rewriting.md#exercise-72-match-a-chain-of-ops"
HINT = ("walk backwards from each candidate last node: the node before is args[0], and it "
        "must have exactly one user (the node after it); skip a chain that shares a node "
        "with one you already kept.")


@pytest.fixture
def ex(impl):
    return impl.load("ch7_match_chain")


def straight(x):
    return torch.sigmoid(torch.neg(torch.relu(x)))


def branch(x):
    a = torch.relu(x)
    return torch.neg(a) + torch.sigmoid(a)   # relu has two users


def escape(x):
    a = torch.relu(x)
    return torch.neg(a), a                    # relu is also returned


def four_relus(x):
    return torch.relu(torch.relu(torch.relu(torch.relu(x))))


def method_relu(x):
    return torch.neg(x.relu()) + torch.neg(torch.relu(x))  # x.relu() is a call_method


def first_argument(x, y):
    return (y + torch.relu(x)) * (torch.relu(y) + x)       # only the second add follows its relu


relu, neg, sigmoid = torch.relu, torch.neg, torch.sigmoid
CASES = [  # (program, targets, the chains by node name)
    (straight, (relu, neg), [["relu", "neg"]]),
    (straight, (relu, neg, sigmoid), [["relu", "neg", "sigmoid"]]),
    (straight, (neg, relu), []),
    (branch, (relu, neg), []),
    (branch, (neg,), [["neg"]]),
    (escape, (relu, neg), []),
    (four_relus, (relu, relu), [["relu", "relu_1"], ["relu_2", "relu_3"]]),
    (four_relus, (relu, relu, relu), [["relu", "relu_1", "relu_2"]]),
    (method_relu, (relu, neg), [["relu_1", "neg_1"]]),
    (first_argument, (relu, operator.add), [["relu_1", "add_1"]]),
]
IDS = [f"{p.__name__}-{'-'.join(t.__name__ for t in ts)}" for p, ts, _ in CASES]


@pytest.mark.parametrize("program, targets, want", CASES, ids=IDS)
def test_chains_written_out(ex, program, targets, want):
    graph = symbolic_trace(program).graph
    chains = ex.find_chains(graph, targets)
    got = [[n.name for n in chain] for chain in chains]
    assert got == want, explain(f"chains {want} in {program.__name__}", repr(got), HINT, SEE)


def test_the_chains_hold_the_graphs_nodes(ex):
    graph = symbolic_trace(straight).graph
    chains = ex.find_chains(graph, (relu, neg))
    nodes = list(graph.nodes)
    same = [[any(n is m for m in nodes) for n in chain] for chain in chains]
    assert same == [[True, True]], explain(
        "one chain of two Node objects of the graph itself", repr(chains),
        "return the Node objects (not names, not copies).", SEE)


def random_program(seed: int):
    """A random graph of unary ops, each reading an earlier value; the unused ones are returned."""
    rng = random.Random(seed)
    # Mostly relu and neg, mostly reading the latest value: long chains, some branches.
    ops = (torch.relu, torch.neg, torch.relu, torch.neg, torch.sigmoid)
    plan = [(rng.choice(ops), i if rng.random() < 0.7 else rng.randrange(i + 1))
            for i in range(rng.randrange(4, 14))]

    def program(x):
        values, used = [x], set()
        for op, source in plan:
            values.append(op(values[source]))
            used.add(source)
        return tuple(v for i, v in enumerate(values) if i not in used and i > 0)
    return program


def torch_fx_chains(program, targets) -> list[list[str]]:
    def pattern(x):
        for target in targets:
            x = target(x)
        return x
    pattern_graph = torch.fx.symbolic_trace(pattern).graph
    calls = [n for n in pattern_graph.nodes if n.op == "call_function"]
    matches = SubgraphMatcher(pattern_graph).match(torch.fx.symbolic_trace(program).graph)
    return [[m.nodes_map[n].name for n in calls] for m in matches]


@pytest.mark.parametrize("seed", range(12))
def test_the_same_chains_as_replace_pattern_on_random_graphs(ex, seed):
    program = random_program(seed)
    rng = random.Random(1000 + seed)
    for _ in range(4):
        targets = tuple(rng.choice((torch.relu, torch.neg)) for _ in range(rng.randrange(1, 4)))
        want = torch_fx_chains(program, targets)
        got = [[n.name for n in chain]
               for chain in ex.find_chains(symbolic_trace(program).graph, targets)]
        names = [t.__name__ for t in targets]
        assert got == want, explain(
            f"the matches of torch.fx's SubgraphMatcher for {names}: {want}", repr(got),
            HINT, SEE)
