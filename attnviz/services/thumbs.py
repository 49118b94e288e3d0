"""Every head's pattern as a thumbnail: max-pooled to the size asked for (so a peak is never
lost) and quantised to 8 bits, one scale per head. Reduced where the trace lives (on the GPU when
there is one), so only the small result is copied to the host. Training runs' checkpoints are
quantised the same way (``services/training/report.py``).
"""

from __future__ import annotations

import math

import torch

from attnviz.capture import TraceTensors
from attnviz.capture.progress import report
from attnviz.engine.analysis import attention_entropy
from attnviz.engine.placement import gather
from attnviz.services.tokenview import TokenView


def _pool(x: torch.Tensor, pool: int, dim: int) -> torch.Tensor:
    """The largest value of each run of ``pool`` along ``dim`` (m -> ceil(m / pool)), the last
    run holding what is left. No padded copy: the whole runs are one view, the rest one slice
    (a padded copy of a 512-token layer's weights cost more than the max)."""
    m = x.shape[dim]
    whole = m // pool * pool
    parts = []
    if whole:
        runs = x.narrow(dim, 0, whole).unflatten(dim, (m // pool, pool))
        parts.append(runs.amax(dim=dim + 1 if dim >= 0 else dim))
    if whole < m:
        parts.append(x.narrow(dim, whole, m - whole).amax(dim=dim, keepdim=True))
    return parts[0] if len(parts) == 1 else torch.cat(parts, dim=dim)


def max_pool(x: torch.Tensor, pool: int) -> torch.Tensor:
    """(H, m, m) -> (H, s, s), s = ceil(m / pool): the largest value of each pool x pool block
    (the last blocks hold what is left)."""
    # The rows first: the max of ``pool`` whole rows runs along their contiguous length, in
    # vector steps (3x faster at 512 tokens than the columns first, whose runs of a few
    # numbers each are not; max_pool2d is slower still), then the columns of a pool-th of
    # the numbers. The same maxima either way.
    return _pool(_pool(x, pool, -2), pool, -1)  # (H, s, m), then (H, s, s)


def quantize(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Weights (..., m, m) as 8-bit values and one scale per matrix, its peak: weight ~ values *
    scale / 255. -> (..., m, m) uint8 and (...) float32"""
    scale = x.amax(dim=(-2, -1))
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = x * (255 / scale)[..., None, None]  # one new tensor, rounded in place: 3M values at 512
    return q.round_().to(torch.uint8), scale.float()


def thumbnails(
    tensors: TraceTensors, tv: TokenView, size: int, layers: list[int], value: bool = False
) -> dict:
    """Every head's pattern (under the token options) as 8-bit values, one scale per head:
    weight ~ values * scale / 255. Longer than ``size``: max-pooled by the smallest whole factor
    that fits, so a peak is never lost. (L', H, s, s) uint8 and (L', H) float32. ``value``: the
    value-weighted norms instead of the weights (``measure``)."""
    m = len(tv.groups)
    pool = 1 if size == 0 or m <= size else math.ceil(m / size)
    values, scales = [], []
    # A long text's weights are recomputed here from q and k, every layer: each row's entropy
    # (the page's last part) is taken from them on the way rather than by a second pass.
    take = not value and layers == list(range(tensors.layers)) and tensors.wants_entropy()
    entropy: list[torch.Tensor] = []
    for i, layer in enumerate(layers):
        report("thumbnails", i, len(layers))  # a job's (it may stop here)
        parts, part_scales, rows = [], [], []
        chunks = tensors.value_chunks(layer) if value else tensors.head_chunks(layer)
        for _, p in chunks:  # a few heads at a time on a long text
            if take:
                rows.append(attention_entropy(p))  # (h, T)
            x = tv.apply(p, renormalise=not value)  # (h, m, m)
            if pool > 1:
                x = max_pool(x, pool)  # (h, s, s)
            q, scale = quantize(x)  # the pooled peak is the pattern's peak
            parts.append(q)
            part_scales.append(scale)
        values.append(torch.cat(parts))  # (H, s, s)
        scales.append(torch.cat(part_scales))
        if take:
            entropy.append(torch.cat(rows))
    if take:
        tensors.keep_entropy(gather(entropy))
    report("thumbnails", len(layers), len(layers))
    return {
        "pool": pool,
        "size": values[0].shape[-1],
        "layers": layers,
        "values": gather(values),  # a placed model's layers meet on the CPU, 8-bit and pooled
        "scale": gather(scales),
    }
