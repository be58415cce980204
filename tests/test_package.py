"""`import minifx as fx`: the lazy re-exports of the root package."""

import pytest

import minifx
import minifx.proxy

pytestmark = pytest.mark.meta


def test_public_names_resolve_to_their_stage():
    assert minifx.Proxy is minifx.proxy.Proxy
    assert minifx.TraceError is minifx.proxy.TraceError
    assert minifx.trace_to_tape is minifx.proxy.trace_to_tape


def test_stages_are_attributes():
    assert minifx.proxy is minifx.proxy  # resolved through __getattr__ when not yet set
    assert "proxy" in dir(minifx) and "Proxy" in dir(minifx)


def test_unknown_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="module 'minifx' has no attribute 'nope'"):
        minifx.nope  # noqa: B018
