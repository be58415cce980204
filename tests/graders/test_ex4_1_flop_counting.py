"""Grader for exercise 4.1: FLOP counting.

Expected values are golden: the FLOPs of each node, written below from the
shapes of the models and inputs below (2 FLOPs per multiply-add, bias adds not
counted); they are what `torch.utils.flop_counter.FlopCounterMode` counts on
the eager models. The exercise asks for a counter written by hand, so a
solution that hands the work to FlopCounterMode (or its formulas) fails every
test, whether it names them in its source or reaches them at run time.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
import torch.utils.flop_counter as flop_counter
from torch import nn

from minifx.codegen import GraphModule, symbolic_trace
from tests.graders.support import (
    Delegated,
    describe_error,
    error_line,
    explain,
    oracle_uses,
    refusing,
    replace_for_student,
    safe_repr,
    tensors_close,
)

pytestmark = pytest.mark.ch4

SEE = "chapters/04-interpreter.md#exercise-41-flop-counting"


# torch's FLOP counting: the class, its module, its registry, and its formulas.
ORACLE = (
    "FlopCounterMode",
    "_FlopCounterMode",
    "flop_counter",
    "flop_registry",
    "register_flop_formula",
    "mm_flop",
    "bmm_flop",
    "addmm_flop",
    "baddbmm_flop",
    "conv_flop",
    "conv_flop_count",
)
FORMULAS = ("mm_flop", "bmm_flop", "addmm_flop", "baddbmm_flop", "conv_flop", "conv_flop_count")


@pytest.fixture
def ex(impl, monkeypatch):
    """The module under test, with torch's FLOP counting replaced by stand-ins that refuse."""
    module = impl.load("ch4_flop_counting")
    monkeypatch.setattr(flop_counter.FlopCounterMode, "__init__", refusing("FlopCounterMode"))
    for name in FORMULAS:
        replace_for_student(monkeypatch, flop_counter, name, refusing(name), module)
    return module


# --- the golden counts, and the wrong counts that plausible mistakes give ---------------

HALF = "2 FLOPs per multiply-add: count 2 * output.numel() * K, not output.numel() * K."
BIAS = "the bias add is not counted (FlopCounterMode's rule): 2 * output.numel() * K, no more."
OUT_FEATURES = (
    "K is in_features, weight.shape[1] (the weight is out_features × in_features); "
    "weight.shape[0] is out_features."
)
LEADING = (
    "output.numel() counts every leading dimension of the input, not only the first: "
    "count the output's elements."
)
GROUPS = (
    "a grouped conv's filters each see in_channels / groups channels: use "
    "conv2d_flops(output, weight), which counts weight[0].numel()."
)
STRIDE = (
    "count the output's elements, output.numel(): stride changes how many there are, "
    "so the input's spatial size is not the output's."
)
K_COLUMNS = (
    "K is a.shape[-1], the length of each dot product; b.shape[-1] is the number of "
    "columns of the result."
)
K_BATCH = (
    "K is a.shape[-1]: for a batched b, b.shape[0] is a batch dimension, not the length "
    "of the dot product."
)
BATCH = (
    "output.numel() counts the batch dimensions too, broadcast ones included: a batched "
    "matmul computes one dot product per output element."
)
MISSED = {
    "module": "a call_module node of an nn.Linear or nn.Conv2d counts too: its weight is the "
    "submodule's, self.fetch_attr(n.target).weight.",
    "@": "`x @ w` is a call_function node whose target is operator.matmul (in MATMUL_FUNCTIONS).",
    "method": "`x.mm(w)` and `x.matmul(w)` are call_method nodes: their target is a string in "
    "MATMUL_METHODS.",
    "function": "torch.mm, torch.bmm and torch.matmul are call_function nodes whose target is in "
    "MATMUL_FUNCTIONS.",
    "F.linear": "F.linear is a call_function node (target F.linear): K = weight.shape[1], the "
    "weight being args[1].",
    "F.conv2d": "F.conv2d is a call_function node (target F.conv2d): conv2d_flops(output, "
    "weight), the weight being args[1].",
    "keyword": "the weight may be passed by keyword, as in F.linear(x, weight=w): take "
    "kwargs['weight'] when args has no second item.",
}


