"""Grader for exercise 7.2: Match a chain of ops.

Expected values are golden: the chains are written out by node name, for small graphs
with branches, escapes, overlapping candidates, methods and binary ops, and for graphs of
unary ops written out as plans, whose chains are the matches torch.fx's `SubgraphMatcher`
finds there (as `replace_pattern` runs it), recorded once. The exercise says write the
matcher by hand: a solution that hands the work to a ready-made matcher fails.
"""

import inspect
import operator

import pytest
import torch
import torch.fx.passes.utils.matcher_utils as fx_matcher

import minifx.passes.matcher as minifx_matcher
from minifx.codegen import symbolic_trace
from minifx.graph import Node
from tests.graders.support import (
    Delegated,
    describe_error,
    error_line,
    explain,
    not_plain,
    oracle_lines,
    refusing,
    stub_hint,
)

pytestmark = pytest.mark.ch7

SEE = "chapters/07-subgraph-rewriting.md#exercise-72-match-a-chain-of-ops"
SEE_RULES = "chapters/07-subgraph-rewriting.md#no-escape-no-cycle-no-overlap"
SEE_WALK = "chapters/07-subgraph-rewriting.md#anchors-and-the-walk-backwards"


@pytest.fixture
def ex(impl):
    return impl.load("ch7_match_chain")


# --- the programs and their chains (golden) ---------------------------------------------


def straight(x):
    return torch.sigmoid(torch.neg(torch.relu(x)))


def branch(x):
    a = torch.relu(x)
    return torch.neg(a) + torch.sigmoid(a)  # relu has two users


def escape(x):
    a = torch.relu(x)
    return torch.neg(a), a  # relu is also returned


def four_relus(x):
    return torch.relu(torch.relu(torch.relu(torch.relu(x))))


def method_relu(x):
    return torch.neg(x.relu()) + torch.neg(torch.relu(x))  # x.relu() is a call_method


def first_argument(x, y):
    return (y + torch.relu(x)) * (torch.relu(y) + x)  # only the second add follows its relu


def not_linked(x, y):
    a = torch.relu(x)
    return a, torch.neg(y)  # relu, then neg, but neg reads y


relu, neg, sigmoid = torch.relu, torch.neg, torch.sigmoid
CASES = [  # (program, targets, the chains by node name)
    (straight, (relu, neg), [["relu", "neg"]]),
    (straight, (relu, neg, sigmoid), [["relu", "neg", "sigmoid"]]),
    (straight, (neg, relu), []),
    (branch, (relu, neg), []),
    (branch, (neg,), [["neg"]]),
    (branch, (relu,), [["relu"]]),
    (escape, (relu, neg), []),
    (escape, (relu,), [["relu"]]),
    (four_relus, (relu, relu), [["relu", "relu_1"], ["relu_2", "relu_3"]]),
    (four_relus, (relu, relu, relu), [["relu", "relu_1", "relu_2"]]),
    (method_relu, (relu, neg), [["relu_1", "neg_1"]]),
    (first_argument, (relu, operator.add), [["relu_1", "add_1"]]),
    (not_linked, (relu, neg), []),
]
IDS = [f"{p.__name__}-{'-'.join(t.__name__ for t in ts)}" for p, ts, _ in CASES]

