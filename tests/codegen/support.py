"""What the stage-3 tests share: the two libraries' code-generation entry points side by
side, test_fx's custom `CodeGen`s built on either library's `CodeGen`, small programs
traced with and without structured inputs, and how a corpus case's generated code is
compared with torch.fx's and run against eager mode (test_differential.py, and the
stage-4 tests that reuse it)."""

from __future__ import annotations

import collections
import warnings
from typing import Any

import torch
import torch.fx

from minifx.codegen import CodeGen, GraphModule, symbolic_trace
from minifx.graph import PH
from tests.codegen.compare import assert_same
from tests.codegen.inputs import SEED, Example, example
from tests.graph.corpus import Case
from tests.oracle import Traced


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


# Cases whose code torch.fx writes but cannot compile; minifx's code is checked otherwise.
TORCH_FX_CANNOT_COMPILE = {
    "keyword_only_parameters": "torch.fx writes `def forward(self, x, alpha = 1.0, beta)`",
    "SubmoduleNamedLikeKeyword": "torch.fx writes `self.lambda(x)`; minifx writes "
    '`getattr(self, "lambda")(x)` (see the golden text below)',
}


def torch_code(code: str) -> str:
    """torch.fx's code with its qualified `wrap` written as minifx writes it."""
    return code.replace("torch.fx._symbolic_trace.wrap(", "wrap(")


def minifx_code(c: Case, code: str, retraced: bool = False) -> str:
    """minifx's code with the case's `mini_aliases` mapped back, in code form.

    minifx binds a function outside torch as a global named after its
    qualified name (`minifx.graph.tracer._assert_is_none` becomes
    `minifx_graph_tracer__assert_is_none`); torch.fx writes its own function
    as a path from `torch`.
    """
    for mini_text, torch_text in c.mini_aliases:
        global_name = mini_text.replace(".", "_")
        assert global_name in code, f"alias {global_name!r} no longer occurs; update the case"
        if not retraced:
            # minifx's first code already registers its helper with `wrap`, so
            # retracing records it again; torch.fx's code only does from the
            # retrace on (its tracer patches the helper's module the first time).
            code = code.replace(f'wrap("{global_name}")', "")
        code = code.replace(global_name, torch_text)
    return code


def minifx_printout(c: Case, graph: Any) -> str:
    text = str(graph)
    for mini_text, torch_text in c.mini_aliases:
        text = text.replace(mini_text, torch_text)
    return text


def run(fn: Any, inputs: Example, eager: bool = False) -> Any:
    """Call `fn` on `inputs` after seeding torch's generator (for dropout)."""
    kwargs = inputs.eager_kwargs if eager and inputs.eager_kwargs is not None else inputs.kwargs
    torch.manual_seed(SEED)
    return fn(*inputs.args, **kwargs)


def assert_runs_like_eager(gm: Any, traced: Traced, name: str) -> None:
    """`gm` returns what eager mode returns, and leaves its inputs as eager mode does."""
    eager_inputs, gm_inputs = example(name), example(name)
    with warnings.catch_warnings():
        # NamesCollideWithInputsAndOps reads `.T` of a 1-d parameter, deprecated in torch.
        warnings.filterwarnings("ignore", message="The use of `x.T`", category=UserWarning)
        expected = run(traced.eager(), eager_inputs, eager=True)
        actual = run(gm, gm_inputs)
    assert_same(actual, expected)
    assert_same(gm_inputs.args, eager_inputs.args, "inputs after the call")
