"""The residual stream: every layer's hidden states, and the distances between the tokens'."""

from __future__ import annotations

import torch

from attnviz.capture.fields.base import Cube, TraceField, TraceSource, register
from attnviz.engine.analysis import pairwise_distances


def distances(source: TraceSource) -> torch.Tensor:
    """(L+1, T, T) Euclidean distance between tokens at each layer (kept up to
    ``KEEP_SQUARE_BYTES``)."""
    states = source.hidden_states()
    L1, T, _ = states.shape
    nbytes = L1 * T * T * states.element_size()
    return source.memo_square("distances", nbytes, lambda: pairwise_distances(states))


register(
    TraceField(
        "hidden_states",
        "[layers+1][n][d]; [0] is X after the positional table (and any embedding norm), [l] "
        "layer l's output (the last after the final norm, if the model has one)",
        lambda ask, shape: (shape.layers + 1) * shape.tokens * shape.width,
        lambda pick: pick.source.hidden_states(),
        wire=Cube,
    ),
    TraceField(
        "distances",
        "[layers+1][n][n] Euclidean distance between tokens at each layer",
        lambda ask, shape: (shape.layers + 1) * shape.tokens**2,
        lambda pick: distances(pick.source),
        wire=Cube,
    ),
)
