"""Numbers on the JSON wire: every float32 in the shortest digits that give back that exact
float32, float64 in full, masked (-inf) as null; one C loop per array, no Python lists."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
import torch

from attnviz.wire.jsonarrays import dumps, pieces


def _f32(x: float) -> float:
    """The float32 nearest to a float64, as a browser's ``Math.fround`` gives it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


@pytest.mark.slow
def test_float32_round_trips_exactly_through_json_text():
    g = torch.Generator().manual_seed(0)
    magnitudes = 10.0 ** torch.randint(-44, 38, (20000,), generator=g)
    bits = torch.randint(-(2**31), 2**31 - 1, (200000,), generator=g, dtype=torch.int64)
    patterns = bits.to(torch.int32).view(torch.float32)  # every kind of float32 there is
    values = torch.cat(
        [
            torch.randn(20000, generator=g) * magnitudes.float(),
            torch.rand(20000, generator=g),  # attention-like weights
            patterns[torch.isfinite(patterns)],
            torch.tensor([0.0, -0.0, 1.0, -1.0, 0.1, 1 / 3, 3e38, 1e-45, 123456789.0]),
            torch.tensor([3.4028235e38, 1.17549435e-38, 1.1754942e-38, 1.4e-45, 2**-126]),
        ]
    ).float()
    text = dumps(values)
    # Read as a browser does (a float64, then Math.fround) and as numpy reads float32.
    read = json.loads(text)
    assert all(isinstance(v, float) for v in read)
    back = torch.tensor([_f32(v) for v in read], dtype=torch.float32)
    assert torch.equal(back.view(torch.int32), values.view(torch.int32))  # -0.0 kept too
    assert np.array_equal(np.array(text.decode()[1:-1].split(","), dtype=np.float32), values)
    # Shorter than the 17 digits of a widened float32.
    assert len(text) < 0.75 * len(json.dumps(values.tolist()))


def test_shortest_digits_masked_scores_null_and_integers_as_they_are():
    assert (
        dumps(torch.tensor([0.1, 1 / 3, 2.5e-7], dtype=torch.float32)) == b"[0.1,0.33333334,2.5e-7]"
    )
    scores = torch.tensor([[0.5, float("-inf")], [0.25, 0.75]])
    assert json.loads(dumps({"scores": scores})) == {"scores": [[0.5, None], [0.25, 0.75]]}
    assert dumps(torch.tensor([[0, 7, 255]], dtype=torch.uint8)) == b"[[0,7,255]]"
    assert dumps(torch.zeros(2, 0, 3)) == b"[[],[]]"


def test_float64_is_sent_as_it_is():
    g = torch.Generator().manual_seed(1)
    edges = torch.tensor([1 / 3, 0.1, 5e-324, 1.7976931348623157e308], dtype=torch.float64)
    x = torch.cat([edges, torch.randn(10000, generator=g, dtype=torch.float64) * 1e5])
    assert json.loads(dumps(x)) == x.tolist()


def test_tensors_anywhere_in_the_body_and_a_non_contiguous_one():
    t = torch.arange(6, dtype=torch.float32).view(2, 3)
    body = {"meta": {"n": 2, "tokens": ["a", "é"]}, "p": {"coords": t.T, "k": 3}, "none": None}
    assert json.loads(dumps(body)) == {
        "meta": {"n": 2, "tokens": ["a", "é"]},
        "p": {"coords": t.T.tolist(), "k": 3},
        "none": None,
    }
    assert "é".encode() in dumps(body)  # UTF-8, not \\u escapes


def test_pieces_join_to_the_same_text_and_stay_small():
    g = torch.Generator().manual_seed(1)
    big = torch.randn(3, 4, 50, 60, generator=g)  # 36,000 numbers
    big[0, 1, 2, 3] = float("-inf")
    for value in (big, big.numpy(), big.half(), big[:1], torch.zeros(0, 5), 3.5, None, {"a": big}):
        joined = b"".join(pieces(value, most=1000))
        assert joined == dumps(value)
        json.loads(joined)
    # Rows of 12,000, then of 3,000 numbers, then of 60: none of more than `most` numbers.
    texts = list(pieces(big, most=1000))
    assert max(len(t) for t in texts) < 60 * 25  # one row of 60 numbers at most
    assert len(texts) > 3 * 4 * 50
    assert list(pieces(big)) == [dumps(big)]  # under the default bound: one piece
