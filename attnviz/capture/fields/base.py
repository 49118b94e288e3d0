"""What a trace field is (``TraceField``): one array a request can name in ``fields``, declared
once with everything each layer needs of it: the query parameters it reads, its checks (from
the model's shape before anything is computed, and against the trace), how many numbers it
holds (from the shapes alone, so that an answer over the cap is refused before it is made), its
computation, what it reads of a source that lives elsewhere (``Want``), its wire shape (in words,
and as the type the API documents for the full JSON trace's arrays), what its object says
beside its arrays (a pydantic model, ``Members``) and the rule its ``meta.rules`` entry states.

A field computes against a ``TraceSource``: a trace's storage and the reads every array is made
of (``TraceTensors``), whether its model runs here or on an NDIF deployment (whose backend,
``NdifBackend``, brings what a request's fields want into the storage in one trip, before they
compute).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

import torch
from pydantic import BaseModel, ConfigDict

from attnviz.capture.decompose import CleanRun
from attnviz.capture.lens import Readout
from attnviz.capture.vision import TowerCall, TowerLayout
from attnviz.engine import TransformerConfig
from attnviz.engine.ablate import HeadAblation
from attnviz.errors import TraceError
from attnviz.wire.constants import Measure

if TYPE_CHECKING:
    from attnviz.capture.tokenview import TokenView

R = TypeVar("R")

# An array of an answer: a tensor, null (no positional table), or an object of tensors and
# numbers (projection, thumbs, the predictions, the attributions).
Value = torch.Tensor | dict | None

# The full JSON trace's arrays as the API documents them (``TraceField.wire``).
Matrix = list[list[float]]
Cube = list[list[list[float]]]
PerHead = list[list[list[list[float]]]]


class Members(BaseModel):
    """What a field whose value is an object says beside its arrays (``TraceField.members``):
    in the compact form, the header's ``meta[field]``; in JSON, beside its arrays. Every key is
    declared: an answer's are checked against it in tests, and the page's JSDoc is made from
    it (``attnviz.jsgen``)."""

    model_config = ConfigDict(extra="forbid")


class Ask(Protocol):
    """The query parameters a field reads (``attnviz.schemas.trace.TraceQuery``'s)."""

    layer: int | None
    head: int | None
    query: int | None
    hide_special: bool
    merge_words: bool
    thumb: int
    thumb_layer: int | None
    k: int
    pos_start: int
    pos_count: int | None
    key: int | None
    top: int | None
    position: int | None
    token: int | None
    versus: int | None
    image: int
    tile: int
    measure: Measure


@dataclass(frozen=True)
class Want:
    """What a field reads of a source that may live elsewhere, made there: a remote source (an
    NDIF deployment's) brings every want of a request in one trip (``TraceSource.bring``); this
    process's tensors have them at hand.

    - ``layer``: q, k and v of ``layer`` (every weight and score of its heads comes from them);
    - ``rows``: the entropy of each query's row, every head's;
    - ``thumbs``: every head's thumbnail under the token options ``view`` at ``size`` a side;
    - ``pca``: the trajectories' PCA;
    - ``predict``: the predictions ``kind`` ("top_k" or "lens") of the positions ``start`` to
      ``start + count - 1``.
    """

    what: Literal["layer", "rows", "thumbs", "pca", "predict"]
    layer: int = 0
    view: TokenView | None = field(default=None, compare=False)
    size: int = 0
    kind: str = ""
    start: int = 0
    count: int = 0


class TraceSource(Protocol):
    """What a field computes against: one trace's storage (``capture.TraceTensors``) and the
    few reads every array is made of. Per-head arrays come a layer (and some heads) at a time;
    what is derived from them (the entropy, the rollout) the field computes and keeps with the
    trace (``memo``). Where the model runs elsewhere, ``bring`` first brings what a request's
    fields want (``Want``) into the same storage, in one trip."""

    cfg: TransformerConfig
    states: torch.Tensor  # (L+1, T, C)
    positional: torch.Tensor | None  # (T, C) the positional table added, if any
    readout: Readout | None  # the output head, in a model that predicts tokens
    w_o: list[torch.Tensor] | None  # L x (nh, hs, C) each head's slice of W_O
    ablations: Sequence[HeadAblation]  # the heads knocked out in this run
    vision: list[list[TowerCall]] | None  # the vision tower's layers, with images
    tower: TowerLayout | str | None  # the tower's tiles, or why they are unknown

    @property
    def layers(self) -> int: ...
    @property
    def heads(self) -> int: ...
    @property
    def n(self) -> int: ...
    @property
    def has_qk(self) -> bool: ...
    @property
    def has_value_weighted(self) -> bool: ...
    @property
    def holds_forward(self) -> bool: ...
    def qkv(self, layer: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...
    def scores(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor: ...
    def pattern(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor: ...
    def head_chunks(self, layer: int) -> Iterator[tuple[list[int], torch.Tensor]]: ...
    def token_vectors(self) -> torch.Tensor: ...
    def hidden_states(self) -> torch.Tensor: ...
    def release(self, derive: bool = True) -> None: ...
    def refuse(self, name: str) -> None: ...
    def memo(self, name: str, compute: Callable[[], R]) -> R: ...
    def memo_square(self, name: str, nbytes: int, compute: Callable[[], R]) -> R: ...
    def derived(self, name: str) -> Any: ...
    def keep(self, name: str, value: object) -> None: ...
    def reduced_thumbnails(self, tv: TokenView, size: int, layers: list[int]) -> dict | None: ...
    def clean_run(self) -> CleanRun: ...
    def bring(self, wants: Sequence[Want]) -> None: ...


@dataclass(frozen=True)
class Bounds:
    """A model's shape before its trace is computed: ``tokens`` is the most the trace can have,
    said as ``tokens_are`` in a refusal."""

    layers: int
    heads: int
    tokens: int
    tokens_are: str = "tokens"


@dataclass(frozen=True)
class Shape:
    """The sizes an answer's numbers are counted from: the model's (layers, heads, tokens, the
    residual stream's width, a head's), the rows under the token options, whether the trace
    has a positional table, and the vision tower's numbers (0 where it is refused)."""

    layers: int
    heads: int
    tokens: int
    width: int
    head_dim: int
    rows: int
    positional: bool
    vision: int


@dataclass
class Pick:
    """One request worked out against one trace: the layers and heads it picks (the language
    model's; empty when only the vision tower's arrays are asked for), the rows and columns
    under its token options (``view``, None when no field asked draws under them), and whether
    it measures value-weighted attention."""

    source: TraceSource
    ask: Ask
    layers: list[int]
    heads: list[int]
    view: TokenView | None
    value: bool

    @property
    def rows(self) -> slice:
        """The query rows of a per-head array: ``query``'s alone, or all."""
        q = self.ask.query
        return slice(None) if q is None else slice(q, q + 1)


def index(value: int | None, count: int, name: str, what: str) -> list[int]:
    """``[value]``, or every index when it is None; a TraceError naming ``name`` out of range."""
    if value is None:
        return list(range(count))
    if value >= count:
        raise TraceError(f"{name}: {value} is out of range ({count} {what}: 0 to {count - 1})")
    return [value]


def _no_check(_ask: Ask, _bounds: Bounds) -> None:
    return None


def layer_wants(pick: Pick) -> list[Want]:
    """The q, k and v of every layer picked: what a per-head array reads."""
    return [Want("layer", layer=layer) for layer in pick.layers]


def _no_wants(_pick: Pick) -> list[Want]:
    return []


def _no_prepare(_pick: Pick) -> None:
    return None


@dataclass(frozen=True)
class TraceField:
    """One array of a trace, as every layer of attnviz knows it.

    - ``shape``: what it holds, in words (the catalogue's and the API's description);
    - ``numbers(ask, shape)``: how many numbers it holds, from the shapes alone;
    - ``compute(pick)``: the array;
    - ``params``: the query parameters it reads beyond ``fields`` (the catalogue says them);
    - ``per_head``: [layers][heads][...], ``layer`` and ``head`` pick one;
    - ``drawn``: drawn under the token options (``hide_special``, ``merge_words``);
    - ``measured``: ``measure=value_weighted`` makes it of the value-weighted norms;
    - ``needs``: what of the model it needs beyond q, k, v and the hidden states, where a
      model can lack it: ``"readout"`` (an output head that predicts tokens), ``"clean run"``
      (the stream split into components, the native engine's), ``"output projection"`` (each
      head's slice of W_O: value-weighted attention);
    - ``tower``: of the vision tower, whose ``layer`` and ``head`` are its own;
    - ``over_heads``: one [m][m] matrix a layer, of all its heads together (the model view's
      large heatmap shows it in place of one head);
    - ``rule``, ``value_rule``: what ``meta.rules`` says of it (under ``measure=weights`` and
      ``value_weighted``); a measured field without a rule of its own has value_weighted's;
    - ``words``: the kind of numbers it holds in a reader's words ("exact weights"), which a
      saved file's refusal names (default: its name, spaced);
    - ``check(ask, bounds)``: its refusals that the model's shape tells before the trace is
      computed (a job accepted); ``prepare(pick)``: those the trace tells, before any array of
      the request is computed;
    - ``wants(pick)``: what it reads that a remote source makes where the model is (``Want``),
      brought for every field of a request at once (default: a per-head array's layers, for
      another field nothing beyond the first trace);
    - ``wire``: its type in the full JSON trace as the API documents it, for one of that
      trace's arrays (``full``: ``fields``' default), else None;
    - ``members``: a field whose value is an object, what it says beside its arrays.
    """

    name: str
    shape: str
    numbers: Callable[[Ask, Shape], int]
    compute: Callable[[Pick], Value]
    params: Sequence[str] = ()
    per_head: bool = False
    drawn: bool = False
    measured: bool = False
    needs: str | None = None
    tower: bool = False
    over_heads: bool = False
    rule: str | None = None
    value_rule: str | None = None
    words: str | None = None
    check: Callable[[Ask, Bounds], None] = field(default=_no_check, repr=False)
    prepare: Callable[[Pick], None] = field(default=_no_prepare, repr=False)
    wants: Callable[[Pick], Sequence[Want]] | None = field(default=None, repr=False)
    wire: Any = field(default=None, repr=False)
    members: type[Members] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.words is None:
            object.__setattr__(self, "words", self.name.replace("_", " "))
        if self.wants is None:
            object.__setattr__(self, "wants", layer_wants if self.per_head else _no_wants)

    @property
    def full(self) -> bool:
        """One of the full JSON trace's arrays (``fields``' default)."""
        return self.wire is not None

    def wanted(self, pick: Pick) -> Sequence[Want]:
        """``wants(pick)``: what this field reads of a remote source."""
        assert self.wants is not None  # set in __post_init__
        return self.wants(pick)


class Registry:
    """The trace's fields in their wire order (the full trace's arrays in its order among them),
    each registered once by its module."""

    def __init__(self) -> None:
        self._fields: dict[str, TraceField] = {}

    def add(self, *fields: TraceField) -> None:
        for f in fields:
            if f.name in self._fields:
                raise ValueError(f"the trace field {f.name!r} is registered twice")
            self._fields[f.name] = f

    def __getitem__(self, name: str) -> TraceField:
        return self._fields[name]

    def __contains__(self, name: object) -> bool:
        return name in self._fields

    def __iter__(self) -> Iterator[TraceField]:
        return iter(self._fields.values())

    def names(self) -> tuple[str, ...]:
        return tuple(self._fields)

    def ask(self, fields: str, **choices: Any) -> dict[str, Any]:
        """The query parameters of a part of ``fields`` (comma-separated names): ``choices``
        those fields read (``TraceField.params``), the rest and any None left out, so that a
        part is asked for by what changes it alone (static/js/core/fields.js ``ask``)."""
        read = {p for name in fields.split(",") for p in self[name].params}
        kept = {k: v for k, v in choices.items() if k in read and v is not None}
        return {"fields": fields, **kept}

    def full(self) -> tuple[str, ...]:
        """The full JSON trace's arrays, in its order (``fields``' default)."""
        return tuple(f.name for f in self if f.full)

    def needing(self, *what: str) -> tuple[str, ...]:
        """The fields that need any of ``what`` of the model (``TraceField.needs``)."""
        return tuple(f.name for f in self if f.needs in what)


REGISTRY = Registry()
register = REGISTRY.add


def picked(ask: Ask, shape: Shape) -> tuple[int, int, int]:
    """How many layers, heads and query rows a per-head array of ``ask`` holds."""
    return (
        1 if ask.layer is not None else shape.layers,
        1 if ask.head is not None else shape.heads,
        1 if ask.query is not None else shape.tokens,
    )
