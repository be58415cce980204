"""Example inputs for the programs of `tests/graph/corpus.py`.

The corpus only says how to *trace* a program; running the generated code
against eager mode needs inputs too. `INPUTS` maps each case name to a
factory of an `Example`; `NOT_RUNNABLE` lists, with a reason, the cases that
trace (and are compared as code) but cannot be run. Every corpus case must be
in exactly one of the two: a test checks it, so a new case cannot be skipped
silently.

Shapes are small and chosen per case: a `view`, a `chunk` or a `Linear(4, 4)`
each want their own. Factories draw random numbers; `example(name)` seeds the
generator first, so two calls give equal, independent inputs (one for eager
mode, one for the GraphModule, as some programs change their inputs in place).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from tests.graph.corpus import Point

SEED = 0


@dataclass
class Example:
    """How to call one program.

    Attributes:
        args: positional arguments, for the GraphModule and for eager mode.
        kwargs: keyword arguments of the GraphModule.
        eager_kwargs: keyword arguments of the eager program, where they differ
            from `kwargs` (a keyword-only input specialised by `concrete_args`
            becomes the positional parameter `n_1` of the generated forward).
    """

    args: tuple
    kwargs: dict[str, Any] = field(default_factory=dict)
    eager_kwargs: dict[str, Any] | None = None


def tensor(*shape: int) -> Callable[[], Example]:
    """Inputs: one standard-normal tensor of `shape`."""
    return lambda: Example((torch.randn(*shape),))


def tensors(count: int, *shape: int) -> Callable[[], Example]:
    """Inputs: `count` standard-normal tensors of the same `shape`."""
    return lambda: Example(tuple(torch.randn(*shape) for _ in range(count)))


def positive(count: int, *shape: int) -> Callable[[], Example]:
    """Inputs: `count` tensors in [0.5, 1.5), safe to divide by and raise to powers."""
    return lambda: Example(tuple(torch.rand(*shape) + 0.5 for _ in range(count)))


def integers(count: int, *shape: int) -> Callable[[], Example]:
    """Inputs: `count` int64 tensors in [-3, 3), for bitwise operators."""
    return lambda: Example(tuple(torch.randint(-3, 3, shape) for _ in range(count)))


def call(*args: Any, **kwargs: Any) -> Callable[[], Example]:
    """Inputs: fixed values; a zero-argument callable among `args` is called each time."""
    return lambda: Example(tuple(a() if callable(a) else a for a in args), kwargs)


def randn(*shape: int) -> Callable[[], torch.Tensor]:
    """A factory of one standard-normal tensor, for `call(...)`."""
    return lambda: torch.randn(*shape)


INPUTS: dict[str, Callable[[], Example]] = {
    # operators
    "arithmetic": positive(2, 3, 3),
    "reflected_arithmetic": positive(1, 2, 3),
    "comparisons_and_bitwise": integers(2, 2, 3),
    "unary_operators": tensor(2, 3),
    "chained_arithmetic_names": tensor(2, 3),
    # torch.* and F.* calls, tensor methods
    "torch_functions": tensors(2, 2, 3),
    "functional_calls": call(randn(3, 4), randn(5, 4)),
    "tensor_methods": tensor(4, 4),
    "method_on_result_of_function": tensor(2, 3),
    # indexing and shapes
    "index_int": tensor(2, 3),
    "index_tuple_with_slice": tensor(2, 3),
    "index_ellipsis_none": tensor(2, 3),
    "index_step_and_proxy": call(randn(4, 5), 1),
    "shape_and_size": tensor(2, 3),
    "reshape_with_traced_shape": tensor(2, 3, 4),
    "chunk_unpacked": tensor(4, 3),
    "split_unpacked_three": tensor(3, 2),
    # keyword arguments, dtype and device constants
    "keyword_arguments": tensor(3, 4),
    "dtype_and_device_constants": tensor(2, 3),
    "memory_format_and_layout_constants": tensor(1, 2, 3, 3),
    # containers in arguments and outputs
    "nested_containers_out": tensors(2, 2, 3),
    # cat(dim=0) + stack().sum(0) must broadcast, and einsum("ij,jk") must match: 1x1.
    "containers_in_arguments": tensors(2, 1, 1),
    "namedtuple_output": tensor(2, 3),
    "list_output": tensor(2, 3),
    "constant_output": tensor(2, 3),
    "proxy_in_dict_value_argument": tensor(2, 3),
    # the signature
    "defaults_and_annotations": tensor(2, 3),
    "optional_annotation": tensors(2, 2, 3),
    "keyword_only_parameters": call(randn(2, 3), alpha=2.0, beta=0.5),
    "star_args_and_kwargs": lambda: Example(
        (torch.randn(2), torch.randn(2)), {"bias": torch.randn(2)}
    ),
    "input_named_like_builtins": tensors(3, 2, 3),
    # math autowrap
    "math_on_traced_shape": tensor(2, 4),
    "math_on_placeholder": call(randn(2, 3), 2.5),
    "from_math_import_sqrt": tensor(4, 3),
    # concrete_args: the specialised values are passed too, as torch.fx needs
    "concrete_bool": call(randn(2, 3), True),
    "concrete_int": call(randn(2, 3), 3),
    "concrete_none": call(randn(2, 3), None),
    "concrete_ph_in_structure": lambda: Example((torch.randn(2, 3), (torch.randn(2, 3), 3))),
    "concrete_tuple_form": tensors(2, 2, 3),
    "concrete_ph_only": call(randn(2, 3), False),
    "concrete_overrides_default": call(randn(2, 3), 2),
    "concrete_ph_keeps_default": tensor(2, 3),
    "concrete_keyword_only": lambda: Example((torch.randn(2, 3),), {"n_1": 4}, {"n": 4}),
    "concrete_dict_with_ph": lambda: Example(
        (torch.randn(2, 3), {"gain": torch.randn(2, 3), "bias": torch.randn(3), "steps": 2})
    ),
    "concrete_list_of_ph": lambda: Example(
        (torch.randn(2, 3), [torch.randn(2, 3), torch.randn(3)])
    ),
    "concrete_namedtuple_of_ph": lambda: Example(
        (torch.randn(2, 3), Point(torch.randn(2, 3), torch.randn(3)))
    ),
    "concrete_tuple_for_star_args_forward": tensors(2, 2, 4),
    # wrapped functions
    "torch_fx_wrapped_by_name": tensor(4, 3),
    "torch_fx_wrapped_decorator_with_kwargs": tensors(2, 2, 3),
    "torch_fx_wrapped_keywords_only_proxy": tensor(4, 3),
    "torch_fx_wrapped_without_proxy": tensor(3, 2),
    "torch_fx_wrapped_builtin_len": tensor(4, 3),
    "minifx_wrapped_by_name": tensor(4, 3),
    "minifx_wrapped_decorator": tensors(2, 2, 3),
    "minifx_wrapped_in_submodule": tensor(3, 4),
    # modules
    "NestedUserModules": tensor(2, 4),
    "sequential_root": tensor(2, 4),
    "sequential_of_user_blocks": tensor(2, 4),
    "SequentialIteratedAndIndexed": tensor(2, 4),
    "ModuleListLoop": tensor(2, 4),
    "ModuleListOfUserBlocksByRange": tensor(2, 4),
    "ModuleDictIndexedAndIterated": tensor(2, 4),
    "ModuleCalledTwice": tensor(2, 4),
    "SharedSubmoduleTwoNames": tensor(2, 4),
    "ModuleCalledWithKeywords": tensors(2, 2, 3, 8),
    # parameters, buffers, tensor attributes and constants
    "ParameterUsedTwice": tensor(2, 4),
    "SubmoduleParameterDirectly": tensor(4, 4),
    "BufferUsedTwice": tensor(2, 4),
    "NestedBuffer": tensor(2, 4),
    "PlainTensorAttribute": tensor(2, 3),
    "NestedPlainTensorAttribute": tensor(2, 3),
    "tensor_constant_in_forward": tensor(2, 3),
    "TwoTensorConstants": tensor(2, 3),
    "ParameterAndBufferNamedLikeBuiltins": tensor(2, 3),
    "SubmoduleNamedLikeKeyword": tensor(2, 3),
    "LayerNamesWithDots": tensor(2, 4, 5, 5),
    # static control flow
    "FlagAttributeIf": tensor(2, 4),
    "RangeLoopAttribute": tensor(2, 3),
    "TrainingFlagDropout": tensor(4, 5),
    # custom tracers
    "custom_tracer_user_block_leaf": tensor(2, 4),
    "custom_tracer_trace_through_linear": tensor(2, 4),
    "custom_tracer_leaf_by_path": tensor(2, 4),
    # realistic small models
    "resnet_basic_block": tensor(2, 4, 5, 5),
    "MLP": tensor(2, 8),
    "SelfAttention": tensor(2, 3, 8),
    "AttentionWithTracedScale": tensors(3, 2, 3, 8),
    "ConvNet": tensor(2, 3, 8, 8),
    "ConvNetFlattenMethod": tensor(2, 3, 4, 4),
    "TransformerEncoderLayerLeaf": tensor(2, 3, 8),
    "ForwardWithDefaultsAndAnnotations": lambda: Example(
        (torch.randn(2, 4),), {"mask": torch.randn(2, 4)}
    ),
    "ForwardStarArgs": lambda: Example((torch.randn(2, 4),), {"gain": 1.5}),
    "ForwardInputNamedInput": tensor(3, 4),
    "ModuleReturnsNamedTupleAndDict": tensor(2, 4),
    "ModuleWithConcreteFlag": call(randn(2, 4), False),
    "ModuleTensorConstantAndParameterMixed": tensor(2, 4),
    # more signatures, roots and annotations
    "DecoratedForward": tensor(2, 4),
    "typing_annotations": call([1, 2], (3, 4), lambda: {"a": torch.randn(2)}, None),
    "lambda_root": tensor(2, 3),
    "no_inputs": call(),
    "returns_none": tensor(2, 3),
    "inplace_methods": tensor(2, 3),
    "method_read_then_called": tensor(2, 3),
    "shape_unpacked": tensor(2, 3, 4),
    "interpolate_keywords": tensor(1, 2, 3, 3),
    "torch_ops_aten_call": tensor(2, 3),
    # more module state
    "TensorConstantUsedTwice": tensor(3, 2),
    "TiedWeights": tensor(2, 3),
    "ParameterListAndDict": tensor(2, 3),
    "NamesCollideWithInputsAndOps": tensor(3, 2),
    "LSTMOutputUnpacked": tensor(5, 2, 3),
    "EmbeddingWithPositions": lambda: Example((torch.randint(0, 10, (2, 5)),)),
    "UserSubclassOfLinear": tensor(2, 3),
    "HooksOnTracedThroughModule": tensor(3, 2),
    # tracer options and subclasses
    "proxy_buffer_attributes_tracer": tensor(2, 4),
    "traced_func_name_tracer": tensor(3, 2),
    "autowrap_functions_both": tensor(2, 3),
    "autowrap_modules_empty": tensor(2, 3),
    "custom_tracer_untraceable_leaf": tensor(2, 3),
    # constructs of torchvision's models
    "channel_shuffle": tensor(1, 4, 2, 3),
    "ClassToken": tensor(2, 4, 2, 3),
    "QuantizableSkipAdd": tensor(1, 2, 3, 3),
    "SegmentationHead": tensor(1, 2, 5, 6),
    "relative_position_index": tensor(2, 4),
    "is_scripting_branch": tensor(2, 3),
    "wrapped_pair_unpacked": tensor(2, 3),
}

NOT_RUNNABLE: dict[str, str] = {
    "ModuleAndParameterIntoWrappedHelper": (
        "it only checks how a module argument of a wrapped function is recorded: eagerly, "
        "rows_prefix(x, self.lin) computes min(len(x), <Linear>) and raises TypeError"
    ),
}


def example(name: str) -> Example:
    """Fresh inputs for the corpus case `name`, the same on every call.

    Raises:
        KeyError: if the case has no inputs (see `NOT_RUNNABLE`).
    """
    torch.manual_seed(SEED)
    return INPUTS[name]()
