"""`minifx/graph/errors.py`: each misuse error is also the type torch.fx raises."""

from __future__ import annotations

import pytest

from minifx.graph.errors import InsertArgIndexError, MisuseError, NotTraceable, SelfInStarArgs

pytestmark = pytest.mark.ch2


@pytest.mark.parametrize(
    "error, also",
    [
        (MisuseError, (ValueError, AssertionError)),
        (InsertArgIndexError, (IndexError, AssertionError)),
        (NotTraceable, (TypeError, AssertionError)),
        (SelfInStarArgs, (TypeError, RuntimeError)),
    ],
)
def test_each_error_is_caught_as_torch_fx_s_type(error, also):
    for kind in also:
        with pytest.raises(kind):
            raise error("message")


def test_the_node_module_still_exports_misuse_error():
    from minifx.graph.node import MisuseError as from_node

    assert from_node is MisuseError
