"""Request and response schemas for the HTTP API, in one place.

Every size a request can ask for has a cap (``Limits``); every rule a request can break has a
message that names the field, e.g. ``config.heads: 2 does not divide d = 3``.
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    FiniteFloat,
    StringConstraints,
    Tag,
    ValidationInfo,
    field_validator,
    model_validator,
)

from attnviz.limits import LIMITS, Limits
from attnviz.pretrained.convert import FAMILIES

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
    # null (scores, queries, keys, values) for a model that records none: one served through
    # transformers whose attention does not go through its AttentionInterface (``unavailable``)
    scores: list[list[list[list[float | None]]]] | None = Field(
        description="[layers][heads][n][n] logits after scaling; masked entries are null"
    )
    queries: list[list[list[list[float]]]] | None = Field(
        description="[layers][heads][n][head_dim]"
    )
    keys: list[list[list[list[float]]]] | None = Field(
        description="[layers][heads][n][head_dim] (after RoPE when on)"
    )
    values: list[list[list[list[float]]]] | None = Field(description="[layers][heads][n][head_dim]")
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


class Ablated(BaseModel):
    layer: int = Field(description="0-based")
    head: int = Field(description="0-based")
    mode: Literal["zero", "mean", "patch"]
    source: str | None = Field(description="patch: the text whose head output was copied in")
    patched: int = Field(
        description="Positions whose output was replaced, from the first: the text's tokens, or "
        "for a patch the fewer of the text's and the source's (the rest keep their own)"
    )


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
        "special tokens and tokens the model wrote"
    )
    kv_heads: int = Field(description="Key/value heads (fewer than heads: grouped-query)")
    rope: Rope | None = Field(description="The rotation q and k are shown after, if any")
    attention: AttentionRule | None = Field(
        None, description="How scores and weights are made from q and k, layer by layer"
    )
    generated: Generated | None = Field(
        description="With generate: where the tokens the model wrote start, and how it wrote"
    )
    backend: Literal["native", "transformers"] = Field(
        "native", description="What ran the model: attnviz's engine or transformers (ModelInfo)"
    )
    ablated: list[Ablated] = Field(
        default_factory=list,
        description="The heads knocked out (the request's ablate): every array is of this run",
    )
    unavailable: dict[str, str] = Field(
        default_factory=dict,
        description="Arrays this model's traces lack, each with why (null in the whole trace; "
        "asked for by name, a 422 that says so): a model served through transformers whose "
        "attention does not go through its AttentionInterface records no scores, queries, keys "
        "or values",
    )


class Rope(BaseModel):
    base: float
    style: Literal["pairs", "halves"]
    scaling: str | None = Field(
        None, description="How the frequencies stretch past the trained context (rope_type)"
    )
    rotary_dim: int | None = Field(
        None, description="Only the first rotary_dim coordinates of each head turn (all: null)"
    )
    local_base: float | None = Field(
        None, description="The base of the sliding-window layers, which rotate unscaled"
    )


class AttentionRule(BaseModel):
    """How each layer turns q and k into scores and scores into weights: what the query-key
    view needs to explain a weight from q and k."""

    scale: float = Field(description="score = (q · k) x scale, before any soft-cap")
    divide_by: float | None = Field(
        description="When the model divides instead (by sqrt(head_dim)): score = (q · k) / this"
    )
    scale_label: str = Field(description='The scaling in words, e.g. "÷ √64"')
    softcap: float | None = Field(
        description="weight = softmax(c · tanh(score / c)) with c this (Gemma 2); else softmax"
    )
    windows: list[int | None] = Field(
        description="[layers] a query sees only the last this many keys (itself included); "
        "null: every key before it (or every key, in an encoder)"
    )
    qk_norm: Literal["none", "head", "proj"] = Field(
        description="q and k are shown after an RMSNorm of each head's vector (head) or of the "
        "whole projection (proj), before RoPE"
    )


class Generated(BaseModel):
    start: int = Field(description="Index of the first token the model wrote")
    steps: int = Field(description="Tokens it wrote")
    asked: int = Field(description="Tokens asked for")
    stopped: bool = Field(description="It wrote its end-of-text token (the last) and stopped")
    temperature: float
    seed: int
    text: str = Field(description="What it wrote, decoded")


class Generate(_Strict):
    """Let a causal model write after the text, one token at a time, and trace it all."""

    steps: int = Field(ge=1, le=LIMITS.max_generate, description="Tokens to write")
    temperature: float = Field(
        0.0, ge=0, le=2, description="0: greedy (the most likely token); else sampled"
    )
    seed: int = Field(0, ge=0, le=2**31 - 1, description="Fixes the samples when sampling")


AblateMode = Literal["zero", "mean", "patch"]


class Ablate(_Strict):
    """One head knocked out (engine/ablate.py): its output before the output projection
    replaced by zeros (zero), by its own average over the text's positions (mean), or by its
    output on another text, position by position from the start (patch, ``source``; positions
    past the source's tokens keep their own output)."""

    layer: int = Field(ge=0, description="0-based, as in a trace")
    head: int = Field(ge=0, description="0-based, as in a trace")
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


class TextTraceRequest(_Strict):
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


# ---------------------------------------------------------------------------------------------
# What a trace request asks for: which arrays, which layer or head, in which form.

# The compact form: a safetensors file (8-byte header length, JSON header, raw arrays) whose
# header's ``__metadata__["attnviz"]`` holds the trace's other fields as JSON.
COMPACT_MEDIA_TYPE = "application/vnd.attnviz.trace+safetensors"

# Arrays with a layer and a head axis ([layers][heads][...]); ``layer`` and ``head`` pick one.
PER_HEAD_FIELDS = ("attentions", "scores", "queries", "keys", "values", "view",
                   "value_weighted")  # fmt: skip
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
# Head aggregates, [layers][m][m] under the token options (``layer`` picks one): the mean and
# the largest weight over a layer's heads, and attention rollout through the layers up to it.
# Each rule, as the page states it, is sent with the part (``meta.rule``).
AGGREGATE_RULES = {
    "head_mean": "The mean of the layer's heads (as each is shown): rows still sum to 1.",
    "head_max": "Each cell's largest weight over the layer's heads: rows no longer sum to 1; it "
    "shows where any head looks.",
    "rollout": "Attention rollout (Abnar and Zuidema, 2020): each layer's mean over heads, "
    "A = mean_h(A_h), with the residual stream added, Â = (A + I) / 2 (just A in a model "
    "without a residual), multiplied through the layers, R_l = Â_l ⋯ Â_1: how much of each "
    "token's input reaches each row by this layer, if attention alone moved it.",
}
# Value-weighted attention (Kobayashi et al., 2020, "Attention is not only a weight"): what
# each key adds to each query's output, not only how much weight it gets.
VALUE_WEIGHTED_RULES = {
    "value_weighted": "||a_ij v_j W_O^h||: the norm of what key j adds to query i's output "
    "through head h, its weight times its value through the head's slice of the output "
    "projection (Kobayashi et al., 2020).",
    "value_weighted_sum": "||Σ_h a^h_ij v^h_j W_O^h||: the norm of what key j adds to query i's "
    "output through the whole layer's attention, every head's contribution summed before the "
    "norm (heads that cancel count for less).",
}
# ``measure``: what view, thumbs and the head aggregates show. Under value_weighted they are
# computed from value_weighted instead of the weights; the rules then read as these say.
Measure = Literal["weights", "value_weighted"]
MEASURES: tuple[str, ...] = get_args(Measure)
VALUE_WEIGHTED_AGGREGATES = {
    "head_mean": "The mean of the layer's heads' value-weighted norms ||a_ij v_j W_O^h||.",
    "head_max": "Each cell's largest value-weighted norm over the layer's heads: where any head "
    "moves the most.",
    "rollout": "Rollout over value-weighted attention: each layer's ||Σ_h a^h_ij v^h_j W_O^h||, "
    "each row scaled to sum to 1, N, with the residual stream added, (N + I) / 2 (just N "
    "without a residual), multiplied through the layers.",
}
# What a causal model predicts (services/lens.py), beyond the full trace: ``top_k``, the next
# tokens the model's output gives most probability at each position, and ``lens`` (the logit
# lens), every hidden state through the final norm and the unembedding.
PREDICTION_FIELDS = {
    "top_k": "{k, start, ids: [m][k], probs: [m][k], target_probs: [m], vocab: {id: label}}: "
    "the k most probable next tokens at each position (m of them from start: pos_start, "
    "pos_count), from the model's output (softmax of its logits), most probable first; "
    "target_probs: the probability of the token that comes next (0 at the last position; an "
    "encoder's head: of the text's own token, 0 at a mask), whose -log is the position's loss.",
    "lens": "{rows, start, ids: [layers+1][m], probs, targets: [m], target_ranks, target_probs, "
    "vocab}: "
    "the logit lens (nostalgebraist, 2020): hidden state l (0: the embeddings; the last: the "
    "output) through the final norm and the unembedding; each cell's most probable token and "
    "its probability, and the rank (1: the top) and probability of the token that comes next "
    "(targets[i], -1 and rank 0 at the last position). An encoder with a masked-language-model "
    "head (predicts: masked) predicts the token at each position instead: targets[i] is the "
    "text's own token, -1 at a mask ([MASK], <mask>).",
}
FIELDS = (*TRACE_FIELDS, "view", "thumbs", "score_range", *AGGREGATE_RULES,
          *VALUE_WEIGHTED_RULES, *PREDICTION_FIELDS)  # fmt: skip


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
    family: str = Field(
        description="The model's family: its config.json model_type. attnviz's own engine reads "
        f"these (the table of conversions; the examples): {', '.join(FAMILIES)}",
        examples=list(FAMILIES),
    )
    layers: int
    heads: int
    d_model: int
    head_dim: int
    kv_heads: int = Field(
        description="Key/value heads: fewer than heads with grouped-query attention, each "
        "shared by heads / kv_heads query heads"
    )
    causal: bool
    max_tokens: int = Field(
        description="The most tokens a trace may have: the smaller of the "
        "model's position table and the server's cap"
    )
    model_max_tokens: int
    device: str
    source: str = Field(
        description="Where the weights came from: the package or the folder's name (never a "
        "path on the server), or the training run"
    )
    examples: list[str] | None = Field(
        None, description="Texts this model reads (a trained run's), else null: the list's"
    )
    run: str | None = Field(
        None,
        description="The training run this model comes from (null for a loaded model). Behind "
        "a proxy with several replicas, send it as X-Attnviz-Run with a trace of the model.",
    )
    backend: Literal["native", "transformers"] = Field(
        "native",
        description="What runs the model: attnviz's own engine (native: every internal a named "
        "hook) or Hugging Face transformers (the bridge, for families the engine has no "
        "conversion for: pip install 'attnviz[transformers]'; a model whose attention does not "
        "go through transformers' AttentionInterface has no queries, keys, values or scores)",
    )
    ablate_refused: str | None = Field(
        None,
        description="Why this model's heads cannot be knocked out (a trace's ablate is refused "
        "with this reason), or null when they can: the native engine's models, and those served "
        "through transformers whose attention goes through its AttentionInterface",
    )


class ExampleHead(BaseModel):
    """A head worth a look for an example text: measured on the model, checked by a test."""

    model: str
    text: str = Field(description="The example text it is about")
    query: str = Field(description="The token that attends")
    key: str = Field(description="The token it attends to")
    layer: int = Field(description="0-based, as in a trace")
    head: int = Field(description="0-based, as in a trace")
    weight: float = Field(description="The weight from query to key in that head, rounded")
    note: str = Field(description="What the page says about it")


class CorpusLimits(BaseModel):
    """What the corpus view (POST /api/models/{name}/corpus) allows on this server."""

    max_tokens: int = Field(description="The most tokens a set may have (``max_tokens``)")
    default_tokens: int = Field(description="A set's tokens when the request names none")
    max_chars: int = Field(description="The most characters of an upload")
    max_clusters: int = Field(LIMITS.max_clusters, description="The most clusters of heads")
    projections: list[str] = Field(description="The projections this server can do: pca, umap")


class ModelList(BaseModel):
    models: list[ModelInfo]
    default: str | None = Field(description="The model the page starts with; null when none")
    examples: list[str]
    max_text_chars: int
    max_generate: int = Field(description="Tokens a causal model may write after a text")
    max_ablate: int = Field(
        LIMITS.max_ablate, description="Heads one trace may knock out (the trace's ablate)"
    )
    max_json_values: int = Field(
        description="The most numbers one JSON trace may carry; ask for parts, or the compact "
        "form, beyond"
    )
    install: str = Field(description="How to install the default model, for a server without it")
    example_heads: list[ExampleHead] = Field(
        default_factory=list, description="Heads worth a look for the example texts"
    )
    corpus: CorpusLimits = Field(description="The corpus view's limits and projections")


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


class Preset(BaseModel):
    id: str
    name: str
    about: str = Field(description="One or two sentences on what the preset teaches.")
    source: str = Field(
        description="Which of the articles attnviz grew out of the example comes from, by its "
        "title, and what attnviz added"
    )
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
    training: int = Field(0, description="Training runs running now (ATTNVIZ_TRAIN_SLOTS)")
    comparing: int = Field(
        0, description="Recurrent comparisons running now (as many slots of their own)"
    )


class Health(BaseModel):
    status: Literal["ok"] = "ok"
    version: str
    device: str
    load: Load


# -- training -------------------------------------------------------------------------------------

TaskName = Literal["induction", "reverse", "copy", "charlm"]
Switch = Literal["positional", "norm", "residual", "scale", "ffn"]
RunState = Literal["running", "done", "cancelled", "failed"]


class TrainLimits(BaseModel):
    """Caps on one training run; the server's settings lower the steps, seconds and sizes."""

    max_layers: int = 8
    max_heads: int = 16
    max_d_model: int = 256
    max_batch: int = 256
    max_variants: int = 4
    max_steps: int = Field(description="ATTNVIZ_TRAIN_MAX_STEPS")
    max_seconds: float = Field(description="ATTNVIZ_TRAIN_MAX_SECONDS: a run stops there")
    max_params: int = Field(description="ATTNVIZ_TRAIN_MAX_PARAMS, per variant")
    max_text_chars: int = Field(description="ATTNVIZ_TRAIN_MAX_TEXT_CHARS")


TRAIN_SHAPE = TrainLimits(max_steps=0, max_seconds=0, max_params=0, max_text_chars=0)


class TrainArchitecture(_Strict):
    """The toy lab's switches, for a model trained to predict the next token (causal)."""

    layers: int = Field(2, ge=1, le=TRAIN_SHAPE.max_layers)
    heads: int = Field(4, ge=1, le=TRAIN_SHAPE.max_heads)
    d_model: int = Field(64, ge=2, le=TRAIN_SHAPE.max_d_model)
    ffn: bool = Field(False, description="A feed-forward sublayer in each block")
    positional: Positional = "rope"
    norm: Norm = "pre"
    residual: bool = True
    scale: bool = Field(True, description="Divide the attention logits by sqrt(d_head)")

    @model_validator(mode="after")
    def _heads_divide(self) -> TrainArchitecture:
        if self.d_model % self.heads:
            raise ValueError(f"arch.heads: {self.heads} does not divide d_model {self.d_model}")
        return self


class TrainOptimiser(_Strict):
    """AdamW without weight decay; the seed fixes the starting weights and the data order."""

    steps: int = Field(800, ge=1, description="Updates; at most the server's max_steps")
    lr: float = Field(3e-3, gt=0, le=1)
    batch: int = Field(32, ge=1, le=TRAIN_SHAPE.max_batch)
    seed: int = Field(0, ge=0, le=2**31 - 1)


class TrainRequest(_Strict):
    """One model, or the variants of one switch (``compare``), or an ablation ``preset``
    (which sets the architecture, optimiser and variants itself)."""

    task: TaskName = "induction"
    text: str | None = Field(
        None,
        description="charlm only: the text to learn (default: the English help texts of "
        "Python's pydoc_data, which every Python install has)",
    )
    arch: TrainArchitecture | None = Field(None, description="Default: the task's")
    opt: TrainOptimiser | None = Field(None, description="Default: the task's")
    compare: Switch | None = Field(
        None, description="Train one variant per value of this switch, same seed and data"
    )
    preset: str | None = Field(None, description="An ablation preset's id (/api/train/options)")
    checkpoints: int = Field(20, ge=1, le=50, description="Attention snapshots after step 0")

    @model_validator(mode="after")
    def _one_plan(self) -> TrainRequest:
        if self.preset is not None and (self.compare or self.arch or self.opt):
            raise ValueError("preset: a preset sets arch, opt and compare itself; send none")
        if self.text is not None and self.task != "charlm":
            raise ValueError("text: only the charlm task learns a text")
        return self


class TrainVariantInfo(BaseModel):
    label: str
    arch: TrainArchitecture


class TrainPresetInfo(BaseModel):
    id: str
    title: str
    question: str
    shows: str = Field(description="What training it shows (checked by the tests on 5 seeds)")
    claims: list[str] = Field(description="The checkable claims behind it: a measure and a bound")
    task: TaskName
    switch: str
    variants: list[TrainVariantInfo]
    opt: TrainOptimiser


class TrainTaskInfo(BaseModel):
    name: TaskName
    title: str
    about: str
    arch: TrainArchitecture
    opt: TrainOptimiser


class TrainOptions(BaseModel):
    tasks: list[TrainTaskInfo]
    presets: list[TrainPresetInfo]
    switches: dict[str, list[str | bool]] = Field(description="Each switch's values, in order")
    limits: TrainLimits
    slots: int = Field(description="Runs this server trains at once (503 past it)")


class Thumbs(BaseModel):
    """Every head's attention on the probe, 8-bit: weight ~ values * scale / 255 (the compact
    thumbnails of a trace). ``values`` is base64 of (L, nh, T, T) uint8, ``scale`` (L, nh)."""

    shape: list[int]
    values: str
    scale: list[list[float]]


class TrainCheckpoint(BaseModel):
    step: int
    heldout: float = Field(description="Held-out loss, nats")
    seconds: float
    thumbs: Thumbs = Field(description="The (decoder's) self-attention on the probe")
    cross: Thumbs | None = Field(
        None, description="reverse, copy: the decoder's cross-attention (L, nh, T, S)"
    )
    encoder: Thumbs | None = Field(
        None, description="reverse, copy: the encoder's self-attention (L, nh, S, S)"
    )
    sample: str | None = Field(
        None,
        description="charlm: text the model wrote after the prompt; reverse, copy: what it "
        "wrote for the probe's source (greedy)",
    )


class TrainHistory(BaseModel):
    """Per step (column arrays): the batch's loss before the update, each layer's gradient
    norm, and the seconds since the variant started."""

    step: list[int]
    loss: list[float]
    grad_norms: list[list[float]] = Field(description="Per step, one per layer")
    seconds: list[float]


class TrainVariant(BaseModel):
    label: str
    arch: TrainArchitecture
    params: int
    state: Literal["waiting", "running", "done", "cancelled"]
    model: str | None = Field(None, description="Its name in /api/models once it has finished")
    history: TrainHistory
    checkpoints: list[TrainCheckpoint]
    induction: list[list[float]] | None = Field(
        None, description="induction: each head's induction score (L, nh) on held-out strings"
    )
    alignment: list[list[float]] | None = Field(
        None,
        description="reverse, copy: each cross-attention head's weight on its best "
        "(anti-)diagonal (L, nh), on held-out strings",
    )


class TrainProbe(BaseModel):
    """The fixed input whose attention every checkpoint shows."""

    tokens: list[str] = Field(description="Its tokens as labels (a space reads ␣)")
    text: str
    look: str = Field(description="What to look for in its attention")
    prompt: str | None = Field(
        None,
        description="charlm: what each checkpoint's sample continues; reverse, copy: the "
        "source the sample is written for",
    )
    verb: str | None = Field(None, description="What a sample does with the prompt, in a word")
    source: list[str] | None = Field(
        None, description="reverse, copy: the encoder's tokens; ``tokens`` are the decoder's"
    )
    writes: list[str] | None = Field(
        None, description="reverse, copy: what each decoder token is trained to write next"
    )


class TrainClaim(BaseModel):
    claim: str = Field(description="A measure of the trained models and its bound")
    value: float
    holds: bool


class TrainAsk(BaseModel):
    """reverse, copy: what the model can be asked (POST /api/train/{id}/decode)."""

    alphabet: str = Field(description="The characters a source may have, each once")
    max_len: int = Field(description="The longest source it is asked (the longest it trained on)")
    min_len: int = Field(description="The shortest source it trained on (a shorter one is asked)")


class TrainRun(BaseModel):
    id: str
    state: RunState
    reason: str | None = Field(None, description="Why it stopped, when not done")
    task: TaskName
    about: str
    preset: str | None
    compare: str | None
    opt: TrainOptimiser
    steps: int = Field(description="Steps per variant")
    checkpoint_steps: list[int]
    probe: TrainProbe
    baseline: float | None = Field(None, description="charlm: a bigram model's held-out loss")
    claims: list[TrainClaim] | None = Field(
        None, description="A preset's claims, measured on this run's models once it is done"
    )
    variants: list[TrainVariant]
    ask: TrainAsk | None = Field(None, description="reverse, copy: what its model can be asked")
    seq: int = Field(description="Events so far; the stream goes on from here")


class TrainRunVariantSummary(BaseModel):
    label: str
    state: Literal["waiting", "running", "done", "cancelled"]
    model: str | None = Field(None, description="Its name in /api/models once it has finished")
    steps: int = Field(description="Steps trained so far")
    heldout: float | None = Field(None, description="Held-out loss at its latest checkpoint")


class TrainRunSummary(BaseModel):
    """One run in the list of this server's runs (GET /api/train)."""

    id: str
    state: RunState
    reason: str | None = None
    task: TaskName
    preset: str | None
    compare: str | None
    steps: int = Field(description="Steps per variant")
    variants: list[TrainRunVariantSummary]


class TrainRuns(BaseModel):
    runs: list[TrainRunSummary] = Field(description="The runs this server keeps, newest first")


class TrainDecodeRequest(_Strict):
    """A string for an encoder-decoder run's model to reverse (or copy)."""

    source: str = Field(min_length=1, description="Lowercase letters, at most the task's length")
    variant: int = Field(0, ge=0, le=TRAIN_SHAPE.max_variants - 1)


class TrainDecoded(BaseModel):
    """What the model wrote (greedy), and every head's attention, exact (float32), on the last
    decoder pass: ``self`` (L, nh, T, T) over the decoder's tokens, ``cross`` (L, nh, T, S)
    from them to the source, ``encoder`` (L, nh, S, S)."""

    source: list[str] = Field(description="The encoder's tokens: the letters and the end mark")
    tokens: list[str] = Field(description="The decoder's tokens: the start mark, then its output")
    writes: list[str] = Field(description="What the decoder wrote at each of its tokens")
    output: str = Field(description="The letters written, without the end mark")
    expected: str = Field(description="The right answer")
    self_attention: list[list[list[list[float]]]] = Field(alias="self")
    cross: list[list[list[list[float]]]]
    encoder: list[list[list[list[float]]]]

    model_config = ConfigDict(populate_by_name=True)


class TrainAccepted(BaseModel):
    id: str
    state: RunState
    events: str = Field(description="The stream of this run's events")
    url: str


# ---- Why not an RNN: POST /api/recurrent, GET /api/recurrent/{id} ----------------------------

RecurrentTask = Literal["copy", "reverse", "induction"]
RecurrentKind = Literal["transformer", "lstm", "gru"]
RECURRENT_MAX_SEED = 2**31 - 1


class RecurrentRequest(_Strict):
    """A comparison of the training lab's transformer with an LSTM and a GRU on one task."""

    task: RecurrentTask = "copy"
    seed: int = Field(0, ge=0, le=RECURRENT_MAX_SEED, description="Starting weights and data order")


class RecurrentTaskInfo(BaseModel):
    name: RecurrentTask
    title: str
    about: str
    steps: int = Field(description="Training steps of each model")
    distances: list[int]
    distance: str = Field(description="What a distance counts")


class RecurrentOptions(BaseModel):
    tasks: list[RecurrentTaskInfo]
    default: RecurrentTask
    lengths: list[int] = Field(description="The sequence lengths a training step is timed at")
    max_seed: int
    slots: int = Field(description="Comparisons this server runs at once (503 past it)")


class RecurrentModel(BaseModel):
    name: RecurrentKind
    params: int
    accuracy: list[float] = Field(description="Per distance, once trained; [] before")
    step_seconds: list[float] = Field(description="Per length, once timed; [] before")
    loss: float | None = Field(None, description="Its last training batch's loss, nats")
    steps: int = Field(0, description="Training steps done")
    train_seconds: float | None = Field(None, description="Its training's wall time, once done")


class RecurrentRun(BaseModel):
    id: str
    state: RunState
    reason: str | None = Field(None, description="Why it stopped, when not done")
    task: RecurrentTask
    seed: int
    distances: list[int] = Field(description="Where accuracy is measured")
    distance: str = Field(description="What a distance counts (the accuracy plot's axis)")
    lengths: list[int] = Field(description="The sequence lengths a step is timed at")
    models: list[RecurrentModel]
    claims: list[TrainClaim] | None = Field(None, description="Measured once it is done")
    shows: str = Field("", description="What it showed, in words, once it is done")
    progress: float = Field(0.0, description="The share of the work done, 0 to 1")
    doing: str = Field("", description="What it is doing now")


# ---- POST /api/export -----------------------------------------------------------------------

ExportView = Literal["model", "head", "qk", "traj", "gen"]


class ToyExportView(_Strict):
    """The toy lab's view besides the heatmaps' head: the vectors' layer, the distance pair and
    the trajectories (core/state.js ToyView)."""

    vlayer: int | None = Field(None, ge=0, description="The vectors' layer (0: the input)")
    a: int | None = Field(None, ge=0, description="The distance's first token")
    b: int | None = Field(None, ge=0, description="The distance's second token")
    trails: bool = True


class ExportSelection(_Strict):
    """What the file shows first: the layer and head (0-based), and for a text the query token,
    the token options and the views; for the toy lab its view."""

    layer: int = Field(0, ge=0)
    head: int = Field(0, ge=0)
    query: int | None = Field(None, ge=0, description="A text's query (default: the first word)")
    hide_special: bool = False
    merge_words: bool = False
    views: list[ExportView] | None = Field(
        None, min_length=1, max_length=5, description="A text's views (all by default)"
    )
    view: ToyExportView | None = Field(None, description="The toy lab's view")


def _export_kind(body: object) -> str:
    """As POST /api/trace tells them: a body with "text" or "model" is a text's."""
    if isinstance(body, dict):
        return "text" if "text" in body or "model" in body else "toy"
    return "text" if isinstance(body, TextTraceRequest) else "toy"


class ExportRequest(_Strict):
    """POST /api/export: the trace request (a toy table or a model on a text, as POST
    /api/trace takes it) and the selection the file opens on."""

    trace: Annotated[
        Annotated[ToyTraceRequest, Tag("toy")] | Annotated[TextTraceRequest, Tag("text")],
        Discriminator(_export_kind),
    ]
    selection: ExportSelection = Field(default_factory=ExportSelection)


# ---- Learn mode: GET /api/learn, POST /api/learn/{id}/check -----------------------------------


class LearnToyView(_Strict):
    """A toy step's view as the page holds it (core/types.js ToyView)."""

    layer: int = Field(ge=0, description="The heatmaps' layer (0-based)")
    head: int = Field(ge=0, description="The heatmaps' head (0-based)")
    vlayer: int = Field(ge=0, description="The vectors' layer (0: the input)")
    a: int = Field(ge=0, description="The distance's first token")
    b: int = Field(ge=0, description="The distance's second token")
    trails: bool = True


class LearnToyState(BaseModel):
    """A whole toy lab state (core/types.js ToyState): the table, its config and the view."""

    preset: str | None = Field(description="The preset it starts from (its config may differ)")
    tokens: list[str]
    axes: list[str]
    embeddings: list[list[float]]
    config: ToyConfig
    view: LearnToyView


class LearnTrain(BaseModel):
    settings: dict[str, str] = Field(
        description="The Train tab's form fields by name, as text (as modes/train/link.js "
        "carries them): {} for step 1, whose card is the recurrent comparison"
    )


class LearnTask(BaseModel):
    id: str
    prompt: str
    hint: str
    finding: bool = Field(
        False,
        description="A finding (a head found in the learner's run): once done it stays done "
        "while the learner looks elsewhere (step 12's two heads are never in view at once)",
    )


class ArticleRow(BaseModel):
    label: str
    article: list[float] = Field(description="As the article states them")
    engine: list[float] = Field(
        description="The engine's, from the step's starting state, at full precision"
    )


class ArticleTable(BaseModel):
    caption: str
    columns: list[str]
    decimals: int = Field(description="The article's rounding: the engine's numbers round to it")
    rows: list[ArticleRow]


class LearnStep(BaseModel):
    n: int = Field(description="1-based: #learn/n")
    id: str
    title: str
    lab: Literal["toy", "train"]
    text: list[str] = Field(description="Paragraphs, plain text")
    formula: str = Field(description="Presentation MathML, one <math display=block> element")
    formula_text: str = Field(description="The formula in plain text (its text alternative)")
    toy: LearnToyState | None = Field(description="A toy step's starting state")
    train: LearnTrain | None = Field(description="A train step's starting form")
    focus: list[str] = Field(description="Ids of the page's elements the step is about")
    tasks: list[LearnTask]
    article: list[ArticleTable] = Field(description="The article's numbers beside the engine's")


class LearnSteps(BaseModel):
    steps: list[LearnStep]


class LearnView(_Strict):
    """What the learner looks at. A toy step: the heatmaps' layer and head, the vectors' layer,
    the distance pair (``trails`` is accepted and not read). A train step: the run's variant and
    the head in view."""

    layer: int = Field(0, ge=0, le=LIMITS.max_layers - 1, description="0-based")
    head: int = Field(0, ge=0, le=LIMITS.max_heads - 1, description="0-based")
    vlayer: int | None = Field(None, ge=0, le=LIMITS.max_layers, description="toy steps")
    a: int | None = Field(None, ge=0, le=LIMITS.max_tokens - 1, description="toy steps")
    b: int | None = Field(None, ge=0, le=LIMITS.max_tokens - 1, description="toy steps")
    trails: bool | None = Field(None, description="toy steps")
    variant: int | None = Field(
        None, ge=0, le=TRAIN_SHAPE.max_variants - 1, description="train steps (0-based)"
    )


_TOY_VIEW = ("vlayer", "a", "b", "trails")


class LearnCheckRequest(_Strict):
    """One of: a toy step's table and view (the table exactly as POST /api/trace takes it), a
    train step's run and view, or step 1's recurrent comparison."""

    toy: ToyTraceRequest | None = Field(None, description="toy steps: the table and its config")
    run: str | None = Field(
        None, min_length=1, max_length=40, description="train steps 11-16: the run's id"
    )
    recurrent: str | None = Field(
        None, min_length=1, max_length=40, description="step 1: the comparison's id"
    )
    view: LearnView | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> LearnCheckRequest:
        sent = [k for k in ("toy", "run", "recurrent") if getattr(self, k) is not None]
        if not sent:
            raise ValueError(
                "body: send toy (a toy step's table), run (a train step's run) or recurrent "
                "(step 1's comparison)"
            )
        if len(sent) > 1:
            raise ValueError(f"{sent[1]}: send one of toy, run and recurrent, not {sent}")
        v = self.view
        if v is None:
            return self
        if self.recurrent is not None:
            raise ValueError("view: step 1's check reads no view; send recurrent alone")
        if self.toy is not None and v.variant is not None:
            raise ValueError("view.variant: only a train step's view has a variant")
        if self.run is not None:
            for name in _TOY_VIEW:
                if getattr(v, name) is not None:
                    raise ValueError(f"view.{name}: only a toy step's view has it")
        return self


class LearnTaskResult(BaseModel):
    id: str
    done: bool
    says: str = Field(description="What is true now, with the numbers, and why")


class LearnCheck(BaseModel):
    step: str
    tasks: list[LearnTaskResult]


# ---------------------------------------------------------------------------------------------
# The corpus view: one head's queries and keys of a set of texts in 2-D, and the heads clustered.

CorpusSource = Literal["examples", "docs", "upload"]
CorpusProjection = Literal["pca", "umap"]


class CorpusRequest(_Strict):
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
    layer: int = Field(0, ge=0)
    head: int = Field(0, ge=0)
    projection: CorpusProjection = Field(
        "pca", description="pca, or umap when the optional package is installed"
    )
    seed: int = Field(0, ge=0, lt=2**31, description="The docs' order and UMAP's seed")
    max_tokens: int = Field(
        LIMITS.default_corpus_tokens,
        ge=16,
        le=LIMITS.max_corpus_tokens,
        description="The set's token budget (the user's text is not counted: it is not part "
        "of the set)",
    )
    clusters: int = Field(6, ge=1, le=LIMITS.max_clusters, description="Clusters of heads")

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
    similarity: list[list[float]] = Field(description="n x n, rows and columns in ``order``")
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
