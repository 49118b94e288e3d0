"""``GET /api/models/{name}/atlas``: every head of a model scored on a probe text."""

from __future__ import annotations

from pydantic import BaseModel, Field


class AtlasScore(BaseModel):
    """One score of every head: a layers x heads grid."""

    name: str = Field(description="previous_token, first_token, duplicate_token, induction or "
                      "positional")  # fmt: skip
    title: str
    definition: str = Field(description="What the score measures, in words")
    grid: list[list[float]] = Field(description="[layer][head], each from 0 to 1")
    offsets: list[list[int]] | None = Field(
        None,
        description="positional only: [layer][head] the offset attended to (k tokens back; "
        "negative: ahead)",
    )


class AtlasProbe(BaseModel):
    """The text every head was scored on (the first of the strings), as the page opens it."""

    text: str
    tokens: list[str] = Field(description="Its tokens as the tokenizer shows them")
    start: int = Field(description="The random string's first position (after a BOS or [CLS])")
    half: int = Field(description="The random string's tokens; the repeat starts at start + half")
    strings: int = Field(description="Random strings the scores are averaged over")
    seed: int


class AtlasResponse(BaseModel):
    model: str
    layers: int
    heads: int
    scores: list[AtlasScore]
    probe: AtlasProbe
    seconds: float = Field(description="The time it took to compute, once per model")