@dataclass(frozen=True)
class Count:
    """A counted node: its FLOPs, the hint when it counts 0, and wrong counts with hints."""

    flops: int
    missed: str
    wrong: tuple[tuple[int, str], ...]


def _linear(numel: int, k: int, n: int, kind: str, rows: int | None = None) -> Count:
    """A linear of output numel `numel`, in_features k, out_features n; `rows`: the input's
    first dimension, where other leading dimensions make numel more than rows * n."""
    right = 2 * numel * k
    wrong = [
        (numel * k, HALF),
        (2 * numel * n, OUT_FEATURES),
        (right + numel, BIAS),
        (right + 2 * numel, BIAS),
    ]
    wrong += [(2 * rows * n * k, LEADING)] if rows else []
    return Count(right, MISSED[kind], tuple((w, h) for w, h in wrong if w != right))


def _conv(numel: int, k: int, groups: int, shrink: int, kind: str) -> Count:
    """A conv of output numel `numel` and filter numel k; `shrink`: input pixels per output
    pixel (stride 2: 4)."""
    right = 2 * numel * k
    wrong = [
        (numel * k, HALF),
        (right * groups, GROUPS),
        (right * shrink, STRIDE),
        (right + numel, BIAS),
        (right + 2 * numel, BIAS),
    ]
    return Count(right, MISSED[kind], tuple((w, h) for w, h in wrong if w != right))


def _matmul(numel: int, k: int, n: int, b0: int, batch: int, kind: str) -> Count:
    """a @ b with output numel `numel`, K = k, b.shape[-1] = n, b.shape[0] = b0, and `batch`
    output matrices."""
    right = 2 * numel * k
    wrong = [
        (numel * k, HALF),
        (2 * numel * n, K_COLUMNS),
        (2 * numel * b0, K_BATCH),
        (right // batch, BATCH),
    ]
    return Count(right, MISSED[kind], tuple((w, h) for w, h in wrong if w != right))


# Per model: its input shapes, and its counted nodes (every other node counts 0).
EXPECTED = {
    "mlp": ([(4, 16)], {
        "fc1": _linear(4 * 32, 16, 32, "module"),       # (4, 16) -> (4, 32)
        "fc2": _linear(4 * 8, 32, 8, "module"),        # (4, 32) -> (4, 8), no bias
    }),
    "cnn": ([(2, 3, 16, 16)], {
        "stem": _conv(2 * 8 * 8 * 8, 3 * 3 * 3, 1, 4, "module"),  # stride 2: 16x16 -> 8x8
        "grouped": _conv(2 * 8 * 8 * 8, 2 * 3 * 3, 4, 1, "module"),  # 8 / 4 groups = 2
        "conv2d": _conv(2 * 4 * 4 * 4, 8, 1, 4, "F.conv2d"),        # 1x1, stride 2: -> 4x4
        "head": _linear(2 * 10, 64, 10, "module"),
    }),
    "matmuls": ([(3, 4, 8), (2, 1, 8, 4)], {
        "matmul": _matmul(3 * 4 * 5, 8, 5, 8, 3, "@"),          # (3, 4, 8) @ (8, 5)
        "bmm": _matmul(3 * 8 * 8, 4, 8, 3, 3, "function"),       # (3, 8, 4) @ (3, 4, 8)
        "matmul_1": _matmul(2 * 3 * 8 * 8, 4, 8, 3, 6, "method"),  # (2, 1, 8, 4) @ (3, 4, 8)
        "mm": _matmul(4 * 5, 8, 5, 8, 1, "method"),              # (4, 8) @ (8, 5)
        "mm_1": _matmul(4 * 5, 8, 5, 8, 1, "function"),
        "matmul_2": _matmul(3 * 5 * 8, 4, 8, 3, 3, "function"),  # (3, 5, 4) @ (3, 4, 8)
        "linear": _linear(3 * 5 * 7, 8, 7, "F.linear", rows=3),  # (3, 5, 8) -> (3, 5, 7)
    }),
    "no counted op": ([(5, 6)], {}),
    "keywords": ([(2, 2, 4, 4)], {
        "conv2d": _conv(2 * 3 * 4 * 4, 2 * 3 * 3, 1, 1, "keyword"),  # weight=, padding=1
        "linear": _linear(2 * 5, 48, 5, "keyword"),                  # weight=
    }),
}  # fmt: skip

# The total FLOPs of each model on its inputs: FlopCounterMode's count on the eager model.
TOTALS = {"mlp": 6144, "cnn": 96768, "matmuls": 8848, "no counted op": 0, "keywords": 4416}


# --- models ---------------------------------------------------------------------------


class MLP(nn.Module):
    """nn.Linear with and without bias, around a relu (call_module nodes)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    """Convolutions with stride, padding, dilation and groups, as modules and as F.conv2d."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)  # 16x16 -> 8x8
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=4, bias=False)  # 8x8
        self.weight = nn.Parameter(torch.randn(4, 8, 1, 1) / 3)  # 8x8 -> 4x4
        self.head = nn.Linear(4 * 4 * 4, 10)

    def forward(self, x):
        y = self.stem(x).relu()
        y = self.grouped(y) + y
        y = F.conv2d(y, self.weight, stride=2)
        return self.head(y.flatten(1))


