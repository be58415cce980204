"""minifx.passes.observers: MinMaxObserver against torch.ao's MinMaxObserver, the oracle.

The scale and zero point of every scheme must be torch.ao's, bit for bit: chapter 8's int8
models are compared with torch.ao's, and the same scales make the same int8 values.
They grade build task 8.1 (the observer's forward, its integer range and its qparams).
"""

from __future__ import annotations

import warnings

import pytest
import torch

from minifx.passes.observers import ACTIVATION, WEIGHT, MinMaxObserver

pytestmark = [pytest.mark.ch8, pytest.mark.task("8.1")]


def test_observer_records_the_true_min_and_max_and_returns_its_input():
    observer = MinMaxObserver()
    batches = [torch.randn(5, 7) * 3 for _ in range(3)]
    for batch in batches:
        assert observer(batch) is batch
    everything = torch.cat(batches)
    assert observer.min_val.item() == everything.min().item()
    assert observer.max_val.item() == everything.max().item()
    assert observer.has_seen_data and not MinMaxObserver().has_seen_data


@pytest.mark.parametrize(
    "scheme",
    [
        ACTIVATION,
        WEIGHT,
        {"dtype": torch.quint8},
        {"dtype": torch.qint8, "qscheme": torch.per_tensor_symmetric, "reduce_range": True},
        {"dtype": torch.quint8, "qscheme": torch.per_tensor_symmetric},
    ],
)
@pytest.mark.parametrize("low, high", [(-3.0, 5.0), (0.5, 2.0), (-4.0, -1.0), (0.0, 0.0)])
def test_qparams_equal_torch_ao_observers(scheme, low, high):
    from torch.ao.quantization import MinMaxObserver as AoObserver

    data = torch.tensor([low, (low + high) / 3, high])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Please use quant_min and quant_max", UserWarning)
        ours, theirs = MinMaxObserver(**scheme), AoObserver(**scheme)
        ours(data), theirs(data)
        scale, zero_point = theirs.calculate_qparams()
    assert ours.calculate_qparams() == (scale.item(), zero_point.item())
    assert ours.quant_range == (theirs.quant_min, theirs.quant_max)


def test_observer_repr_shows_its_range():
    observer = MinMaxObserver()
    observer(torch.tensor([-1.0, 2.5]))
    assert repr(observer) == "MinMaxObserver(min_val=-1, max_val=2.5)"
