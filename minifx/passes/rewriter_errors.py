"""The errors of `replace_pattern` and `SubgraphMatcher`, and their messages.

Each message says what is wrong, why, and how to fix it. Each class also derives
from the exception type torch.fx raises for the same mistake (often a bare
`AssertionError`, or a `KeyError` from deep inside the matcher), so that code
written for torch.fx, `except AssertionError:` say, still catches it.
"""

from __future__ import annotations

from minifx.graph import Node


class PatternError(ValueError, AssertionError):
    """A pattern or replacement that cannot be matched or spliced in.

    torch.fx raises `AssertionError` for these mistakes (or fails later).
    """


class UnusedParameterError(ValueError, KeyError):
    """A pattern parameter that nothing uses (torch.fx: `KeyError` when it matches)."""

    def __str__(self) -> str:
        return str(self.args[0])  # a KeyError would print the message in quotes


class NotAPatternError(TypeError, AssertionError):
    """A pattern or replacement that is not a function, module or graph."""


class UnmatchableAttributeError(TypeError, RuntimeError):
    """A pattern `get_attr` of something other than a tensor (torch.fx: `RuntimeError`)."""


class MissingAttributeError(AttributeError, RuntimeError):
    """A rewritten graph refers to an attribute nobody has (torch.fx: `RuntimeError`)."""


def unused_node(node: Node) -> ValueError:
    if node.op == "placeholder":
        return UnusedParameterError(
            f"replace_pattern: the pattern's parameter {node.name!r} is never used. "
            "Matching follows values from the pattern's output back to its inputs, so an "
            "unused parameter can never be matched. How to fix: remove the parameter from "
            "the pattern (and from the replacement)."
        )
    return PatternError(
        f"replace_pattern: the pattern computes %{node.name} ({node.op}) but never uses it "
        "(dead code), so no match could ever account for it. How to fix: return it from "
        "the pattern or delete it."
    )


def returned_input(node: Node) -> PatternError:
    return PatternError(
        f"replace_pattern: the pattern returns its input {node.name!r} unchanged. A match is "
        "what the pattern computes from its inputs, and the uses of each returned value are "
        "handed to the replacement, so an input returned as is would hand over every use of "
        "whatever it matched. How to fix: return only values the pattern computes."
    )


def arity_mismatch(pattern_inputs: list[str], replacement_inputs: list[str]) -> PatternError:
    return PatternError(
        f"replace_pattern: the pattern takes {len(pattern_inputs)} input(s) "
        f"({', '.join(pattern_inputs)}) but the replacement takes "
        f"{len(replacement_inputs)} ({', '.join(replacement_inputs)}). Inputs pair up by "
        "position. How to fix: give the replacement the same parameters as the pattern, "
        "even those it does not use."
    )


def output_count_mismatch(pattern_outputs: int, replacement_outputs: int) -> PatternError:
    return PatternError(
        f"replace_pattern: the pattern returns {pattern_outputs} value(s) but the replacement "
        f"returns {replacement_outputs}. Each returned value takes over the uses of the "
        "pattern's value in the same position. How to fix: return as many values from the "
        "replacement as from the pattern, in the same order."
    )


def not_a_pattern(role: str, value: object) -> NotAPatternError:
    return NotAPatternError(
        f"replace_pattern: the {role} must be a function, an nn.Module, a GraphModule or a "
        f"Graph, not {type(value).__name__}. How to fix: write the {role} as a function of "
        "its inputs."
    )


def no_replacement() -> NotAPatternError:
    return NotAPatternError(
        "replace_pattern_with_filters: there is no replacement: `replacement` is None and "
        "no `replacement_callback` was given. How to fix: pass the replacement (a function, "
        "module, GraphModule or Graph), or a callback that builds one Graph per match."
    )


def unmatchable_attribute(node: Node, value: object) -> UnmatchableAttributeError:
    return UnmatchableAttributeError(
        f"replace_pattern: the pattern's get_attr %{node.name} reads a "
        f"{type(value).__name__}, but only tensor attributes can be matched. How to fix: "
        "make the pattern read a tensor (a parameter or buffer), or pass the value in as an "
        "argument."
    )


def missing_attribute(node: Node) -> MissingAttributeError:
    return MissingAttributeError(
        f"replace_pattern: the rewritten graph's %{node.name} ({node.op}) refers to "
        f"{node.target!r}, which neither the module nor the replacement has. How to fix: make "
        "the replacement a module that owns this attribute."
    )