class Matmuls(nn.Module):
    """Every spelling of a matmul: @, torch.bmm, x.matmul (broadcast), x.mm, torch.mm,
    torch.matmul, F.linear on a batch of matrices."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 5) / 3)
        self.proj = nn.Parameter(torch.randn(7, 8) / 3)
        self.bias = nn.Parameter(torch.randn(7))

    def forward(self, x, y):  # x: (3, 4, 8), y: (2, 1, 8, 4)
        a = x @ self.w  # (3, 4, 5)
        b = torch.bmm(x.transpose(1, 2), x)  # (3, 8, 8)
        c = y.matmul(x)  # (2, 3, 8, 8): batch dims broadcast
        d = x[0].mm(self.w) + torch.mm(x[1], self.w)  # (4, 5)
        e = torch.matmul(a.transpose(1, 2), x)  # (3, 5, 8)
        f = F.linear(e, self.proj, bias=self.bias)  # (3, 5, 7)
        return b.sum() + c.sum() + d.sum() + f.sum()


class NoCountedOp(nn.Module):
    """Elementwise ops, a reduction, LayerNorm and ReLU modules: nothing counted."""

    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(6)
        self.act = nn.ReLU()

    def forward(self, x):
        return torch.softmax(self.act(self.norm(x * 2 + 1)), dim=-1).sum(0)


class Keywords(nn.Module):
    """The weight passed by keyword: F.conv2d(x, weight=w, padding=1), F.linear(x, weight=w)."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(3, 2, 3, 3) / 3)
        self.proj = nn.Parameter(torch.randn(5, 48) / 3)

    def forward(self, x):  # (2, 2, 4, 4)
        y = F.conv2d(x, weight=self.w, padding=1)  # (2, 3, 4, 4)
        return F.linear(y.flatten(1), weight=self.proj)  # (2, 5)


MODELS = {
    "mlp": MLP,
    "cnn": SmallCNN,
    "matmuls": Matmuls,
    "no counted op": NoCountedOp,
    "keywords": Keywords,
}


def _inputs(case: str, device: str = "cpu") -> tuple:
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator).to(device) for shape in EXPECTED[case][0])


# --- running the student's counter ----------------------------------------------------


