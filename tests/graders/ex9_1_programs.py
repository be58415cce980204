"""The programs that exercise 9.1's grader compiles with the student's backend.

They live apart from the grader because TorchDynamo adds the code it compiles to the
globals of each function it compiles (`__compiled_fn_0`, `__resume_at_...`): the grading's
guard counts every write to the grader's own module as graded code's (see
`tests/grading/guard.py`, `COMPILED_BY_DYNAMO`), and so it must not be this module.
"""

import torch
import torch._dynamo
from torch import nn


def straight(x):
    return torch.relu(x) * 2 + x.sum()


def branch(x):
    y = torch.relu(x) * 2
    if y.sum() > 0:  # a branch on a tensor's value: a graph break
        return y + 1
    return y - 1


def explicit(x):
    y = x.sin()
    torch._dynamo.graph_break()
    return y.cos() + 1


def two_breaks(x):
    x = x + 1
    torch._dynamo.graph_break()
    x = x * 2
    torch._dynamo.graph_break()
    return x - 3


def loop(x):
    for _ in range(3):  # a Python loop: unrolled, no break
        x = x * 2
    return x


def shift(x, flag):
    if flag:  # a Python value: a guard, not a break
        return x + 1
    return x - 1


def nothing(x):
    torch._dynamo.graph_break()
    return x  # no operation on either side: no graph at all


def mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
