"""Request and response schemas for the HTTP API, in one place.

Every size a request can ask for has a cap (``Limits``); every rule a request can break has a
message that names the field, e.g. ``config.heads: 2 does not divide d = 3``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    FiniteFloat,
    StringConstraints,
    field_validator,
    model_validator,
)


class Limits(BaseModel):
    """Caps on what one trace request may ask for."""

    max_tokens: int = 64
    max_dim: int = 64
    max_layers: int = 12
    max_heads: int = 16
    max_token_chars: int = 40
    max_abs_value: float = 1000.0
    # A text of 1,024 tokens (GPT-2's positions) runs to about 5,000 characters of English;
    # the rest is room for long words and whitespace, which take few tokens.
    max_text_chars: int = 20_000
    max_thumb: int = 1024


LIMITS = Limits()

Value = Annotated[FiniteFloat, Field(ge=-LIMITS.max_abs_value, le=LIMITS.max_abs_value)]
Matrix = list[list[Value]]
Token = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]
AxisName = Annotated[str, StringConstraints(max_length=LIMITS.max_token_chars)]

Projections = Literal["identity", "random", "custom"]
Mask = Literal["none", "causal"]
Positional = Literal["none", "sinusoidal", "learned", "rope"]
Norm = Literal["none", "pre", "post"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _square(name: str, m: list[list[float]], d: int) -> None:
    if len(m) != d or any(len(row) != d for row in m):
        rows = len(m)
        cols = sorted({len(row) for row in m}) or [0]
        shape = f"{rows} x {cols[0]}" if len(cols) == 1 else f"{rows} rows of {cols} values"
        raise ValueError(f"config.weights.{name}: must be {d} x {d} (d x d), got {shape}")


class CustomWeights(_Strict):
    """User matrices for ``projections = "custom"``, each d x d, shared by all layers.

    Rows index the input dimension: ``Q = X @ q``. ``o`` is the identity when absent.
    """

    q: Matrix
    k: Matrix
    v: Matrix
    o: Matrix | None = None


class ToyConfig(_Strict):
    """How the toy transformer is wired. The defaults are the article's raw self-attention."""

    layers: int = Field(1, ge=1, le=LIMITS.max_layers)
    heads: int = Field(1, ge=1, le=LIMITS.max_heads, description="Must divide d.")
    projections: Projections = "identity"
    weights: CustomWeights | None = Field(None, description='Only with projections "custom".')
    scale: bool = Field(True, description="Divide the logits by sqrt(d / heads).")
    mask: Mask = "none"
    positional: Positional = "none"
    residual: bool = False
    norm: Norm = "none"
    ffn: bool = False
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="after")
    def _weights_match_projections(self) -> ToyConfig:
        if self.projections == "custom" and self.weights is None:
            raise ValueError('config.weights: required when config.projections is "custom"')
        if self.projections != "custom" and self.weights is not None:
            raise ValueError(
                f'config.weights: only allowed when config.projections is "custom" '
                f'(it is "{self.projections}")'
            )
        return self


