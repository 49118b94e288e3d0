"""A self-attention over a long text that never forms its (T, T) weights: each layer weighs its
values with a fused kernel (or in tiles of rows where the kernel cannot apply the layer's rule)
and makes what a long text's views read first: each row's log-sum-exp (from the same kernel),
then its mass on the sinks and the local keys. The layer's queries and keys are kept, so that
any window of weights can be recomputed exactly afterwards (``exact_weights``), and the rows'
entropy and a head's block map when they are asked for (``row_entropy``, ``block_map``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnviz.engine.model import (
    CHUNK_BYTES,
    Attention,
    TransformerConfig,
    attention_pattern,
    attention_scores,
    soft_cap,
)
from attnviz.long.kernel import flash_with_lse, fusable

Spans = tuple[tuple[int, int], ...]
# The tiles' sizes: the tiled path holds about four (nh, rows, T) float32 arrays at once within
# TILE_BYTES; the local mass reads LOCAL_ROWS rows a time (tests make both small).
TILE_BYTES = CHUNK_BYTES
LOCAL_ROWS = 256


@dataclass(frozen=True)
class Plan:
    """What a long run keeps and sums: the text's blocks (``bounds``: each block's first token,
    then the text's length), the sink positions (the first token, special tokens), how near a
    key is "local" (fewer than ``local`` positions from its query; either side in a
    bidirectional model), and the dtype the queries and keys are kept in (float16 halves their
    memory, and windows recomputed from them are then near, not exact)."""

    bounds: tuple[int, ...]
    sinks: tuple[int, ...] = (0,)
    local: int = 64
    keep: torch.dtype = torch.float32

    @property
    def n_blocks(self) -> int:
        return len(self.bounds) - 1

    def block_of(self, device: torch.device) -> torch.Tensor:
        """(T,) each token's block index."""
        sizes = torch.tensor(self.bounds).diff()
        return torch.repeat_interleave(torch.arange(len(sizes)), sizes).to(device)


