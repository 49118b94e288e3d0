"""Value-weighted attention (Kobayashi et al., 2020, "Attention is not only a weight"): the norm
of what each key adds to each query's output through a head, ||a_ij v_j W_O^h||, and through a
whole layer's heads summed. Read by the fields that draw a head or a layer under
``measure=value_weighted`` and by the thumbnails; computed from a trace's values, weights and
each head's slice of W_O (``TraceSource``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import torch

from attnviz.engine.model import CHUNK_BYTES
from attnviz.engine.placement import gather
from attnviz.errors import TraceError

if TYPE_CHECKING:
    from attnviz.capture.fields.base import TraceSource


def _w_o(source: TraceSource) -> list[torch.Tensor]:
    if source.w_o is None or not source.has_value_weighted:
        raise TraceError("fields: this trace has no values or output projection")
    return source.w_o


def value_norms(source: TraceSource) -> torch.Tensor:
    """(L, nh, T) ||v_j W_O^h||: the norm of what key j would add to any query's output
    through head h at weight 1 (its value through the head's slice of W_O; the output's bias,
    the same for every key, left out). Kept with the trace."""
    w_o = _w_o(source)

    def compute() -> torch.Tensor:
        rows = []
        for layer in range(source.layers):
            v = source.qkv(layer)[2]  # (nh, T, hs)
            rows.append(torch.linalg.vector_norm(v @ w_o[layer].to(v.dtype), dim=-1))
        return gather(rows)

    return source.memo("value_norms", compute)


def written(source: TraceSource, layer: int, heads: Sequence[int], p: torch.Tensor) -> torch.Tensor:
    """``p`` (len(heads), T, T), the weights of ``heads``, as the weights by which each key
    reaches the layer's output in this run: a knocked-out head's output is not its weights
    times its values. Zeroed: no key adds anything. Averaged over the positions: every query
    gets sum_j (mean_p a_pj) v_j, so each row is the column means. Patched from another
    text: the patched queries' outputs come from that text, none from this text's keys."""
    marks = [(i, a) for i, h in enumerate(heads) for a in source.ablations
             if a.layer == layer and a.head == h]  # fmt: skip
    if not marks:
        return p
    p = p.clone()
    for i, a in marks:
        if a.mode == "zero":
            p[i] = 0
        elif a.mode == "mean":
            p[i] = p[i].mean(dim=0, keepdim=True)  # (1, T) broadcast to every query row
        else:
            p[i, : a.patched(source.n)] = 0
    return p


def value_weighted(
    source: TraceSource, layer: int, heads: Sequence[int] | None = None
) -> torch.Tensor:
    """(H', T, T) ||a_ij v_j W_O^h|| = a_ij ||v_j W_O^h|| of ``heads`` (all by default): the
    norm of what each key adds to each query's output through the head (through a knocked
    out head: ``written``)."""
    norms = value_norms(source)[layer]  # (nh, T)
    if heads is not None and len(heads) != norms.shape[0]:
        norms = norms[list(heads)]
    chosen = list(range(source.heads)) if heads is None else list(heads)
    p = written(source, layer, chosen, source.pattern(layer, heads))
    return p * norms.to(p.device, p.dtype)[:, None, :]


def value_chunks(source: TraceSource, layer: int) -> Iterator[tuple[list[int], torch.Tensor]]:
    """``head_chunks`` of the value-weighted norms."""
    norms = value_norms(source)[layer]
    for heads, p in source.head_chunks(layer):
        p = written(source, layer, heads, p)
        yield heads, p * norms[heads].to(p.device, p.dtype)[:, None, :]


def _chunk_heads(source: TraceSource) -> list[list[int]]:
    """The layer's heads a few at a time: at most about ``CHUNK_BYTES`` of float64 weights."""
    step = max(1, CHUNK_BYTES // max(1, source.n * source.n * 8))
    return [list(range(h, min(h + step, source.heads))) for h in range(0, source.heads, step)]


def value_weighted_sum(source: TraceSource, layer: int) -> torch.Tensor:
    """(T, T) float64 ||sum_h a^h_ij v^h_j W_O^h||: the norm of what key j adds to query i's
    output through the whole layer's attention. With f^h_j = v^h_j W_O^h and the Gram
    G_j[h, k] = <f^h_j, f^k_j>, the squared norm is sum_hk a^h_ij a^k_ij G_j[h, k]: heads x
    heads per cell instead of d_model, a few heads' weights at a time."""
    w_o = _w_o(source)
    v = source.qkv(layer)[2].double()  # (nh, T, hs)
    f = v @ w_o[layer].double()  # (nh, T, C)
    gram = torch.einsum("hjc,kjc->jhk", f, f)  # (T, nh, nh)
    del f
    chunks = _chunk_heads(source)
    acc = torch.zeros(source.n, source.n, dtype=torch.float64, device=v.device)

    def weights(hs: list[int]) -> torch.Tensor:
        return written(source, layer, hs, source.pattern(layer, hs)).double()  # (h, T, T)

    for i, hp in enumerate(chunks):
        ap = weights(hp)
        for hq in chunks[i:]:
            aq = ap if hq is hp else weights(hq)
            g = gram[:, hp][:, :, hq]  # (T, h, k)
            # tmp[j, h, i] = sum_k G_j[h, k] a^k_ij
            tmp = torch.bmm(g, aq.permute(2, 0, 1))  # (T, h, T)
            term = (tmp.permute(1, 2, 0) * ap).sum(0)  # (T, T)
            acc += term if hq is hp else 2 * term
    return acc.clamp_min_(0).sqrt_()