class ToyTraceRequest(_Strict):
    """A toy run: token labels, their embedding rows (n x d), optional axis names, a config."""

    tokens: list[Token] = Field(min_length=1, max_length=LIMITS.max_tokens)
    embeddings: list[list[Value]] = Field(min_length=1, max_length=LIMITS.max_tokens)
    axes: list[AxisName] | None = Field(None, description="One name per dimension.")
    config: ToyConfig = Field(default_factory=ToyConfig)

    @field_validator("embeddings")
    @classmethod
    def _rectangular(cls, rows: list[list[float]]) -> list[list[float]]:
        d = len(rows[0])
        if d < 1 or d > LIMITS.max_dim:
            raise ValueError(f"each row needs 1 to {LIMITS.max_dim} values, row 0 has {d}")
        for i, row in enumerate(rows):
            if len(row) != d:
                raise ValueError(
                    f"rows must all have the same length: row {i} has {len(row)} values, "
                    f"row 0 has {d}"
                )
        return rows

    @model_validator(mode="after")
    def _consistent(self) -> ToyTraceRequest:
        n, d = len(self.tokens), len(self.embeddings[0])
        if len(self.embeddings) != n:
            raise ValueError(
                f"embeddings: {len(self.embeddings)} rows for {n} tokens "
                "(one row per token is required)"
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


class Projection(BaseModel):
    """PCA of every hidden state of every layer, fitted once so that frames are comparable."""

    components: int = Field(description="k, 1 to 3")
    mean: list[float] = Field(description="[d] the mean that was subtracted")
    axes: list[list[float]] = Field(description="[k][d] unit principal directions")
    explained_variance_ratio: list[float] = Field(description="[k]")
    coords: list[list[list[float]]] = Field(description="[layers+1][n][k]")


class TraceBase(BaseModel):
    """What every trace holds, toy or text: the same names and shapes."""

    tokens: list[str]
    axes: list[str]
    n: int
    d: int
    layers: int
    heads: int
    head_dim: int
    device: str
    embeddings: list[list[float]] = Field(
        description="[n][d] the input X (toy: as sent; text: the token embedding rows)"
    )
    positional: list[list[float]] | None = Field(
        description="[n][d] the positional table added to X (sinusoidal, learned), else null"
    )
    attentions: list[list[list[list[float]]]] = Field(
        description="[layers][heads][n][n] softmax weights; row = query, column = key"
    )
    scores: list[list[list[list[float | None]]]] = Field(
        description="[layers][heads][n][n] logits after scaling; masked entries are null"
    )
    queries: list[list[list[list[float]]]] = Field(description="[layers][heads][n][head_dim]")
    keys: list[list[list[list[float]]]] = Field(
        description="[layers][heads][n][head_dim] (after RoPE when on)"
    )
    values: list[list[list[list[float]]]] = Field(description="[layers][heads][n][head_dim]")
    hidden_states: list[list[list[float]]] = Field(
        description="[layers+1][n][d]; [0] is X after the positional table (and any embedding "
        "norm), [l] layer l's output (the last after the final norm, if the model has one)"
    )
    distances: list[list[list[float]]] = Field(
        description="[layers+1][n][n] Euclidean distance between tokens at each layer"
    )
    entropy: list[list[list[float]]] = Field(
        description="[layers][heads][n] entropy (nats) of each query's attention row"
    )
    entropy_mean: list[list[float]] = Field(description="[layers][heads] mean over queries")
    projection: Projection | None = Field(description="PCA of the trajectories when d != 3")


class TraceResponse(TraceBase):
    """A toy trace: the table and configuration it was computed from."""

    mode: Literal["toy"] = "toy"
    config: ToyConfig


class TextTraceResponse(TraceBase):
    """A pretrained model's trace of a text."""

    mode: Literal["text"] = "text"
    model: str
    family: str
    causal: bool
    text: str
    token_ids: list[int]
    offsets: list[tuple[int, int]] = Field(
        description="[n] (start, end) character offsets into text; (0, 0) for special tokens"
    )
    special: list[bool] = Field(description="[n] true for tokens the tokenizer added ([CLS])")
    words: list[int | None] = Field(
        description="[n] word index of each token (the pieces of a word share it); null for "
        "special tokens"
    )


class TextTraceRequest(_Strict):
    """A pretrained model on a text."""

    model: str = Field(min_length=1, max_length=200, description="A name from /api/models.")
    # The schema says what the validator below checks: at least one character that is not space.
    text: str = Field(
        min_length=1, max_length=LIMITS.max_text_chars, json_schema_extra={"pattern": r"\S"}
    )

    @field_validator("text")
    @classmethod
    def _not_blank(cls, text: str) -> str:
        if not text.strip():
            raise ValueError("text: must not be empty")
        return text


# ---------------------------------------------------------------------------------------------
# What a trace request asks for: which arrays, which layer or head, in which form.

# The compact form: a safetensors file (8-byte header length, JSON header, raw arrays) whose
# header's ``__metadata__["attnviz"]`` holds the trace's other fields as JSON.
COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors"

# Arrays with a layer and a head axis ([layers][heads][...]); ``layer`` and ``head`` pick one.
PER_HEAD_FIELDS = ("attentions", "scores", "queries", "keys", "values", "view")
# The arrays of the full JSON trace, in its order (also the default of ``fields``).
TRACE_FIELDS = (
    "embeddings",
    "positional",
    "attentions",
    "scores",
    "queries",
    "keys",
    "values",
    "hidden_states",
    "distances",
    "entropy",
    "entropy_mean",
    "projection",
)
# Beyond the full trace: ``view`` (attentions under the token options, exact), ``thumbs`` (every
# head's pattern under the token options, pooled and quantised to 8 bits) and ``score_range``
# ([layers][heads] the largest finite |score|, for one colour range over all heads).
FIELDS = (*TRACE_FIELDS, "view", "thumbs", "score_range")


class TraceQuery(_Strict):
    """Query parameters of ``POST /api/trace``: a part of the trace instead of all of it.

    Without any, the JSON form is the full trace. Per-head arrays keep their [layers][heads]
    axes, of length 1 where ``layer`` or ``head`` picks one.
    """

    fields: str | None = Field(
        None,
        max_length=400,
        description="Comma-separated arrays to send (default: all of the full trace): "
        + ", ".join(FIELDS),
    )
    layer: int | None = Field(None, ge=0, description="Only this layer of the per-head arrays.")
    head: int | None = Field(None, ge=0, description="Only this head of the per-head arrays.")
    query: int | None = Field(
        None, ge=0, description="Only this query's row of attentions and scores ([...][1][n])."
    )
    hide_special: bool = Field(False, description="view and thumbs without the special tokens.")
    merge_words: bool = Field(False, description="view and thumbs with word pieces merged.")
    thumb: int = Field(
        128,
        ge=0,
        le=LIMITS.max_thumb,
        description="thumbs: the largest side; longer patterns are max-pooled down to it "
        "(peaks kept). 0: never pooled.",
    )
    thumb_layer: int | None = Field(None, ge=0, description="thumbs: only this layer.")

    @field_validator("fields")
    @classmethod
    def _known_fields(cls, fields: str | None) -> str | None:
        if fields is None:
            return None
        names = [f.strip() for f in fields.split(",") if f.strip()]
        if not names:
            raise ValueError("fields: name at least one array")
        for name in names:
            if name not in FIELDS:
                raise ValueError(f"fields: no array named {name!r} (arrays: {', '.join(FIELDS)})")
        return ",".join(dict.fromkeys(names))

    def names(self) -> list[str]:
        return self.fields.split(",") if self.fields else list(TRACE_FIELDS)

    @property
    def whole(self) -> bool:
        """True when nothing narrows the trace: the JSON form is the full trace as it was."""
        return self == TraceQuery()


class ModelInfo(BaseModel):
    name: str
    family: Literal["bert", "gpt2"]
    layers: int
    heads: int
    d_model: int
    head_dim: int
    causal: bool
    max_tokens: int = Field(
        description="The most tokens a trace may have: the smaller of the "
        "model's position table and the server's cap"
    )
    model_max_tokens: int
    device: str
    source: str = Field(
        description="Where the weights came from: the package or the folder's name (never a "
        "path on the server)"
    )


class ModelList(BaseModel):
    models: list[ModelInfo]
    default: str | None = Field(description="The model the page starts with; null when none")
    examples: list[str]
    max_text_chars: int
    max_json_values: int = Field(
        description="The most numbers one JSON trace may carry; ask for parts, or the compact "
        "form, beyond"
    )
    install: str = Field(description="How to install the default model, for a server without it")


class Preset(BaseModel):
    id: str
    name: str
    about: str = Field(description="One or two sentences on what the preset teaches.")
    tokens: list[str]
    axes: list[str]
    embeddings: list[list[float]]
    config: ToyConfig


class PresetList(BaseModel):
    presets: list[Preset]
    limits: Limits
    config_defaults: ToyConfig = Field(description="The config a table gets when it names none")


class Load(BaseModel):
    """What the server is doing, for a host's monitoring (and ``attnviz bench``)."""

    running: int = Field(description="Computations running now")
    waiting: int = Field(description="Requests waiting for their turn")
    refused: int = Field(description="503s since the start: a turn would not come in time")
    cache_mb: float = Field(description="Memory the cached traces take")
    cache_max_mb: float = Field(description="Its bound (ATTNVIZ_TRACE_CACHE_MB)")
    cache_entries: int


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    device: str
    load: Load
