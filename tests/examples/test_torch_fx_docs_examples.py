"""The scenarios of torch.fx's own documentation, run with torch.fx and with minifx.

minifx promises that `import minifx as fx` runs the programs readers learn from, and readers
try the official examples: those of torch.fx's documentation page (its Markdown source fx.md
and the rendered page with the API docstrings: seeds `003_05df096f8a1570f6.txt` and
`000_ce29c31fa2fe404a.txt`) and of its technical overview (torch/fx/README.md: seed
`001_131acf1d3dac1fce.txt`). Each test runs one of their scenarios, with models written for
it, in both libraries and compares printed graphs, code, node names, outputs and errors.

Scenarios checked elsewhere are not repeated: the neg/sigmoid Interpreter and Transformer,
the `decompose` loop and the hand-written ShapeProp (tests/examples/test_ch4_examples.py),
the `replace_pattern` docstring example (tests/passes/test_subgraph_rewriter.py), `to_folder`
(tests/codegen/test_to_folder.py), retracing a GraphModule (tests/codegen/test_differential.py),
`wrap("len")`, `math.sqrt` and the dead-code example (tests/graph/), and `print_tabular`'s
documented table (tests/graph/test_graph_conveniences.py).

Each test carries the marker of the chapter that builds what it uses (code: 3, Interpreter:
4, `replace_pattern`: 7), so that `pytest -m chN` runs only what exists by chapter N.
"""

from __future__ import annotations

import operator

import pytest
import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

import minifx


def both(scenario):
    """Run `scenario(fx)` with torch.fx and with minifx; return (theirs, ours)."""
    torch.manual_seed(0)
    theirs = scenario(torch.fx)
    torch.manual_seed(0)
    return theirs, scenario(minifx)


def error_type(call) -> type:
    with pytest.raises(Exception) as error:
        call()
    return type(error.value)


class Scaled(nn.Module):
    """A parameter, an operator, a leaf submodule and a method with keywords (the overview)."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.rand(2, 3))
        self.proj = nn.Linear(3, 4)

    def forward(self, x):
        return self.proj(x * self.scale).clamp(min=-0.5, max=0.5)


class ReadsChildWeight(nn.Module):
    """An attribute of a submodule read directly, then reductions (the graph primer)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x):
        return torch.topk(torch.mean(self.fc(x - self.fc.weight).sigmoid(), dim=0), 2)


@pytest.mark.ch3
@pytest.mark.parametrize("model_class", [Scaled, ReadsChildWeight])
def test_overview_and_primer_models_trace_print_and_run_as_in_torch_fx(model_class):
    def scenario(fx):
        model = model_class()
        gm = fx.symbolic_trace(model)
        x = torch.rand(3 if model_class is ReadsChildWeight else 2, 3)
        rows = [(n.op, n.name, str(n.target), str(n.args), str(n.kwargs)) for n in gm.graph.nodes]
        return str(gm.graph), gm.code, rows, gm(x), model(x)

    theirs, ours = both(scenario)
    assert ours[:3] == theirs[:3]
    torch.testing.assert_close(ours[3], theirs[3])
    torch.testing.assert_close(ours[3], ours[4])


@pytest.mark.ch3
def test_retargeting_call_function_nodes_from_a_tracer_graph():
    """Trace with `Tracer().trace`, swap `torch.sub` for `torch.div`, lint, wrap in a module."""

    def scenario(fx):
        model = Difference()
        graph = fx.Tracer().trace(model)
        for node in graph.nodes:
            if node.op == "call_function" and node.target == torch.sub:
                node.target = torch.div
        graph.lint()
        gm = fx.GraphModule(model, graph)
        return type(graph).__name__, gm.code, gm(torch.full((2,), 6.0), torch.full((2,), 3.0))

    theirs, ours = both(scenario)
    assert ours[:2] == theirs[:2]
    assert torch.equal(ours[2], theirs[2]) and torch.equal(ours[2], torch.full((2,), 2.0))


class Difference(nn.Module):
    def forward(self, a, b):
        return torch.sub(a, b)


def append_relu(fx, keep_own_argument: bool):
    """Insert `torch.relu` after the `sub` node and send the node's users to it."""
    gm = fx.symbolic_trace(Difference())
    node = next(n for n in gm.graph.nodes if n.op == "call_function")
    with gm.graph.inserting_after(node):
        relu = gm.graph.call_function(torch.relu, args=(node,))
        node.replace_all_uses_with(relu, lambda user: not keep_own_argument or user is not relu)
    return gm, relu


