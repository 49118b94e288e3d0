"""``POST /api/trace``: a toy table or a pretrained model on a text, the query parameters that
ask for a part of the trace, and the traces sent back (the arrays' names and rules are
the fields' of ``attnviz.capture.fields``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
    model_validator,
)

from attnviz.capture.fields import REGISTRY
from attnviz.limits import LIMITS, data_url_chars
from attnviz.pretrained.images import DATA_URL_RULE, ImageError, data_url_start
from attnviz.schemas.common import (
    AxisName,
    Float,
    Int,
    Strict,
    Token,
    ToyConfig,
    Value,
    rows_of_numbers,
)
from attnviz.schemas.trace_meta import TextMeta, ToyMeta, TraceMeta
from attnviz.wire.constants import Measure


def _count(k: int, word: str) -> str:
    return f"{k} {word}{'s' if k != 1 else ''}"


def _square(name: str, m: list[list[float]], d: int) -> None:
    if len(m) != d or any(len(row) != d for row in m):
        cols = sorted({len(row) for row in m}) or [0]
        each = " and ".join(map(str, cols))
        shape = f"{_count(len(m), 'row')} of {each} number{'s' if cols != [1] else ''}"
        raise ValueError(
            f"config.weights.{name}: {_count(d, 'row')} of {_count(d, 'number')} (d x d, d = {d}: "
            f"the embeddings' values per row), got {shape}"
        )


class ToyTraceRequest(Strict):
    """A toy run: token labels, their embedding rows (n x d), optional axis names, a config."""

    tokens: list[Token] = Field(min_length=1, max_length=LIMITS.max_tokens)
    embeddings: Annotated[
        list[Annotated[list[Value], Field(min_length=1, max_length=LIMITS.max_dim)]],
        rows_of_numbers("one row per token, each a list of d numbers (n x d)", LIMITS.max_dim),
    ] = Field(min_length=1, max_length=LIMITS.max_tokens)
    axes: list[AxisName] | None = Field(None, description="One name per dimension.")
    config: ToyConfig = Field(default_factory=ToyConfig)

    @field_validator("embeddings")
    @classmethod
    def _rectangular(cls, rows: list[list[float]]) -> list[list[float]]:
        d = len(rows[0])
        for i, row in enumerate(rows):
            if len(row) != d:
                raise ValueError(
                    f"one row per token, each a list of d numbers (n x d, d = {d} from row 0), "
                    f"got {_count(len(row), 'number')} in row {i}"
                )
        return rows

    @model_validator(mode="after")
    def _consistent(self) -> ToyTraceRequest:
        n, d = len(self.tokens), len(self.embeddings[0])
        if len(self.embeddings) != n:
            rows = len(self.embeddings)
            raise ValueError(
                f"embeddings: {_count(n, 'row')} of {_count(d, 'number')} (n x d: one row "
                f"per token), got {_count(rows, 'row')}"
            )
        if self.axes is not None and len(self.axes) != d:
            raise ValueError(f"axes: {len(self.axes)} names for d = {d} dimensions")
        cfg = self.config
        if d % cfg.heads:
            raise ValueError(f"config.heads: {cfg.heads} does not divide d = {d}")
        if cfg.weights is not None:
            for name in ("q", "k", "v", "o"):
                m = getattr(cfg.weights, name)
                if m is not None:
                    _square(name, m, d)
        return self

    @property
    def d(self) -> int:
        return len(self.embeddings[0])

    def axis_names(self) -> list[str]:
        return self.axes if self.axes is not None else [f"x{i + 1}" for i in range(self.d)]


# ---------------------------------------------------------------------------------------------
# Responses


def _arrays() -> type[TraceMeta]:
    """What every trace holds, toy or text: its meta and every array of the full trace, each
    with its field's wire type and shape (``attnviz.capture.fields``)."""
    arrays: dict[str, Any] = {
        f.name: (f.wire, Field(description=f.shape)) for f in REGISTRY if f.full
    }
    return create_model(  # type: ignore[call-overload, no-any-return]
        "TraceBase", __base__=TraceMeta, __doc__=TraceBase.__doc__, **arrays
    )


class TraceBase(TraceMeta):
    """What every trace holds, toy or text: the same names and shapes (its meta, and every
    array of the full trace)."""


# The type checker reads the class above; at run time it is the model with the arrays, made
# from the registry (so that a full field is declared once, where it is computed).
if not TYPE_CHECKING:
    TraceBase = _arrays()


class TraceResponse(TraceBase, ToyMeta):
    """A toy trace: the table and configuration it was computed from."""


class TextTraceResponse(TraceBase, TextMeta):
    """A pretrained model's trace of a text."""


class Generate(Strict):
    """Let a causal model write after the text, one token at a time, and trace it all."""

    steps: Int = Field(ge=1, le=LIMITS.max_generate, description="Tokens to write")
    temperature: Float = Field(
        0.0, ge=0, le=2, description="0: greedy (the most likely token); else sampled"
    )
    seed: Int = Field(0, ge=0, le=2**31 - 1, description="Fixes the samples when sampling")


AblateMode = Literal["zero", "mean", "patch"]

