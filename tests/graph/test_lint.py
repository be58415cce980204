"""Exact error messages of stage 2: every lint invariant and every editing error.

DESIGN.md section 6 asks that errors say what went wrong, where, why and how
to fix it, and that `lint()` messages name the invariant's number. Golden
strings pin each message down, so a change to one is a deliberate decision
(and the book's examples stay true).

Each lint test breaks one invariant of an otherwise valid graph by reaching
into the node, as a buggy pass would, and checks the whole message.
"""

from __future__ import annotations

import operator
import warnings

import pytest
import torch
import torch.fx

from minifx.graph import Graph, Node, map_arg

pytestmark = pytest.mark.ch2


def small_graph():
    """x -> add(x, 1) -> sin -> output."""
    graph = Graph()
    x = graph.placeholder("x")
    add = graph.call_function(operator.add, (x, 1))
    sin = graph.call_function(torch.sin, (add,))
    output = graph.output(sin)
    return graph, x, add, sin, output


def lint_message(graph: Graph) -> str:
    with pytest.raises(RuntimeError) as error:
        graph.lint()
    return str(error.value)


def test_a_valid_graph_passes_lint():
    graph, *_ = small_graph()
    graph.lint()
    Graph().lint()  # the empty graph too


# -- invariant 1: known opcodes and target types -------------------------------------


def test_invariant_1_unknown_opcode():
    graph, _, add, _, _ = small_graph()
    add.op = "call_fn"
    assert lint_message(graph) == (
        "Graph.lint: invariant 1 (known opcodes) is broken at %add: its op is 'call_fn', not one "
        "of placeholder, get_attr, call_function, call_method, call_module, output.\n"
        "How to fix: set node.op to one of the six opcodes."
    )


TARGET_FIX = (
    "How to fix: store the function itself for call_function, and a method name or "
    "attribute path for the other opcodes."
)


def test_invariant_1_call_function_target_must_be_callable():
    graph, _, add, _, _ = small_graph()
    add.target = "add"
    assert lint_message(graph) == (
        "Graph.lint: invariant 1 (known opcodes) is broken at %add: a call_function target must "
        "be a callable, got 'add'.\n" + TARGET_FIX
    )


def test_invariant_1_other_targets_must_be_str():
    graph, x, _, _, _ = small_graph()
    x.target = 3
    assert lint_message(graph) == (
        "Graph.lint: invariant 1 (known opcodes) is broken at %x: a placeholder target must be "
        "a str, got 3.\n" + TARGET_FIX
    )


def test_invariant_1_call_method_target_must_not_be_a_function():
    graph, x, _, sin, output = small_graph()
    with graph.inserting_before(output):
        relu = graph.call_method("relu", (sin,))
    relu.target = operator.neg
    assert lint_message(graph) == (
        "Graph.lint: invariant 1 (known opcodes) is broken at %relu: a call_method target must "
        "be a str, got <built-in function neg>.\n" + TARGET_FIX
    )


# -- invariant 2: a well-linked list ------------------------------------------------------

LINK_FIX = (
    "How to fix: edit the list only with graph methods (create_node, erase_node, "
    "node.prepend/append), never by setting _prev/_next or node.graph."
)


def test_invariant_2_next_prev_mismatch():
    graph, _, add, _, output = small_graph()
    add._next = output  # skips %sin forwards, but not backwards
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %add: node.next.prev or node.prev.next is not "
        "the node itself, so walking forwards and backwards disagree.\n" + LINK_FIX
    )


def test_invariant_2_a_wrong_prev_of_the_first_node_is_caught():
    # The sentinel's own link must be checked too: with x.prev pointing at
    # %add, reversed(graph.nodes) would walk x, add, x, add, ... for ever.
    graph, x, add, _, _ = small_graph()
    x._prev = add
    assert "invariant 2 (a well-linked list)" in lint_message(graph)


def test_invariant_2_node_of_another_graph():
    graph, _, add, _, _ = small_graph()
    add.graph = Graph()
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %add: it belongs to another "
        "graph.\nHow to fix: copy nodes between graphs with graph.node_copy(node, arg_transform)."
    )


def test_invariant_2_erased_but_linked():
    graph, _, _, sin, _ = small_graph()
    sin._erased = True
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %sin: it was erased but is "
        "still linked.\n" + LINK_FIX
    )