@pytest.mark.ch3
def test_appending_a_call_with_replace_all_uses_with_also_rewrites_the_new_node():
    """Done literally, the documented recipe makes the new node use itself, in both."""
    for fx in (torch.fx, minifx):
        gm, relu = append_relu(fx, keep_own_argument=False)
        assert relu.args == (relu,)
        assert error_type(gm.graph.lint) is RuntimeError


@pytest.mark.ch3
def test_appending_a_call_that_keeps_its_own_argument():
    def scenario(fx):
        gm, _ = append_relu(fx, keep_own_argument=True)
        gm.graph.lint()
        gm.recompile()
        return str(gm.graph), gm.code, gm(torch.tensor([1.0, 5.0]), torch.tensor([3.0, 2.0]))

    theirs, ours = both(scenario)
    assert ours[:2] == theirs[:2]
    assert torch.equal(ours[2], torch.tensor([0.0, 3.0]))


class Configurable(nn.Module):
    """Static control flow: an `if` on a setting chosen when the module is built."""

    def __init__(self, squash: bool):
        super().__init__()
        self.squash = squash
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        x = self.fc(x)
        if self.squash:
            x = torch.tanh(x)
        return x


@pytest.mark.ch3
@pytest.mark.parametrize("squash", [False, True])
def test_static_control_flow_gives_one_program_per_setting(squash):
    theirs, ours = both(lambda fx: fx.symbolic_trace(Configurable(squash)).code)
    assert ours == theirs
    assert ("tanh" in ours) is squash


def double_unless(x, keep):
    if keep:
        return x
    return x * 2


def halve_if(a, flag):
    if flag == True:  # noqa: E712 - the comparison is what gets recorded and checked
        return a / 2
    return a


@pytest.mark.ch3
def test_dynamic_control_flow_fails_until_concrete_args_fixes_the_flag():
    trace_error = torch.fx.proxy.TraceError
    assert error_type(lambda: torch.fx.symbolic_trace(double_unless)) is trace_error
    assert issubclass(error_type(lambda: minifx.symbolic_trace(double_unless)), trace_error)

    def scenario(fx):
        gm = fx.symbolic_trace(double_unless, concrete_args={"keep": False})
        return str(gm.graph), gm.code, gm(torch.ones(2), False)

    theirs, ours = both(scenario)
    assert ours[:2] == theirs[:2]
    assert torch.equal(ours[2], torch.full((2,), 2.0))


@pytest.mark.ch3
def test_a_specialised_flag_is_checked_when_the_module_runs():
    """The value given in `concrete_args` is asserted at run time: another one fails."""

    def scenario(fx):
        gm = fx.symbolic_trace(halve_if, concrete_args={"flag": True})
        return gm.code, gm(8, True), error_type(lambda: gm(8, False))

    theirs, ours = both(scenario)
    assert ours == theirs
    assert ours[1:] == (4.0, AssertionError)


def total_of(values):
    total = 0
    for value in values.values():
        total += value
    return total


@pytest.mark.ch3
def test_placeholders_inside_a_dict_of_concrete_args():
    def scenario(fx):
        spec = {"values": {"p": fx.PH, "q": fx.PH, "r": fx.PH}}
        gm = fx.symbolic_trace(total_of, concrete_args=spec)
        return str(gm.graph), gm({"p": 10, "q": 20, "r": 5})

    theirs, ours = both(scenario)
    assert ours == theirs
    assert ours[1] == 35


@minifx.wrap
def noise_like(x, n):
    return torch.rand(n)


@torch.fx.wrap
def noise_like_fx(x, n):
    return torch.rand(n)


def noisy(x):
    return x + noise_like(x, 3)


def noisy_fx(x):
    return x + noise_like_fx(x, 3)


@pytest.mark.ch3
def test_a_wrapped_random_constructor_draws_anew_on_every_call():
    """The documented workaround: `rand` behind `wrap` is called, not baked into the trace."""
    theirs, ours = torch.fx.symbolic_trace(noisy_fx), minifx.symbolic_trace(noisy)
    assert str(ours.graph) == str(theirs.graph).replace("noise_like_fx", "noise_like")
    assert ours.code == theirs.code.replace("noise_like_fx", "noise_like").replace(
        "torch.fx._symbolic_trace.wrap", "wrap"
    )
    for gm in (theirs, ours):
        assert not torch.equal(gm(torch.zeros(3)), gm(torch.zeros(3)))


class FunctionalDropout(nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.5, training=self.training)


class ModuleDropout(nn.Module):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(p=0.5)

    def forward(self, x):
        return self.drop(x)


