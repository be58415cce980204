"""Exercise 3.2: lower nn.Linear.

A GraphModule is state (submodules, parameters, buffers) plus code generated
from its graph. Write a pass that replaces each call of an `nn.Linear`
submodule by a call of `torch.nn.functional.linear` on the Linear's own
parameters, so that the Linear submodules can go.

Read first: chapters/03-codegen.md#exercise-32-lower-nnlinear
Grade with: `make grade CH=3`
"""

import torch.nn.functional as F  # noqa: F401  (you will need it)
from torch import nn  # noqa: F401  (you will need it)

from minifx.codegen import GraphModule


# --8<-- [start:given]
def state_name(target: str, name: str) -> str:
    """Where `lower_linear` keeps the parameter `name` of the Linear at `target`.

    A top-level attribute of the GraphModule, so that no path through the
    Linear is left: `state_name("head", "weight") == "head_weight"`,
    `state_name("layer1.fc", "bias") == "layer1_fc_bias"`.
    """
    return f"{target.replace('.', '_')}_{name}"


# --8<-- [end:given]


def lower_linear(gm: GraphModule) -> GraphModule:
    """Call `F.linear` on each `nn.Linear`'s parameters instead of the module; return `gm`.

    Edit `gm` in place. For each `call_module` node whose module
    (`gm.get_submodule(node.target)`) is an `nn.Linear`:

    1. Register the Linear's weight on `gm` as the parameter
       `state_name(node.target, "weight")` with `gm.register_parameter`: the
       same `nn.Parameter` object, not a copy, so that training the
       GraphModule trains the original model. Likewise its bias, as
       `state_name(node.target, "bias")`, if it has one (`bias is not None`).
       Register before inserting the nodes: `get_attr` warns about an
       attribute the module does not have.
    2. Just before the node (`with gm.graph.inserting_before(node):`), and in
       this order, insert a `get_attr` node for the weight, one for the bias
       if there is one, and a `call_function` node of `F.linear` with args
       `(input, weight, bias)`: `input` is the module's input, `node.args[0]`;
       `bias` is the bias's `get_attr` node, or `None` for a Linear without
       bias (which is how `nn.Linear.forward` calls it).
    3. Point the node's users at the new `call_function` node, and erase the
       node.

    A Linear called twice is lowered at both calls (registering the same
    parameter under the same name again is fine). Then make the code follow
    the graph (`gm.recompile()`) and delete the submodules that no node
    uses any more (`gm.delete_all_unused_submodules()`): the Linears go,
    every other submodule stays.

    For `nn.Linear(8, 4)` at `head`, `%head : call_module[target=head](args = (%x,))`
    becomes:

        %head_weight : [num_users=1] = get_attr[target=head_weight]
        %head_bias : [num_users=1] = get_attr[target=head_bias]
        %linear : [num_users=1] = call_function[target=torch._C._nn.linear](args = (%x, %head_weight, %head_bias), kwargs = {})

    (`F.linear` is the builtin `torch._C._nn.linear`; that is the name the
    graph prints.)

    Returns:
        `gm` itself.
    """
    raise NotImplementedError(
        "Exercise 3.2: lower_linear is not written yet; "
        "see chapters/03-codegen.md#exercise-32-lower-nnlinear"
    )
