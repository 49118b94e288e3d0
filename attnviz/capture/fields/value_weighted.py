"""Value-weighted attention (Kobayashi et al., 2020, "Attention is not only a weight"): what
each key adds to each query's output, not only how much weight it gets; of each head, and of a
whole layer's heads summed."""

from __future__ import annotations

import torch

from attnviz.capture.fields.aggregates import check_value_sum, numbers
from attnviz.capture.fields.base import Pick, TraceField, register
from attnviz.capture.fields.heads import query_rows
from attnviz.capture.value_norms import value_weighted, value_weighted_sum
from attnviz.engine.placement import gather


def _sum(pick: Pick) -> torch.Tensor:
    tv = pick.view
    assert tv is not None  # a drawn field's pick has one
    check_value_sum(pick.source, len(pick.layers))
    sums = [tv.apply(value_weighted_sum(pick.source, i), renormalise=False) for i in pick.layers]
    return gather(sums)  # (L', m, m)


register(
    query_rows(
        "value_weighted",
        "[layers][heads][n][n] each key's value-weighted norm at each query",
        value_weighted,
        needs="output projection",
        words="per-query value-weighted norms",
        rule="||a_ij v_j W_O^h||: the norm of what key j adds to query i's output through head "
        "h, its weight times its value through the head's slice of the output projection "
        "(Kobayashi et al., 2020).",
    ),
    TraceField(
        "value_weighted_sum",
        "[layers][m][m] under the token options: the layer's value-weighted norm, every head's "
        "contribution summed",
        numbers,
        _sum,
        params=("layer", "hide_special", "merge_words"),
        drawn=True,
        over_heads=True,
        needs="output projection",
        words="value-weighted sum",
        rule="||Σ_h a^h_ij v^h_j W_O^h||: the norm of what key j adds to query i's output "
        "through the whole layer's attention, every head's contribution summed before the norm "
        "(heads that cancel count for less).",
    ),
)
