"""How spread each head's attention is: the entropy of each query's row, and its mean."""

from __future__ import annotations

from attnviz.capture.fields.base import TraceField, Want, register

register(
    TraceField(
        "entropy",
        "[layers][heads][n] entropy (nats) of each query's attention row",
        lambda ask, shape: shape.layers * shape.heads * shape.tokens,
        lambda pick: pick.source.entropy(),
        full=True,
        wants=lambda pick: [Want("rows")],
    ),
    TraceField(
        "entropy_mean",
        "[layers][heads] mean over queries",
        lambda ask, shape: shape.layers * shape.heads,
        lambda pick: pick.source.entropy_mean(),
        full=True,
        words="head entropies",
    ),
)
