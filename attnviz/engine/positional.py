"""Positional encodings: the sinusoidal table of Vaswani et al. and rotary embeddings (RoPE)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

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
    n: int,
    d_head: int,
    base: float,
    *,
    dtype: torch.dtype,
    device: torch.device | None = None,
    start: int = 0,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """theta[pos, i] = pos / base^(2i/d_head) for each pair i of a head, at positions start ..
    start + n - 1 (or ``positions`` (n,)). (n, d_head // 2)"""
    if positions is None:
        pos = torch.arange(start, start + n, dtype=dtype, device=device)[:, None]  # (n, 1)
    else:
        pos = positions.to(device=device, dtype=dtype)[:, None]  # (n, 1)
    two_i = torch.arange(0, d_head - 1, 2, dtype=dtype, device=device)  # (d_head // 2,)
    return pos / torch.pow(torch.tensor(base, dtype=dtype, device=device), two_i / d_head)


def apply_rope(
    x: torch.Tensor,
    base: float = 10000.0,
    style: str = "pairs",
    start: int = 0,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """Rotate pair i of every head's vector by pos * base^(-2i/d_head).

    x: (B, nh, T, hs). With ``style`` "pairs" the pairs are interleaved, (2i, 2i+1), as in
    RoFormer (Su et al. 2021); with "halves" pair i is (i, i + hs/2), as Hugging Face's
    Llama-style models rotate (``rotate_half``). With an odd head size the last coordinate has
    no partner and is left as it is ("pairs"; "halves" needs an even size). The T vectors sit
    at positions ``start`` .. ``start`` + T - 1, or at ``positions`` (T,).
    """
    _, _, t, hs = x.shape
    if style == "halves":
        if hs % 2:
            raise ValueError(f"RoPE on halves needs an even head size (got {hs})")
        inv_freq, factor = rope_frequencies(hs, base, device=x.device)
        cos, sin = rope_cos_sin(inv_freq, factor, start, t, x.dtype, positions)  # (T, hs) each
        return rotate_halves(x, cos, sin)
    if style != "pairs":
        raise ValueError(f"RoPE style {style!r}: one of 'pairs', 'halves'")
    if positions is None:
        cos, sin = pairs_cos_sin(t, hs, base, x.dtype, x.device, start)  # (T, hs//2) each
    else:
        theta = rope_angles(t, hs, base, dtype=x.dtype, device=x.device, positions=positions)
        cos, sin = torch.cos(theta), torch.sin(theta)  # (T, hs//2) each
    h = hs // 2
    pairs = x[..., : 2 * h].unflatten(-1, (h, 2))  # (B, nh, T, hs//2, 2): (2i, 2i+1)
    even, odd = pairs[..., 0], pairs[..., 1]  # (B, nh, T, hs//2) each
    turned = torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1)
    out = turned.flatten(-2)  # (B, nh, T, 2 * (hs//2)): the pairs interleaved again
    return out if hs % 2 == 0 else torch.cat([out, x[..., 2 * h :]], dim=-1)


@functools.lru_cache(maxsize=8)
def pairs_cos_sin(
    t: int, hs: int, base: float, dtype: torch.dtype, device: torch.device, start: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (T, hs // 2) of the pairs' angles at positions start .. start + T - 1, kept
    for the next layers and steps of the same shape (a training run asks for the same ones at
    every step), and made outside inference mode, as ``hidden_keys`` is, so that a step may save
    them for its backward."""
    with torch.inference_mode(False):
        theta = rope_angles(t, hs, base, dtype=dtype, device=device, start=start)
        return torch.cos(theta), torch.sin(theta)


@dataclass(frozen=True)
class RopeScaling:
    """How a checkpoint stretches RoPE past the context it was trained on, as transformers'
    rope init functions read ``rope_scaling`` / ``rope_parameters``. ``kind`` is the
    ``rope_type``; the other fields are the ones that type reads (None: not given)."""

    kind: Literal["linear", "dynamic", "yarn", "longrope", "llama3"]
    factor: float | None = 1.0
    # The context the frequencies were trained for (dynamic: max_position_embeddings)
    original_max_positions: int | None = None
    low_freq_factor: float | None = None  # llama3
    high_freq_factor: float | None = None  # llama3
    beta_fast: float | None = None  # yarn (32 when None)
    beta_slow: float | None = None  # yarn (1 when None)
    mscale: float | None = None  # yarn
    mscale_all_dim: float | None = None  # yarn
    attention_factor: float | None = None  # yarn, longrope: cos and sin are scaled by it
    short_factor: tuple[float, ...] | None = None  # longrope, up to original_max_positions
    long_factor: tuple[float, ...] | None = None  # longrope, past it
    truncate: bool | None = None  # yarn (True when None)
    # The context the model is used at (longrope's default factor: max / original)
    max_positions: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("linear", "dynamic", "yarn", "longrope", "llama3"):
            raise ValueError(f"rope scaling {self.kind!r} is not one the engine computes")
        needs = {
            "linear": ("factor",),
            "dynamic": ("factor", "original_max_positions"),
            "yarn": ("original_max_positions",),
            "longrope": ("original_max_positions", "short_factor", "long_factor"),
            "llama3": ("factor", "low_freq_factor", "high_freq_factor", "original_max_positions"),
        }[self.kind]
        missing = [n for n in needs if getattr(self, n) is None]
        if missing:
            raise ValueError(f"rope scaling {self.kind!r} needs {', '.join(missing)}")


def rope_frequencies(
    dim: int,
    base: float,
    scaling: RopeScaling | None = None,
    seq_len: int = 0,
    device: torch.device | None = None,
) -> tuple[torch.Tensor, float]:
    """The inverse frequencies (dim // 2,) float32 of a head's ``dim`` rotated coordinates and
    the factor cos and sin are multiplied by, for a sequence of ``seq_len`` positions: the
    computation of transformers' rope init functions (default, linear, dynamic, yarn, longrope,
    llama3), in float32 as they are, so that the angles are the reference's to the last bit."""

    def plain(theta: float) -> torch.Tensor:  # 1 / theta^(2i/dim)
        exps = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
        return 1.0 / (theta**exps)

    if scaling is None:
        return plain(base), 1.0
    s = scaling
    if s.kind == "linear":
        assert s.factor is not None
        return plain(base) / s.factor, 1.0
    if s.kind == "dynamic":
        assert s.factor is not None and s.original_max_positions is not None
        n = max(seq_len, s.original_max_positions)
        if n <= s.original_max_positions:
            return plain(base), 1.0
        grown = base * ((s.factor * n / s.original_max_positions) - (s.factor - 1)) ** (
            dim / (dim - 2)
        )
        return plain(grown), 1.0
    if s.kind == "llama3":
        assert s.factor and s.low_freq_factor and s.high_freq_factor and s.original_max_positions
        inv = plain(base)
        old = s.original_max_positions
        low_wavelen, high_wavelen = old / s.low_freq_factor, old / s.high_freq_factor
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / s.factor, inv)
        smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor)
        smoothed = (1 - smooth) * scaled / s.factor + smooth * scaled
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        return torch.where(medium, smoothed, scaled), 1.0
    assert s.original_max_positions is not None
    factor = s.factor
    if factor is None:
        if s.max_positions is None:
            raise ValueError(f"rope scaling {s.kind!r} needs a factor or max_positions")
        factor = s.max_positions / s.original_max_positions
    if s.kind == "longrope":
        attention = s.attention_factor
        if attention is None:
            attention = (
                1.0
                if factor <= 1.0
                else math.sqrt(1 + math.log(factor) / math.log(s.original_max_positions))
            )
        long = seq_len > s.original_max_positions
        ext = torch.tensor(s.long_factor if long else s.short_factor, dtype=torch.float32,
                           device=device)  # fmt: skip
        exps = torch.arange(0, dim, 2, dtype=torch.int64, device=device).float() / dim
        return 1.0 / (ext * base**exps), attention

    # yarn
    def mscale(scale: float, m: float = 1.0) -> float:
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0

    attention = s.attention_factor
    if attention is None:
        if s.mscale and s.mscale_all_dim:
            attention = float(mscale(factor, s.mscale) / mscale(factor, s.mscale_all_dim))
        else:
            attention = mscale(factor)
    beta_fast, beta_slow = s.beta_fast or 32, s.beta_slow or 1
    original = s.original_max_positions

    def correction_dim(rotations: float) -> float:
        return (dim * math.log(original / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if s.truncate is None or s.truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)
    if low == high:
        high += 0.001  # as transformers: no division by zero
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)
    extrapolate = (1 - ramp).to(device=device, dtype=torch.float)
    pos_freqs = base ** (torch.arange(0, dim, 2).to(device=device, dtype=torch.float) / dim)
    inv = (1.0 / (factor * pos_freqs)) * (1 - extrapolate) + (1.0 / pos_freqs) * extrapolate
    return inv, attention


def rope_cos_sin(
    inv_freq: torch.Tensor,
    factor: float,
    start: int,
    n: int,
    dtype: torch.dtype,
    positions: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (n, 2 * len(inv_freq)) of positions start .. start+n-1 (or ``positions``
    (n,)), each frequency twice (the halves' layout), times ``factor``, computed in float32 and
    cast to ``dtype`` as transformers does."""
    if positions is None:
        pos = torch.arange(start, start + n, device=inv_freq.device).float()  # (n,)
    else:
        pos = positions.to(inv_freq.device).float()  # (n,)
    freqs = pos[:, None] * inv_freq.float()[None, :]  # (n, dim/2)
    emb = torch.cat([freqs, freqs], dim=-1)  # (n, dim)
    return (emb.cos() * factor).to(dtype), (emb.sin() * factor).to(dtype)


def rotate_halves(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rotary_dim: int | None = None
) -> torch.Tensor:
    """Hugging Face's rotation: coordinate i turns with i + r/2 for the first r = ``rotary_dim``
    (all by default) coordinates of each head; the rest pass. x (B, nh, T, hs), cos and sin
    (T, r)."""
    hs = x.shape[-1]
    r = hs if rotary_dim is None else rotary_dim
    rot, rest = x[..., :r], x[..., r:]  # (B, nh, T, r), (B, nh, T, hs - r)
    first, second = rot[..., : r // 2], rot[..., r // 2 :]  # (B, nh, T, r/2) each
    turned = torch.cat([-second, first], dim=-1)  # rotate_half
    out = rot * cos + turned * sin
    return out if r == hs else torch.cat([out, rest], dim=-1)