# Graphs of unary ops, each written as a plan: `op:i` applies op to value i (0 is the
# input, k the k-th op's output), and every value nothing reads is returned. The chains
# are the matches of torch.fx's SubgraphMatcher for the pattern that applies the targets
# in turn, as replace_pattern finds them.
PLANS = [  # (plan, targets, the chains by node name)
    (
        "relu:0 relu:1 relu:2 sigmoid:1 relu:4 neg:5 relu:3 relu:7 neg:8 neg:8 relu:10",
        "relu relu",
        [["relu_1", "relu_2"], ["relu_4", "relu_5"]],
    ),
    (
        "relu:0 neg:1 relu:2 relu:3 relu:4 relu:5 relu:6 neg:3",
        "relu relu",
        [["relu_2", "relu_3"], ["relu_4", "relu_5"]],
    ),
    (
        "relu:0 relu:1 relu:2 neg:3 relu:4 relu:5 relu:6 neg:6 relu:8",
        "relu relu",
        [["relu", "relu_1"], ["relu_3", "relu_4"]],
    ),
    (
        "relu:0 neg:0 relu:1 relu:3 relu:4 neg:1 relu:6 relu:7 neg:8 relu:2 neg:10",
        "relu relu",
        [["relu_1", "relu_2"], ["relu_4", "relu_5"]],
    ),
    (
        "neg:0 relu:1 relu:2 relu:3 relu:4 relu:5 relu:6 relu:7 relu:8 neg:9 relu:9",
        "relu relu relu relu",
        [["relu", "relu_1", "relu_2", "relu_3"], ["relu_4", "relu_5", "relu_6", "relu_7"]],
    ),
    (
        "neg:0 relu:1 relu:2 relu:3 relu:4 relu:5 relu:6 relu:7 relu:8 neg:9 relu:9",
        "relu relu relu",
        [["relu", "relu_1", "relu_2"], ["relu_3", "relu_4", "relu_5"]],
    ),
    (
        "neg:0 neg:1 neg:2 neg:3 neg:2 neg:5",
        "neg neg",
        [["neg", "neg_1"], ["neg_2", "neg_3"], ["neg_4", "neg_5"]],
    ),
    (
        "neg:0 neg:0 relu:2 sigmoid:3 relu:3 relu:5 relu:1 relu:7 relu:8",
        "neg relu",
        [["neg_1", "relu"], ["neg", "relu_3"]],
    ),
    (
        "neg:0 relu:1 neg:2 relu:3 relu:4 relu:0 relu:2 neg:7 relu:8 relu:9 neg:10",
        "neg relu relu",
        [["neg_1", "relu_1", "relu_2"], ["neg_2", "relu_5", "relu_6"]],
    ),
    (
        "neg:0 relu:1 neg:2 relu:3 relu:4 relu:0 relu:2 neg:7 relu:8 relu:9 neg:10",
        "relu neg",
        [["relu_4", "neg_2"], ["relu_6", "neg_3"]],
    ),
    (
        "relu:0 relu:1 relu:2 neg:2 relu:4 neg:5",
        "relu",
        [["relu"], ["relu_1"], ["relu_2"], ["relu_3"]],
    ),
    ("relu:0 neg:1 relu:2 sigmoid:3", "neg relu relu", []),
]
OPS = {"relu": torch.relu, "neg": torch.neg, "sigmoid": torch.sigmoid}


def plan_program(plan: str):
    steps = [(OPS[word.split(":")[0]], int(word.split(":")[1])) for word in plan.split()]

    def program(x):
        values, used = [x], set()
        for op, source in steps:
            values.append(op(values[source]))
            used.add(source)
        return tuple(v for i, v in enumerate(values) if i not in used and i > 0)

    return program


# --- running the student's matcher ------------------------------------------------------

ORACLE = (
    "SubgraphMatcher",
    "replace_pattern",
    "replace_pattern_with_filters",
    "subgraph_rewriter",
    "matcher_utils",
    "InternalMatch",
)


def _by_hand(uses: str):
    pytest.fail(
        explain(
            "find_chains walking the graph itself, node by node",
            f"your code uses {uses}",
            "write the matcher by hand, as the exercise asks: grow each chain "
            "backwards from its last node through args[0]; minifx's and torch.fx's "
            "matchers (SubgraphMatcher, replace_pattern) are what it reimplements.",
            SEE,
        ),
        pytrace=False,
    )


@pytest.fixture
def find(ex, monkeypatch):
    """The student's find_chains, with the ready-made matchers replaced by stand-ins that refuse:
    every method, not only `match` (its private helpers, called by a name built from strings,
    are the same matcher), and minifx's matcher module's own functions."""
    for matcher in (minifx_matcher.SubgraphMatcher, fx_matcher.SubgraphMatcher):
        for name, value in list(vars(matcher).items()):
            if inspect.isfunction(value):
                monkeypatch.setattr(matcher, name, refusing(f"SubgraphMatcher.{name}"))
    for name, value in list(vars(minifx_matcher).items()):
        if inspect.isfunction(value) and value.__module__ == minifx_matcher.__name__:
            monkeypatch.setattr(minifx_matcher, name, refusing(name))

    def run(graph, targets):
        uses = oracle_lines(ex, ORACLE)
        if uses:
            _by_hand(uses)
        try:
            return ex.find_chains(graph, targets)
        except Delegated as error:
            _by_hand(f"{error} at {error_line(error)}")
        except Exception as error:  # student code: any error becomes a message
            names = [getattr(t, "__name__", t) for t in targets]
            pytest.fail(
                explain(
                    f"find_chains(graph, {names}) runs",
                    describe_error(error),
                    stub_hint(error, "find_chains"),
                    SEE,
                ),
                pytrace=False,
            )

    return run


# --- what went wrong --------------------------------------------------------------------


def _name(node) -> str:
    return node.name if isinstance(node, Node) else repr(node)


def _names(chains) -> object:
    if not isinstance(chains, (list, tuple)):
        return chains
    return [[_name(n) for n in c] if isinstance(c, (list, tuple)) else c for c in chains]


def _chain_problem(chain: list, targets) -> str | None:
    """The hint for a chain that breaks a rule, or None if it is a chain."""
    problem = _broken_rule(chain, targets)
    if problem and len(chain) > 1 and _broken_rule(chain[::-1], targets) is None:
        return "list each chain's nodes first to last, in the order of targets."
    return problem


