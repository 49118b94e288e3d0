"""Every head at a glance: its pattern under the token options, max-pooled and quantised to 8
bits (``attnviz.capture.thumbs``), and the largest score of each head, for one colour range."""

from __future__ import annotations

import torch
from pydantic import Field

from attnviz.capture.fields.base import (
    Ask,
    Bounds,
    Members,
    Pick,
    Shape,
    TraceField,
    TraceSource,
    Want,
    index,
    register,
)
from attnviz.capture.thumbs import thumbnails
from attnviz.engine.model import CHUNK_BYTES
from attnviz.engine.placement import gather


class ThumbsMeta(Members):
    """thumbs: how the heads' patterns were pooled."""

    pool: int = Field(description="Rows and columns max-pooled into one cell (1: none)")
    size: int = Field(description="The thumbnails' side in cells")
    layers: list[int] = Field(description="The layers held, in order")


def _check(ask: Ask, bounds: Bounds) -> None:
    index(ask.thumb_layer, bounds.layers, "thumb_layer", "layers")


def _thumbs(pick: Pick) -> dict:
    assert pick.view is not None  # a drawn field's pick has one
    layers = index(pick.ask.thumb_layer, pick.source.layers, "thumb_layer", "layers")
    return thumbnails(pick.source, pick.view, pick.ask.thumb, layers, pick.value)


def _wants(pick: Pick) -> list[Want]:
    """Every head's thumbnail of the weights, made where they are (value-weighted norms are
    made here, from each layer's q, k and v)."""
    return [] if pick.value else [Want("thumbs", view=pick.view, size=pick.ask.thumb)]


def score_range(source: TraceSource) -> torch.Tensor:
    """(L, nh) the largest finite |score| of each head, a few heads' scores at a time; a
    remote model's comes with its first trip. Kept with the trace."""
    source.bring(())

    def compute() -> torch.Tensor:
        rows = []
        step = max(1, CHUNK_BYTES // max(1, source.n * source.n * 4))
        for i in range(source.layers):
            row = []
            for h in range(0, source.heads, step):
                heads = list(range(h, min(h + step, source.heads)))
                s = source.scores(i, None if len(heads) == source.heads else heads)
                row.append(s.masked_fill_(torch.isneginf(s), 0).abs_().amax(dim=(-2, -1)))
            rows.append(torch.cat(row))
        return gather(rows)

    return source.memo("score_range", compute)


def _numbers(ask: Ask, shape: Shape) -> int:
    layers = 1 if ask.thumb_layer is not None else shape.layers
    side = min(shape.rows, ask.thumb or shape.rows)
    return layers * shape.heads * (side**2 + 1)


register(
    TraceField(
        "thumbs",
        "{pool, size, layers, values: [layers][heads][s][s] uint8, scale: [layers][heads]}: every "
        "head's pattern under the token options, max-pooled by pool to at most thumb a side "
        "(peaks kept) and quantised to 8 bits, weight ~ values x scale / 255",
        _numbers,
        _thumbs,
        params=("thumb", "thumb_layer", "hide_special", "merge_words", "measure"),
        drawn=True,
        measured=True,
        check=_check,
        words="thumbnails",
        wants=_wants,
        members=ThumbsMeta,
    ),
    TraceField(
        "score_range",
        "[layers][heads] the largest finite |score| of each head, for one colour range over all "
        "heads",
        lambda ask, shape: shape.layers * shape.heads,
        lambda pick: score_range(pick.source),
    ),
)
