"""Each head's arrays, [layers][heads][...] (``layer`` and ``head`` pick one): its attention
weights and scores (``query`` picks a row), its queries, keys and values."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from attnviz.capture.fields.base import (
    Ask,
    PerHead,
    Pick,
    Shape,
    TraceField,
    TraceSource,
    picked,
    register,
)
from attnviz.engine.placement import gather

PerLayer = Callable[[TraceSource, int, Sequence[int]], torch.Tensor]


def per_layer(pick: Pick, each: PerLayer, rows: bool = True) -> torch.Tensor:
    """(L', H', ...) of one per-head array: ``each(source, layer, heads)`` of every layer
    picked, of the picked query's row alone when ``rows``; several devices meet on the CPU."""
    cut = pick.rows if rows else slice(None)
    return gather([each(pick.source, layer, pick.heads)[:, cut] for layer in pick.layers])


def square(ask: Ask, shape: Shape) -> int:
    layers, heads, queries = picked(ask, shape)
    return layers * heads * queries * shape.tokens


def per_token(ask: Ask, shape: Shape) -> int:
    layers, heads, _ = picked(ask, shape)
    return layers * heads * shape.tokens * shape.head_dim


def _qkv(which: int) -> PerLayer:
    def each(source: TraceSource, layer: int, heads: Sequence[int]) -> torch.Tensor:
        t = source.qkv(layer)[which]  # (nh, T, hs)
        return t if len(heads) == t.shape[0] else t[heads]

    return each


def query_rows(name: str, shape: str, each: PerLayer, **kw: object) -> TraceField:
    """A per-head array of [n][n] a query's row at a time (``query`` picks one), read as
    ``each(source, layer, heads)``: the weights, the scores, the value-weighted norms."""
    return TraceField(
        name,
        shape,
        square,
        lambda pick: per_layer(pick, each),
        params=("layer", "head", "query"),
        per_head=True,
        **kw,  # type: ignore[arg-type]
    )


def _vectors(name: str, which: int, shape: str) -> TraceField:
    """Each head's queries, keys or values (the query-key view reads them together)."""
    return TraceField(
        name,
        shape,
        per_token,
        lambda pick: per_layer(pick, _qkv(which), rows=False),
        params=("layer", "head"),
        per_head=True,
        wire=PerHead | None,
        words="queries and keys" if which < 2 else None,
    )


register(
    query_rows(
        "attentions",
        "[layers][heads][n][n] softmax weights; row = query, column = key",
        lambda source, layer, heads: source.pattern(layer, heads),
        wire=PerHead,
        words="per-query weights",
    ),
    query_rows(
        "scores",
        "[layers][heads][n][n] logits after scaling; masked entries are null",
        lambda source, layer, heads: source.scores(layer, heads),
        # null (scores, queries, keys, values) for a model that records none: one served
        # through transformers whose attention does not go through its AttentionInterface
        wire=list[list[list[list[float | None]]]] | None,
        words="per-query scores",
    ),
    _vectors("queries", 0, "[layers][heads][n][head_dim]"),
    _vectors("keys", 1, "[layers][heads][n][head_dim] (after RoPE when on)"),
    _vectors("values", 2, "[layers][heads][n][head_dim]"),
)