def _no_oracle(ex) -> None:
    """Fail when the student's source names torch's FLOP counting."""
    uses = oracle_uses(ex, ORACLE)
    if uses:
        line, name = uses[0].split(": ")
        pytest.fail(
            explain(
                "a FlopCounter that counts the FLOPs itself, from the sizes of the tensors",
                f"{Path(ex.__file__).parent.name}/{Path(ex.__file__).name} uses {', '.join(uses)}",
                f"the exercise asks you to count FLOPs yourself; your code uses {name} at {line}. "
                "Read the sizes off the argument and output tensors instead.",
                SEE,
            ),
            pytrace=False,
        )


def _not_values(counter, kind: bool = False) -> str:
    """`%name` of a node whose value in the counter's env is no tensor but a count or None."""
    env = getattr(counter, "env", None) or {}
    for node, value in env.items():
        if node.op != "output" and (value is None or type(value) is int):  # all are tensors
            return type(value).__name__ if kind else f"%{node.name}"
    return ""


def _run(ex, case: str, inputs: tuple | None = None, device: str = "cpu", model=None):
    """(model, counter, output): the student's FlopCounter, run on the model's GraphModule."""
    _no_oracle(ex)
    torch.manual_seed(0)
    model = model if model is not None else MODELS[case]().to(device)
    inputs = inputs if inputs is not None else _inputs(case, device)
    gm = model if isinstance(model, GraphModule) else symbolic_trace(model)
    counter = None
    try:
        counter = ex.FlopCounter(gm)
        output = counter.run(*inputs)
    except Exception as raised:  # student code: any error becomes a message
        error = raised
    else:
        return model, counter, output
    if isinstance(error, Delegated):
        where = error_line(error)
        line = where.split(":")[1] if where.count(":") >= 2 else "?"
        pytest.fail(
            explain(
                "a FlopCounter that counts the FLOPs itself, from the sizes of the tensors",
                f"{error} called at {where}",
                f"the exercise asks you to count FLOPs yourself; your code uses {error} at line "
                f"{line}. Read the sizes off the argument and output tensors instead.",
                SEE,
            ),
            pytrace=False,
        )
    if isinstance(error, NotImplementedError):
        hint = "write run_node and node_flops: the stub still raises NotImplementedError."
    elif case == "keywords" and isinstance(error, (IndexError, KeyError)):
        hint = MISSED["keyword"]
    elif _not_values(counter):
        hint = (
            "run_node must return the node's value, the output of the opcode method: it "
            f"returned {_not_values(counter, kind=True)} for {_not_values(counter)}, and the "
            "next node ran on that."
        )
    else:
        hint = "your code raised at the line shown."
    pytest.fail(
        explain(f"FlopCounter(gm).run(*inputs) runs ({case})", describe_error(error), hint, SEE),
        pytrace=False,
    )


def _counts(counter) -> dict:
    """The counter's flops_by_node, once it is known to be a plain dict of str -> int.

    Compared only then: an object of graded code's (or one such as `unittest.mock.ANY`)
    could answer `==` with True for any dict, and `sum()` of its values with anything.
    """
    got = getattr(counter, "flops_by_node", None)
    if type(got) is dict and all(type(k) is str and type(v) is int for k, v in got.items()):
        return got
    floats = type(got) is dict and any(type(v) is float for v in got.values())
    pytest.fail(
        explain(
            "flops_by_node: a dict, node name (a str) -> FLOPs (an int)",
            f"a {type(got).__name__}" if type(got) is not dict else _not_plain(got),
            "keep the given flops_by_node dict and set an entry per node, an int."
            + (FLOAT_HINT if floats else ""),
            SEE,
        ),
        pytrace=False,
    )


FLOAT_HINT = (
    " A float comes from a float in the product (2.0 * ...) or a division with /:"
    " multiply ints, 2 * output.numel() * K, and divide with // if you must."
)