def test_invariant_2_first_node_linked_to_the_last():
    graph, x, _, _, output = small_graph()
    output._next, x._prev = x, output  # consistent links, but the root is never reached
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %x: it is the first node, "
        "yet node.prev is %output, not the start of the list, so walking forwards and "
        "backwards disagree.\n" + LINK_FIX
    )


def test_invariant_2_cycle():
    graph, x, _, _, output = small_graph()
    output._next = x  # forwards, the list loops back to %x instead of ending
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %x: walking forwards came "
        "back to it after %output: the list has a cycle.\n" + LINK_FIX
    )


def test_invariant_2_a_node_skipped_forwards():
    # %x's next skips %add, whose own links still look right from %add's side.
    graph, x, add, sin, output = small_graph()
    x._next = sin
    assert lint_message(graph) == (
        "Graph.lint: invariant 2 (a well-linked list) is broken at %x: node.next.prev or "
        "node.prev.next is not the node itself, so walking forwards and backwards "
        "disagree.\n" + LINK_FIX
    )


def test_invariant_2_a_node_the_graph_did_not_create_is_named():
    # A Node made directly and spliced in: the message should blame that node,
    # not a later node whose checks it upsets.
    graph, x, _, _, output = small_graph()
    stray = Node(graph, "stray", "call_function", torch.relu, (x,), {})
    output.prepend(stray)
    message = lint_message(graph)
    assert message.startswith("Graph.lint: invariant 2 (a well-linked list) is broken at %stray: ")


# -- invariant 3: unique names -----------------------------------------------------------------


def test_invariant_3_duplicate_name():
    graph, _, _, sin, _ = small_graph()
    sin.name = "add"
    assert lint_message(graph) == (
        "Graph.lint: invariant 3 (unique names) is broken at %add: an earlier node is also named "
        "'add', so generated code would overwrite one value with the other.\n"
        "How to fix: let the graph choose names (create_node(name=...) makes them unique) "
        "instead of assigning node.name."
    )


# -- invariant 4: inputs come first --------------------------------------------------------


def test_invariant_4_use_before_definition():
    graph, _, add, sin, _ = small_graph()
    add.prepend(sin)
    assert lint_message(graph) == (
        "Graph.lint: invariant 4 (inputs come first) is broken at %sin: it uses %add, which was "
        "used before it has been defined: it comes later in the graph (or was erased).\n"
        "How to fix: move %add before %sin (node.prepend) or insert %sin after it."
    )


def test_invariant_4_use_of_an_erased_node():
    graph, x, _, _, output = small_graph()
    cos = graph.call_function(torch.cos, (x,))
    graph.erase_node(cos)
    with graph.inserting_before(output):
        graph.call_function(torch.neg, (cos,))
    assert lint_message(graph) == (
        "Graph.lint: invariant 4 (inputs come first) is broken at %neg: it uses %cos, which was "
        "used before it has been defined: it comes later in the graph (or was erased).\n"
        "How to fix: move %cos before %neg (node.prepend) or insert %neg after it."
    )


def test_invariant_4_input_from_another_graph():
    graph, _, add, _, _ = small_graph()
    other = Graph()
    add.args = (other.placeholder("y"), 1)
    assert lint_message(graph) == (
        "Graph.lint: invariant 4 (inputs come first) is broken at %add: it uses %y, which does not "
        "belong to this Graph (it is a node of another graph).\nHow to fix: when copying nodes from another graph, map their inputs: "
        "graph.node_copy(node, lambda n: val_map[n])."
    )


def test_invariant_4_is_reported_before_5_at_the_same_node():
    # lint checks both rules in one loop over the inputs; the lower number still wins
    graph = Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    add = graph.call_function(operator.add, (x, y))
    graph.output(add)
    x.users.pop(add)  # 5 broken at %add's first input
    add.append(y)  # 4 broken at its second
    assert lint_message(graph).startswith(
        "Graph.lint: invariant 4 (inputs come first) is broken at %add: it uses %y, which was "
        "used before it has been defined"
    )


# -- invariant 5: use-def lists agree ------------------------------------------------------

