"""Chapter 7: rewrites written as Python, found and applied by `replace_pattern`.

`SwishBlock` computes the swish activation by hand; `swish` and `silu` are the
pattern and the replacement that turn it into one `F.silu` call. `gate_and_swish`
holds the three ways a near miss escapes a match, and `relu_chain` the
overlapping candidates.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


# --8<-- [start:model]
class SwishBlock(nn.Module):
    """A linear layer and the swish activation, written by hand, twice."""

    def __init__(self, dim: int = 4) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, dim)

    def forward(self, x):
        y = self.linear(x)
        y = y * torch.sigmoid(y)
        return y * torch.sigmoid(y) + x


# --8<-- [end:model]


# --8<-- [start:rewrite]
def swish(x):
    """The pattern: what to look for."""
    return x * torch.sigmoid(x)


def silu(x):
    """The replacement: what to put there instead, with the same inputs."""
    return F.silu(x)


# --8<-- [end:rewrite]


# --8<-- [start:near_misses]
def gate_and_swish(x, y):
    gate = x * torch.sigmoid(y)  # two different inputs: not a swish
    s = torch.sigmoid(x)
    kept = x * s + s  # the sigmoid escapes: it is used outside the product
    z = x + 1
    return gate, kept, z * torch.sigmoid(z)  # the only match


# --8<-- [end:near_misses]


# --8<-- [start:overlap]
def relu_chain(x):
    return torch.relu(torch.relu(torch.relu(x)))


def double_relu(x):
    return torch.relu(torch.relu(x))


def one_relu(x):
    return torch.relu(x)


# --8<-- [end:overlap]