# One image of a trace: its shape checked here, its bytes against the server's cap
# (ATTNVIZ_MAX_IMAGE_BYTES) and its pixels where it is decoded (services/images.py).
DataUrl = Annotated[
    str,
    Field(
        max_length=data_url_chars(LIMITS.image_bytes_ceiling),
        json_schema_extra={"pattern": DATA_URL_RULE},
    ),
]


class Ablate(Strict):
    """One head knocked out (engine/ablate.py): its output before the output projection
    replaced by zeros (zero), by its own average over the text's positions (mean), or by its
    output on another text, position by position from the start (patch, ``source``; positions
    past the source's tokens keep their own output)."""

    layer: Int = Field(ge=0, description="0-based, as in a trace")
    head: Int = Field(ge=0, description="0-based, as in a trace")
    mode: AblateMode = "zero"
    source: str | None = Field(
        None,
        max_length=LIMITS.max_text_chars,
        validate_default=True,
        description="patch only: the text whose head output is copied in",
    )

    @field_validator("source")
    @classmethod
    def _source_with_patch(cls, source: str | None, info: ValidationInfo) -> str | None:
        mode = info.data.get("mode")
        if mode == "patch" and (source is None or not source.strip()):
            raise ValueError("a patch needs a source text (not empty)")
        if mode != "patch" and source is not None:
            raise ValueError(f"only a patch takes a source, not {mode}")
        return source


class TextTraceRequest(Strict):
    """A pretrained model on a text (and, with ``generate``, on what it writes after it)."""

    model: str = Field(min_length=1, max_length=200, description="A name from /api/models.")
    # The schema says what the validator below checks: at least one character that is not space.
    text: str = Field(
        min_length=1, max_length=LIMITS.max_text_chars, json_schema_extra={"pattern": r"\S"}
    )
    generate: Generate | None = Field(
        None,
        description="A causal model writes this many tokens after the text first; the trace is "
        "of the text and what it wrote (meta.generated says where that starts)",
    )
    ablate: list[Ablate] = Field(
        default_factory=list,
        max_length=LIMITS.max_ablate,
        description="Heads to knock out, each once; every array is of the ablated run "
        "(meta.ablated says what was done). Not with generate; a model served through "
        "transformers whose attention bypasses its AttentionInterface (BLOOM's ALiBi) is refused "
        "(GET /api/models' ablate_refused says why).",
    )

    images: list[DataUrl] = Field(
        default_factory=list,
        max_length=LIMITS.max_images,
        description="Images with the text, each a data URL (data:image/png;base64,...): PNG, "
        "JPEG or WebP, the type read from the bytes. Each goes where the text's image "
        "placeholder stands, else before the text. Only for a model that reads images (GET "
        "/api/models' reads_images); each at most ATTNVIZ_MAX_IMAGE_BYTES and "
        f"{LIMITS.max_image_pixels:,} pixels, else a 422 naming it (images[0]: ...).",
    )

    @field_validator("images")
    @classmethod
    def _data_urls(cls, images: list[str]) -> list[str]:
        for i, url in enumerate(images):
            try:
                data_url_start(url, f"images[{i}]")
            except ImageError as exc:
                raise ValueError(str(exc)) from None
        return images

    @model_validator(mode="after")
    def _ablate_once(self) -> TextTraceRequest:
        seen: set[tuple[int, int]] = set()
        for i, a in enumerate(self.ablate):
            if (a.layer, a.head) in seen:
                raise ValueError(f"ablate[{i}]: layer {a.layer} head {a.head} is listed twice")
            seen.add((a.layer, a.head))
        if self.ablate and self.generate is not None:
            raise ValueError("ablate: not with generate (a knock-out traces the text as it is)")
        return self

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("text: must not be empty")
        return text


# The refusal of a body that is neither kind, at its place (``body: ...``, ``trace: ...``).
NEITHER_KIND = (
    'one of "model" or "tokens" is needed: "model" (with "text") for a pretrained model, '
    '"tokens" (with "embeddings") for a toy table'
)


def trace_kind(body: object) -> str | None:
    """Which request a body is: one with "text" or "model" asks for a pretrained model, one
    with "tokens" or "embeddings" for a toy table; one with none of them is neither (None:
    refused with ``NEITHER_KIND``, not with one kind's missing fields)."""
    if isinstance(body, dict):
        if "text" in body or "model" in body:
            return "text"
        return "toy" if "tokens" in body or "embeddings" in body else None
    return "text" if isinstance(body, TextTraceRequest) else "toy"


# A trace request, as POST /api/trace and POST /api/export take it.
TraceRequest = Annotated[
    Annotated[ToyTraceRequest, Tag("toy")] | Annotated[TextTraceRequest, Tag("text")],
    Discriminator(trace_kind, custom_error_type="trace_kind", custom_error_message=NEITHER_KIND),
]


# ---------------------------------------------------------------------------------------------
# What a trace request asks for: which arrays, which layer or head, in which form.


