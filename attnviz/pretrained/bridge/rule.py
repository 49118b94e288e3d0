"""A bridged model's attention rule, from what each layer's attention was given: scores and
weights recomputed from q and k are the forward's own (checked on a probe when the model loads).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.pretrained.bridge.record import LayerRecord, Mask


@dataclass(frozen=True)
class LayerRule:
    scaling: float  # logits are q k^T times this
    softcap: float | None  # weights = softmax(c * tanh(scores / c)) when set
    mask: Mask


@dataclass(frozen=True)
class RecordedRule:
    """Per layer, the scaling, soft-cap and mask that layer's eager attention used.

    ``scores(layer, q, k)``: (H', T, hs) x (H', S, hs) -> (H', T, S) logits after scaling, -inf
    where the mask hides a key, before any soft-cap; ``weights(layer, scores)``: the softmax of
    the soft-capped scores (in float32, cast back, as eager attention does)."""

    layers: tuple[LayerRule, ...]

    @classmethod
    def of(cls, records: list[LayerRecord]) -> RecordedRule:
        return cls(tuple(LayerRule(r.scaling, r.softcap, r.mask) for r in records))

    def scores(self, layer: int, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        rule = self.layers[layer]
        scores = torch.matmul(q, k.transpose(-2, -1)) * rule.scaling  # (H', T, S)
        return rule.mask.apply(scores)

    def weights(self, layer: int, scores: torch.Tensor) -> torch.Tensor:
        cap = self.layers[layer].softcap
        if cap is not None:
            capped = torch.tanh(scores / cap) * cap
            scores = capped.masked_fill(torch.isneginf(scores), float("-inf"))
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)

    def nbytes(self) -> int:
        """Bytes of the masks no rule describes (each counted once)."""
        masks = {id(r.mask): r.mask for r in self.layers}
        return sum(m.nbytes() for m in masks.values())

    def softcap(self) -> float | None:
        """The soft-cap every layer shares, if any."""
        caps = {r.softcap for r in self.layers}
        return caps.pop() if len(caps) == 1 else None

    def scaling(self) -> float | None:
        """The scaling every layer shares (None when layers differ)."""
        scales = {r.scaling for r in self.layers}
        return scales.pop() if len(scales) == 1 else None
