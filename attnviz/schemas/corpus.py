"""The corpus view, ``POST /api/models/{name}/corpus``: one head's queries and keys of a set of
texts in 2-D, and the heads clustered."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from attnviz.limits import LIMITS
from attnviz.schemas.common import Int, Strict

CorpusSource = Literal["examples", "docs", "upload"]
CorpusProjection = Literal["pca", "umap"]


# The rule between ``source`` and ``upload``, as the schema states it (``_upload_with_its_source``
# keeps it): ``upload`` a string with source "upload", absent or null with any other source
# (the default, "docs", too).
_UPLOAD_WITH_ITS_SOURCE = {
    "if": {"properties": {"source": {"const": "upload"}}, "required": ["source"]},
    "then": {"properties": {"upload": {"type": "string"}}, "required": ["upload"]},
    "else": {"properties": {"upload": {"type": "null"}}},
}


class CorpusRequest(Strict, json_schema_extra=_UPLOAD_WITH_ITS_SOURCE):
    """One head's queries and keys over a set of texts, projected together into 2-D, the
    user's own sentence placed into the set's map; every head clustered on the set."""

    source: CorpusSource = Field(
        "docs",
        description="examples: the model's example texts; docs: sentences of Python's "
        "documentation in a seeded order; upload: one text per non-empty line of ``upload``",
    )
    upload: str | None = Field(
        None,
        max_length=LIMITS.max_corpus_chars,
        description="The text of a file the user picked: required with source upload, refused "
        "otherwise",
    )
    text: str | None = Field(
        None,
        max_length=LIMITS.max_text_chars,
        description="The user's own sentence: run on its own and placed into the set's map "
        "(blank: none)",
    )
    layer: Int = Field(0, ge=0)
    head: Int = Field(0, ge=0)
    projection: CorpusProjection = Field(
        "pca", description="pca, or umap when the optional package is installed"
    )
    seed: Int = Field(0, ge=0, lt=2**31, description="The docs' order and UMAP's seed")
    max_tokens: Int = Field(
        LIMITS.default_corpus_tokens,
        ge=16,
        le=LIMITS.max_corpus_tokens,
        description="The set's token budget (the user's text is not counted: it is not part "
        "of the set)",
    )
    clusters: Int = Field(6, ge=1, le=LIMITS.max_clusters, description="Clusters of heads")

    @field_validator("text")
    @classmethod
    def _blank_is_none(cls, text: str | None) -> str | None:
        return text if text is not None and text.strip() else None

    @model_validator(mode="after")
    def _upload_with_its_source(self) -> CorpusRequest:
        if self.source == "upload" and self.upload is None:
            raise ValueError('upload: required when source is "upload" (the file\'s text)')
        if self.source != "upload" and self.upload is not None:
            raise ValueError(
                f'upload: only with source "upload" (source is "{self.source}"); leave it out'
            )
        return self


class CorpusText(BaseModel):
    text: str
    tokens: list[str] = Field(description="Its tokens as the tokenizer shows them")
    user: bool = Field(description="The user's own sentence (first when given)")


class CorpusPoints(BaseModel):
    """Columnar: one entry per token of every text, in text order then position order."""

    text: list[int] = Field(description="Index into texts")
    pos: list[int] = Field(description="Position in that text")
    qx: list[float]
    qy: list[float]
    kx: list[float]
    ky: list[float]


class CorpusTransform(BaseModel):
    key_shift: float = Field(description="The norm of the translation c added to every key")
    scale: float = Field(description="s: queries times s, keys divided by s")
    note: str


class HeadClusters(BaseModel):
    layers: int
    heads: int
    measure: str = Field(description="The similarity, in words")
    order: list[int] = Field(description="Every head as layer * heads + head, in leaf order")
    similarity: list[list[float]] = Field(
        description="n x n, rows and columns in ``order``; each a float32, unrounded (its "
        "shortest digits, as a trace's numbers)"
    )
    labels: list[int] = Field(
        description="The cluster of each head (layer * heads + head), numbered in order of "
        "first appearance along ``order``"
    )
    merges: list[tuple[int, int, float, int]] = Field(
        description="scipy-style linkage: a, b, distance, size"
    )


class CorpusSeconds(BaseModel):
    run: float
    project: float
    cluster: float


class CorpusResponse(BaseModel):
    model: str
    layer: int
    head: int
    source: CorpusSource
    projection: CorpusProjection
    seed: int
    texts: list[CorpusText]
    points: CorpusPoints | None = Field(
        description="null when the model gives no queries or keys (``unavailable`` says why)"
    )
    unavailable: str | None
    explained: tuple[float, float] | None = Field(
        description="The fraction of variance each axis explains (PCA; null for UMAP)"
    )
    transform: CorpusTransform | None
    tokens: int = Field(description="N: every token of every text (the user's included)")
    dropped: int = Field(description="Tokens of the set's source left out by the budget")
    cut: bool = Field(description="The budget left some of the source out")
    clusters: HeadClusters
    seconds: CorpusSeconds
    cached: bool = Field(description="The set's run was already kept")
