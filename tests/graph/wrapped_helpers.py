"""Module-level helpers registered as leaf functions, for the tracer corpus.

`wrap` replaces a *name in the globals of the module that called it*, so the
registrations below are made at this module's top level, and the programs
that call the helpers either live here (and call them by bare name) or call
them through this module (`wrapped_helpers.rows_prefix(x, 2)`), which reads
the same patched globals. Every helper would fail if traced through
(`len()` of a Proxy, `if` on a Proxy), so a graph that contains the call
proves the registration was honoured.

Two kinds of registration, kept apart on purpose:

- `torch.fx.wrap`, the way torchvision registers its untraceable ops. Both
  tracers honour these, so programs using them are compared against a plain
  `torch.fx.Tracer`.
- `minifx.wrap`. torch.fx ignores these. The honest torch.fx equivalent is
  `torch.fx.Tracer(autowrap_functions=(helper,))`, which records the same one
  `call_function` node for a helper named in the traced function's globals,
  so those programs are defined here and compared that way. A name is never
  registered with both: minifx honours `torch.fx.wrap` too, which would let a
  `minifx.wrap` case pass even if `minifx.wrap` did nothing.
"""

from __future__ import annotations

import torch
import torch.fx

import minifx

# -- registered with torch.fx.wrap: both tracers record one call -------------------


def rows_prefix(x, n):
    """The first `n` rows of `x`; `len(x)` would fail on a Proxy."""
    return x[: min(len(x), n)]


torch.fx.wrap("rows_prefix")


@torch.fx.wrap
def scale_if_positive(x, *, scale=2.0):
    """`if` on a tensor would fail on a Proxy; keyword-only `scale`."""
    if x.sum() > 0:
        return x * scale
    return x


# A builtin registered by name: inside this module, `len(proxy)` is recorded.
torch.fx.wrap("len")


def zeros_like_rows(x):
    """Uses the wrapped builtin `len`: records `len(x)`, then `new_zeros`."""
    return x.new_zeros(len(x))


def with_batch_dim(x, rank):
    """`x` with a batch dimension added when it has `rank - 1` dimensions, and its rank
    before: a pair, as torchvision's mvit returns from its wrapped `_unsqueeze`. `if` on
    `x.dim()` would fail on a Proxy."""
    before = x.dim()
    if before == rank - 1:
        x = x.unsqueeze(0)
    return x, before


def without_batch_dim(x, rank_before):
    """Undo `with_batch_dim`; `rank_before` is a Proxy while tracing, so `if` would fail."""
    if rank_before < x.dim():
        x = x.squeeze(0)
    return x


torch.fx.wrap("with_batch_dim")
torch.fx.wrap("without_batch_dim")


# -- registered with minifx.wrap only ----------------------------------------------


def mini_rows_prefix(x, n):
    """Same body as `rows_prefix`, registered by name with minifx.wrap."""
    return x[: min(len(x), n)]


minifx.wrap("mini_rows_prefix")


@minifx.wrap
def mini_clamp_positive(x):
    """Registered with minifx.wrap used as a decorator; `if` on a Proxy would fail."""
    if x.max() > 1:
        return x.clamp(max=1)
    return x


# A builtin registered by name with minifx.wrap: torch.fx has no equivalent for
# this (autowrap_functions only finds functions stored in a module's globals),
# so the program below is checked against a golden string instead.
minifx.wrap("round")


def uses_wrapped_round(x):
    """`round(proxy)` fails (a Proxy has no `__round__`) unless `round` is wrapped."""
    return round(x * 10) / 10


MINI_WRAPPED = (mini_rows_prefix, mini_clamp_positive)
MINI_WRAPPED_NAMES = ("mini_rows_prefix", "mini_clamp_positive", "round")


def uses_mini_rows_prefix(x):
    return mini_rows_prefix(x, 2).relu()


def uses_mini_clamp_positive(x, y):
    return mini_clamp_positive(x + y) * 2


class MiniWrappedBlock(torch.nn.Module):
    """A submodule defined here, so its forward sees this module's globals."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return mini_clamp_positive(self.lin(x)) + mini_rows_prefix(x, 1)
