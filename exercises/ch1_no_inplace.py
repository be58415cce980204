"""Exercise 1.2: a recorder that refuses in-place ops.

In-place operations (`x.add_(1)`, `F.relu(x, inplace=True)`) overwrite a
value that earlier records may still refer to. Write a recorder that refuses
them while tracing, with a `TraceError` that names the operation.

Read first: chapters/01-proxy.md#the-tracer-interface
Grade with: `make grade CH=1`
"""

from minifx.proxy import TapeRecorder, TraceError  # noqa: F401  (you will need them)


def is_inplace_method(name: str) -> bool:
    """True for in-place tensor methods such as `add_` and `relu_`.

    False for ordinary methods (`add`) and for Python's dunder methods
    (`__call__`), which also end with an underscore.
    """
    raise NotImplementedError(
        "Exercise 1.2: is_inplace_method is not written yet; "
        "see chapters/01-proxy.md#the-tracer-interface"
    )


class NoInplaceRecorder(TapeRecorder):
    """A `TapeRecorder` that raises `TraceError` on in-place operations.

    Refuse in-place tensor methods (`x.add_(1)`, `x.relu_()`, also
    `t.add_(x)` on a real tensor `t`) and calls with `inplace=True`; record
    everything else exactly as `TapeRecorder` does. The error message must
    name the operation (`add_`, `relu`); one line is enough.

    Out of scope: in-place *functions* such as `torch.relu_(x)`, and `x += 1`,
    which reaches the tracer as `operator.add` (a Proxy has no `__iadd__`),
    so there is nothing to refuse.

    Remember what `create_proxy` receives: unconverted arguments. For
    `call_method`, `target` is the method's name and `args[0]` the receiver,
    which is not always a Proxy.
    """

    def create_proxy(self, kind, target, args, kwargs, *rest, **more):
        raise NotImplementedError(
            "Exercise 1.2: NoInplaceRecorder.create_proxy is not written yet; "
            "see chapters/01-proxy.md#the-tracer-interface"
        )
