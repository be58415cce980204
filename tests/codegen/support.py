"""What the stage-3 tests share: the two libraries' code-generation entry points side by
side, test_fx's custom `CodeGen`s built on either library's `CodeGen`, and small
programs traced with and without structured inputs."""

from __future__ import annotations

import collections

import torch
import torch.fx

from minifx.codegen import CodeGen, GraphModule, symbolic_trace
from minifx.graph import PH


def list_codegen(base: type) -> type:
    """test_fx's ListCodeGen, on `base` (torch.fx's or minifx's CodeGen): `forward(self, args_list)`."""

    class ListCodeGen(base):
        def gen_fn_def(self, free_vars, maybe_return_annotation):
            return (
                f"\ndef forward(self, args_list: List[torch.Tensor]){maybe_return_annotation}:\n"
                f"    {', '.join(free_vars)} = args_list"
            )

        def additional_globals(self):
            return [("List", list)]

        def process_inputs(self, *inputs):
            assert len(inputs) == 1
            return inputs[0]

    return ListCodeGen


def returns_a_list(base: type) -> type:
    """ListCodeGen that also returns a list (test_interpreter_with_codegen's)."""

    class ListInListOut(list_codegen(base)):
        def generate_output(self, output_args):
            return f"return list({repr(output_args)})"

        def process_outputs(self, outputs):
            return list(outputs)

    return ListInListOut


# Each library's `(symbolic_trace, GraphModule, CodeGen, PH)`.
LIBRARIES = {
    "torch.fx": (torch.fx.symbolic_trace, torch.fx.GraphModule, torch.fx.CodeGen, torch.fx.PH),
    "minifx": (symbolic_trace, GraphModule, CodeGen, PH),
}


def add(a, b):
    return a + b


def two_sums(a, b):
    a = a + b
    b = a + b
    return a, b


def f_dict_add(x):
    return x["a"] + sum(x["z"])


def add_pair(d):
    return {"sum": d["a"] + d["b"], "diff": d["a"] - d["b"]}


Pair = collections.namedtuple("Pair", "x y")


def pair_sum(p):
    return p.x + p.y


def boxed_sum(x):
    return x.a + x.b


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        z = torch.relu(y) + 1
        return z.sum()
