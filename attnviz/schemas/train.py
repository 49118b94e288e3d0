"""The training lab: ``/api/train`` (the options, a run asked for, its state and events, and an
encoder-decoder model asked to decode) and the claims a run is measured against."""

from __future__ import annotations

import unicodedata
from functools import cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from attnviz.engine.config import Norm, Positional
from attnviz.limits import LIMITS
from attnviz.schemas.common import Float, Int, Owned, RunState, Strict, char_class
from attnviz.training import marks

TrainState = RunState  # queued, running, an end, or interrupted by a restart
TaskName = Literal["induction", "reverse", "copy", "charlm"]
Switch = Literal["positional", "norm", "residual", "scale", "ffn"]


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
    max_title_chars: int = Field(
        LIMITS.max_run_title_chars,
        description="The longest name a run may be given (PATCH /api/train/{id}), in "
        "characters once its spaces are trimmed",
    )


TRAIN_SHAPE = TrainLimits(max_steps=0, max_seconds=0, max_params=0, max_text_chars=0)


class TrainArchitecture(Strict):
    """The toy lab's switches, for a model trained to predict the next token (causal)."""

    layers: Int = Field(2, ge=1, le=TRAIN_SHAPE.max_layers)
    heads: Int = Field(4, ge=1, le=TRAIN_SHAPE.max_heads)
    d_model: Int = Field(64, ge=2, le=TRAIN_SHAPE.max_d_model)
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


class TrainOptimiser(Strict):
    """AdamW without weight decay; the seed fixes the starting weights and the data order."""

    steps: Int = Field(800, ge=1, description="Updates; at most the server's max_steps")
    lr: Float = Field(3e-3, gt=0, le=1)
    batch: Int = Field(32, ge=1, le=TRAIN_SHAPE.max_batch)
    seed: Int = Field(0, ge=0, le=2**31 - 1)


class TrainRequest(Strict):
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
    steps: Int | None = Field(
        None,
        ge=1,
        description="With a preset only: its run made shorter, at most the preset's own steps "
        "(a server whose max_steps is below them; the page sends max_steps there). Its claims "
        "are measured as ever, and may not hold on a shorter run",
    )
    checkpoints: Int = Field(20, ge=1, le=50, description="Attention snapshots after step 0")

    @model_validator(mode="after")
    def _one_plan(self) -> TrainRequest:
        if self.preset is not None and (self.compare or self.arch or self.opt):
            raise ValueError("preset: a preset sets arch, opt and compare itself; send none")
        if self.steps is not None and self.preset is None:
            raise ValueError("steps: only with a preset (a run of your own sends opt.steps)")
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
    per_address: int = Field(
        description="Runs going or waiting that one client address may have at once "
        "(ATTNVIZ_TRAIN_PER_ADDRESS; 429 past it). Each visitor may have one training and one "
        "waiting"
    )


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
    model_step: int | None = Field(
        None,
        description="An interrupted run's: the step its model is as of (the last checkpoint "
        "its weights were stored at, which may come before its last checkpoint)",
    )
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
    query: int = Field(
        ge=0,
        description="The token (0-based) whose row shows what the task teaches (induction: the "
        "repeat's first letter): the query a page opens the trained model on",
    )
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
    claim: str = Field(description="A measure of the trained models and its bound, in short")
    value: float | None = Field(
        description="The measure; null where this run has not the steps it reads (a preset's "
        "run made shorter than the preset's own: ``says`` says so, and it does not hold)"
    )
    holds: bool
    says: str = Field(
        "", description="The claim and its measured value as a sentence (rounded to read)"
    )
    checked: bool = Field(
        True, description="False: an observation (a time), shown and never part of a verdict"
    )


class TrainAsk(BaseModel):
    """reverse, copy: what the model can be asked (POST /api/train/{id}/decode)."""

    alphabet: str = Field(description="The characters a source may have, each once")
    max_len: int = Field(description="The longest source it is asked (the longest it trained on)")
    min_len: int = Field(description="The shortest source it trained on (a shorter one is asked)")


class SharedOwned(Owned):
    """A training run's ``Owned``, whether the operator shared it, and whether the caller may
    rename it."""

    shared: bool = Field(False, description="The operator shared it with every visitor")
    can_rename: bool = Field(
        False,
        description="The caller may rename it (PATCH): its owner or the operator; to anyone "
        "else PATCH answers 404",
    )


TITLE_ABOUT = (
    "Its name: the one its owner gave it (`named`), else what it trains, in words; the page "
    "names it by this (and, when not `named`, its start), never by its id"
)
NAMED_ABOUT = (
    "Its owner named it (PATCH): the page shows `title` as it is, without the start's time"
)


class TrainMarks(BaseModel):
    """The marks a head's score must reach to be named what it is (``attnviz.training.marks``,
    the same Learn's checks hold a head to): the page names a run's best head by them."""

    induction: float = Field(
        marks.INDUCTIVE, description="An induction score at least this: an induction head"
    )
    alignment: float = Field(
        marks.ALIGNED,
        description="A cross-attention head's weight on one (anti-)diagonal at least this: "
        "an aligned head",
    )
    induction_from: int = Field(
        marks.INDUCTION_FROM,
        description="The first layer (0-based) a head can be an induction head in: it matches "
        "the letter before each position, which only a head of an earlier layer writes there "
        "(a first-layer head's induction score comes from position alone)",
    )