USE_DEF_FIX = (
    "How to fix: change arguments only by assigning node.args / node.kwargs (or "
    "update_arg, replace_input_with), which keeps users and inputs in step; never edit "
    "node.users."
)


def test_invariant_5_missing_from_users():
    graph, x, add, _, _ = small_graph()
    x.users.pop(add)
    assert lint_message(graph) == (
        "Graph.lint: invariant 5 (use-def lists agree) is broken at %add: it uses %x, but is "
        "missing from %x.users.\n" + USE_DEF_FIX
    )


def test_invariant_5_all_input_nodes_out_of_date():
    graph, _, add, _, _ = small_graph()
    add._input_nodes.clear()
    assert lint_message(graph) == (
        "Graph.lint: invariant 5 (use-def lists agree) is broken at %add: its arguments use [%x] "
        "but all_input_nodes is [].\n" + USE_DEF_FIX
    )


def test_invariant_5_a_user_that_does_not_use_the_node():
    graph, x, _, sin, _ = small_graph()
    x.users[sin] = None
    assert lint_message(graph) == (
        "Graph.lint: invariant 5 (use-def lists agree) is broken at %x: %sin is listed among its "
        "users but does not use it.\n" + USE_DEF_FIX
    )


# -- invariant 6: one output ---------------------------------------------------------------


def test_invariant_6_two_outputs():
    graph, _, add, _, _ = small_graph()
    graph.output(add)
    assert lint_message(graph) == (
        "Graph.lint: invariant 6 (one output) is broken at %output_1: the graph has 2 output "
        "nodes; a program returns once.\nHow to fix: erase the extra output nodes, or return a "
        "tuple from a single graph.output((a, b))."
    )


# -- invariant 7: targets exist on the owning module ---------------------------------------


def test_invariant_7_missing_attribute():
    graph, _, _, _, output = small_graph()
    with graph.inserting_before(output):
        graph.get_attr("layer.weight")  # no owning module yet, so no warning
    graph.owning_module = torch.nn.Module()
    assert lint_message(graph) == (
        "Graph.lint: invariant 7 (targets exist) is broken at %layer_weight: the owning module "
        "has no attribute 'layer.weight'.\nHow to fix: add it to the module (setattr, "
        "add_submodule) or fix the node's target."
    )


def test_invariant_7_call_module_of_something_that_is_not_a_module():
    root = torch.nn.Module()
    root.w = torch.nn.Parameter(torch.ones(1))
    graph, x, _, _, output = small_graph()
    graph.owning_module = root
    with graph.inserting_before(output):
        graph.call_module("w", (x,))
    assert lint_message(graph) == (
        "Graph.lint: invariant 7 (targets exist) is broken at %w: 'w' is not an nn.Module, so it "
        "cannot be called as a module.\nHow to fix: use get_attr to read it and call_function to "
        "compute with it."
    )


def test_invariant_7_holds_for_existing_targets():
    root = torch.nn.Module()
    root.layer = torch.nn.Linear(1, 1)
    graph, x, _, _, output = small_graph()
    graph.owning_module = root
    with graph.inserting_before(output):
        graph.call_module("layer", (graph.get_attr("layer.weight"),))
    graph.lint()


def test_lint_reports_the_lowest_broken_invariant_first():
    # Both 3 and 4 are broken; the list is checked in the order of the numbers.
    graph, _, add, sin, _ = small_graph()
    add.prepend(sin)
    sin.name = "x"
    assert lint_message(graph).startswith("Graph.lint: invariant 3 ")


# -- errors of the editing API -------------------------------------------------------------


def test_erase_node_with_users():
    graph, _, add, _, _ = small_graph()
    with pytest.raises(RuntimeError) as error:
        graph.erase_node(add)
    assert str(error.value) == (
        "tried to erase %add but it still had 1 users in the graph (%sin), which would be left "
        "reading a value "
        "that no longer exists. First make them use another value "
        "(%add.replace_all_uses_with(new)) or erase them."
    )


def test_erase_node_with_several_users_names_them_all():
    graph, x, _, _, _ = small_graph()
    graph.call_function(torch.cos, (x,))
    with pytest.raises(RuntimeError) as error:
        graph.erase_node(x)
    assert str(error.value).startswith(
        "tried to erase %x but it still had 2 users in the graph (%add, %cos), "
    )