def _not_plain(got: dict) -> str:
    key, value = next((k, v) for k, v in got.items() if type(k) is not str or type(v) is not int)
    # A float's repr is Python's own; any other value's repr could be graded code's.
    shown = f"{value!r}, a float" if type(value) is float else type(value).__name__
    return f"the entry {key!r}: {shown}"[:300]


def _check_counts(
    ex, case: str, counted: dict | None = None, inputs=None, what: str = "", model=None
):
    """Run the counter; fail, with the hint for the first wrong count, unless every node of
    the graph has its FLOPs in flops_by_node."""
    model, counter, _ = _run(ex, case, inputs, model=model)
    counted = counted if counted is not None else EXPECTED[case][1]
    gm = model if isinstance(model, GraphModule) else symbolic_trace(model)
    nodes = {node.name: node for node in gm.graph.nodes}
    want = {name: counted[name].flops if name in counted else 0 for name in nodes}
    got = _counts(counter)
    if got == want:
        return counter
    wrong = [
        f"%{name}: {got.get(name, 'missing')} (expected {flops})"
        for name, flops in want.items()
        if got.get(name) != flops
    ]
    wrong += [f"{name!r} is no node's name" for name in got if name not in want]
    pytest.fail(
        explain(
            f"flops_by_node of the {case} model{what}: an entry for every node, "
            f"{ {name: c.flops for name, c in counted.items()} or 'all 0' }",
            "; ".join(wrong[:4]) + ("; ..." if len(wrong) > 4 else ""),
            _hint(got, want, counted, nodes),
            SEE,
        ),
        pytrace=False,
    )


def _hint(got: dict, want: dict, counted: dict, nodes: dict) -> str:
    """The hint for the first node whose count is wrong."""
    strangers = [name for name in got if name not in want]
    if strangers:
        return f"key flops_by_node by the node's name, n.name (a str), not {strangers[0]!r}."
    missing = [name for name in want if name not in got]
    if missing:
        return (
            f"every node gets an entry, 0 for most (%{missing[0]} has none): set "
            "self.flops_by_node[n.name] in run_node for every node."
        )
    for name, flops in want.items():
        if got[name] == flops:
            continue
        if name not in counted:
            node = nodes[name]
            if node.op == "call_module":
                return (
                    f"only nn.Linear and nn.Conv2d submodules count: %{name} is a "
                    f"call_module node of another module, and counts 0."
                )
            return (
                f"%{name} ({node.op} {getattr(node.target, '__name__', node.target)}) is no "
                "matmul, linear or conv: it counts 0."
            )
        count = counted[name]
        if got[name] == 0:
            return count.missed
        for value, hint in count.wrong:
            if got[name] == value:
                return hint
        return (
            f"%{name} counts {got[name]}, not {flops}: each counted op costs 2 * "
            "output.numel() * K FLOPs, K being the length of one dot product."
        )
    return "compare the counts node by node."


# --- tests ----------------------------------------------------------------------------


def test_counts_flops_itself(ex):
    _no_oracle(ex)
    _run(ex, "mlp")


def test_linear_modules_per_node(ex):
    _check_counts(ex, "mlp")


def test_convolutions_per_node(ex):
    _check_counts(ex, "cnn")


def test_matmul_spellings_per_node(ex):
    _check_counts(ex, "matmuls")


def test_no_counted_op_counts_zero(ex):
    _check_counts(ex, "no counted op")


def test_weight_passed_by_keyword(ex):
    _check_counts(ex, "keywords")


def test_linear_without_bias_on_extra_leading_dims(ex):
    x = torch.randn(2, 3, 5, 16)  # 30 rows of 16
    counted = {
        "fc1": _linear(30 * 32, 16, 32, "module", rows=2),
        "fc2": _linear(30 * 8, 32, 8, "module", rows=2),
    }
    _check_counts(ex, "mlp", counted, (x,), " on an input of shape (2, 3, 5, 16)")


