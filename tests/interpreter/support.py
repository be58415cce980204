"""What the stage-4 tests share: which corpus cases `run()` can take, and how; a module
traced by each library from the same seed, with the check that both give the same
graph and code; and the small programs and docs' overrides that both the Interpreter's
and the Transformer's tests run.

`Interpreter.run(*args)` takes positional arguments only, in torch.fx as in
minifx. Most corpus cases are called with positional arguments anyway; a few
examples pass keywords (see `tests/codegen/inputs.py`). Those whose keywords
fill ordinary placeholders are run with the same values in placeholder order
(`AS_POSITIONAL`); those that need a `**kwargs` placeholder filled cannot be
run at all (`NOT_INTERPRETABLE`, with the reason). A test checks that every
corpus case is in exactly one of: positional, `AS_POSITIONAL`,
`NOT_INTERPRETABLE`, or the stage-3 `NOT_RUNNABLE`.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.fx

import minifx
from tests.codegen.inputs import INPUTS, Example
from tests.graph.corpus import CASES, Case

# Case -> the positional arguments `run()` needs, built from the case's example.
AS_POSITIONAL: dict[str, Callable[[Example], tuple]] = {
    # def f(x, *, alpha=1.0, beta): the placeholders are x, alpha, beta, in that order.
    "keyword_only_parameters": lambda ex: (*ex.args, ex.kwargs["alpha"], ex.kwargs["beta"]),
    # concrete_args={"n": 4} on a keyword-only n: the placeholder n_1 comes after x.
    "concrete_keyword_only": lambda ex: (*ex.args, ex.kwargs["n_1"]),
    # forward(x, scale=0.5, *, mask=None): scale must be given to reach mask.
    "ForwardWithDefaultsAndAnnotations": lambda ex: (*ex.args, 0.5, ex.kwargs["mask"]),
}

NOT_INTERPRETABLE: dict[str, str] = {
    "star_args_and_kwargs": (
        "the program reads kwargs['bias'], but run() takes no keywords: its **kwargs "
        "placeholder gets {} (torch.fx: a list), so the lookup fails in both libraries"
    ),
    "ForwardStarArgs": (
        "forward reads options['gain'], but run() takes no keywords: its **options "
        "placeholder gets {} (torch.fx: a list), so the lookup fails in both libraries"
    ),
}

INTERPRETABLE: list[Case] = [
    c for c in CASES if c.name in INPUTS and c.name not in NOT_INTERPRETABLE
]


def run_args(name: str, example: Example) -> tuple:
    """The positional arguments of `run()` for the corpus case `name`."""
    if name in AS_POSITIONAL:
        return AS_POSITIONAL[name](example)
    assert not example.kwargs, (
        f"{name} passes keywords: add it to AS_POSITIONAL or NOT_INTERPRETABLE"
    )
    return example.args


def plain(value: Any) -> Any:
    """`value` with torch.fx's `immutable_list`/`immutable_dict` made plain, recursively.

    torch.fx's Interpreter hands these read-only containers to ops and returns
    them; minifx builds plain ones, as generated code does. Tuples keep their
    type (a namedtuple, `torch.Size`, `torch.return_types.topk`).
    """
    if isinstance(value, list):  # immutable_list is a list subclass
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if type(value) is tuple:
        return tuple(plain(v) for v in value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a namedtuple
        return type(value)(*(plain(v) for v in value))
    return value  # torch.Size, torch.return_types.*: as they are


def ids(cases: list[Case]) -> list[str]:
    return [c.name for c in cases]


SEED = 0


def trace_both(make: Any) -> tuple[minifx.GraphModule, torch.fx.GraphModule]:
    """`make()` traced by each library, each on a root built right after seeding
    (so both have the same parameters)."""
    torch.manual_seed(SEED)
    ours = minifx.symbolic_trace(make())
    torch.manual_seed(SEED)
    return ours, torch.fx.symbolic_trace(make())


def assert_same_module(ours: minifx.GraphModule, theirs: torch.fx.GraphModule) -> None:
    """The same printed graph and the same generated code."""
    assert str(ours.graph) == str(theirs.graph)
    assert ours.code == theirs.code
    ours.graph.lint()


# The class bodies of torch.fx's docstrings (Interpreter and Transformer), built on each base.
def neg_sigm_swap(base: type) -> type:
    class NegSigmSwap(base):
        def call_function(self, target, args, kwargs):
            if target is torch.sigmoid:
                return torch.neg(*args, **kwargs)
            return super().call_function(target, args, kwargs)

        def call_method(self, target, args, kwargs):
            if target == "neg":
                call_self, *args_tail = args
                return call_self.sigmoid(*args_tail, **kwargs)
            return super().call_method(target, args, kwargs)

    return NegSigmSwap


def fn(x):
    return torch.sigmoid(x).neg()


def with_star_args(x, *rest):
    return x + rest[0] * rest[1]


def listing(x):
    return [torch.cat([x, x]).relu(), x]