def _broken_rule(chain: list, targets) -> str | None:
    k = len(targets)
    if len(chain) != k:
        return f"a chain has one node per target ({k} here); {_names([chain])[0]} has {len(chain)}."
    for i, (node, target) in enumerate(zip(chain, targets)):
        if node.op != "call_function":
            return (
                f"%{node.name} is a {node.op} node: only call_function nodes belong to a "
                "chain (x.relu() records call_method, whose target is a string)."
            )
        if node.target is not target:
            return (
                f"%{node.name}'s target is not targets[{i}] ({target.__name__}): compare with `is`."
            )
    for before, after in zip(chain, chain[1:]):
        if not after.args or after.args[0] is not before:
            if before in after.args:
                return (
                    f"%{after.name} reads %{before.name} as argument "
                    f"{list(after.args).index(before)}: the node before must be the first "
                    "argument, args[0]."
                )
            return (
                f"%{after.name} does not read %{before.name}: each node's first argument, "
                "args[0], is the node before it; nodes next to each other in the graph "
                "need not be linked."
            )
        if list(before.users) != [after]:
            others = [f"%{u.name}" for u in before.users if u is not after]
            return (
                f"%{before.name} is also used by {', '.join(others)}: every node but the "
                "last must be used by the next node only (the no-escape rule)."
            )
    return None


def _hint(graph, targets, got, want: list[list[str]]) -> tuple[str, str]:
    """(hint, see) for the first thing wrong with `got`."""
    nodes = list(graph.nodes)
    if not isinstance(got, list) or not all(isinstance(c, list) for c in got):
        return "return a list of chains, each a list of nodes.", SEE
    if not all(any(n is m for m in nodes) for c in got for n in c):
        return "return the Node objects of the graph itself (not names, not copies).", SEE
    for chain in got:
        problem = _chain_problem(chain, targets)
        if problem:
            return problem, SEE_RULES if "no-escape" in problem else SEE_WALK
    for i, chain in enumerate(got):
        for earlier in got[:i]:
            shared = [n for n in chain if n in earlier]
            if shared:
                return (
                    f"{_names([earlier])[0]} and {_names([chain])[0]} share %{shared[0].name}: "
                    "keep a chain only if it shares no node with one already kept."
                ), SEE_RULES
    names = _names(got)
    if sorted(names) == sorted(want):
        return (
            "return the chains in graph order of their last nodes, the order in which "
            "replace_pattern considers its candidates."
        ), SEE
    missing = [c for c in want if c not in names]
    if names and names == want[: len(names)]:
        return (
            "find every chain: keep looking after the first one, through every candidate last node."
        ), SEE
    if missing:
        by_name = {n.name: n for n in nodes}
        last = by_name[missing[0][-1]]
        if len(last.users) > 1:
            return (
                f"the last node may have any users: %{last.name} has {len(last.users)}, and "
                f"{missing[0]} is a chain."
            ), SEE_RULES
        rivals = [c for c in names if c not in want and set(c) & set(missing[0])]
        if rivals:
            return (
                f"{missing[0]} and {rivals[0]} overlap: take the candidate last nodes in graph "
                "order, and the first chain kept wins."
            ), SEE_RULES
        return f"{missing[0]} is a chain too.", SEE
    return "compare your chains with the expected ones, rule by rule.", SEE


def _check(find, program, targets, want, what: str):
    graph = symbolic_trace(program).graph
    got = find(graph, targets)
    # Exact types, so that the names compared are the real nodes' own strs: a list, node or
    # name of graded code's could answer == with True.
    ok = (
        type(got) is list
        and all(type(c) is list and all(type(n) is Node for n in c) for c in got)
        and not_plain(_names(got)) is None
        and _names(got) == want
    )
    if not ok:
        hint, see = _hint(graph, targets, got, want)
        pytest.fail(explain(f"chains {want} {what}", repr(_names(got)), hint, see), pytrace=False)
    return graph, got


# --- the tests --------------------------------------------------------------------------


@pytest.mark.parametrize("program, targets, want", CASES, ids=IDS)
def test_chains_written_out(find, program, targets, want):
    _check(find, program, targets, want, f"in {program.__name__}")


def test_the_chains_hold_the_graphs_nodes(find):
    graph, chains = _check(find, straight, (relu, neg), [["relu", "neg"]], "in straight")
    nodes = list(graph.nodes)
    same = [[any(n is m for m in nodes) for n in chain] for chain in chains]
    assert same == [[True, True]], explain(
        "one chain of two Node objects of the graph itself",
        repr(chains),
        "return the Node objects of the graph itself (not names, not copies).",
        SEE,
    )


@pytest.mark.parametrize("plan, targets, want", PLANS, ids=[f"plan{i}" for i in range(len(PLANS))])
def test_the_same_chains_as_replace_pattern(find, plan, targets, want):
    _check(
        find,
        plan_program(plan),
        tuple(OPS[t] for t in targets.split()),
        want,
        f"for {targets.split()} in the graph of the plan {plan!r}",
    )
