"""Where a run's tokens sit when they are not at 0 .. T-1 of one causal line: the rotary
positions of each token (one index, or one per section of a multimodal rotary embedding, M-RoPE:
temporal, height, width) and the spans of tokens that see each other both ways in a causal model
(PaliGemma's prefix of image and prompt, Gemma 3's image blocks).

The pieces here are general: ``mrope_cos_sin`` composes the sections of cos and sin as
transformers' Qwen2-VL (chunks) and Qwen3-VL (interleaved) rotary embeddings do, and
``span_keys`` is the blockwise overlay transformers' masks OR onto the causal one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.engine.positional import apply_rope, rope_cos_sin, rope_frequencies, rotate_halves


@dataclass(frozen=True, eq=False)
class Layout:
    """Where a run's tokens sit, when not at 0..T-1 of one causal line."""

    # Rotary positions of the run's tokens: (T,) long, or (n_sections, T) long for multimodal
    # rotary (M-RoPE: temporal, height, width). None: start .. start + T - 1.
    positions: torch.Tensor | None = None
    # [start, stop) spans of *absolute* token indices whose tokens see each other both ways
    # although the model is causal (PaliGemma's prefix: ((0, P),); Gemma 3: one per image).
    spans: tuple[tuple[int, int], ...] = ()

    def __post_init__(self) -> None:
        p = self.positions
        if p is not None and (p.dim() not in (1, 2) or p.dtype.is_floating_point):
            raise ValueError(
                f"layout positions must be integers of shape (T,) or (sections, T) (got "
                f"{p.dtype} {tuple(p.shape)})"
            )
        spans = tuple((int(a), int(b)) for a, b in self.spans)  # hashable: a key of the masks
        for a, b in spans:
            if not 0 <= a < b:
                raise ValueError(f"layout span [{a}, {b}) must satisfy 0 <= start < stop")
        object.__setattr__(self, "spans", spans)

    def rotary(self, T: int) -> torch.Tensor | None:
        """The positions of the run's T tokens, checked against T (None: start .. start+T-1)."""
        p = self.positions
        if p is not None and p.shape[-1] != T:
            raise ValueError(f"layout positions cover {p.shape[-1]} tokens; the run has {T}")
        return p


def positions_of(layout: Layout | None, T: int) -> torch.Tensor | None:
    """``layout``'s rotary positions for a run of T tokens, or None (counted from its start)."""
    return None if layout is None else layout.rotary(T)


def spans_of(layout: Layout | None) -> tuple[tuple[int, int], ...]:
    return () if layout is None else layout.spans


def continued(layout: Layout | None, P: int, start: int, T: int) -> Layout | None:
    """The layout of tokens start .. start + T - 1 of a sequence whose first P tokens (a
    prompt) ``layout`` places: a prompt token keeps its positions; the tokens written after it
    continue from its largest position + 1, one more each, every section alike (transformers' rope
    deltas: position = index + max(prompt positions) + 1 - P). Spans stay (absolute)."""
    if layout is None:
        return None
    p = layout.positions
    if p is None:
        return layout
    if p.shape[-1] != P:
        raise ValueError(f"layout positions cover {p.shape[-1]} tokens; the prompt has {P}")
    index = torch.arange(start, start + T, device=p.device)  # (T,) absolute indices
    after = index + (int(p.max()) + 1 - P if P else 0)  # (T,) past the prompt
    inside = p[..., index.clamp(max=max(P - 1, 0))]  # (..., T) the prompt's own
    keep = index < P
    return Layout(positions=torch.where(keep, inside, after), spans=layout.spans)


def section_positions(
    positions: torch.Tensor | None, n: int, start: int, T: int, device: torch.device
) -> torch.Tensor:
    """(n, T) positions of each rotary section: ``positions`` (n, T) as they are, a (T,) one
    for every section (text: all sections read one index), None: start .. start + T - 1."""
    if positions is None:
        positions = torch.arange(start, start + T, device=device)
    positions = positions.to(device)
    if positions.dim() == 1:
        return positions[None].expand(n, T)  # (n, T)
    if positions.shape[0] != n:
        raise ValueError(
            f"layout positions have {positions.shape[0]} sections; the rotary embedding has {n}"
        )
    return positions


