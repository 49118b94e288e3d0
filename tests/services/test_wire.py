"""float32 numbers on the wire: 9 significant digits that give back the exact float32."""

from __future__ import annotations

import json

import torch

from attnviz.services.wire import wire


def test_float32_round_trips_exactly_through_json_text():
    g = torch.Generator().manual_seed(0)
    magnitudes = 10.0 ** torch.randint(-20, 12, (20000,), generator=g)
    values = torch.cat(
        [
            torch.randn(20000, generator=g) * magnitudes,
            torch.rand(20000, generator=g),  # attention-like weights
            torch.tensor([0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 3e38, 1e-45, 123456789.0]),
        ]
    ).float()
    text = json.dumps(wire(values))
    back = torch.tensor(json.loads(text), dtype=torch.float64).float()
    assert torch.equal(back, values)
    assert len(text) < 0.75 * len(json.dumps(values.tolist()))


def test_nine_significant_digits_and_special_values():
    assert wire(torch.tensor([0.1, 1 / 3, 2.5e-7], dtype=torch.float32)) == [
        0.100000001,
        0.333333343,
        2.49999999e-07,
    ]
    assert wire(torch.tensor([float("-inf"), 0.0])) == [float("-inf"), 0.0]


def test_float64_is_sent_as_it_is():
    x = torch.tensor([1 / 3, 0.1], dtype=torch.float64)
    assert wire(x) == [1 / 3, 0.1]
