"""Weights of the toy transformer, built by one pure function from the toy settings.

``identity`` makes W_Q = W_K = W_V = W_O = I (the article's raw self-attention). ``random`` draws
each matrix from N(0, 1/fan_in) with its own seeded generator, keyed by the seed and the tensor's
name, so that switching one part on or off (the FFN, a positional table) leaves every other
weight unchanged and ablations compare like with like. ``custom`` uses the person's matrices in
every layer. The FFN and the learned position table are seeded the same way whatever the
projections; LayerNorms have no affine parameters.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Literal

import torch

from attnviz.engine.config import TransformerConfig

Projections = Literal["identity", "random", "custom"]
LEARNED_POS_STD = 0.5


def seeded_randn(seed: int, name: str, shape: tuple[int, ...], std: float) -> torch.Tensor:
    """N(0, std^2) in float64 from a generator of its own, keyed by the seed and the name."""
    g = torch.Generator().manual_seed((seed * 0x9E3779B1 + zlib.crc32(name.encode())) % 2**63)
    return torch.randn(*shape, generator=g, dtype=torch.float64) * std


def _matrix(rows: Sequence[Sequence[float]], d: int, name: str) -> torch.Tensor:
    m = torch.tensor(rows, dtype=torch.float64)
    assert m.shape == (d, d), f"{name}: expected ({d}, {d}), got {tuple(m.shape)}"
    return m


def toy_weights(
    cfg: TransformerConfig,
    projections: Projections = "identity",
    custom: dict[str, Sequence[Sequence[float]] | None] | None = None,
    seed: int = 0,
) -> dict[str, torch.Tensor]:
    """State dict (float64, CPU) for ``Transformer(cfg)``; every tensor's shape is asserted."""
    d = cfg.d_model
    eye = torch.eye(d, dtype=torch.float64)
    sd: dict[str, torch.Tensor] = {}
    if cfg.positional == "learned":
        sd["W_pos"] = seeded_randn(seed, "W_pos", (cfg.n_ctx, d), LEARNED_POS_STD)
    if projections == "custom":
        assert custom is not None, "custom projections need matrices"
        given = {n: custom.get(n.lower()) for n in "QKVO"}
        missing = [n for n in "QKV" if given[n] is None]
        if missing:
            raise ValueError(f"custom projections need W_{missing[0]}")
        fixed = {n: _matrix(m, d, n) for n, m in given.items() if m is not None}
        fixed.setdefault("O", eye)
    for layer in range(cfg.n_layers):
        p = f"blocks.{layer}."
        for n in "QKV" + "O":
            key = f"{p}attn.W_{n}"
            if projections == "identity":
                sd[key] = eye.clone()
            elif projections == "random":
                sd[key] = seeded_randn(seed, key, (d, d), d**-0.5)
            else:
                sd[key] = fixed[n].clone()
        if cfg.ffn:
            sd[f"{p}mlp.W_in"] = seeded_randn(seed, f"{p}mlp.W_in", (d, cfg.hidden), d**-0.5)
            shape = (cfg.hidden, d)
            sd[f"{p}mlp.W_out"] = seeded_randn(seed, f"{p}mlp.W_out", shape, cfg.hidden**-0.5)
    for key, t in sd.items():
        expect = {
            "W_pos": (cfg.n_ctx, d),
            "W_in": (d, cfg.hidden),
            "W_out": (cfg.hidden, d),
        }.get(key.rsplit(".", 1)[-1], (d, d))
        assert t.shape == expect, f"{key}: expected {expect}, got {tuple(t.shape)}"
    return sd
