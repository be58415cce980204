"""`ProxyableClassMeta`: classes whose construction is recorded while tracing.

A class built with this metaclass can be made from Proxies: instead of
running `__init__` on symbolic values, `TensorPair(y, y)` with a Proxy among
its arguments records one `call_function` node whose target is the class.

    class TensorPair(metaclass=ProxyableClassMeta):
        def __init__(self, left, right):
            self.left, self.right = left, right

    def f(x: TensorPair, y):
        return x.add(TensorPair(y, y))      # tensor_pair = TensorPair(y, y)

An instance made from real values is built as usual; when it reaches the
graph as an argument, the Tracer stores it on the root module as a constant
(`_TensorPair_constant_0`) and reads it with a `get_attr` node.
"""

from __future__ import annotations

from typing import Any

from ..proxy.proxy import _proxies_in


class ProxyableClassMeta(type):
    """Metaclass that records `cls(...)` as a `call_function` node when given a Proxy.

    Unlike torch.fx's, it does not check that a trace is running: a Proxy among
    the arguments is enough, and without one the class is built as usual.
    """

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        proxy = next(_proxies_in((args, kwargs)), None)
        if proxy is None:
            return super().__call__(*args, **kwargs)
        return proxy.tracer.create_proxy("call_function", cls, args, kwargs)


def is_proxyable_instance(value: Any) -> bool:
    """Whether `value` is an instance of a class made with `ProxyableClassMeta`."""
    return isinstance(type(value), ProxyableClassMeta)