def test_erase_node_of_another_graph():
    graph, _, _, _, output = small_graph()
    # The output has no users, so the only thing wrong is the graph (torch.fx checks
    # users first, and so does minifx).
    with pytest.raises(RuntimeError) as error:
        Graph().erase_node(output)
    assert str(error.value) == (
        "cannot erase %output: it belongs to another graph. Call erase_node on the graph that "
        "holds it (node.graph.erase_node(node))."
    )
    assert len(graph.nodes) == 4


def test_erase_node_twice_warns():
    graph, x, _, _, _ = small_graph()
    cos = graph.call_function(torch.cos, (x,))
    graph.erase_node(cos)
    with pytest.warns(UserWarning) as record:
        graph.erase_node(cos)
    assert [str(w.message) for w in record] == ["erase_node(%cos): the node was already erased"]
    assert record[0].filename == __file__  # the warning points at the caller


@pytest.mark.parametrize(
    "op, target, expected",
    [
        (
            "call_fn",
            "x",
            "cannot create node %x: unknown opcode 'call_fn'. A node's op is one of placeholder, "
            "get_attr, call_function, call_method, call_module, output.",
        ),
        (
            "call_function",
            "relu",
            "cannot create node %relu: a call_function target must be callable, got 'relu' of type "
            "str. Pass the function itself (torch.relu), not its name; names are for call_method "
            "and call_module.",
        ),
        (
            "call_method",
            operator.neg,
            "cannot create node %neg: a call_method target must be a str, got <built-in function "
            "neg> of type builtin_function_or_method. For a function, use op='call_function'.",
        ),
        (
            "get_attr",
            3,
            "cannot create node %_3: a get_attr target must be a str, got 3 of type int. For a "
            "function, use op='call_function'.",
        ),
    ],
    ids=["unknown-op", "call_function-str", "call_method-callable", "get_attr-int"],
)
def test_create_node_errors(op, target, expected):
    graph = Graph()
    with pytest.raises(ValueError) as error:
        graph.create_node(op, target)
    assert str(error.value) == expected
    assert len(graph.nodes) == 0  # nothing was inserted


@pytest.mark.parametrize("method", ["inserting_before", "inserting_after"])
def test_inserting_next_to_a_node_of_another_graph(method):
    _, _, add, _, _ = small_graph()
    graph = Graph()
    with pytest.raises(ValueError) as error:
        getattr(graph, method)(add)
    assert str(error.value) == (
        f"{method}(%add): the node belongs to another graph, so new nodes cannot be inserted "
        "next to it here. Pass a node of this graph."
    )
    graph.placeholder("y")  # the insertion point did not move
    assert [n.name for n in graph.nodes] == ["y"]


MOVE_ACROSS_GRAPHS = (
    "cannot move %y next to %{anchor}: they belong to different graphs. Copy it into this "
    "graph with graph.node_copy(node, arg_transform) instead."
)


def test_prepend_across_graphs():
    graph, x, _, _, _ = small_graph()
    y = Graph().placeholder("y")
    with pytest.raises(ValueError) as error:
        x.prepend(y)
    assert str(error.value) == MOVE_ACROSS_GRAPHS.format(anchor="x")
    assert len(graph.nodes) == 4 and y.graph is not graph


def test_map_arg_with_no_callable_is_torch_fx_s_assertion_error():
    with pytest.raises(AssertionError):
        torch.fx.map_arg((), 3)
    with pytest.raises(AssertionError) as error:
        map_arg((), 3)  # refused although `a` holds no node to call it on, as in torch.fx
    assert isinstance(error.value, ValueError)
    assert str(error.value) == (
        "map_arg(a, fn): fn must be a callable, got int 3. Pass the function to apply to each "
        "node, such as lambda n: env[n]."
    )


@pytest.mark.parametrize("method", ["prepend", "append"])
def test_moving_what_is_no_node_is_a_type_error_as_in_torch_fx(method):
    theirs = torch.fx.Graph().placeholder("x")
    with pytest.raises(TypeError):
        getattr(theirs, method)(1)
    graph, x, _, _, _ = small_graph()
    with pytest.raises(TypeError) as error:
        getattr(x, method)(1)
    assert str(error.value) == (
        "cannot move 1 next to %x: prepend and append move a Node of the graph (got int). "
        "To add a new node there, use graph.inserting_after(%x) and graph.call_function "
        "(or create_node)."
    )
    assert [n.name for n in graph.nodes] == ["x", "add", "sin", "output"]