@pytest.mark.ch3
@pytest.mark.parametrize("model_class", [FunctionalDropout, ModuleDropout])
def test_the_training_flag_gotcha(model_class):
    """`self.training` read while tracing is baked in; an `nn.Dropout` leaf still obeys eval()."""

    def scenario(fx):
        gm = fx.symbolic_trace(model_class()).eval()
        x = torch.ones(200)
        return gm.code, torch.equal(gm(x), x)

    theirs, ours = both(scenario)
    assert ours == theirs
    assert ours[1] is (model_class is ModuleDropout)


@pytest.mark.ch3
def test_printed_code_pasted_into_a_subclass_runs_like_the_module():
    """The "print the generated code" recipe: `print(gm)` shows a forward that can be pasted."""

    def scenario(fx):
        gm = fx.symbolic_trace(Scaled())
        return str(gm), gm.code

    theirs, ours = both(scenario)
    assert ours == theirs
    namespace = {"torch": torch}
    exec(ours[1], namespace)  # the pasted forward
    pasted = type("Pasted", (Scaled,), {"forward": namespace["forward"]})()
    gm = minifx.symbolic_trace(pasted)
    x = torch.rand(2, 3)
    assert torch.equal(pasted(x), gm(x))


@pytest.mark.ch3
def test_code_transformers_registered_with_on_generate_code():
    """Replace the transformer, chain onto the current one, and restore it with `with`."""

    def banner(body):
        return ["print('entering')\n", *body]

    def scenario(fx):
        gm = fx.symbolic_trace(Difference())
        codes = []
        gm.graph.on_generate_code(lambda _: banner)
        gm.recompile()
        codes.append(gm.code)
        gm.graph.on_generate_code(lambda current: lambda body: banner(current(body)))
        gm.recompile()
        codes.append(gm.code)
        with gm.graph.on_generate_code(lambda _: None):
            gm.recompile()
            codes.append(gm.code)
        gm.recompile()
        codes.append(gm.code)
        return codes

    theirs, ours = both(scenario)
    assert ours == theirs
    assert [code.count("print('entering')") for code in ours] == [1, 2, 0, 2]


@pytest.mark.ch3
def test_a_proxy_around_a_node_records_into_its_graph():
    """The technical overview: wrap a raw Node in a Proxy and use its operators."""

    def scenario(fx):
        gm = fx.symbolic_trace(Scaled())
        output = next(n for n in gm.graph.nodes if n.op == "output")
        with gm.graph.inserting_before(output):
            result = torch.sigmoid(fx.Proxy(output.args[0]) * 2 - 1)
        output.args = (result.node,)
        gm.recompile()
        return str(gm.graph), gm.code

    theirs, ours = both(scenario)
    assert ours == theirs


@pytest.mark.ch4
def test_an_interpreter_that_keeps_every_value_and_one_on_another_graph():
    """`garbage_collect_values=False` leaves `env` whole; `graph=` runs another graph."""

    def scenario(fx):
        gm = fx.symbolic_trace(Scaled())
        keeping = fx.Interpreter(gm, garbage_collect_values=False)
        keeping.run(torch.rand(2, 3))
        other = fx.Graph()
        x = other.placeholder("x")
        other.output(other.call_function(operator.mul, (x, other.get_attr("scale"))))
        x = torch.rand(2, 3)
        return [n.name for n in keeping.env], fx.Interpreter(gm, graph=other).run(x), x * gm.scale

    theirs, ours = both(scenario)
    assert ours[0] == theirs[0]
    assert torch.equal(ours[1], ours[2])


def negate_plus_relu(x, y):
    return torch.neg(x) + torch.relu(y)


def relu_of_first(x, y):
    return torch.relu(x)


def relu_of_only(x):
    return torch.relu(x)


def uses_the_pattern(a, b):
    return (torch.neg(a) + torch.relu(b)) * 3


@pytest.mark.ch7
def test_a_replacement_takes_the_patterns_parameters_even_unused():
    """The docstring's second rule: the replacement has the pattern's parameters."""

    def scenario(fx):
        gm = fx.symbolic_trace(uses_the_pattern)
        matches = fx.replace_pattern(gm, negate_plus_relu, relu_of_first)
        a, b = torch.tensor([-1.0, 2.0]), torch.tensor([5.0, 5.0])
        return gm.code, len(matches), gm(a, b)

    theirs, ours = both(scenario)
    assert ours[:2] == theirs[:2]
    assert torch.equal(ours[2], torch.tensor([0.0, 6.0]))
    for fx in (torch.fx, minifx):
        gm = fx.symbolic_trace(uses_the_pattern)
        call = lambda: fx.replace_pattern(gm, negate_plus_relu, relu_of_only)  # noqa: E731
        assert issubclass(error_type(call), AssertionError)
