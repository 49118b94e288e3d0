"""A head's weights as the page draws them: under the token options (special tokens hidden,
word pieces merged), exact, or its value-weighted norms (``measure``)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from attnviz.capture.fields.base import Ask, Pick, Shape, TraceField, TraceSource, register
from attnviz.capture.fields.heads import per_layer
from attnviz.capture.value_norms import value_weighted
from attnviz.errors import TraceError


def _check_row(pick: Pick) -> None:
    """A query whose row the token options hide (a special token) has none to show."""
    if pick.ask.query is not None and pick.view is not None:
        try:
            pick.view.row(pick.ask.query)
        except ValueError as exc:
            raise TraceError(f"query: {exc}; view shows no row for it") from exc


def _view(pick: Pick) -> torch.Tensor:
    tv = pick.view
    assert tv is not None  # a drawn field's pick has one

    def each(source: TraceSource, layer: int, heads: Sequence[int]) -> torch.Tensor:
        if pick.value:
            x = tv.apply(value_weighted(source, layer, heads), renormalise=False)
        else:
            x = tv.apply(source.pattern(layer, heads))  # (H', m, m)
        if pick.ask.query is None:
            return x
        r = tv.row(pick.ask.query)  # the row that shows the query
        return x[:, r : r + 1]

    return per_layer(pick, each, rows=False)


def _numbers(ask: Ask, shape: Shape) -> int:
    layers = 1 if ask.layer is not None else shape.layers
    heads = 1 if ask.head is not None else shape.heads
    return layers * heads * (1 if ask.query is not None else shape.rows) * shape.rows


register(
    TraceField(
        "view",
        "[layers][heads][m][m] attentions under the token options, exact: m rows and columns "
        "(meta.token_view says which tokens each is); with query, the row that shows it; under "
        "measure=value_weighted, the value-weighted norms",
        _numbers,
        _view,
        params=("layer", "head", "query", "hide_special", "merge_words", "measure"),
        per_head=True,
        drawn=True,
        measured=True,
        prepare=_check_row,
        words="exact weights",
    )
)