class TrainRun(SharedOwned):
    title: str = Field(description=TITLE_ABOUT)
    named: bool = Field(False, description=NAMED_ABOUT)
    created: float = Field(description="When it started (epoch seconds)")
    state: TrainState
    reason: str | None = Field(None, description="Why it stopped, when not done")
    place: int | None = Field(
        None, description="While queued: its place in line, 1 the next to start; else null"
    )
    wait_s: int | None = Field(
        None,
        description="While queued: about how many seconds until it starts (from the runs "
        "ahead: their steps left at their pace, within the time limit); else null",
    )
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
    preset_steps: int | None = Field(
        None,
        description="A preset's run: the preset's own steps, the run's claims made of runs that "
        "long (more than ``steps`` where the run was made shorter: a server capped below them)",
    )
    variants: list[TrainVariant]
    ask: TrainAsk | None = Field(None, description="reverse, copy: what its model can be asked")
    marks: TrainMarks = Field(
        default_factory=TrainMarks,
        description="The marks its heads' scores are named by (induction head, aligned head)",
    )
    seq: int = Field(description="Events so far; the stream goes on from here")


class TrainRunVariantSummary(BaseModel):
    label: str
    state: Literal["waiting", "running", "done", "cancelled"]
    model: str | None = Field(None, description="Its name in /api/models once it has finished")
    steps: int = Field(description="Steps trained so far")
    heldout: float | None = Field(None, description="Held-out loss at its latest checkpoint")


class TrainRunSummary(SharedOwned):
    """One run in the caller's list of this server's runs (GET /api/train)."""

    title: str = Field(description=TITLE_ABOUT)
    named: bool = Field(False, description=NAMED_ABOUT)
    created: float = Field(description="When it started (epoch seconds)")
    state: TrainState
    reason: str | None = None
    place: int | None = Field(None, description="While queued: its place in line (1 is next)")
    task: TaskName
    preset: str | None
    compare: str | None
    steps: int = Field(description="Steps per variant")
    variants: list[TrainRunVariantSummary]


class TrainRuns(BaseModel):
    runs: list[TrainRunSummary] = Field(
        description="The caller's runs this server keeps (its own, those it opened by their "
        "link, the shared ones; every one for the operator), newest first"
    )


# Characters a run's name may not hold: controls (a line break, a tab, DEL), line and
# paragraph separators, the explicit direction marks that reorder the text around them, and
# lone surrogates (no character at all).
_NOT_IN_A_NAME = {"Cc", "Zl", "Zp", "Cs"}
_DIRECTION_MARKS = {"LRE", "RLE", "PDF", "LRO", "RLO", "LRI", "RLI", "FSI", "PDI"}


def title_refused(title: str) -> str | None:
    """Why ``title`` (trimmed) cannot be a run's name, naming the field and the rule; None when
    it can."""
    cap = LIMITS.max_run_title_chars
    if not title:
        return "title: a run's name needs at least one character that is not a space"
    if len(title) > cap:
        return f"title: {len(title):,} characters; a run's name has at most {cap}"
    for c in title:
        if _not_in_a_name(c):
            return (
                f"title: a run's name cannot hold a control character (a line break, a tab, a "
                f"direction mark); it has U+{ord(c):04X}"
            )
    return None


def _not_in_a_name(c: str) -> bool:
    return unicodedata.category(c) in _NOT_IN_A_NAME or (
        unicodedata.bidirectional(c) in _DIRECTION_MARKS
    )


@cache
def name_pattern() -> str:
    """``title_refused``'s rule, after the trim, as a pattern for the OpenAPI schema: spaces
    ``str.strip`` drops at either end (a tab or a line break among them), and between them a
    name that begins and ends with a character that is no space and holds none a name cannot
    hold; lone surrogates aside, which no pattern can name: the server alone refuses those.
    Every character the rule names (the controls, the separators, the direction marks, the
    spaces) is in the Basic Multilingual Plane: tests/api/test_train_rename.py checks the
    pattern against the rule over the whole of Unicode. Made when the schema is first asked
    for, not at import."""
    plane = [chr(i) for i in range(0x10000) if not 0xD800 <= i <= 0xDFFF]
    bad = char_class(c for c in plane if _not_in_a_name(c))
    space = char_class(c for c in plane if c.isspace())
    return f"^[{space}]*[^{bad}{space}]([^{bad}]*[^{bad}{space}])?[{space}]*$"


class TrainRename(Strict):
    """A run's new name (PATCH /api/train/{id}): its owner's or the operator's."""

    title: str | None = Field(
        json_schema_extra=lambda schema: schema.update(
            maxLength=LIMITS.max_run_title_chars, pattern=name_pattern()
        ),
        description="The name, trimmed of spaces at either end: 1 to max_title_chars "
        "characters (/api/train/options), no control character, line or paragraph separator, "
        "explicit direction mark or lone surrogate; null gives it back the name of what it "
        "trains",
    )

    @field_validator("title", mode="after")
    @classmethod
    def _a_name(cls, title: str | None) -> str | None:
        if title is None:
            return None
        title = title.strip()
        refused = title_refused(title)
        if refused is not None:
            raise ValueError(refused)
        return title


class TrainDecodeRequest(Strict):
    """A string for an encoder-decoder run's model to reverse (or copy)."""

    source: str = Field(min_length=1, description="Lowercase letters, at most the task's length")
    variant: Int = Field(0, ge=0, le=TRAIN_SHAPE.max_variants - 1)


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
    state: TrainState = Field(description="running, or queued: waiting for a slot")
    place: int | None = Field(None, description="While queued: its place in line (1 is next)")
    events: str = Field(description="The stream of this run's events")
    url: str
    token: str = Field(
        description="The caller's visitor token: sent as `Authorization: Bearer <token>`, it is "
        "this visitor, the run's owner, again (a client that keeps no cookie cancels with it)"
    )