@pytest.mark.parametrize("anchor", ["x", "output"])
def test_append_across_graphs_names_the_node_appended_to(anchor):
    # x.append(y) must speak of %x, the node the user called, not of x.next
    # (or of the nameless sentinel after the output).
    graph, *_ = small_graph()
    node = next(n for n in graph.nodes if n.name == anchor)
    y = Graph().placeholder("y")
    with pytest.raises(ValueError) as error:
        node.append(y)
    assert str(error.value) == MOVE_ACROSS_GRAPHS.format(anchor=anchor)


def test_replace_all_uses_with_propagate_meta_onto_a_node_with_meta():
    graph, x, add, _, _ = small_graph()
    add.meta["val"] = 1
    x.meta.update(b=2, a=1)
    with pytest.raises(ValueError) as error:
        add.replace_all_uses_with(x, propagate_meta=True)
    assert str(error.value) == (
        "replace_all_uses_with(%x, propagate_meta=True): %x already has meta keys ['a', 'b'], "
        "which copying would overwrite. Clear them first or pass propagate_meta=False."
    )
    # Nothing changed: the check comes before any rewiring.
    assert [n.name for n in add.users] == ["sin"] and x.meta == {"b": 2, "a": 1}


def test_a_stored_list_refuses_in_place_changes():
    graph, x, _, _, _ = small_graph()
    cat = graph.call_function(torch.cat, ([x, x],))
    with pytest.raises(TypeError) as error:
        cat.args[0].append(x)
    assert str(error.value) == (
        "a list inside a Node's args or kwargs cannot be changed in place, because the graph would "
        "not see the change and its use-def lists would go stale. Build a new list and assign it "
        "(new_args = (new_list, *node.args[1:]); node.args = new_args), or use node.update_arg."
    )


@pytest.mark.parametrize("method", ["get_attr", "call_module"])
def test_missing_target_on_the_owning_module_warns_at_the_caller(method):
    graph = Graph(owning_module=torch.nn.Module())
    with pytest.warns(UserWarning) as record:
        getattr(graph, method)("layer.missing")
    # As in torch.fx, get_attr first warns that the module path leads to no submodule.
    first = (
        [
            "Failed to fetch module layer! get_attr('layer.missing') reads 'missing' from 'layer', "
            "which is no submodule of the owning module."
        ]
        if method == "get_attr"
        else []
    )
    assert [str(w.message) for w in record] == [
        *first,
        f"Attempted to insert a {method} Node with no underlying reference in the owning "
        f"GraphModule: {method}('layer.missing') names no attribute of the owning module, so the "
        "graph will fail when it runs. Add it to the module first (add_submodule, setattr).",
    ]
    assert {w.filename for w in record} == {__file__}


def test_get_attr_of_a_plain_attribute_warns():
    root = torch.nn.Module()
    root.scale = torch.ones(2)
    with pytest.warns(UserWarning) as record:
        Graph(owning_module=root).get_attr("scale")
    assert [str(w.message) for w in record] == [
        "Attempted to insert a get_attr Node with no underlying reference in the owning "
        "GraphModule: get_attr('scale') names a plain Tensor, not a parameter, buffer or "
        "submodule. Register it (register_buffer, nn.Parameter, add_submodule) so that copies "
        "and state_dict keep it."
    ]


def test_existing_targets_do_not_warn():
    root = torch.nn.Module()
    root.layer = torch.nn.Linear(1, 1)
    graph = Graph(owning_module=root)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        graph.get_attr("layer.weight")
        graph.call_module("layer", ())


def test_invariant_4_a_node_that_uses_itself():
    graph, _, add, _, _ = small_graph()
    add.args = (add, 1)
    assert lint_message(graph) == (
        "Graph.lint: invariant 4 (inputs come first) is broken at %add: it uses itself, so its "
        "value would be needed before it is computed.\n"
        "How to fix: give %add the node it should read instead (node.replace_input_with)."
    )
