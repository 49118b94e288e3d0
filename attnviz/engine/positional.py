"""Positional encodings: the sinusoidal table of Vaswani et al. and rotary embeddings (RoPE)."""

from __future__ import annotations

import torch


def sinusoidal_table(
    n: int, d: int, *, dtype: torch.dtype = torch.float64, device: torch.device | None = None
) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(pos / 10000^(2i/d)). (n, d)"""
    pos = torch.arange(n, dtype=dtype, device=device)[:, None]  # (n, 1)
    two_i = torch.arange(0, d, 2, dtype=dtype, device=device)  # (ceil(d/2),)
    angle = pos / torch.pow(torch.tensor(10000.0, dtype=dtype, device=device), two_i / d)
    pe = torch.zeros(n, d, dtype=dtype, device=device)
    pe[:, 0::2] = torch.sin(angle)
    pe[:, 1::2] = torch.cos(angle[:, : d // 2])
    return pe


def rope_angles(
    n: int, d_head: int, base: float, *, dtype: torch.dtype, device: torch.device | None = None
) -> torch.Tensor:
    """theta[pos, i] = pos / base^(2i/d_head) for each pair i of a head. (n, d_head // 2)"""
    pos = torch.arange(n, dtype=dtype, device=device)[:, None]  # (n, 1)
    two_i = torch.arange(0, d_head - 1, 2, dtype=dtype, device=device)  # (d_head // 2,)
    return pos / torch.pow(torch.tensor(base, dtype=dtype, device=device), two_i / d_head)


def apply_rope(x: torch.Tensor, base: float = 10000.0, style: str = "pairs") -> torch.Tensor:
    """Rotate pair i of every head's vector by pos * base^(-2i/d_head).

    x: (B, nh, T, hs). With ``style`` "pairs" the pairs are interleaved, (2i, 2i+1), as in
    RoFormer (Su et al. 2021); with "halves" pair i is (i, i + hs/2), as Hugging Face's
    Llama-style models rotate (``rotate_half``). With an odd head size the last coordinate has
    no partner and is left as it is ("pairs"; "halves" needs an even size).
    """
    _, _, t, hs = x.shape
    theta = rope_angles(t, hs, base, dtype=x.dtype, device=x.device)  # (T, hs // 2)
    cos, sin = torch.cos(theta), torch.sin(theta)
    if style == "halves":
        if hs % 2:
            raise ValueError(f"RoPE on halves needs an even head size (got {hs})")
        h = hs // 2
        first, second = x[..., :h], x[..., h:]  # (B, nh, T, hs/2) each
        return torch.cat([first * cos - second * sin, second * cos + first * sin], dim=-1)
    if style != "pairs":
        raise ValueError(f"RoPE style {style!r}: one of 'pairs', 'halves'")
    even, odd = x[..., 0 : 2 * (hs // 2) : 2], x[..., 1 : 2 * (hs // 2) : 2]  # (B, nh, T, hs//2)
    out = x.clone()
    out[..., 0 : 2 * (hs // 2) : 2] = even * cos - odd * sin
    out[..., 1 : 2 * (hs // 2) : 2] = even * sin + odd * cos
    return out
