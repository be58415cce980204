"""The plausible wrong answers each grader is built to catch, out of the student release.

Each `Mistake` is the reference solution with one edit (`find` replaced by `replace`),
and `expect` is a phrase of the hint the grader shows for it. `tests/test_grader_mistakes.py`
makes every one, grades it through the grading harness, and checks that the exercise
loses points and that a failure message says `expect`. They live here, with the
solutions, and not in the graders: each `find` is a piece of an answer, and the graders
are public (a student release and the Gradescope autograder carry no `solutions/`).
"""

from tests.graders.support import Mistake

_REGISTER = (
    '        gm.register_parameter(state_name(node.target, "weight"), linear.weight)\n'
    "        if linear.bias is not None:\n"
    '            gm.register_parameter(state_name(node.target, "bias"), linear.bias)\n'
)

_INSERT = (
    "        with graph.inserting_before(node):\n"
    '            weight = graph.get_attr(state_name(node.target, "weight"))\n'
    "            bias = (\n"
    '                graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None\n'
    "            )\n"
    "            call = graph.call_function(F.linear, (node.args[0], weight, bias))\n"
)

_CHECK = (
    "        value = super().run_node(n)\n"
    "        # Checked before the value reaches env: no later node sees it.\n"
    "        if not is_finite(value):\n"
    "            raise NonFiniteError(n)\n"
    "        return value\n"
)

_IS_RELU_BODY = """\
    if node.op == "call_function":
        return node.target in (torch.relu, F.relu)
    if node.op == "call_method":
        return node.target == "relu"
    if node.op == "call_module":
        return isinstance(gm.get_submodule(node.target), nn.ReLU)
    return False
"""


