"""``GET /api/models/{name}/composition``: how every pair of heads composes, from the weights."""

from __future__ import annotations

from pydantic import BaseModel, Field

# [lb][hb][la * heads + ha]: the later head (lb, hb)'s scores from every head of the layers before
# it, in the order of ``names``; [0][hb] is empty. null where a head's matrix is zero.
Grid = list[list[list[float | None]]]


class CompositionKinds(BaseModel):
    q: Grid = Field(description="Q-composition: what the earlier head writes read by the later "
                    "head's queries, [lb][hb][la * heads + ha]")  # fmt: skip
    k: Grid = Field(description="K-composition: read by the later head's keys")
    v: Grid = Field(description="V-composition: read by the later head's values")


class CompositionResponse(BaseModel):
    model: str
    layers: int
    heads: int
    names: list[str] = Field(description="Every head, L{layer}.H{head}, layer by layer")
    kinds: CompositionKinds = Field(
        description="Each score ||W_OV^A M^B||_F / (||W_OV^A||_F ||M^B||_F) of an earlier head A "
        "and a later head B, from 0 to 1 (6 decimals), M^B the later head's W_QK (q), W_QK^T (k) "
        "or W_OV (v)"
    )
    processing: str = Field(description="The weight processing applied, in words")
    seconds: float = Field(description="The time it took to compute, once per model")
