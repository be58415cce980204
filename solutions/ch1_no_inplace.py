"""Exercise 1.2: a recorder that refuses in-place ops (solution).

In-place operations (`x.add_(1)`, `F.relu(x, inplace=True)`) overwrite a
value that earlier records may still refer to, which makes a recorded
program hard to reorder or optimise. Every operation on a Proxy passes
through the tracer's `create_proxy`, so that is the one place to refuse them.
"""

from minifx.proxy import TapeRecorder, TraceError


# --8<-- [start:solution]
def is_inplace_method(name: str) -> bool:
    """True for in-place tensor methods such as `add_` and `relu_`; not for dunders."""
    return name.endswith("_") and not name.endswith("__")


class NoInplaceRecorder(TapeRecorder):
    """A `TapeRecorder` that raises `TraceError` on in-place operations."""

    def create_proxy(self, kind, target, args, kwargs, *rest, **more):
        if kind == "call_method" and is_inplace_method(target):
            # args[0] is the receiver: a Proxy, or a real tensor in `t.add_(x)`.
            raise TraceError(f"refusing the in-place method {target}() on {args[0]!r}")
        if kwargs.get("inplace") is True:
            raise TraceError(f"refusing {target.__name__}(..., inplace=True)")
        return super().create_proxy(kind, target, args, kwargs, *rest, **more)


# --8<-- [end:solution]