def mrope_cos_sin(
    inv_freq: torch.Tensor,
    factor: float,
    positions: torch.Tensor,
    sections: tuple[int, ...],
    interleaved: bool,
    dtype: torch.dtype,
) -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (T, 2 * len(inv_freq)) of multimodal rotary positions (n, T): frequency f
    turns by the position of the section it belongs to. Chunked (Qwen2-VL, Qwen2.5-VL): the
    first sections[0] frequencies read section 0, the next sections[1] section 1, ...;
    interleaved (Qwen3-VL): frequency f reads section f mod n while f < n * sections[f mod n],
    section 0 otherwise. In float32, times ``factor``, cast to ``dtype``, each frequency twice
    (the halves' layout), as transformers' rotary embeddings compute them."""
    freqs = positions[..., None].float() * inv_freq.float()  # (n, T, dim/2)
    n = len(sections)
    if interleaved:
        composed = freqs[0].clone()  # (T, dim/2): section 0 unless overwritten
        for s in range(1, n):
            idx = slice(s, sections[s] * n, n)
            composed[..., idx] = freqs[s, ..., idx]
    else:
        chunks = freqs.split(list(sections), dim=-1)  # n x (n, T, sections[i])
        composed = torch.cat([c[i] for i, c in enumerate(chunks)], dim=-1)  # (T, dim/2)
    emb = torch.cat([composed, composed], dim=-1)  # (T, dim)
    return (emb.cos() * factor).to(dtype), (emb.sin() * factor).to(dtype)


def span_keys(
    T: int,
    S: int,
    start: int,
    spans: tuple[tuple[int, int], ...],
    device: torch.device,
    key_start: int = 0,
) -> torch.Tensor:
    """(T, S) true where query start + i and key key_start + j lie in one span (they see each
    other)."""
    i = torch.arange(start, start + T, device=device)  # (T,) query indices
    j = torch.arange(key_start, key_start + S, device=device)  # (S,) key indices
    both = torch.zeros(T, S, dtype=torch.bool, device=device)
    for a, b in spans:
        both |= ((i >= a) & (i < b))[:, None] & ((j >= a) & (j < b))[None, :]  # (T, S)
    return both


@functools.lru_cache(maxsize=4)
def hidden_keys(
    T: int,
    S: int,
    start: int,
    causal: bool,
    window: int | None,
    device: torch.device,
    spans: tuple[tuple[int, int], ...] = (),
    window_in_spans: bool = True,
    key_start: int = 0,
) -> torch.Tensor:
    """(T, S) true where query start + i may not see key key_start + j (keys from 0 unless a
    tile of them is asked): after it when ``causal`` (unless
    both lie in one of ``spans``, [start, stop) of absolute indices), or ``window`` or more
    positions before it (either side when not causal). A span's keys are subject to the window
    when ``window_in_spans`` (transformers' Gemma 3), free of it otherwise (PaliGemma 2). Kept
    for the next heads and layers of a text (spans is a tuple: a key of the cache), and made
    outside inference mode even when a trace asks first, so that a training step of the same
    shape may save it for its backward."""
    with torch.inference_mode(False):
        i = torch.arange(start, start + T, device=device)[:, None]  # (T, 1) query positions
        j = torch.arange(key_start, key_start + S, device=device)[None, :]  # (1, S) key positions
        hidden = j > i if causal else torch.zeros(T, S, dtype=torch.bool, device=device)
        both = span_keys(T, S, start, spans, device, key_start) if spans and causal else None
        if both is not None and (window is None or window_in_spans):
            hidden = hidden & ~both  # (T, S): OR(causal, span) before the window
        if window is not None:
            far = (i - j) >= window if causal else (i - j).abs() >= window  # (T, S)
            hidden = hidden | far
            if both is not None and not window_in_spans:
                hidden = hidden & ~both  # OR(AND(window, causal), span)
    return hidden


def rotate(
    x: torch.Tensor,
    cfg: TransformerConfig,
    layer: int,
    start: int,
    positions: torch.Tensor | None = None,
) -> torch.Tensor:
    """RoPE on (B, nh, T, hs) as ``layer`` of ``cfg`` turns it, at positions start .. start +
    T - 1, or at ``positions``: (T,), or (sections, T) with ``cfg.rope_sections`` (M-RoPE; a
    (T,) one then turns every section alike). The frequencies are those of a run of max
    position + 1 tokens, as transformers' dynamic update counts them."""
    base, scaling = cfg.rope_of(layer)
    T = x.shape[-2]
    if positions is not None and positions.shape[-1] != T:
        raise ValueError(f"{positions.shape[-1]} rotary positions for {T} tokens")
    if cfg.rope_style == "pairs":
        if scaling is not None or cfg.rotary_dim is not None:
            raise ValueError("RoPE scaling and a rotary_dim rotate halves only")
        if positions is not None and positions.dim() != 1:
            raise ValueError("sections of rotary positions need rope_sections")
        return apply_rope(x, base, "pairs", start, positions)
    dim = cfg.rotary_dim or cfg.d_head
    sections = cfg.rope_sections
    if positions is None and sections is None:
        inv_freq, factor = rope_frequencies(dim, base, scaling, start + T, x.device)
        cos, sin = rope_cos_sin(inv_freq, factor, start, T, x.dtype)  # (T, dim) each
        return rotate_halves(x, cos, sin, cfg.rotary_dim)
    if sections is None:
        assert positions is not None
        if positions.dim() != 1:
            raise ValueError("sections of rotary positions need rope_sections")
        seen = int(positions.max()) + 1 if T and scaling is not None else 0
        inv_freq, factor = rope_frequencies(dim, base, scaling, seen, x.device)
        cos, sin = rope_cos_sin(inv_freq, factor, start, T, x.dtype, positions)  # (T, dim)
        return rotate_halves(x, cos, sin, cfg.rotary_dim)
    pos = section_positions(positions, len(sections), start, T, x.device)  # (n, T)
    seen = int(pos.max()) + 1 if T and scaling is not None else 0  # read by scalings alone
    inv_freq, factor = rope_frequencies(dim, base, scaling, seen, x.device)
    cos, sin = mrope_cos_sin(inv_freq, factor, pos, sections, cfg.rope_interleaved, x.dtype)
    return rotate_halves(x, cos, sin, cfg.rotary_dim)  # cos, sin (T, dim) each
