"""Programs whose dead code `tests/graph/test_side_effects.py` eliminates and chapter 3's
`tests/codegen/test_dead_code_runs.py` runs: functions registered as side effects and
the scenarios of PyTorch's own test/fx/test_dce_pass.py.
"""

from __future__ import annotations

import torch
import torch.fx

import minifx


# Registered at import time, as a library would. Each is also wrapped, so tracing
# records it as one call instead of tracing its body.
@torch.fx.has_side_effect
@torch.fx.wrap
def log_with_torch_fx(x):
    print("log", x)


@minifx.has_side_effect
@minifx.wrap
def log_with_minifx(x):
    print("log", x)


class WithParameter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attr_1 = torch.nn.Parameter(torch.tensor([-0.9]))


class DeadAdd(WithParameter):
    def forward(self, x):
        a = x + 1  # noqa: F841
        return x + self.attr_1


class DeadChain(WithParameter):
    def forward(self, x):
        a = x + 1
        b = a * 7  # noqa: F841
        return x + self.attr_1


class DeadGetAttr(WithParameter):
    def forward(self, x):
        a = x + 1
        b = a * self.attr_1  # noqa: F841
        return x + 11


class UnusedInput(torch.nn.Module):
    def forward(self, x, y):
        return x + 7


class DeadUseOfAnInput(torch.nn.Module):
    def forward(self, x, y):
        a = y + 2  # noqa: F841
        return x + 7


class ReLUImpure(torch.nn.ReLU):
    _is_impure = True


class KeepsImpureModule(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.relu = ReLUImpure()

    def forward(self, a):
        r = self.relu(a)  # noqa: F841
        return a * 2


class Asserts(torch.nn.Module):
    def forward(self, a):
        torch._assert(torch.equal(a, a), "a must equal a")
        return a * 2


class InPlaceOperator(torch.nn.Module):
    def forward(self, a):
        torch.ops.aten.add_.Tensor(a, 1)
        return a * 2


class OutVariant(torch.nn.Module):
    def forward(self, a):
        b = a + 1
        torch.ops.aten.add.out(b, b, out=a, alpha=2)
        return a


class DrawsRandom(torch.nn.Module):
    def forward(self, a):
        x = torch.rand([10])  # noqa: F841
        return a * 2


class LogsWithMinifx(torch.nn.Module):
    def forward(self, x):
        log_with_minifx(x)
        return x


class LogsWithTorchFx(torch.nn.Module):
    def forward(self, x):
        log_with_torch_fx(x)
        return x


SCENARIOS = [
    (DeadAdd, True),
    (DeadChain, True),
    (DeadGetAttr, True),
    (UnusedInput, False),
    (DeadUseOfAnInput, True),
    (KeepsImpureModule, False),
    (Asserts, False),
    (InPlaceOperator, False),
    (OutVariant, False),
    (DrawsRandom, False),
]


class LeafReLUImpure:
    """A tracer mixin that keeps `ReLUImpure` as a leaf, as test_dce_pass does."""

    def is_leaf_module(self, m, qualname):
        return isinstance(m, ReLUImpure) or super().is_leaf_module(m, qualname)