@pytest.mark.parametrize("case", list(MODELS))
def test_total(ex, case):
    _, counter, _ = _run(ex, case)
    counts = _counts(counter)
    got = sum(counts.values())  # the given total_flops, computed here
    # An empty flops_by_node (nothing counted) sums to the 0 of a model with no counted op.
    if got != TOTALS[case] or not counts:
        _check_counts(ex, case)  # fails with the hint for the first wrong node
        pytest.fail(
            explain(
                f"the FLOPs of the {case} model, summed over flops_by_node: {TOTALS[case]}",
                repr(got),
                "compare the counts node by node.",
                SEE,
            ),
            pytrace=False,
        )


def test_counts_follow_the_input_shapes(ex):
    gm = symbolic_trace(MLP())  # one GraphModule, a new counter for each run
    batches = (1, 4, 10)
    inputs = [(torch.randn(batch, 16),) for batch in batches]
    counts = [sum(_counts(_run(ex, "mlp", x, model=gm)[1]).values()) for x in inputs]
    want = [batch * 2 * (32 * 16 + 8 * 32) for batch in batches]
    if counts == want:
        return
    if len(set(counts)) == 1 and counts[0] in want:
        pytest.fail(
            explain(
                f"one GraphModule, run on batches of 1, 4 and 10 rows: {want}",
                repr(counts),
                "the count did not follow the batch: read the sizes "
                "off the values of this run (the arguments and the output), not off "
                "what an earlier run left behind.",
                SEE,
            ),
            pytrace=False,
        )
    for batch, x in zip(batches, inputs):  # fails with the hint for the first wrong node
        _check_counts(
            ex,
            "mlp",
            {
                "fc1": _linear(batch * 32, 16, 32, "module"),
                "fc2": _linear(batch * 8, 32, 8, "module"),
            },
            x,
            f" on a batch of {batch}",
            model=gm,
        )
    pytest.fail(
        explain(
            f"one GraphModule, run on batches of 1, 4 and 10 rows: {want}",
            repr(counts),
            "compare the counts node by node.",
            SEE,
        ),
        pytrace=False,
    )


def _same(got, want) -> bool:
    return tensors_close(got, want, atol=1e-5) and got.device == want.device


def _difference(got, want: torch.Tensor) -> str:
    if type(got) is not torch.Tensor or got.shape != want.shape:
        return f"{safe_repr(got)}, not a tensor of shape {tuple(want.shape)}"[:300]
    if got.device != want.device:
        return f"a tensor on {got.device}"
    return f"a tensor that differs by up to {(got - want).abs().max().item():.3g}"


@pytest.mark.parametrize("case", list(MODELS))
def test_outputs_are_unchanged(ex, case):
    model, _, got = _run(ex, case)
    want = model(*_inputs(case))
    if not _same(got, want):
        pytest.fail(
            explain(
                f"FlopCounter(gm).run(*inputs) returns exactly what the model returns ({case})",
                _difference(got, want),
                "run_node must return the node's value, the output of the opcode "
                "method, after recording its FLOPs.",
                SEE,
            ),
            pytrace=False,
        )


def test_counts_and_outputs_on_device(ex, device):
    model, counter, got = _run(ex, "cnn", device=device)
    if sum(_counts(counter).values()) != TOTALS["cnn"]:
        _check_counts(ex, "cnn")  # the hint for the first wrong node, where it is wrong on CPU
        pytest.fail(
            explain(
                f"the same FLOPs on {device} as on cpu: {TOTALS['cnn']}",
                repr(sum(counter.flops_by_node.values())),
                "count from shapes, which do not depend on the device.",
                SEE,
            ),
            pytrace=False,
        )
    want = model(*_inputs("cnn", device))
    if not _same(got, want):
        pytest.fail(
            explain(
                f"the eager model's output, on {device}",
                _difference(got, want),
                "run_node must return the node's value, the output of the opcode method.",
                SEE,
            ),
            pytrace=False,
        )