class FieldInfo(BaseModel):
    """One array of a trace, as ``fields`` names it (``attnviz.capture.fields``)."""

    model_config = ConfigDict(from_attributes=True)

    name: str
    shape: str = Field(description="What it holds, its axes in brackets")
    params: list[str] = Field(description="The query parameters it reads, beyond fields")
    full: bool = Field(description="One of the full JSON trace's arrays (fields' default)")
    per_head: bool = Field(description="[layers][heads][...]: layer and head pick one")
    drawn: bool = Field(description="Drawn under the token options (hide_special, merge_words)")
    measured: bool = Field(
        description="measure=value_weighted makes it of the value-weighted norms"
    )
    needs: str | None = Field(
        description="What of the model it needs that a model can lack (readout: an output head; "
        "clean run: the native engine's stream by components; output projection: each head's "
        "slice of W_O); a trace of a model without it has it in meta.unavailable"
    )
    tower: bool = Field(description="Of the vision tower: layer and head are the tower's own")
    over_heads: bool = Field(
        description="[layers][m][m]: one matrix a layer, of all its heads together"
    )
    rule: str | None = Field(description="What meta.rules says of it, under measure=weights")
    value_rule: str | None = Field(
        description="What meta.rules says of it under measure=value_weighted, where it differs"
    )
    words: str = Field(
        description="The kind of numbers it holds in a reader's words (a saved file's refusal "
        "names it)"
    )


class FieldCatalogue(BaseModel):
    """Every array a trace request can name in ``fields``, in the order of the wire."""

    fields: list[FieldInfo]


class TraceQuery(Strict):
    """Query parameters of ``POST /api/trace``: a part of the trace instead of all of it.

    Without any, the JSON form is the full trace. Per-head arrays keep their [layers][heads]
    axes, of length 1 where ``layer`` or ``head`` picks one.
    """

    fields: str | None = Field(
        None,
        max_length=400,
        description="Comma-separated arrays to send (default: all of the full trace): "
        + ", ".join(REGISTRY.names()),
    )
    layer: int | None = Field(None, ge=0, description="Only this layer of the per-head arrays.")
    head: int | None = Field(None, ge=0, description="Only this head of the per-head arrays.")
    query: int | None = Field(
        None,
        ge=0,
        description="Only this query's row of attentions and scores ([...][1][n]), and of "
        "view (the row that shows it under the token options).",
    )
    hide_special: bool = Field(
        False,
        description="view, thumbs, the aggregates and projection's coords without the special "
        "tokens.",
    )
    merge_words: bool = Field(
        False,
        description="view, thumbs and the aggregates with word pieces merged; projection's coords "
        "a word's point, the mean of its pieces'.",
    )
    thumb: int = Field(
        128,
        ge=0,
        le=LIMITS.max_thumb,
        description="thumbs: the largest side; longer patterns are max-pooled down to it "
        "(peaks kept). 0: never pooled.",
    )
    thumb_layer: int | None = Field(None, ge=0, description="thumbs: only this layer.")
    k: int = Field(
        LIMITS.default_top_k,
        ge=1,
        le=LIMITS.max_top_k,
        description="top_k: the next tokens listed at each position.",
    )
    pos_start: int = Field(
        0, ge=0, description="top_k and lens: only positions from this one (0: the first)."
    )
    pos_count: int | None = Field(
        None, ge=1, description="top_k and lens: only this many positions (default: to the end)."
    )
    key: int | None = Field(None, ge=0, description="qk_attribution: the key (with layer, "
                            "head and query).")  # fmt: skip
    top: int | None = Field(
        None, ge=1, description="qk_attribution: keep this many components, the rest summed."
    )
    position: int | None = Field(
        None, ge=0, description="logit_attribution: the position (default: the last)."
    )
    token: int | None = Field(
        None, ge=0, description="logit_attribution: the token id (default: the top prediction)."
    )
    versus: int | None = Field(
        None, ge=0, description="logit_attribution: a second token: the logit difference."
    )
    image: int = Field(0, ge=0, description="vision: the image (0: the first).")
    tile: int = Field(
        0,
        ge=0,
        description="vision: the image's tile (0: the first; a split image's global view last).",
    )
    measure: Measure = Field(
        "weights",
        description="What view, thumbs and the head aggregates (head_mean, head_max, rollout) "
        "show: the attention weights, or value-weighted attention, ||a_ij v_j W_O^h|| "
        "(Kobayashi et al., 2020; rows no longer sum to 1, and hide_special drops the special "
        "tokens' columns without rescaling the rows).",
    )

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, fields: str | None) -> str | None:
        if fields is None:
            return None
        names = [f.strip() for f in fields.split(",") if f.strip()]
        if not names:
            raise ValueError("fields: name at least one array")
        for name in names:
            if name not in REGISTRY:
                arrays = ", ".join(REGISTRY.names())
                raise ValueError(f"fields: no array named {name!r} (arrays: {arrays})")
        return ",".join(dict.fromkeys(names))

    def names(self) -> list[str]:
        return self.fields.split(",") if self.fields else list(REGISTRY.full())

    @property
    def whole(self) -> bool:
        """True when nothing narrows the trace: the JSON form is the full trace as it was."""
        return self == TraceQuery()
