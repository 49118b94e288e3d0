import math

import pytest
import torch

from attnviz.engine.positional import apply_rope, sinusoidal_table
from tests.support import reference


@pytest.mark.parametrize("d", [1, 2, 3, 4, 7, 64])
def test_sinusoidal_table_matches_the_formula(d):
    pe = sinusoidal_table(10, d)
    assert pe.shape == (10, d)
    assert torch.allclose(
        pe, torch.tensor(reference.sinusoidal(10, d), dtype=torch.float64), atol=1e-15
    )
    assert pe[0, 0::2].abs().max() == 0 and (pe[0, 1::2] == 1).all()  # sin 0, cos 0
    if d >= 2:
        assert pe[1, 0].item() == pytest.approx(math.sin(1.0)) and pe[1, 1].item() == pytest.approx(
            math.cos(1.0)
        )


def test_rope_keeps_lengths_and_makes_scores_relative():
    g = torch.Generator().manual_seed(3)
    q, k = (
        torch.randn(1, 1, 1, 6, generator=g, dtype=torch.float64),
        torch.randn(1, 1, 1, 6, generator=g, dtype=torch.float64),
    )
    # The same query and key at every position: after RoPE, q_i . k_j depends only on i - j.
    qs, ks = apply_rope(q.expand(1, 1, 8, 6)), apply_rope(k.expand(1, 1, 8, 6))
    assert torch.allclose(qs.norm(dim=-1), q.norm(dim=-1).expand(1, 1, 8), atol=1e-14)
    s = (qs @ ks.transpose(-2, -1))[0, 0]
    for off in range(-7, 8):
        diag = torch.diagonal(s, offset=off)
        assert torch.allclose(diag, diag[0].expand_as(diag), atol=1e-12)
    assert torch.allclose(qs[0, 0, 0], q[0, 0, 0])  # position 0 is not rotated


def test_rope_leaves_the_odd_coordinate_alone():
    x = torch.arange(15, dtype=torch.float64).reshape(1, 1, 5, 3)
    out = apply_rope(x)
    assert torch.equal(out[..., 2], x[..., 2])
    assert torch.allclose(
        out[0, 0], torch.tensor(reference.rope(x[0, 0].tolist()), dtype=torch.float64)
    )


def test_rope_on_halves_is_rope_on_pairs_with_the_coordinates_reordered():
    """Hugging Face's rotate_half turns coordinate i with i + hs/2; RoFormer's turns 2i with
    2i + 1, by the same angle for pair i. Reordering a vector's coordinates from halves to
    pairs, rotating, and ordering them back gives the halves rotation exactly."""
    import torch

    from attnviz.engine.positional import apply_rope

    hs = 8
    x = torch.randn(1, 2, 5, hs, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    to_pairs = torch.stack([torch.arange(hs // 2), torch.arange(hs // 2) + hs // 2], 1).flatten()
    back = torch.argsort(to_pairs)
    want = apply_rope(x[..., to_pairs], 500.0, "pairs")[..., back]
    assert torch.allclose(apply_rope(x, 500.0, "halves"), want, atol=1e-15)
    assert not torch.allclose(apply_rope(x, 500.0, "halves"), apply_rope(x, 500.0, "pairs"))
    # Position 0 is not rotated in either.
    assert torch.equal(apply_rope(x, 500.0, "halves")[:, :, 0], x[:, :, 0])
