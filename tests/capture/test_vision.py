"""``capture.vision``: a tower's pieces put back on a tile's patch grid, on made-up layouts: a
batch with a class token, windows over reordered patches (zeros between them), and the
refusals (a layer over other patches than the tiles', a piece across two tiles)."""

from __future__ import annotations

import pytest
import torch

from attnviz.capture.vision import TowerLayout, TowerTile, tile_weights, vision_meta
from attnviz.errors import TraceError


def softmax(h: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(h, n, n, generator=g).softmax(-1)  # (h, n, n)


def test_a_batch_with_a_class_token_drops_it():
    tiles = (TowerTile(0, 0, 2, 2), TowerTile(1, 0, 2, 2))
    layout = TowerLayout(tiles, torch.tensor([0] * 4 + [1] * 4), torch.tensor([0, 1, 2, 3] * 2),
                         class_token=True)  # fmt: skip
    call = torch.stack([softmax(3, 5, 0), softmax(3, 5, 1)])  # (2, 3, 5, 5)
    got = tile_weights([call], layout, 1, 0)
    assert torch.equal(got, call[1, :, 1:, 1:])
    meta = vision_meta([[call]], layout)
    assert meta["tiles"][1] == {"image": 1, "tile": 0, "rows": 2, "cols": 2, "class_token": True}
    assert "class token" in meta["note"] and meta["heads"] == 3


def test_windows_over_reordered_patches_leave_zeros_between():
    # One 2 x 2 tile read in the order 3, 1, 0, 2, two windows: {3, 1} and {0, 2}.
    layout = TowerLayout((TowerTile(0, 0, 2, 2),), torch.zeros(4, dtype=torch.long),
                         torch.tensor([3, 1, 0, 2]))  # fmt: skip
    a, b = softmax(1, 2, 2), softmax(1, 2, 3)
    got = tile_weights([a[None], b[None]], layout, 0, 0)[0]  # (4, 4)
    assert got[3, 3] == a[0, 0, 0] and got[3, 1] == a[0, 0, 1] and got[1, 3] == a[0, 1, 0]
    assert got[0, 2] == b[0, 0, 1] and got[2, 0] == b[0, 1, 0]
    assert got[3, 0] == 0 and got[0, 1] == 0
    assert torch.allclose(got.sum(-1), torch.ones(4))
    assert "layer 0 attends within windows" in vision_meta([[a[None], b[None]]], layout)["note"]


def test_refusals_say_why():
    tiles = (TowerTile(0, 0, 1, 2), TowerTile(0, 1, 1, 2))
    layout = TowerLayout(tiles, torch.tensor([0, 0, 1, 1]), torch.tensor([0, 1, 0, 1]))
    with pytest.raises(TraceError, match="attended over 3 patches, not the 4"):
        tile_weights([softmax(1, 3, 4)[None]], layout, 0, 2)
    across = [softmax(1, 1, 5)[None], softmax(1, 2, 6)[None], softmax(1, 1, 7)[None]]
    with pytest.raises(TraceError, match="patches of two tiles at once"):
        tile_weights(across, layout, 0, 1)
    with pytest.raises(TraceError, match=r"^tile: 2 is out of range \(image 0 has 2 tiles"):
        layout.index(0, 2)
    assert vision_meta([[softmax(1, 4, 8)[None]]], "why not")["tiles"] == []