def fixed_blocks(T: int, n: int = 64) -> tuple[int, ...]:
    """The bounds of at most ``n`` blocks of one size (the last shorter) over T tokens."""
    size = -(-T // min(n, max(T, 1))) if T else 1
    return (*range(0, T, size), T)


@dataclass
class LayerRecord:
    """What a long run keeps of one layer. q (nh, T, hs) and k (kv_heads, T, hs), as the scores
    meet them (rotated, normalised), in ``Plan.keep``; per head and query (nh, T), float32: the
    log-sum-exp of the row's scores (after any soft-cap), its mass on the sink positions and on
    the local keys (the sinks apart). ``fused``: weighed by the flash kernel (else in tiles of
    rows, which also gave each row's ``entropy``, nats; else None until asked)."""

    q: torch.Tensor
    k: torch.Tensor
    lse: torch.Tensor
    sink: torch.Tensor
    local: torch.Tensor
    fused: bool
    entropy: torch.Tensor | None = None


@dataclass(frozen=True)
class LayerRule:
    """How ``layer`` of a model with ``cfg`` weighs its keys in one run (the run's
    bidirectional ``spans``): the engine's own ``attention_scores`` and soft-cap, over any tile
    of rows and keys."""

    cfg: TransformerConfig
    layer: int
    spans: Spans = ()

    def scores(self, q: torch.Tensor, k: torch.Tensor, r0: int, c0: int) -> torch.Tensor:
        """Scores of queries r0 .. (q (..., R, hs)) on keys c0 .. (k (..., C, hs)), a hidden
        key -inf, before any soft-cap: (..., R, C)."""
        return attention_scores(q, k, self.cfg, layer=self.layer, start=r0, spans=self.spans,
                                key_start=c0)  # fmt: skip

    def keys_seen(self, r0: int, r1: int, T: int) -> tuple[int, int]:
        """The range of keys rows r0 .. r1 - 1 may see: after the window's start, up to the
        last row when causal (a bidirectional span may reach past it)."""
        window = self.cfg.window_of(self.layer)
        c0 = 0 if window is None else max(0, r0 - window + 1)
        if self.cfg.causal and not self.spans:
            return c0, r1
        return c0, T if window is None or self.cfg.causal else min(T, r1 + window - 1)

    def fused(self, q: torch.Tensor) -> bool:
        """Whether the flash kernel can weigh these rows: on a CPU, with no soft-cap, no
        bidirectional span, and no sliding window shorter than the text."""
        window, T = self.cfg.window_of(self.layer), q.shape[-2]
        return (fusable(q) and self.cfg.attn_softcap is None and not self.spans
                and (window is None or window >= T))  # fmt: skip


def exact_weights(
    q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor, rule: LayerRule, r0: int, c0: int
) -> torch.Tensor:
    """The weights of queries r0 .. (q (H, R, hs)) on keys c0 .. (k (H, C, hs)) by ``rule``:
    exp(score - the row's log-sum-exp ``lse`` (H, R)), 0 where a key is hidden.
    -> (H, R, C) float32."""
    s = rule.scores(q.float(), k.float(), r0, c0)
    return torch.exp(soft_cap(s, rule.cfg) - lse[..., None])  # (H, R, C)


def weigh(
    q: torch.Tensor, k: torch.Tensor, values: torch.Tensor, rule: LayerRule
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """weights @ ``values`` (1, H, T, D) by ``rule``, q and k (1, H, T, hs), with each row's
    log-sum-exp (H, T) float32, and, where the rows went in tiles, their entropy (H, T) (the
    fused kernel's caller makes it from its output; else None)."""
    if rule.fused(q):
        hs, width = q.shape[-1], values.shape[-1]
        wide = max(hs, width)  # the kernel takes one width: pad with zeros, same products
        qp, kp = F.pad(q, (0, wide - hs)), F.pad(k, (0, wide - hs))
        out, lse = flash_with_lse(qp, kp, F.pad(values, (0, wide - width)),
                                  rule.cfg.score_scale, rule.cfg.causal)  # fmt: skip
        return out[..., :width], lse[0], None
    return _tiled(q, k, values, rule)


class LongAttend:
    """The ``Attend`` of a long run: weighs a layer's values without its (T, T) weights, as
    PyTorch's SDPA would (the flash kernel, which also gives each row's log-sum-exp), and hands
    ``on_layer`` the layer's ``LayerRecord``. Layers the kernel cannot weigh (``LayerRule.fused``)
    go in tiles of rows over the keys those rows see. A row's entropy and a head's block map
    cost another weighing each: they are made when asked (``row_entropy``, ``block_map``),
    but for a tiled layer, whose tiles give the entropy on the way."""

    def __init__(self, plan: Plan, on_layer: Callable[[int, LayerRecord], None]) -> None:
        self.plan = plan
        self.on_layer = on_layer

    def __call__(
        self, attn: Attention, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, spans: Spans
    ) -> torch.Tensor:
        if q.shape[0] != 1:
            raise ValueError("a long run reads one text at a time")
        cfg, rule = attn.cfg, LayerRule(attn.cfg, attn.layer, spans)
        z, lse, entropy = weigh(q, k, v, rule)
        group = cfg.n_heads // cfg.kv_heads  # k repeats each key head for its query heads
        keep = self.plan.keep
        kept_q = q[0].to(dtype=keep, memory_format=torch.contiguous_format, copy=True)
        kept_k = k[0, ::group].to(dtype=keep, memory_format=torch.contiguous_format, copy=True)
        sink, local = _sink_and_local(q[0], k[0], lse, rule, self.plan)
        rec = LayerRecord(kept_q, kept_k, lse, sink, local, rule.fused(q), entropy)
        self.on_layer(attn.layer, rec)
        return z


def row_entropy(q: torch.Tensor, k: torch.Tensor, rule: LayerRule) -> torch.Tensor:
    """Heads' entropy of each row (nats) from their kept q, k (H, T, hs): (H, T). One weighing
    whose values are the keys: its output is each row's mean key, sum_j p_j k_j, and the
    entropy -sum p log p = lse - sum_j p_j s_j = lse - scale q . mean key (no soft-cap: a
    capped layer goes in tiles, which weigh p log p itself)."""
    q, k = q[None].float(), k[None].float()  # (1, H, T, hs)
    mean_key, lse, entropy = weigh(q, k, k, rule)
    if entropy is not None:
        return entropy
    return lse - rule.cfg.score_scale * (q[0] * mean_key[0].float()).sum(-1)  # (H, T)


def block_map(q: torch.Tensor, k: torch.Tensor, rule: LayerRule, plan: Plan) -> torch.Tensor:
    """Heads' block maps from their kept q, k (H, T, hs): (H, nb, nb), the sum over a block's
    queries of their weights on each block's keys (a row sums to its block's length). One
    weighing whose values are the blocks' indicator."""
    block = plan.block_of(q.device)
    onehot = F.one_hot(block, plan.n_blocks).to(torch.float32)  # (T, nb)
    H, T, _ = q.shape
    values = onehot.expand(1, H, T, -1)
    mass, _, _ = weigh(q[None].float(), k[None].float(), values, rule)
    out = torch.zeros(H, plan.n_blocks, plan.n_blocks, device=q.device)
    return out.index_add_(1, block, mass[0].float())  # (H, nb, nb)


def _tiled(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, rule: LayerRule
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What ``weigh`` gives, weighing a few rows at a time over the keys they see, with the
    engine's own ``attention_scores`` and ``attention_pattern``; and each row's entropy."""
    _, nh, T, _ = q.shape
    z = torch.empty(*q.shape[:-1], v.shape[-1], dtype=v.dtype, device=q.device)
    lse = torch.empty(nh, T, device=q.device)
    entropy = torch.empty(nh, T, device=q.device)
    rows = max(16, TILE_BYTES // (16 * nh * T))
    for r0 in range(0, T, rows):
        r1 = min(T, r0 + rows)
        c0, c1 = rule.keys_seen(r0, r1, T)
        s = rule.scores(q[:, :, r0:r1], k[:, :, c0:c1], r0, c0)  # (1, nh, R, C)
        capped = soft_cap(s, rule.cfg)  # once: the weights and the log-sum-exp both read it
        p = attention_pattern(capped)  # (1, nh, R, C): the engine's softmax, capped already
        z[:, :, r0:r1] = p.to(v.dtype) @ v[:, :, c0:c1]
        log_sum = torch.logsumexp(capped[0].float(), dim=-1)  # (nh, R)
        pf = p[0].float()
        log_p = capped[0].float() - log_sum[..., None]
        entropy[:, r0:r1] = -torch.where(pf > 0, pf * log_p, 0.0).sum(-1)
        lse[:, r0:r1] = log_sum
    return z, lse, entropy


def _sink_and_local(
    q: torch.Tensor, k: torch.Tensor, lse: torch.Tensor, rule: LayerRule, plan: Plan
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per head and query (nh, T): the mass on the sink positions, and on the keys fewer than
    ``plan.local`` positions away that are not sinks, recomputed exactly from q (nh, T, hs),
    k (nh, T, hs) and the rows' log-sum-exp: O(T x local), never O(T^2)."""
    nh, T, _ = q.shape
    sinks = [p for p in plan.sinks if p < T]
    sink = torch.zeros(nh, T, device=q.device)
    for p in sinks:
        sink += exact_weights(q, k[:, p : p + 1], lse, rule, 0, p)[..., 0]
    local = torch.empty(nh, T, device=q.device)
    rows, w = LOCAL_ROWS, plan.local
    later = 0 if rule.cfg.causal and not rule.spans else w - 1  # a span sees keys after it
    for r0 in range(0, T, rows):
        r1 = min(T, r0 + rows)
        c0, c1 = max(0, r0 - w + 1), min(T, r1 + later)
        wts = exact_weights(q[:, r0:r1], k[:, c0:c1], lse[:, r0:r1], rule, r0, c0)
        i = torch.arange(r0, r1, device=q.device)[:, None]  # (R, 1)
        j = torch.arange(c0, c1, device=q.device)[None, :]  # (1, C)
        near = (i - j).abs() < w  # (R, C); a later key is hidden by the rule when causal
        for p in sinks:
            near &= j != p
        local[:, r0:r1] = (wts * near).sum(-1)
    return sink, local
