"""Python's operators, in one table: the Proxy records them, code generation writes them back.

A Proxy records `x + 1` as a call of `operator.add` (chapter 1); chapter 3 writes it
back as `x + 1`. The keys are the functions' names in the `operator` module.
"""

# --8<-- [start:table]
# `x + 1` calls `x.__add__(1)`; `1 + x` calls the reflected `x.__radd__(1)`.
REFLECTABLE_OPERATORS = {
    "add": "{} + {}",
    "sub": "{} - {}",
    "mul": "{} * {}",
    "truediv": "{} / {}",
    "floordiv": "{} // {}",
    "mod": "{} % {}",
    "pow": "{} ** {}",
    "matmul": "{} @ {}",
    "lshift": "{} << {}",
    "rshift": "{} >> {}",
    "and_": "{} & {}",
    "or_": "{} | {}",
    "xor": "{} ^ {}",
}
# Comparisons need no reflected form: Python turns `1 < x` into `x > 1` itself.
COMPARISONS = {
    "eq": "{} == {}",
    "ne": "{} != {}",
    "lt": "{} < {}",
    "gt": "{} > {}",
    "le": "{} <= {}",
    "ge": "{} >= {}",
}
UNARY_OPERATORS = {"neg": "-{}", "pos": "+{}", "invert": "~{}"}
# Every operator a Proxy records as a call of `operator.<name>`, with its syntax.
OPERATOR_SYNTAX = {
    **REFLECTABLE_OPERATORS,
    **COMPARISONS,
    "getitem": "{}[{}]",
    **UNARY_OPERATORS,
}
# --8<-- [end:table]

# Statements that change their left side. A Proxy never records them (it has no
# `__iadd__`), but a graph built by hand may call `operator.iadd`: codegen writes it back.
INPLACE_OPERATORS = {
    "iadd": "{} += {}",
    "isub": "{} -= {}",
    "imul": "{} *= {}",
    "itruediv": "{} /= {}",
    "ifloordiv": "{} //= {}",
    "imod": "{} %= {}",
    "ipow": "{} **= {}",
    "imatmul": "{} @= {}",
    "ilshift": "{} <<= {}",
    "irshift": "{} >>= {}",
    "iand": "{} &= {}",
    "ior": "{} |= {}",
    "ixor": "{} ^= {}",
    "setitem": "{}[{}] = {}",
}
