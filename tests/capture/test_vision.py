"""``capture.vision``: a tower's pieces put back on a tile's patch grid, on made-up layouts: a
batch with a class token, windows over reordered patches (zeros between them), and the
refusals (a layer over other patches than the tiles', a piece across two tiles)."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture.vision import TowerCall, TowerLayout, TowerTile, tile_weights, vision_meta
from attnviz.errors import TraceError


def softmax(h: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(h, n, n, generator=g).softmax(-1)  # (h, n, n)


def kept(w: torch.Tensor) -> TowerCall:
    """A made-up call of weights ``w`` (B, H, P, P), kept as they are."""
    return TowerCall(tuple(w.shape), kept=w)  # type: ignore[arg-type]


def test_a_call_keeps_q_and_k_when_they_give_the_weights_back():
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 6, 8, generator=g)  # (B, H, P, hs)
    k = torch.randn(2, 2, 6, 8, generator=g)  # two key heads, each read by two query heads
    seen = torch.ones(2, 1, 6, 6, dtype=torch.bool)
    seen[1, :, :, 5] = False  # the second piece's last patch hidden (padding)
    bias = torch.zeros(2, 1, 6, 6).masked_fill(~seen, torch.finfo(torch.float32).min)
    scores = q @ k.repeat_interleave(2, dim=1).transpose(2, 3) * 0.35 + bias
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32)  # eager attention's
    for mask in (seen, bias):
        call = TowerCall.of(q, k, mask, 0.35, weights)
        assert call.kept is None and call.q is not None
        assert torch.equal(call.weights(), weights)
        assert call.weights()[1, :, :, 5].abs().max() == 0
    # Weights that q and k do not give back (a tower that adds something of its own): kept.
    other = TowerCall.of(q, k, None, 0.35, weights)
    assert other.kept is not None and torch.equal(other.weights(), weights)
    # What a call keeps: its q and k, not its P x P weights.
    plain = torch.softmax(q @ k.repeat_interleave(2, dim=1).transpose(2, 3) * 0.35, dim=-1)
    small = TowerCall.of(q, k, None, 0.35, plain)
    assert sum(t.numel() for t in small.tensors()) == q.numel() + k.numel()


def test_a_batch_with_a_class_token_drops_it():
    tiles = (TowerTile(0, 0, 2, 2), TowerTile(1, 0, 2, 2))
    layout = TowerLayout(tiles, torch.tensor([0] * 4 + [1] * 4), torch.tensor([0, 1, 2, 3] * 2),
                         class_token=True)  # fmt: skip
    call = torch.stack([softmax(3, 5, 0), softmax(3, 5, 1)])  # (2, 3, 5, 5)
    got = tile_weights([kept(call)], layout, 1, 0)
    assert torch.equal(got, call[1, :, 1:, 1:])
    meta = vision_meta([[kept(call)]], layout)
    assert meta["tiles"][1] == {"image": 1, "tile": 0, "rows": 2, "cols": 2, "class_token": True}
    assert "class token" in meta["note"] and meta["heads"] == 3


def test_windows_over_reordered_patches_leave_zeros_between():
    # One 2 x 2 tile read in the order 3, 1, 0, 2, two windows: {3, 1} and {0, 2}.
    layout = TowerLayout((TowerTile(0, 0, 2, 2),), torch.zeros(4, dtype=torch.long),
                         torch.tensor([3, 1, 0, 2]))  # fmt: skip
    a, b = softmax(1, 2, 2), softmax(1, 2, 3)
    got = tile_weights([kept(a[None]), kept(b[None])], layout, 0, 0)[0]  # (4, 4)
    assert got[3, 3] == a[0, 0, 0] and got[3, 1] == a[0, 0, 1] and got[1, 3] == a[0, 1, 0]
    assert got[0, 2] == b[0, 0, 1] and got[2, 0] == b[0, 1, 0]
    assert got[3, 0] == 0 and got[0, 1] == 0
    assert torch.allclose(got.sum(-1), torch.ones(4))
    assert (
        "layer 0 attends within windows"
        in vision_meta([[kept(a[None]), kept(b[None])]], layout)["note"]
    )


def test_refusals_say_why():
    tiles = (TowerTile(0, 0, 1, 2), TowerTile(0, 1, 1, 2))
    layout = TowerLayout(tiles, torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1]))
    with pytest.raises(TraceError, match="attended over 3 patches, not the 4"):
        tile_weights([kept(softmax(1, 3, 4)[None])], layout, 0, 2)
    across = [kept(softmax(1, n, seed)[None]) for n, seed in ((1, 5), (2, 6), (1, 7))]
    with pytest.raises(TraceError, match="patches of two tiles at once"):
        tile_weights(across, layout, 0, 1)
    with pytest.raises(TraceError, match=r"^tile: 2 is out of range \(image 0 has 2 tiles"):
        layout.index(0, 2)
    assert vision_meta([[kept(softmax(1, 4, 8)[None])]], "why not")["tiles"] == []
