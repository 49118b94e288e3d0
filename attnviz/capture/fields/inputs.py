"""What the first block reads: the token vectors, and the positional table added to them."""

from __future__ import annotations

from attnviz.capture.fields.base import Matrix, TraceField, register

register(
    TraceField(
        "embeddings",
        "[n][d] the input X (toy: as sent; text: the token embedding rows)",
        lambda ask, shape: shape.tokens * shape.width,
        lambda pick: pick.source.token_vectors(),
        wire=Matrix,
    ),
    TraceField(
        "positional",
        "[n][d] the positional table added to X (sinusoidal, learned), else null",
        lambda ask, shape: shape.tokens * shape.width if shape.positional else 0,
        lambda pick: pick.source.positional,
        wire=Matrix | None,
    ),
)
