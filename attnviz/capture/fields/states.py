"""The residual stream: every layer's hidden states, and the distances between the tokens'."""

from __future__ import annotations

from attnviz.capture.fields.base import TraceField, register

register(
    TraceField(
        "hidden_states",
        "[layers+1][n][d]; [0] is X after the positional table (and any embedding norm), [l] "
        "layer l's output (the last after the final norm, if the model has one)",
        lambda ask, shape: (shape.layers + 1) * shape.tokens * shape.width,
        lambda pick: pick.source.hidden_states(),
        full=True,
    ),
    TraceField(
        "distances",
        "[layers+1][n][n] Euclidean distance between tokens at each layer",
        lambda ask, shape: (shape.layers + 1) * shape.tokens**2,
        lambda pick: pick.source.distances(),
        full=True,
    ),
)
