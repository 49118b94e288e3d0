"""How a model makes a layer's scores and weights from its queries and keys: the rule a trace
recomputes them by (the native engine's, or what the transformers bridge recorded), and how the
trace's meta describes it to the page."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch

from attnviz.engine import TransformerConfig
from attnviz.engine.model import attention_pattern, attention_scores


class AttentionRule(Protocol):
    """How a model turns a layer's queries and keys into scores and scores into weights: the
    native engine's functions, or what the transformers bridge recorded of each layer."""

    def scores(self, layer: int, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """(H', T, hs) x (H', S, hs) -> (H', T, S) logits after scaling, a hidden key -inf,
        before any soft-cap."""
        ...

    def weights(self, layer: int, scores: torch.Tensor) -> torch.Tensor:
        """(H', T, S) scores -> the weights the forward used (rows sum to 1)."""
        ...


@dataclass(frozen=True)
class EngineRule:
    """The native engine's attention: ``attention_scores`` and ``attention_pattern`` with the
    layer's window, scale and soft-cap (``cfg``), and the run's bidirectional ``spans``
    (``Layout.spans``)."""

    cfg: TransformerConfig
    spans: tuple[tuple[int, int], ...] = ()

    def scores(self, layer: int, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return attention_scores(q, k, self.cfg, layer=layer, spans=self.spans)

    def weights(self, layer: int, scores: torch.Tensor) -> torch.Tensor:
        return attention_pattern(scores, self.cfg)


def window_note(window: int, causal: bool) -> str:
    """What a sliding window of ``window`` does, in words: a query sees the keys fewer than
    ``window`` positions away, itself included; in a causal model those before it (the last
    ``window``), in a bidirectional one those on each side (ModernBERT's local layers)."""
    if causal:
        return (
            f"a query sees only the last {window:,} tokens, itself included; keys further back "
            "are masked like future ones"
        )
    side = window - 1
    return (
        f"a query sees only the {side:,} token{'' if side == 1 else 's'} on each side of it, "
        "and itself; keys further away, before or after it, are masked"
    )


def attention_meta(cfg: TransformerConfig, windows_unread: str | None = None) -> dict:
    """How the model makes scores and weights from q and k (``schemas.AttentionRule``) and the
    rotation q and k are shown after (``schemas.Rope``), for the trace's meta; with
    ``windows_unread``, why its windows were not read (they are then all null, unknown)."""
    if cfg.attn_scale is not None:
        inverse_square = 1 / cfg.attn_scale**2
        whole = round(inverse_square)
        # read by people (3 significant digits); `scale` keeps the exact value
        label = (f"÷ √{whole}" if abs(inverse_square - whole) < 1e-9 * max(1, whole)
                 else f"× {cfg.attn_scale:.3g}")  # fmt: skip
        scale, divide_by = cfg.attn_scale, None
    elif cfg.scale:
        scale, divide_by, label = cfg.d_head**-0.5, math.sqrt(cfg.d_head), f"÷ √{cfg.d_head}"
    else:
        scale, divide_by, label = 1.0, None, "(unscaled)"
    rope = None
    if cfg.positional == "rope":
        rope = {
            "base": cfg.rope_base,
            "style": cfg.rope_style,
            "scaling": cfg.rope_scaling.kind if cfg.rope_scaling is not None else None,
            "rotary_dim": cfg.rotary_dim,
            "local_base": cfg.rope_local_base,
            "sections": list(cfg.rope_sections) if cfg.rope_sections else None,
        }
    windows = [cfg.window_of(i) for i in range(cfg.n_layers)]
    return {
        "rope": rope,
        "attention": {
            "scale": scale,
            "divide_by": divide_by,
            "scale_label": label,
            "softcap": cfg.attn_softcap,
            "windows": windows,
            "window_notes": [None if w is None else window_note(w, cfg.causal) for w in windows],
            "windows_unread": windows_unread,
            "qk_norm": cfg.qk_norm,
        },
    }
