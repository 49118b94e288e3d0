"""A trace's meta, one model: what an answer of ``POST /api/trace`` says beside its arrays (in
the JSON trace, the fields beside them; in the compact form, the header's
``__metadata__["attnviz"]``). The full traces' response models (``schemas/trace.py``) are these
and the arrays; what a field whose value is an object says beside its arrays is the field's
own model (``TraceField.members``). ``check_meta`` validates an answer's meta against them,
every key declared (the test suite has every answer checked: ``Settings.check_meta``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from attnviz.capture.fields import REGISTRY
from attnviz.pretrained.folder import Backend
from attnviz.schemas.common import ToyConfig
from attnviz.wire.constants import Measure


class TraceMeta(BaseModel):
    """What every trace's meta holds, toy or text."""

    tokens: list[str]
    axes: list[str]
    n: int
    d: int
    layers: int
    heads: int
    head_dim: int
    device: str


class ToyMeta(TraceMeta):
    """A toy trace's: the table's configuration."""

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
    sections: list[int] | None = Field(
        None,
        description="Multimodal rotary (M-RoPE): how many rotary pairs each position index "
        "turns (temporal, height, width; meta.mrope gives each token's three)",
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
        description="[layers] a query sees only the keys fewer than this many positions away "
        "(itself included): in a causal model the last this many, in a bidirectional one "
        "(ModernBERT's local layers) this many less one on each side; null: every key before "
        "it (or every key, in an encoder)"
    )
    window_notes: list[str | None] = Field(
        default_factory=list,
        description="[layers] what the layer's window lets a query see, in words (the page's "
        "note); null where the layer has no window",
    )
    windows_unread: str | None = Field(
        None,
        description="Why the layers' windows were not read (a model served through NDIF whose "
        "masks could not be computed here without its weights), in words: windows is then all "
        "null, not known rather than no window; null when windows says them",
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
    text: str = Field(
        description="What it wrote, decoded as its tokens are labelled: a byte that is part of "
        'no whole character as "<0x90>", never "\ufffd"'
    )


class ImageTile(BaseModel):
    """A tile's token grid: cell (row, col) is position start + row x cols + col."""

    start: int
    rows: int
    cols: int
    box: list[float] = Field(description="[top, left, bottom, right] in the picture's pixels")
    merge: int = Field(description="Patches per token along a side")
    label: str


class Size(BaseModel):
    width: int
    height: int


class Crop(BaseModel):
    top: int
    left: int
    bottom: int
    right: int


class ImageResize(BaseModel):
    """How the processor resized a picture: from the original's size to ``to`` (before a crop
    or a split), the crop kept (in ``to``'s pixels), each view's pixels, the split tiles (0:
    none), a global view besides them, one view's patches and its tokens after merging."""

    model_config = ConfigDict(populate_by_name=True)

    from_: Size = Field(alias="from")
    to: Size
    crop: Crop | None
    view: Size
    tiles: int
    global_: bool = Field(alias="global")
    patches: int
    tokens: int


class ImageBlock(BaseModel):
    """One image of a trace: its tokens' span, its grid (the global view's, or the only
    tile's), the picture as decoded, its tiles, and what the processor did to it."""

    image: int
    start: int
    stop: int
    rows: int
    cols: int
    height: int = Field(description="The picture's height as decoded (pixels)")
    width: int = Field(description="The picture's width as decoded (pixels)")
    tiles: list[ImageTile]
    type: str = Field(description="png, jpeg or webp, read from its bytes")
    original_width: int
    original_height: int
    description: str = Field(description="The picture in words (its type and size)")
    resize: ImageResize | None = None
    resized: str | None = Field(None, description="resize in one line")


class VisionTile(BaseModel):
    image: int
    tile: int
    rows: int
    cols: int
    class_token: bool


class VisionMeta(BaseModel):
    """The vision tower's attention (the field ``vision``): its layers, heads, and each tile's
    patch grid (rows x cols patches; the class token, if any, dropped)."""

    layers: int
    heads: int
    tiles: list[VisionTile]
    note: str


class Mrope(BaseModel):
    """Multimodal rotary: the pairs of each section (temporal, height, width) and each
    position's three indices."""

    sections: list[int]
    positions: list[list[int]]
    interleaved: bool = False


class TextMeta(TraceMeta):
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
    backend: Backend = Field(
        "native",
        description="What ran the model: attnviz's engine, transformers or NDIF (ModelInfo)",
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
    images: list[ImageBlock] | None = Field(
        None, description="With images: each image's tokens and grids"
    )
    vision: VisionMeta | None = Field(
        None, description="With images: the vision tower's layers, heads and patch grids"
    )
    mrope: Mrope | None = Field(
        None, description="A model with multimodal rotary: each position's three indices"
    )


class TokenViewMeta(BaseModel):
    """What the token options did: the rows and columns shown."""

    hide_special: bool
    merge_words: bool
    labels: list[str] = Field(description="The rows and columns shown")
    groups: list[list[int]] = Field(description="The original tokens of each row")
    note: str = Field(description="What the options did, in words")


class PartMeta(BaseModel):
    """What a part (any answer but the whole JSON trace) says of itself."""

    fields: list[str] = Field(description="The arrays sent")
    layer: int | None = Field(description="The layer the per-head arrays hold (null: all)")
    head: int | None
    query: int | None
    token_view: TokenViewMeta | None = None
    rules: dict[str, str] | None = Field(None, description="Each derived array's rule")
    measure: Measure
    json_numbers: int | None = Field(
        None, description="The compact form: how many numbers the full JSON trace holds"
    )


class _Checked(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_field_meta(name: str, members: dict) -> None:
    """A field's object's members that are not arrays, against its model (the field's
    ``members``), every key declared: a field whose value is an object and that declares no
    model fails too."""
    model = REGISTRY[name].members
    if model is None:
        raise ValueError(f"{name}: its object's members are declared in no model (members)")
    model.model_validate(members)


class ToyAnswer(ToyMeta, _Checked):
    pass


class TextAnswer(TextMeta, _Checked):
    pass


class ToyPartAnswer(ToyMeta, PartMeta, _Checked):
    pass


class TextPartAnswer(TextMeta, PartMeta, _Checked):
    pass


def check_meta(meta: dict, part: bool) -> None:
    """``meta`` against its model (a toy's or a text's; with a part's own keys when ``part``),
    every key declared: a pydantic ValidationError says which is not."""
    text = meta.get("mode") == "text"
    model: type[BaseModel] = (
        (TextPartAnswer if text else ToyPartAnswer) if part else (TextAnswer if text else ToyAnswer)
    )
    model.model_validate(meta)
