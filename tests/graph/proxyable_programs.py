"""The `ProxyableClassMeta` programs that tests/graph/test_proxyable.py traces and
tests/codegen/test_tracer_arguments.py runs: each takes a library (`minifx` or `torch.fx`)
and returns the traced function with the class it builds."""

from __future__ import annotations

import torch


def pair_class(meta):
    class TensorPair(metaclass=meta):
        def __init__(self, left, right):
            self.left, self.right = left, right

        def add(self, other):
            return TensorPair(self.left + other.left, self.right + other.right)

        def mul(self, other):
            return TensorPair(self.left * other.left, self.right * other.right)

    return TensorPair


def zero_class(meta):
    class ZeroTensor(metaclass=meta):
        def __init__(self, inp):
            if inp.sum() == 0:  # runs on real values only: a Proxy records the call instead
                self.is_zero, self.tensor = True, torch.tensor([])
            else:
                self.is_zero, self.tensor = False, inp

    return ZeroTensor


def pair_from_proxies(fx):
    TensorPair = pair_class(fx.ProxyableClassMeta)

    def use_tensor_pair_ctor(x: TensorPair, y: torch.Tensor):
        return x.add(TensorPair(y, y)).mul(x)

    return use_tensor_pair_ctor, TensorPair


def pair_from_constants(fx):
    TensorPair = pair_class(fx.ProxyableClassMeta)

    def use_tensor_pair_literal(x: TensorPair):
        return x.add(TensorPair(torch.zeros(5, 3), torch.ones(5, 3))).mul(x)

    return use_tensor_pair_literal, TensorPair


def zero_from_proxies(fx):
    ZeroTensor = zero_class(fx.ProxyableClassMeta)

    def use_zero_tensor(x: torch.Tensor, y: torch.Tensor):
        return ZeroTensor(x + y)

    return use_zero_tensor, ZeroTensor


PROXYABLE = [pair_from_proxies, pair_from_constants, zero_from_proxies]
