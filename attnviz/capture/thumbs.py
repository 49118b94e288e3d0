"""Every head's pattern as a thumbnail: max-pooled to the size asked for (so a peak is never
lost) and quantised to 8 bits, one scale per head. Reduced where the trace lives (on the GPU when
there is one), so only the small result is copied to the host. Training runs' checkpoints are
quantised the same way (``services/training/report.py``).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attnviz.capture.progress import report
from attnviz.capture.tokenview import TokenView
from attnviz.capture.value_norms import value_chunks
from attnviz.engine.analysis import attention_entropy
from attnviz.engine.placement import gather
from attnviz.engine.reduce import max_pool, quantize

if TYPE_CHECKING:
    from attnviz.capture.fields.base import TraceSource


def thumbnails(
    tensors: TraceSource, tv: TokenView, size: int, layers: list[int], value: bool = False
) -> dict:
    """Every head's pattern (under the token options) as 8-bit values, one scale per head:
    weight ~ values * scale / 255. Longer than ``size``: max-pooled by the smallest whole factor
    that fits, so a peak is never lost. (L', H, s, s) uint8 and (L', H) float32. ``value``: the
    value-weighted norms instead of the weights (``measure``)."""
    reduced = None if value else tensors.reduced_thumbnails(tv, size, layers)
    if reduced is not None:  # made where the weights are (a remote deployment)
        return reduced
    m = len(tv.groups)
    pool = 1 if size == 0 or m <= size else math.ceil(m / size)
    values, scales = [], []
    # A long text's weights are recomputed here from q and k, every layer: each row's entropy
    # (the page's last part) is taken from them on the way rather than by a second pass.
    # Asked later, the entropy would take every layer's weights again: at 3,600 tokens of
    # SmolLM2-135M as long as the thumbnails did.
    take = (
        not value
        and layers == list(range(tensors.layers))
        and tensors.has_qk
        and not tensors.holds_forward
        and tensors.derived("entropy") is None
    )
    entropy: list[torch.Tensor] = []
    for i, layer in enumerate(layers):
        report("thumbnails", i, len(layers))  # a job's (it may stop here)
        parts, part_scales, rows = [], [], []
        chunks = value_chunks(tensors, layer) if value else tensors.head_chunks(layer)
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
        tensors.keep("entropy", gather(entropy))  # as ``fields.entropy`` takes it
    report("thumbnails", len(layers), len(layers))
    return {
        "pool": pool,
        "size": values[0].shape[-1],
        "layers": layers,
        "values": gather(values),  # a placed model's layers meet on the CPU, 8-bit and pooled
        "scale": gather(scales),
    }
