"""Copying and pickling Proxies, as torch.fx allows (beside chapter 1's path).

A Proxy answers any attribute it lacks with a recorded `Attribute`, so the
hooks that `copy.deepcopy` and `pickle` look up on an object (`__deepcopy__`,
`__setstate__`) would record calls instead of copying. `CopyableProxy`, a
base class of `Proxy`, gives those hooks real methods.
"""

from __future__ import annotations

import copy


class CopyableProxy:
    """Deep copies and pickle state for a Proxy: its `__dict__`, copied or shared."""

    def __deepcopy__(self, memo: dict) -> CopyableProxy:
        # The copy holds copies of the record and the tracer, as torch.fx's does; what
        # cannot be copied (a tracer holding a module, say) is shared.
        copied = object.__new__(type(self))
        memo[id(self)] = copied
        for name, value in self.__dict__.items():
            try:
                copied.__dict__[name] = copy.deepcopy(value, memo)
            except Exception:
                copied.__dict__[name] = value
        return copied

    def __getstate__(self) -> dict:
        return self.__dict__

    def __setstate__(self, state: dict) -> None:
        self.__dict__ = state
