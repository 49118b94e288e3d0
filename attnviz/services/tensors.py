"""One trace's tensors, kept small: q, k, v per layer and the hidden states, on the device they
were computed on. Scores and attention weights (T x T per head, most of a trace's bytes) are
recomputed from q and k, a head or a layer at a time, by the engine's own attention functions:
the very numbers of the forward, at a fraction of the memory.

A trace is computed once (``capture_trace``) and then read many times, whole or in parts, by the
JSON and the compact forms. The forward's own weights are kept only until the first response is
built. Distances, entropy and the PCA of the trajectories are computed on first use and kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import torch

from attnviz.engine import Transformer, TransformerConfig, capture
from attnviz.engine.analysis import PCA, attention_entropy, pairwise_distances, trajectory_pca
from attnviz.engine.model import attention_pattern, attention_scores

R = TypeVar("R")


class TraceError(ValueError):
    """A request that validated but cannot be computed; the message names the field."""


@dataclass
class TraceTensors:
    """Every captured tensor of one sequence. Per-head tensors are lists over layers, so that one
    layer or head is read without touching the rest."""

    cfg: TransformerConfig
    q: list[torch.Tensor]  # L x (nh, T, hs) (after RoPE when on)
    k: list[torch.Tensor]  # L x (nh, T, hs) (after RoPE when on)
    v: list[torch.Tensor]  # L x (nh, T, hs)
    states: torch.Tensor  # (L+1, T, C): [0] the input after positions, [l] layer l's output
    embeddings: torch.Tensor  # (T, C) the token vectors before positions
    positional: torch.Tensor | None  # (T, C) the positional table added, if any
    # The forward's own weights, L x (nh, T, T), until release(): the first response's thumbnails
    # read them instead of recomputing.
    forward_pattern: list[torch.Tensor] | None = field(default=None, repr=False)
    _derived: dict[str, object] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def layers(self) -> int:
        return len(self.q)

    @property
    def heads(self) -> int:
        return self.q[0].shape[0]

    @property
    def n(self) -> int:
        return self.states.shape[1]

    def release(self) -> None:
        """Drop the forward's weights (what the cache keeps is q, k, v and the states)."""
        self.forward_pattern = None

    def nbytes(self) -> int:
        """Bytes kept, with room for the derived tensors (distances, entropy, projection)."""
        own = [*self.q, *self.k, *self.v, self.states, self.embeddings]
        own += [self.positional] if self.positional is not None else []
        base = sum(t.numel() * t.element_size() for t in own)
        L1, T, _ = self.states.shape
        derived = (L1 * T * T + self.layers * self.heads * (T + 1)) * self.states.element_size()
        return base + derived

    def scores(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor:
        """(H', T, T) logits after scaling (masked = -inf) of ``heads`` (all by default)."""
        q, k = self.q[layer], self.k[layer]
        if heads is not None and len(heads) != q.shape[0]:
            q, k = q[list(heads)], k[list(heads)]
        return attention_scores(q, k, self.cfg)

    def pattern(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor:
        """(H', T, T) softmax weights of ``heads`` (all by default); rows are queries."""
        forward = self.forward_pattern
        if forward is not None:
            p = forward[layer]
            return p if heads is None or len(heads) == p.shape[0] else p[list(heads)]
        return attention_pattern(self.scores(layer, heads))

    def _memo(self, name: str, compute: Callable[[], R]) -> R:
        with self._lock:
            if name not in self._derived:
                self._derived[name] = compute()
            return self._derived[name]  # type: ignore[return-value]

    def distances(self) -> torch.Tensor:
        """(L+1, T, T) Euclidean distance between tokens at each layer."""
        return self._memo("distances", lambda: pairwise_distances(self.states))

    def entropy(self) -> torch.Tensor:
        """(L, nh, T) entropy in nats of each query's attention row."""
        return self._memo(
            "entropy",
            lambda: torch.stack([attention_entropy(self.pattern(i)) for i in range(self.layers)]),
        )

    def projection(self) -> PCA:
        """One PCA of every layer's hidden states together, so that frames are comparable."""
        return self._memo("projection", lambda: trajectory_pca(self.states))

    def rollout(self) -> list[torch.Tensor]:
        """L x (T, T) float64: attention rollout up to each layer (``AGGREGATE_RULES``), over
        every token: R_l = Â_l R_(l-1), Â = (mean over heads + I) / 2 with a residual."""

        def compute() -> list[torch.Tensor]:
            out: list[torch.Tensor] = []
            eye = torch.eye(self.n, dtype=torch.float64, device=self.states.device)
            for layer in range(self.layers):
                a = self.pattern(layer).double().mean(0)  # (T, T)
                if self.cfg.residual:
                    a = (a + eye) / 2
                out.append(a if not out else a @ out[-1])
            return out

        return self._memo("rollout", compute)

    def score_range(self) -> torch.Tensor:
        """(L, nh) the largest finite |score| of each head."""

        def compute() -> torch.Tensor:
            rows = []
            for i in range(self.layers):
                s = self.scores(i)
                rows.append(s.masked_fill(torch.isneginf(s), 0).abs().amax(dim=(-2, -1)))
            return torch.stack(rows)

        return self._memo("score_range", compute)


def capture_trace(model: Transformer, x: torch.Tensor, field: str = "embeddings") -> TraceTensors:
    """Run ``model`` on one sequence ``x`` ((1, T, C) vectors or (1, T) ids) and keep what every
    trace holds. Overflow is a TraceError naming ``field``."""
    cfg = model.cfg
    rope = cfg.positional == "rope"
    wanted = ["hook_embed", "blocks.0.hook_resid_pre"]
    wanted += ["hook_pos_embed"] if cfg.positional in ("sinusoidal", "learned") else []
    wanted += ["ln_final.hook_normalized"] if cfg.final_norm else []
    q, k = ("attn.hook_rot_q", "attn.hook_rot_k") if rope else ("attn.hook_q", "attn.hook_k")
    for i in range(cfg.n_layers):
        for name in (q, k, "attn.hook_v", "attn.hook_pattern", "hook_resid_post"):
            wanted.append(f"blocks.{i}.{name}")
    # Only the points read here: each captured activation is kept alive, and costs a hook.
    with torch.inference_mode(), capture(model, wanted) as cache:
        model(x)

    def per_layer(name: str) -> list[torch.Tensor]:  # L x (nh, T, ·) for the one sequence
        return [cache[f"blocks.{i}.{name}"][0] for i in range(cfg.n_layers)]

    outputs = [cache[f"blocks.{i}.hook_resid_post"][0] for i in range(cfg.n_layers)]
    if cfg.final_norm:  # the model's output is the last block's after the final norm
        outputs[-1] = cache["ln_final.hook_normalized"][0]
    states = torch.stack([cache["blocks.0.hook_resid_pre"][0], *outputs])  # (L+1, T, C)
    pattern = per_layer("attn.hook_pattern")
    # A sum is finite only when every term is: one pass, no (L, nh, T, T) mask of booleans.
    finite = torch.isfinite(states.sum()) and all(torch.isfinite(p.sum()) for p in pattern)
    if not finite:
        raise TraceError(
            f"{field}: the computation overflowed (values too large for this configuration)"
        )
    pos = cache.get("hook_pos_embed")
    return TraceTensors(
        cfg=cfg,
        q=per_layer("attn.hook_rot_q" if rope else "attn.hook_q"),
        k=per_layer("attn.hook_rot_k" if rope else "attn.hook_k"),
        v=per_layer("attn.hook_v"),
        states=states,
        embeddings=cache["hook_embed"][0],
        positional=pos[: x.shape[1]] if pos is not None else None,
        forward_pattern=pattern,
    )


@dataclass
class ComputedTrace:
    """A trace as the cache keeps it: the response's other fields and the tensors."""

    meta: dict  # mode, tokens, axes, n, d, layers, heads, head_dim, device, and the mode's own
    tensors: TraceTensors

    def nbytes(self) -> int:
        return self.tensors.nbytes()