MISTAKES: dict[str, list[Mistake]] = {
    # tests/graders/test_ex0_1_faithful_capture.py
    "0.1": [
        Mistake(
            "only the first input checked",
            "for index, args in enumerate(inputs):",
            "for index, args in enumerate(inputs[:1]):",
            "check every input, not only the first",
        ),
        Mistake(
            "every error taken for a refusal",
            "except TraceError as error:",
            "except Exception as error:",
            "catch only TraceError",
        ),
        Mistake(
            "a failing capture not caught",
            "except Exception:  # the captured program raised",
            "except ZeroDivisionError:  # the captured program raised",
            "catch that and return Verdict('fails', index)",
        ),
        Mistake(
            "the whole message as detail",
            'Verdict("refused", str(error).splitlines()[0])',
            'Verdict("refused", str(error))',
            "the first line of the message only",
        ),
        Mistake(
            "inputs counted from 1",
            'return Verdict("wrong", index)',
            'return Verdict("wrong", index + 1)',
            "counted from 0",
        ),
        Mistake(
            "tensors compared with ==",
            "if not torch.equal(got, want):",
            "if not got == want:",
            "compare with torch.equal",
        ),
        Mistake(
            "output nodes not counted",
            "Counter(node.op for node in gm.graph.nodes)",
            'Counter(node.op for node in gm.graph.nodes if node.op != "output")',
            "output nodes included",
        ),
    ],
    # tests/graders/test_ex1_1_proxy_failure.py
    "1.1": [
        Mistake(
            "condition on each element instead of the sum",
            "where(x.sum() > 0",
            "where(x > 0",
            "not the sign of each element",
        ),
        Mistake(
            "a sum per row instead of the sum of all of x",
            "where(x.sum() > 0",
            "where(x.sum(dim=-1, keepdim=True) > 0",
            "not a sum per row or column",
        ),
        Mistake(">= instead of >", "where(x.sum() > 0", "where(x.sum() >= 0", "`> 0`, not `>= 0`"),
        Mistake(
            "the two branches swapped",
            "-x, x.clamp(-1, 1))",
            "x.clamp(-1, 1), -x)",
            "the branches are swapped",
        ),
        Mistake("no clamp on the other branch", ", x.clamp(-1, 1))", ", x)", "clamps x to [-1, 1]"),
        Mistake(
            "both branches clamped",
            "torch.where(x.sum() > 0, -x, x.clamp(-1, 1))",
            "torch.where(x.sum() > 0, -x, x).clamp(-1, 1)",
            "the negated x was clamped too",
        ),
        Mistake(
            "still a Python branch on a traced value",
            "torch.where(",
            "(lambda c, a, b: a if c else b)(",
            "no `if`",
        ),
        Mistake(
            "the TraceError escapes instead of being returned",
            "except TraceError as error:",
            "except RuntimeError as error:",
            "catch it",
        ),
        Mistake(
            "the message returned instead of the error",
            "return error\n",
            "return str(error)\n",
            "not its message",
        ),
        Mistake(
            "a TraceError built by hand",
            "return error\n",
            'return TraceError("%gt was used as a Python bool")\n',
            "never raised",
        ),
    ],
    # tests/graders/test_ex1_2_no_inplace.py
    "1.2": [
        Mistake(
            "dunders counted as in-place",
            ' and not name.endswith("__")',
            "",
            "end with two underscores",
        ),
        Mistake(
            "a fixed list of in-place names",
            'return name.endswith("_") and',
            'return name in ("add_", "relu_") and',
            "every method whose name ends with one underscore",
        ),
        Mistake(
            "only Proxy receivers refused",
            "is_inplace_method(target):",
            'is_inplace_method(target) and type(args[0]).__name__ == "Proxy":',
            "args[0] is a real tensor",
        ),
        Mistake(
            "inplace=True not refused",
            'if kwargs.get("inplace") is True:',
            "if False:",
            "kwargs.get('inplace') is True",
        ),
        Mistake(
            "inplace=False refused too",
            'if kwargs.get("inplace") is True:',
            'if "inplace" in kwargs:',
            "refuse only inplace=True",
        ),
        Mistake(
            "every kind's target checked, placeholders included",
            'if kind == "call_method" and',
            "if isinstance(target, str) and",
            "only call_method targets are method names",
        ),
        Mistake(
            "*rest and **more not passed on",
            "kwargs, *rest, **more)\n",
            "kwargs)\n",
            "pass *rest and **more on",
        ),
        Mistake(
            "super().create_proxy's Proxy not returned",
            "return super().create_proxy(",
            "super().create_proxy(",
            "create_proxy returned None",
        ),
        Mistake(
            "another exception than TraceError",
            'raise TraceError(f"refusing the in-place method',
            'raise RuntimeError(f"refusing the in-place method',
            "raise minifx's TraceError",
        ),
        Mistake(
            "a message that does not name the operation",
            'f"refusing the in-place method {target}() on {args[0]!r}"',
            '"refusing an in-place method"',
            "name the operation",
        ),
    ],
    # tests/graders/test_ex2_1_leaf_modules.py
    "2.1": [
        Mistake(
            "super().__init__() not called",
            "super().__init__()\n        self.leaf_types",
            "self.leaf_types",
            "call super().__init__() in OpaqueTracer.__init__",
        ),
        Mistake(
            "the default leaves dropped",
            " or super().is_leaf_module(m, module_qualified_name)",
            "",
            "keep the default leaves",
        ),
        Mistake(
            "an exact type test instead of isinstance",
            "isinstance(m, self.leaf_types)",
            "type(m) in self.leaf_types",
            "instance of a subclass",
        ),
        Mistake(
            "only the first of leaf_types",
            "isinstance(m, self.leaf_types)",
            "isinstance(m, self.leaf_types[0])",
            "every class in leaf_types",
        ),
        Mistake(
            "`and` instead of `or`",
            "self.leaf_types) or super()",
            "self.leaf_types) and super()",
            "make it a leaf",
        ),
        Mistake(
            "FlatTracer makes every module a leaf",
            "return False",
            "return True",
            "must return False for every module",
        ),
    ],
    # tests/graders/test_ex2_2_remove_noops.py
    "2.2": [
        Mistake(
            "dropout layers in training mode count as no-ops",
            "isinstance(module, DROPOUT_MODULES) and not module.training\n",
            "isinstance(module, DROPOUT_MODULES)\n",
            "in training mode",
        ),
        Mistake(
            "only nn.Dropout, not the other dropout layers",
            "isinstance(module, DROPOUT_MODULES)",
            "isinstance(module, nn.Dropout)",
            "not a subclass of nn.Dropout",
        ),
        Mistake(
            "the root's training flag instead of the submodule's",
            "not module.training",
            "not root.training",
            "not root.training",
        ),
        Mistake(
            "F.dropout a no-op even when training",
            'return node.kwargs.get("training") is False',
            "return True",
            "only with training=False",
        ),
        Mistake(
            "nn.Identity a no-op only in eval mode",
            "return isinstance(module, nn.Identity) or (",
            "return (isinstance(module, nn.Identity) and not module.training) or (",
            "in either mode",
        ),
        Mistake(
            "erased without rewiring its users",
            "node.replace_all_uses_with(node.args[0])\n",
            "\n",
            "replace_all_uses_with(node.args[0])",
        ),
        Mistake(
            "only top-level arguments rewired (the output's tuple missed)",
            "node.replace_all_uses_with(node.args[0])",
            "[setattr(u, 'args', tuple(node.args[0] if a is node else a for a in u.args)) "
            "for u in list(node.users)]",
            "reaches inside",
        ),
        Mistake(
            "inputs read before any edit, stale for chained no-ops",
            "node.replace_all_uses_with(node.args[0])",
            'node.replace_all_uses_with(vars(graph).setdefault("_inputs", '
            "{n: n.args[0] for n in graph.nodes if n.args})[node])",
            "not from a list made before",
        ),
        Mistake("the count not returned", "    return removed\n", "", "returned None"),
    ],
    # tests/graders/test_ex3_1_method_relu.py
    "3.1": [
        Mistake(
            "the target changed, the op left as call_method",
            '    node.op = "call_function"\n',
            "",
            "set node.op = 'call_function' too",
        ),
        Mistake(
            "a method name for the target",
            '    node.op = "call_function"\n    node.target = F.gelu\n',
            '    node.target = "gelu"\n',
            "tensors have no `gelu` method",
        ),
        Mistake(
            "a name for the function",
            "    node.target = F.gelu\n    return True",
            '    node.target = "gelu"\n    return True',
            "F.gelu itself, the function",
        ),
        Mistake(
            "the op left unchecked: nn.ReLU submodules rewritten too",
            'if node.op != "call_method" or node.target != "relu":',
            'if node.target != "relu":',
            "leave call_module nodes alone",
        ),
        Mistake(
            "the in-place x.relu_() rewritten too",
            'node.target != "relu":',
            'not node.target.startswith("relu"):',
            "leave x.relu_() alone",
        ),
        Mistake(
            "every call_method node rewritten",
            'if node.op != "call_method" or node.target != "relu":',
            'if node.op != "call_method":',
            "only call_method nodes whose target is 'relu'",
        ),
        Mistake(
            "compared with the function torch.relu",
            'node.target != "relu":',
            "node.target is not torch.relu:",
            "is the string 'relu'",
        ),
        Mistake(
            "a new node instead of an edit",
            '    node.op = "call_function"\n    node.target = F.gelu\n',
            "    with node.graph.inserting_after(node):\n"
            "        gelu = node.graph.call_function(F.gelu, node.args)\n"
            "    node.replace_all_uses_with(gelu)\n    node.graph.erase_node(node)\n",
            "edit the node in place",
        ),
        Mistake(
            "no True returned",
            "    node.target = F.gelu\n    return True",
            "    node.target = F.gelu",
            "return True after rewriting",
        ),
        Mistake(
            "None instead of False",
            'node.target != "relu":\n        return False',
            'node.target != "relu":\n        return',
            "return False for every node",
        ),
    ],
    # tests/graders/test_ex3_2_lower_linear.py
    "3.2": [
        Mistake(
            "a copy of the weight",
            'gm.register_parameter(state_name(node.target, "weight"), linear.weight)',
            'gm.register_parameter(state_name(node.target, "weight"), '
            "nn.Parameter(linear.weight.detach().clone()))",
            "register linear.weight itself",
        ),
        Mistake(
            "a buffer instead of a parameter",
            'gm.register_parameter(state_name(node.target, "weight"), linear.weight)',
            'gm.register_buffer(state_name(node.target, "weight"), linear.weight)',
            "register_parameter, not register_buffer",
        ),
        Mistake(
            "get_attr through the Linear's path",
            'weight = graph.get_attr(state_name(node.target, "weight"))',
            'weight = graph.get_attr(f"{node.target}.weight")',
            "through the Linear",
        ),
        Mistake(
            "a bias get_attr for a Linear without bias",
            'graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None\n',
            'graph.get_attr(state_name(node.target, "bias"))\n',
            "gets no bias get_attr",
        ),
        Mistake(
            "no None for a missing bias",
            "call = graph.call_function(F.linear, (node.args[0], weight, bias))",
            "call = graph.call_function(F.linear, (node.args[0], weight) if "
            "bias is None else (node.args[0], weight, bias))",
            "None as F.linear's bias",
        ),
        Mistake(
            "weight and bias as kwargs",
            "(F.linear, (node.args[0], weight, bias))",
            '(F.linear, (node.args[0],), {"weight": weight, "bias": bias})',
            "no kwargs",
        ),
        Mistake(
            "the args in the wrong order",
            "(F.linear, (node.args[0], weight, bias))",
            "(F.linear, (weight, node.args[0], bias))",
            "(input, weight, bias)",
        ),
        Mistake(
            "the bias's get_attr first",
            '            weight = graph.get_attr(state_name(node.target, "weight"))\n'
            "            bias = (\n"
            '                graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None\n'
            "            )\n",
            "            bias = (\n"
            '                graph.get_attr(state_name(node.target, "bias")) if linear.bias is not None else None\n'
            "            )\n"
            '            weight = graph.get_attr(state_name(node.target, "weight"))\n',
            "the weight's get_attr first",
        ),
        Mistake(
            "every module with a weight lowered, LayerNorm too",
            "not isinstance(gm.get_submodule(node.target), nn.Linear)",
            'not hasattr(gm.get_submodule(node.target), "weight")',
            "only nn.Linear",
        ),
        Mistake(
            "a Linear called twice lowered once",
            "        linear = gm.get_submodule(node.target)\n",
            "        linear = gm.get_submodule(node.target)\n"
            '        if hasattr(gm, state_name(node.target, "weight")):\n            continue\n',
            "called twice is lowered at both calls",
        ),
        Mistake(
            "the node erased with users left",
            "        node.replace_all_uses_with(call)\n",
            "",
            "replace_all_uses_with",
        ),
        Mistake(
            "no recompile",
            "    gm.recompile()  # the code must follow the graph\n",
            "",
            "gm.recompile()",
        ),
        Mistake(
            "the Linears left on gm",
            "    gm.delete_all_unused_submodules()  # the Linears: no node names them any more\n",
            "",
            "delete_all_unused_submodules",
        ),
        Mistake(
            "parameters registered after the get_attr nodes",
            _REGISTER + _INSERT,
            _INSERT + _REGISTER,
            "register the parameters on gm before",
        ),
    ],
    # tests/graders/test_ex4_1_flop_counting.py
    "4.1": [
        Mistake(
            "FlopCounterMode does the counting",
            '        """The FLOPs of node `n`, from its argument values and its output."""\n',
            '        """The FLOPs of node `n`, from its argument values and its output."""\n'
            "        from torch.utils.flop_counter import FlopCounterMode\n"
            "        with FlopCounterMode(display=False) as mode:\n"
            "            getattr(self, n.op)(n.target, args, kwargs)\n"
            "        return mode.get_total_flops()\n",
            "the exercise asks you to count FLOPs yourself",
        ),
        Mistake(
            "multiply-adds, not FLOPs",
            "    return 2 * output.numel() * weight.shape[1]",
            "    return output.numel() * weight.shape[1]",
            "2 FLOPs per multiply-add",
        ),
        Mistake(
            "a float count: 2.0 FLOPs per multiply-add",
            "    return 2 * output.numel() * weight.shape[1]",
            "    return 2.0 * output.numel() * weight.shape[1]",
            "A float comes from a float in the product",
        ),
        Mistake(
            "the bias add counted",
            "    return 2 * output.numel() * weight.shape[1]",
            "    return 2 * output.numel() * (weight.shape[1] + 1)",
            "the bias add is not counted",
        ),
        Mistake(
            "out_features for K",
            "    return 2 * output.numel() * weight.shape[1]",
            "    return 2 * output.numel() * weight.shape[0]",
            "K is in_features",
        ),
        Mistake(
            "K from b's first dimension",
            "return 2 * output.numel() * args[0].shape[-1]",
            "return 2 * output.numel() * args[1].shape[0]",
            "b.shape[0] is a batch dimension",
        ),
        Mistake(
            "batch dimensions left out",
            "return 2 * output.numel() * args[0].shape[-1]",
            "return 2 * args[0].shape[-2] * args[1].shape[-1] * args[0].shape[-1]",
            "counts the batch dimensions too",
        ),
        Mistake(
            "methods not counted",
            "if (function and n.target in MATMUL_FUNCTIONS) or (\n"
            '            n.op == "call_method" and n.target in MATMUL_METHODS\n'
            "        ):",
            "if function and n.target in MATMUL_FUNCTIONS:",
            "call_method nodes",
        ),
        Mistake(
            "call_module nodes not counted",
            "            return module_flops(self.fetch_attr(n.target), output)",
            "            return 0",
            "a call_module node of an nn.Linear or nn.Conv2d counts too",
        ),
        Mistake(
            "groups left out of a conv",
            "        return conv2d_flops(output, module.weight)",
            "        return 2 * output.numel() * module.in_channels * module.weight[0][0].numel()",
            "in_channels / groups",
        ),
        Mistake(
            "the weight only from args",
            '    return args[1] if len(args) > 1 else kwargs["weight"]',
            "    return args[1]",
            "passed by keyword",
        ),
        Mistake(
            "only counted nodes recorded",
            "        self.flops_by_node[n.name] = self.node_flops(n, args, kwargs, output)",
            "        if self.node_flops(n, args, kwargs, output):\n"
            "            self.flops_by_node[n.name] = self.node_flops(n, args, kwargs, output)",
            "every node gets an entry",
        ),
        Mistake(
            "the FLOPs returned instead of the value",
            "        return output\n\n    def node_flops",
            "        return self.flops_by_node[n.name]\n\n    def node_flops",
            "return the node's value",
        ),
    ],
    # tests/graders/test_ex4_2_first_nan.py
    "4.2": [
        Mistake(
            "NaN only, infinities let through",
            "return bool(torch.isfinite(value).all())",
            "return not bool(torch.isnan(value).any())",
            "an infinity is not finite either",
        ),
        Mistake(
            "any() instead of all()",
            "return bool(torch.isfinite(value).all())",
            "return bool(torch.isfinite(value).any())",
            "one NaN among finite values",
        ),
        Mistake(
            "tuples and lists not looked into",
            "    if isinstance(value, (tuple, list)):\n"
            "        return all(is_finite(item) for item in value)\n",
            "",
            "look inside tuples",
        ),
        Mistake(
            "a dict's keys checked, not its values",
            "return all(is_finite(item) for item in value.values())",
            "return all(is_finite(item) for item in value)",
            "at their values",
        ),
        Mistake(
            "one level of nesting only",
            "return all(is_finite(item) for item in value.values())",
            "return all(bool(torch.isfinite(item).all()) for item in value.values() "
            "if isinstance(item, torch.Tensor))",
            "call is_finite on each item",
        ),
        Mistake(
            "Python floats not checked",
            "    if isinstance(value, float):\n        return math.isfinite(value)\n",
            "",
            "a Python float",
        ),
        Mistake(
            "placeholders and get_attr nodes skipped",
            "        if not is_finite(value):",
            '        if n.op not in ("placeholder", "get_attr") and not is_finite(value):',
            "placeholder and get_attr nodes",
        ),
        Mistake(
            "the inputs checked instead of the value",
            _CHECK,
            "        args, kwargs = self.fetch_args_kwargs_from_env(n)\n"
            "        if not is_finite(args) or not is_finite(kwargs):\n"
            "            raise NonFiniteError(n)\n"
            "        return super().run_node(n)\n",
            "the value the node produced",
        ),
        Mistake(
            "the error raised with the node's name",
            "raise NonFiniteError(n)",
            "raise NonFiniteError(n.name)",
            "with the node itself",
        ),
        Mistake(
            "math.isfinite on every other value",
            "    return True\n",
            "    return math.isfinite(value)\n",
            "counts as finite",
        ),
        Mistake(
            "the error raised at the end of the run",
            _CHECK,
            "        value = super().run_node(n)\n"
            "        if not is_finite(value) and not hasattr(self, 'bad'):\n"
            "            self.bad = n\n"
            "        if n.op == 'output' and hasattr(self, 'bad'):\n"
            "            raise NonFiniteError(self.bad)\n"
            "        return value\n",
            "as soon as a value is not finite",
        ),
    ],
    # tests/graders/test_ex5_1_activation_memory.py
    "5.1": [
        Mistake(
            "values never dropped",
            "live -= alive.pop(value)",
            "alive[value] = alive[value]",
            "drop the values in freed_after(graph)[node]",
        ),
        Mistake(
            "total taken after the drops",
            "        if live > peak or not peak_node:  # sampled before the frees: the inputs are "
            "still alive\n"
            "            peak, peak_node = live, node.name\n"
            "        for value in freed.get(node, []):\n"
            "            live -= alive.pop(value)\n",
            "        for value in freed.get(node, []):\n"
            "            live -= alive.pop(value)\n"
            "        if live > peak or not peak_node:\n"
            "            peak, peak_node = live, node.name\n",
            "before the drops",
        ),
        Mistake(
            "the last node that reaches the peak",
            "if live > peak or not peak_node:",
            "if live >= peak or not peak_node:",
            "the first node whose run reaches",
        ),
        Mistake(
            "inputs not counted",
            "alive[node] = node_bytes(node)",
            'alive[node] = 0 if node.op == "placeholder" else node_bytes(node)',
            "count the inputs",
        ),
        Mistake(
            "the module's parameters counted",
            'return nested_bytes(node.meta.get("tensor_meta"))',
            "extra = sum(p.numel() * p.element_size() for p in node.graph.owning_module"
            '.get_submodule(node.target).parameters()) if node.op == "call_module" else 0\n'
            '    return nested_bytes(node.meta.get("tensor_meta")) + extra',
            "parameters are not activations",
        ),
        Mistake(
            "the output node counted",
            'if node.op == "output":',
            "if False:",
            "the output node counts 0",
        ),
        Mistake(
            "TensorMetadata taken for a plain tuple",
            "    if isinstance(meta, TensorMetadata):\n        return tensor_bytes(meta)\n"
            "    if isinstance(meta, (tuple, list)):\n",
            "    if isinstance(meta, (tuple, list)):\n",
            "test it before the tuple case",
        ),
        Mistake("every element 4 bytes", "meta.dtype.itemsize", "4", "meta.dtype.itemsize"),
        Mistake(
            "dict values not counted",
            "return sum(nested_bytes(item) for item in meta.values())",
            "return 0",
            "a dict counts its values",
        ),
        Mistake(
            "no error without metadata",
            "raise missing_metadata(node)",
            "return 0",
            "raise missing_metadata(node)",
        ),
        Mistake(
            "delegated to torch.fx's get_size_of_node",
            'return nested_bytes(node.meta.get("tensor_meta"))',
            "from torch.fx.passes.graph_manipulation import get_size_of_node\n"
            '    if isinstance(node.meta.get("tensor_meta"), TensorMetadata):\n'
            "        return get_size_of_node(node.graph.owning_module, node).output_size\n"
            '    return nested_bytes(node.meta.get("tensor_meta"))',
            "work the sizes out yourself",
        ),
    ],
    # tests/graders/test_ex5_2_draw_shapes.py
    "5.2": [
        Mistake(
            "the dtype with its torch. prefix",
            "{str(meta.dtype).removeprefix('torch.')}",
            "{meta.dtype}",
            "without its 'torch.' prefix",
        ),
        Mistake(
            "the shape as a tuple",
            "{list(meta.shape)}",
            "{tuple(meta.shape)}",
            "the shape as a list",
        ),
        Mistake(
            "the shape as a torch.Size", "{list(meta.shape)}", "{meta.shape}", "the shape as a list"
        ),
        Mistake(
            "TensorMetadata taken for a plain tuple",
            "    if isinstance(meta, TensorMetadata):  # a NamedTuple: before the tuple case\n"
            "        return describe_tensor(meta)\n",
            "",
            "test it before the tuple case",
        ),
        Mistake(
            "a list drawn as a tuple",
            "    if isinstance(meta, tuple):\n",
            "    if isinstance(meta, (tuple, list)):\n",
            "a list as [a, b]",
        ),
        Mistake(
            "dict keys without repr",
            "{key!r}: {describe_meta(item)}",
            "{key}: {describe_meta(item)}",
            "its key by repr",
        ),
        Mistake(
            "leaves by str",
            "    return repr(meta)\n",
            "    return str(meta)\n",
            "any other leaf by its repr",
        ),
        Mistake(
            "the type itself, not its name",
            'return node.meta["type"].__name__',
            'return str(node.meta["type"])',
            "the name of its type",
        ),
        Mistake(
            "the value above the default label",
            'f"{describe_node(node)}\\n{describe_value(node)}"',
            'f"{describe_value(node)}\\n{describe_node(node)}"',
            "under the default label",
        ),
        Mistake(
            "the value on the same line",
            'f"{describe_node(node)}\\n{describe_value(node)}"',
            'f"{describe_node(node)} {describe_value(node)}"',
            "a new line",
        ),
        Mistake(
            "no error without metadata",
            "        raise missing_metadata(node)\n",
            '        return "?"\n',
            "raise missing_metadata(node)",
        ),
    ],
    # tests/graders/test_ex6_1_fuse_linear_bn.py
    "6.1": [
        Mistake("no recompile", "    gm.recompile()\n", "", "was gm.recompile() called?"),
        Mistake(
            "a pass that does nothing",
            "    modules = dict(gm.named_modules())\n    for bn_node in list(gm.graph.nodes):",
            "    return gm\n    modules = dict(gm.named_modules())\n    for bn_node in list(gm.graph.nodes):",
            "a pass that does nothing passes this check too",
        ),
        Mistake(
            "handed to torch's fuse_linear_bn_eval",
            "    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)  # one factor per output feature\n",
            "    return torch.nn.utils.fusion.fuse_linear_bn_eval(linear, bn)\n",
            "implement the fusion yourself",
        ),
        Mistake(
            "handed to chapter 6's fuse_conv_bn_eval",
            "    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)  # one factor per output feature\n",
            "    from minifx.passes import fuse_conv_bn as chapter6\n"
            "    return getattr(chapter6, 'fuse_conv_bn_' + 'eval')(linear, bn)\n",
            "implement the fusion yourself",
        ),
        Mistake(
            "handed to torch, by a name built at run time",
            "    scale = bn.weight * torch.rsqrt(bn.running_var + bn.eps)  # one factor per output feature\n",
            "    import sys\n"
            "    tool = sys.modules['torch.nn.utils.' + 'fu' + 'sion']\n"
            "    return getattr(tool, 'fuse_linear' + '_bn_eval')(linear, bn)\n",
            "implement the fusion yourself",
        ),
        Mistake(
            "the Linear's bias forgotten",
            "bias = linear.bias if linear.bias is not None else torch.zeros_like(bn.running_mean)",
            "bias = torch.zeros_like(bn.running_mean)",
            "the Linear's own bias",
        ),
        Mistake(
            "running_var without eps",
            "torch.rsqrt(bn.running_var + bn.eps)",
            "torch.rsqrt(bn.running_var)",
            "running_var + eps",
        ),
        Mistake(
            "scale along the columns",
            "linear.weight * scale[:, None]",
            "linear.weight * scale",
            "row i of the weight",
        ),
        Mistake(
            "running_mean not subtracted",
            "(bias - bn.running_mean) * scale + bn.bias",
            "bias * scale + bn.bias",
            "subtract running_mean",
        ),
        Mistake(
            "the Linear changed in place",
            "fused = copy.deepcopy(linear)",
            "fused = linear",
            "copy.deepcopy(linear)",
        ),
        Mistake(
            "a training-mode BatchNorm fused",
            "if type(bn) is not nn.BatchNorm1d or bn.training or bn.running_mean is None:",
            "if type(bn) is not nn.BatchNorm1d or bn.running_mean is None:",
            "a BatchNorm in training mode",
        ),
        Mistake(
            "a training-mode Linear fused",
            "type(linear) is nn.Linear\n        and not linear.training\n",
            "type(linear) is nn.Linear\n",
            "a Linear in training mode",
        ),
        Mistake(
            "another use of the Linear module ignored",
            "and len(linear_node.users) == 1\n        and not other_uses(linear_node)\n",
            "and len(linear_node.users) == 1\n",
            "other_uses(linear_node)",
        ),
        Mistake(
            "another user of the Linear's output ignored",
            "and len(linear_node.users) == 1\n        and not other_uses(linear_node)\n",
            "and not other_uses(linear_node)\n",
            "len(linear_node.users) == 1",
        ),
        Mistake(
            "any module taken for a Linear",
            "type(linear) is nn.Linear\n        and not linear.training\n",
            "linear is not None\n        and not linear.training\n",
            "exactly an nn.Linear",
        ),
        Mistake(
            "BatchNorm submodules left behind",
            "    gm.delete_all_unused_submodules()\n",
            "",
            "delete_all_unused_submodules",
        ),
        Mistake(
            "the pass handed to torch.fx's fuse",
            "    modules = dict(gm.named_modules())\n",
            "    from torch.fx.experimental.optimization import fuse\n    return fuse(gm)\n",
            "implement the fusion yourself",
        ),
    ],
    # tests/graders/test_ex6_2_merge_linears.py
    "6.2": [
        Mistake(
            "the product in the wrong order",
            "merged.weight.copy_(second.weight @ first.weight)",
            "merged.weight.copy_(first.weight @ second.weight)",
            "second.weight @ first.weight",
        ),
        Mistake(
            "the first bias dropped",
            "merged.bias.copy_(second.weight @ b1 + b2)",
            "merged.bias.copy_(b2)",
            "second.weight @ b1",
        ),
        Mistake(
            "the second bias dropped",
            "merged.bias.copy_(second.weight @ b1 + b2)",
            "merged.bias.copy_(second.weight @ b1)",
            "add the second bias",
        ),
        Mistake(
            "the biases added as they are",
            "merged.bias.copy_(second.weight @ b1 + b2)",
            "merged.bias.copy_(b1 + b2)",
            "second.weight @ b1",
        ),
        Mistake(
            "a bias only when both have one",
            "has_bias = first.bias is not None or second.bias is not None",
            "has_bias = first.bias is not None and second.bias is not None",
            "unless neither",
        ),
        Mistake(
            "the dtype not kept",
            "        device=first.weight.device,\n        dtype=first.weight.dtype,\n",
            "        device=first.weight.device,\n",
            "dtype=first.weight.dtype",
        ),
        Mistake(
            "modules not updated after a merge",
            "        modules[first_node.target] = merged\n",
            "",
            "modules[first_node.target] = merged",
        ),
        Mistake(
            "a second Linear in training mode merged",
            "if type(second) is not nn.Linear or second.training or len(second_node.args) != 1:",
            "if type(second) is not nn.Linear or len(second_node.args) != 1:",
            "the second Linear is in training mode",
        ),
        Mistake(
            "a first Linear in training mode merged",
            "type(first) is nn.Linear\n        and not first.training\n",
            "type(first) is nn.Linear\n",
            "the first Linear is in training mode",
        ),
        Mistake(
            "another use of the first module ignored",
            "and len(first_node.users) == 1\n        and not other_uses(first_node)\n",
            "and len(first_node.users) == 1\n",
            "other_uses(first_node)",
        ),
        Mistake(
            "another user of the first output ignored",
            "and len(first_node.users) == 1\n",
            "\n",
            "len(first_node.users) == 1",
        ),
        Mistake(
            "unused submodules left behind",
            "    gm.delete_all_unused_submodules()\n",
            "",
            "delete_all_unused_submodules",
        ),
    ],
    # tests/graders/test_ex7_1_swish_to_silu.py
    "7.1": [
        Mistake(
            "the factors of the pattern in the other order",
            "    return x * torch.sigmoid(x)\n",
            "    return torch.sigmoid(x) * x\n",
            "in the models' order",
        ),
        Mistake(
            "the method x.sigmoid() in the pattern",
            "    return x * torch.sigmoid(x)\n",
            "    return x * x.sigmoid()\n",
            "records a call_method node",
        ),
        Mistake(
            "torch.mul in the pattern",
            "    return x * torch.sigmoid(x)\n",
            "    return torch.mul(x, torch.sigmoid(x))\n",
            "`*` records operator.mul",
        ),
        Mistake(
            "the replacement computes the swish again",
            "    return F.silu(x)\n",
            "    return x * torch.sigmoid(x)\n",
            "computes the swish again",
        ),
        Mistake(
            "pattern and replacement swapped",
            "return len(replace_pattern(gm, swish, silu))",
            "return len(replace_pattern(gm, silu, swish))",
            "are swapped",
        ),
        Mistake(
            "the matches returned, not how many",
            "return len(replace_pattern(gm, swish, silu))",
            "return replace_pattern(gm, swish, silu)",
            "an int, not the list",
        ),
        Mistake(
            "the reversed near miss rewritten too",
            "return len(replace_pattern(gm, swish, silu))",
            "return len(replace_pattern(gm, swish, silu)) + len(replace_pattern(\n"
            "        gm, lambda x: torch.sigmoid(x) * x, silu))",
            "one pattern only",
        ),
    ],
    # tests/graders/test_ex7_2_match_chain.py
    "7.2": [
        Mistake(
            "only the first chain",
            "            taken.update(chain)\n",
            "            taken.update(chain)\n            break\n",
            "find every chain",
        ),
        Mistake(
            "overlapping chains kept",
            "if chain is not None and taken.isdisjoint(chain):",
            "if chain is not None:",
            "shares no node with one already kept",
        ),
        Mistake(
            "no-escape rule not checked",
            "if not isinstance(first, Node) or list(first.users) != [chain[0]]:",
            "if not isinstance(first, Node):",
            "used by the next node only",
        ),
        Mistake(
            "the last node must have one user too",
            "    chain = [last]\n",
            "    if len(last.users) > 1:\n        return None\n    chain = [last]\n",
            "the last node may have any users",
        ),
        Mistake(
            "any argument, not the first",
            "        first = chain[0].args[0] if chain[0].args else None\n",
            "        previous_target = targets[-len(chain) - 1]\n"
            "        first = next((a for a in chain[0].args\n"
            "                      if isinstance(a, Node) and is_call(a, previous_target)), None)\n",
            "the first argument, args[0]",
        ),
        Mistake(
            "names instead of nodes",
            "            chains.append(chain)\n",
            "            chains.append([n.name for n in chain])\n",
            "the Node objects",
        ),
        Mistake(
            "ordered by first node",
            "    return chains\n",
            "    return sorted(chains, key=lambda c: list(graph.nodes).index(c[0]))\n",
            "graph order of their last nodes",
        ),
        Mistake(
            "minifx's SubgraphMatcher does the matching",
            "    chains: list[list[Node]] = []\n",
            "    from minifx.codegen import symbolic_trace\n"
            "    from minifx.passes.matcher import SubgraphMatcher\n\n"
            "    def pattern(x):\n        for target in targets:\n            x = target(x)\n"
            "        return x\n"
            "    pattern_graph = symbolic_trace(pattern).graph\n"
            "    calls = [n for n in pattern_graph.nodes if n.op == 'call_function']\n"
            "    return [[m.nodes_map[n] for n in calls]\n"
            "            for m in SubgraphMatcher(pattern_graph).match(graph)]\n"
            "    chains: list[list[Node]] = []\n",
            "write the matcher by hand",
        ),
    ],
    # tests/graders/test_ex8_1_ptq_observers.py
    "8.1": [
        Mistake(
            "the observer reads itself: its own use of the relu moved too",
            "node.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)",
            "node.replace_all_uses_with(observer)",
            "reads itself",
        ),
        Mistake(
            "minifx's fused-relu helper does the relu check",
            _IS_RELU_BODY,
            "    from minifx.passes.quantize import _fused_relu\n"
            "    return any(_fused_relu(gm, a) is node for a in node.all_input_nodes)\n",
            "write it yourself",
        ),
        Mistake(
            "an nn.ReLU recognized by its name",
            "return isinstance(gm.get_submodule(node.target), nn.ReLU)",
            'return "relu" in node.target',
            "check the submodule's type",
        ),
        Mistake("x.relu() missed", 'return node.target == "relu"', "return False", "call_method"),
        Mistake(
            "F.relu missed",
            "return node.target in (torch.relu, F.relu)",
            "return node.target is torch.relu",
            "F.relu is another function",
        ),
        Mistake(
            "in-place relu_ taken for a relu",
            'return node.target == "relu"',
            'return node.target.startswith("relu")',
            "works in place",
        ),
        Mistake(
            "the relu's users not moved",
            "        node.replace_all_uses_with(observer, delete_user_cb=lambda user: user is not observer)\n",
            "",
            "still reads the relu",
        ),
        Mistake("no recompile", "    gm.recompile()\n", "", "gm.recompile()"),
        Mistake(
            "the observer inserted before the relu",
            "with gm.graph.inserting_after(node):",
            "with gm.graph.inserting_before(node):",
            "right after the relu",
        ),
        Mistake(
            "ranges keyed by the observer's name",
            "ranges[node.args[0].name] = ",
            "ranges[node.target] = ",
            "the name of the observed node",
        ),
        Mistake(
            "tensors instead of floats",
            "(observer.min_val.item(), observer.max_val.item())",
            "(observer.min_val, observer.max_val)",
            "floats",
        ),
    ],
    # tests/graders/test_ex8_2_per_channel.py
    "8.2": [
        Mistake(
            "one scale for the whole tensor",
            "largest = weight.detach().abs().flatten(1).amax(dim=1)",
            "largest = weight.detach().abs().max().expand(weight.shape[0])",
            "per-tensor",
        ),
        Mistake(
            "the wrong axis",
            "largest = weight.detach().abs().flatten(1).amax(dim=1)",
            "largest = weight.detach().abs().flatten(1).amax(dim=0)",
            "the output channels, dim 0",
        ),
        Mistake(
            "the largest entry, not the largest magnitude",
            "largest = weight.detach().abs().flatten(1).amax(dim=1)",
            "largest = weight.detach().flatten(1).amax(dim=1)",
            "negative entries count too",
        ),
        Mistake(
            "asymmetric: the range max - min over 255 steps",
            "    scales = largest / ((QMAX - QMIN) / 2)\n",
            "    flat = weight.detach().flatten(1)\n"
            "    scales = (flat.amax(dim=1) - flat.amin(dim=1)) / (QMAX - QMIN)\n",
            "symmetric",
        ),
        Mistake(
            "divided by 127",
            "scales = largest / ((QMAX - QMIN) / 2)",
            "scales = largest / QMAX",
            "not 127",
        ),
        Mistake(
            "no floor for an all-zero channel",
            "return scales.float().clamp(min=torch.finfo(torch.float32).eps)",
            "return scales.float()",
            "all-zero channel",
        ),
        Mistake(
            "float64 scales",
            "return scales.float().clamp(min=torch.finfo(torch.float32).eps)",
            "return scales.double().clamp(min=torch.finfo(torch.float32).eps)",
            "float32",
        ),
        Mistake(
            "truncated, and the dequantized values written back into the weight",
            "    q = torch.round(weight.detach() * inverse).clamp(QMIN, QMAX)\n",
            "    q = (weight.detach() * inverse).clamp(QMIN, QMAX).to(torch.int8)\n"
            "    with torch.no_grad():\n"
            "        weight.copy_(q * scales.reshape(-1, *[1] * (weight.dim() - 1)))\n",
            ".to(torch.int8) truncates",
        ),
        Mistake(
            "the weight changed in place",
            "largest = weight.detach().abs().flatten(1).amax(dim=1)",
            "largest = weight.detach().abs_().flatten(1).amax(dim=1)",
            "in place",
        ),
        Mistake(
            "one scale for the whole tensor returned",
            "return q.to(torch.int8), scales",
            "return q.to(torch.int8), scales.max()",
            "not per tensor",
        ),
        Mistake(
            "every channel rounded with the largest scale",
            "inverse = (1 / scales).reshape(-1, *[1] * (weight.dim() - 1))",
            "inverse = 1 / scales.max()",
            "not per tensor",
        ),
        Mistake(
            "uint8 with zero point 128",
            "return q.to(torch.int8), scales",
            "return (q + 128).to(torch.uint8), scales",
            "not uint8",
        ),
        Mistake(
            "divided by the scales",
            "q = torch.round(weight.detach() * inverse)",
            "q = torch.round(weight.detach() / scales.reshape(-1, *[1] * (weight.dim() - 1)))",
            "multiply by the reciprocal",
        ),
        Mistake(
            "no clamp: 127.5 rounds to 128, which wraps",
            "q = torch.round(weight.detach() * inverse).clamp(QMIN, QMAX)",
            "q = torch.round(weight.detach() * inverse)",
            "128 does not fit in int8",
        ),
        Mistake(
            "truncated instead of rounded",
            "q = torch.round(weight.detach() * inverse).clamp(QMIN, QMAX)",
            "q = (weight.detach() * inverse).clamp(QMIN, QMAX)",
            "truncates",
        ),
        Mistake(
            "torch.ao's observer computes the scales",
            "    largest = weight.detach().abs().flatten(1).amax(dim=1)  # max |w| of each channel\n",
            "    from torch.ao.quantization import PerChannelMinMaxObserver\n"
            "    observer = PerChannelMinMaxObserver(ch_axis=0, dtype=torch.qint8,\n"
            "                                        qscheme=torch.per_channel_symmetric)\n"
            "    observer(weight.detach())\n"
            "    return observer.calculate_qparams()[0]\n"
            "    largest = weight.detach().abs().flatten(1).amax(dim=1)  # max |w| of each channel\n",
            "compute the scales yourself",
        ),
    ],
    # tests/graders/test_ex9_1_graph_breaks.py
    "9.1": [
        Mistake(
            "the graph returned instead of its code",
            "        return gm.forward\n",
            "        return gm.graph\n",
            "return gm.forward",
        ),
        Mistake(
            "the GraphModule recorded instead of its summary",
            "self.graphs.append(summarize(gm))",
            "self.graphs.append(gm)",
            "append summarize(gm)",
        ),
        Mistake(
            "str(target) for functions",
            "node.target if isinstance(node.target, str) else node.target.__name__",
            "str(node.target)",
            "__name__",
        ),
        Mistake(
            "only call_function nodes",
            'if node.op.startswith("call_"))',
            'if node.op == "call_function")',
            "a call_method node",
        ),
        Mistake(
            "every node listed as an op",
            'for node in nodes if node.op.startswith("call_"))',
            "for node in nodes)",
            "lists only the call_function, call_method and call_module nodes",
        ),
        Mistake(
            "every node counted as an input",
            'sum(node.op == "placeholder" for node in nodes)',
            "len(nodes)",
            "placeholder nodes",
        ),
        Mistake(
            "one break per graph",
            "max(len(self.graphs) - 1, 0)",
            "len(self.graphs)",
            "n - 1 breaks",
        ),
        Mistake(
            "-1 breaks without a graph",
            "max(len(self.graphs) - 1, 0)",
            "len(self.graphs) - 1",
            "return 0",
        ),
    ],
    # tests/graders/test_ex10_1_int8_resnet.py
    "10.1": [
        Mistake(
            "folded in training mode",
            "inference = copy.deepcopy(model).eval()",
            "inference = copy.deepcopy(model)",
            "fuse_conv_bn leaves a training-mode BatchNorm alone",
        ),
        Mistake(
            "the caller's model switched to eval mode",
            "inference = copy.deepcopy(model).eval()",
            "inference = model.eval()",
            "would switch the caller's model",
        ),
        Mistake(
            "elements counted instead of bytes",
            "meta.shape.numel() * meta.dtype.itemsize",
            "meta.shape.numel()",
            "numel() counts elements, not bytes",
        ),
        Mistake(
            "4 bytes per element whatever the dtype",
            "meta.shape.numel() * meta.dtype.itemsize",
            "meta.shape.numel() * 4",
            "1 byte: use dtype.itemsize",
        ),
        Mistake(
            "placeholders and get_attr nodes counted",
            'if node.op.startswith("call_") and isinstance(meta, TensorMetadata):',
            "if isinstance(meta, TensorMetadata):",
            "leave out",
        ),
        Mistake(
            "calibrated on the first batch only",
            "for batch in calibration:",
            "for batch in calibration[:1]:",
            "only the first batch",
        ),
        Mistake(
            "the prepared model returned, not converted",
            "return convert(prepared)",
            "return prepared",
            "return convert(prepared), not prepared",
        ),
        Mistake(
            "quantized before folding",
            "int8 = quantize(folded, calibration)",
            "int8 = quantize(symbolic_trace(copy.deepcopy(model).eval()), calibration)",
            "fold before you quantize",
        ),
        Mistake(
            "float bytes of the unfolded graph",
            "float_bytes = sum(activation_bytes(folded, example).values())",
            "float_bytes = sum(activation_bytes(symbolic_trace(copy.deepcopy(model).eval()), example).values())",
            "measure the folded model",
        ),
        Mistake(
            "int8 bytes measured on the float graph",
            "int8_bytes = sum(activation_bytes(int8, example).values())",
            "int8_bytes = sum(activation_bytes(folded, example).values())",
            "measure the int8 model",
        ),
    ],
}
