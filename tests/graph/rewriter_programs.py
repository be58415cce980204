"""Programs for `test_rewriter.py` that need a module of their own.

This module differs from the test module on purpose:

- it starts with `from __future__ import annotations`, so the annotations of
  its functions are strings, as in many code bases;
- it does not import `annotate`, which torch.fx's rewritten code calls by
  name in the function's globals;
- its functions live at the top level, where torch.fx's rewriter finds their
  name already defined.
"""

from __future__ import annotations

import torch


def top_level_check(x, y):
    assert x.dim() == y.dim(), "rank mismatch"
    return x + y


class FutureAnnotated(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert x.dim() == 2
        return x.relu()


class AnnotatesWithoutImport(torch.nn.Module):
    def forward(self, x):
        y: int = x.sum()
        return x + y
