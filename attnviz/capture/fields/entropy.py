"""How spread each head's attention is: the entropy of each query's row, and its mean."""

from __future__ import annotations

import torch

from attnviz.capture.fields.base import Cube, Matrix, TraceField, TraceSource, Want, register
from attnviz.engine.analysis import attention_entropy
from attnviz.engine.placement import gather


def entropy(source: TraceSource) -> torch.Tensor:
    """(L, nh, T) entropy in nats of each query's attention row: from the forward's own weights
    while they are held (``release`` takes it from them), or taken by the thumbnails' pass over
    every layer (``capture.thumbs``), or else from q and k a few heads at a time; a remote
    model's, made where it runs (``Want("rows")``). Kept with the trace."""
    source.bring([Want("rows")])
    source.release()

    def layer(i: int) -> torch.Tensor:
        return torch.cat([attention_entropy(p) for _, p in source.head_chunks(i)])  # (nh, T)

    return source.memo("entropy", lambda: gather([layer(i) for i in range(source.layers)]))


def entropy_mean(source: TraceSource) -> torch.Tensor:
    """(L, nh) each head's mean entropy over its rows (the model view's titles); a remote
    model's comes with its first trip, without the rows."""
    source.bring(())
    kept = source.derived("entropy_mean")
    return kept if kept is not None else entropy(source).mean(-1)


register(
    TraceField(
        "entropy",
        "[layers][heads][n] entropy (nats) of each query's attention row",
        lambda ask, shape: shape.layers * shape.heads * shape.tokens,
        lambda pick: entropy(pick.source),
        wire=Cube,
        wants=lambda pick: [Want("rows")],
    ),
    TraceField(
        "entropy_mean",
        "[layers][heads] mean over queries",
        lambda ask, shape: shape.layers * shape.heads,
        lambda pick: entropy_mean(pick.source),
        wire=Matrix,
        words="head entropies",
    ),
)
