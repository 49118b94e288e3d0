"""One trace's tensors, kept small: q, k, v per layer and the hidden states, on the device they
were computed on. Scores and attention weights (T x T per head, most of a trace's bytes) are
recomputed from q and k, a head or a layer at a time, by the engine's own attention functions:
the very numbers of the forward, at a fraction of the memory.

A trace is computed once (``capture_trace``, ``trace.py``) and then read many times, whole or in
parts, by the JSON and the compact forms. The forward's own weights are kept only until the first
response is built. ``TraceTensors`` is storage and the few reads every array is made of (a
layer's q, k and v; a head's scores and weights); what is derived from them (entropy, rollout,
value-weighted norms, the PCA, predictions) is computed by the fields that show it
(``capture.fields``) and kept here on first use (``memo``).

Where a trace's model runs elsewhere (an NDIF deployment), its ``backend`` brings what the fields
of a request want into this storage, in one trip, before they compute (``bring``): the fields
compute the same way against either.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import torch

from attnviz.capture.decompose import CleanRun
from attnviz.capture.lens import Readout
from attnviz.capture.rules import AttentionRule, EngineRule
from attnviz.capture.vision import TowerCall, TowerLayout
from attnviz.engine import Layout, TransformerConfig
from attnviz.engine.ablate import HeadAblation
from attnviz.engine.analysis import attention_entropy
from attnviz.engine.layout import spans_of
from attnviz.engine.model import CHUNK_BYTES
from attnviz.engine.placement import gather
from attnviz.errors import TraceError

if TYPE_CHECKING:
    from attnviz.capture.fields.base import Want
    from attnviz.capture.tokenview import TokenView

R = TypeVar("R")
QKV = tuple[torch.Tensor, torch.Tensor, torch.Tensor]

# The forward's own weights are kept for the first response (its thumbnails read them instead
# of recomputing them) only up to this many bytes: at 4,096 tokens a 24-layer model's weights
# are tens of GB, and the thumbnails are then computed a layer at a time from q and k.
KEEP_FORWARD_BYTES = 512 * 2**20
# A derived tensor of T x T per layer (the distances, the rollout) is kept with its trace, and
# counted in its size, only up to this many bytes: a long text's is computed again each time it
# is asked for (the page asks neither of a text unless the rollout is chosen), so that room
# reserved for it never keeps the trace itself (its states, from which a part recomputes one
# layer) out of the cache. 2,048 tokens of a 24-layer model: 0.4 GB of distances, 0.8 GB of
# rollout.
KEEP_SQUARE_BYTES = 64 * 2**20


# The clean run of one trace (``TraceTensors.clean_run``), the last asked: one at a time, outside
# the trace cache's count (it is as large as the trace's q, k and v again, in float64), held
# only while its trace lives.
_CLEAN_LOCK = threading.Lock()
_CLEAN: tuple[weakref.ref[TraceTensors], CleanRun] | None = None


class Backend(Protocol):
    """Where a trace's tensors are made when its model runs elsewhere (an NDIF deployment's:
    ``pretrained.ndif.tensors.NdifBackend``). It brings what a request's fields want into the
    trace's storage (its rule, q, k and v, what is kept with ``keep``) in one trip, and answers
    for what stays there."""

    def bring(self, trace: TraceTensors, wants: Sequence[Want]) -> None:
        """Every want not yet here (none: the first trip, if it is still to come)."""
        ...

    def qkv(self, trace: TraceTensors, layer: int) -> QKV:
        """q, k and v of ``layer``, each (nh, T, hs)."""
        ...

    def thumbnails(self, trace: TraceTensors, tv: TokenView, size: int, layers: list[int]) -> dict:
        """Every head's thumbnail of ``layers`` as ``capture.thumbs`` makes them, made there."""
        ...

    def nbytes(self, trace: TraceTensors) -> int:
        """What the trace will hold here at most (counted before anything is brought)."""
        ...


@dataclass
class TraceTensors:
    """Every captured tensor of one sequence. Per-head tensors are lists over layers, so that one
    layer or head is read without touching the rest.

    q, k and v are kept (``q``, ``k``, ``v``), or, when the trace cache could not hold them
    (long texts on large models), recomputed for one layer at a time from that layer's input
    (``states[layer]``) by ``recompute``. A model whose attention records no q and k (a bridged
    ALiBi model) has none: its forward's weights are kept instead."""

    cfg: TransformerConfig
    q: list[torch.Tensor] | None  # L x (nh, T, hs) (after q/k norms and RoPE when on)
    k: list[torch.Tensor] | None  # L x (nh, T, hs) (after q/k norms and RoPE when on)
    v: list[torch.Tensor] | None  # L x (nh, T, hs)
    states: torch.Tensor  # (L+1, T, C): [0] the input after positions, [l] layer l's output
    embeddings: torch.Tensor  # (T, C) the token vectors before positions
    positional: torch.Tensor | None  # (T, C) the positional table added, if any
    # The forward's own weights, L x (nh, T, T), until release(): the first response's thumbnails
    # read them instead of recomputing. Kept for good when there are no q and k.
    forward_pattern: list[torch.Tensor] | None = field(default=None, repr=False)
    rule: AttentionRule | None = None  # EngineRule(cfg, the layout's spans) when None
    # layer -> (q, k, v) of that layer, each (nh, T, hs), when q, k, v were not kept.
    recompute: Callable[[int], QKV] | None = field(default=None, repr=False)
    # Why a trace has no q and k (said to whoever asks for them), when it has none.
    no_qk_reason: str | None = None
    # How hidden states become scores over the vocabulary (``lens.py``: a causal text
    # model's final norm and unembedding), for top_k and the logit lens; None: no predictions.
    readout: Readout | None = field(default=None, repr=False)
    # L x (nh, hs, C): each head's slice of the output projection W_O (rows h*hs .. (h+1)*hs,
    # views of the model's own weights), for what each key contributes (``value_weighted``);
    # None when the model's output projection is not the engine's (a bridged model).
    w_o: list[torch.Tensor] | None = field(default=None, repr=False)
    # The heads knocked out in this run (engine/ablate.py): their outputs are not their weights
    # times their values, so what each key adds through them is read as ``_written`` says.
    ablations: Sequence[HeadAblation] = ()
    # The clean run the attributions read (``decompose``: built from what the trace's forward
    # recorded, or from a forward of its own, when a part first asks, ``clean_run``); None: a
    # model whose internals are not the engine's (a bridged one) has no attributions.
    attribution: Callable[[], CleanRun] | None = field(default=None, repr=False)
    attribution_bytes: int = 0  # what ``attribution`` holds (a forward's recording), if any
    # A vision-language model's vision tower, when the text had images: its attention, Lv x
    # calls (each layer's calls in order, each over B images, tiles or windows of P patches:
    # ``TowerCall.weights()`` (B, H, P, P)); None for a text alone.
    vision: list[list[TowerCall]] | None = field(default=None, repr=False)
    # Where ``vision``'s patches lie on the images' tiles (``capture.vision``), or why they
    # cannot be put on them; None for a text alone.
    tower: TowerLayout | str | None = field(default=None, repr=False)
    # Where the tokens sat in the forward (rotary positions, bidirectional spans): what a
    # recomputation of q, k and the weights reads too; None: 0 .. T-1, causal as the model is.
    layout: Layout | None = field(default=None, repr=False)
    # The trace's arrays its model keeps elsewhere (a remote deployment's hidden states, too
    # large to send, and the rollout, which would bring every layer's q and k here), each with
    # why: the trace's ``unavailable`` says so.
    lacking: dict[str, str] = field(default_factory=dict)
    # Where the tensors are made when the model runs elsewhere; None: here, all at hand.
    backend: Backend | None = field(default=None, repr=False)
    _derived: dict[str, object] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def layers(self) -> int:
        return self.cfg.n_layers

    @property
    def heads(self) -> int:
        return self.cfg.n_heads

    @property
    def n(self) -> int:
        return self.states.shape[1]

    @property
    def has_qk(self) -> bool:
        return self.q is not None or self.recompute is not None or self.backend is not None

    @property
    def has_value_weighted(self) -> bool:
        """Whether each head's values and slice of W_O are at hand (``capture.value_norms``)."""
        return self.w_o is not None and (self.v is not None or self.recompute is not None)

    @property
    def holds_forward(self) -> bool:
        """Whether the forward's own weights are still held (until ``release``)."""
        return self.forward_pattern is not None

    def qkv(self, layer: int) -> QKV:
        """(q, k, v) of ``layer``, each (nh, T, hs): kept, or recomputed for that layer alone,
        or brought from where the model runs."""
        if self.q is not None and self.k is not None and self.v is not None:
            return self.q[layer], self.k[layer], self.v[layer]
        if self.backend is not None:
            return self.backend.qkv(self, layer)
        if self.recompute is None:
            raise TraceError(self.no_qk_reason or "fields: this trace has no queries or keys")
        return self.recompute(layer)

    def hidden_states(self) -> torch.Tensor:
        """(L+1, T, C) the hidden states (a remote trace's: with its first trip, when small)."""
        self.bring(())
        self.refuse("hidden_states")
        return self.states

    def token_vectors(self) -> torch.Tensor:
        """(T, C) the token vectors before positions (a remote trace's: as the states)."""
        self.bring(())
        self.refuse("embeddings")
        return self.embeddings

    def refuse(self, name: str) -> None:
        """A TraceError for an array this trace's model keeps elsewhere (``lacking``)."""
        if name in self.lacking:
            raise TraceError(f"fields: {self.lacking[name]}")

    def bring(self, wants: Sequence[Want]) -> None:
        """What fields want (``capture.fields.Want``), from where the model runs: all here
        without a backend."""
        if self.backend is not None:
            self.backend.bring(self, wants)

    def reduced_thumbnails(self, tv: TokenView, size: int, layers: list[int]) -> dict | None:
        """Every head's thumbnail as ``capture.thumbs`` makes them, made where the weights are
        when that is not here (a remote trace's, on its deployment); None: made here."""
        if self.backend is None:
            return None
        return self.backend.thumbnails(self, tv, size, layers)

    def release(self, derive: bool = True) -> None:
        """Drop the forward's weights (what the cache keeps is q, k, v and the states); with
        ``derive``, once what a later part reads of every layer's weights is taken from them:
        the entropy of each row (from q and k it takes every layer's weights again, 0.5 s at
        512 tokens of a 30-layer model, against about 0.1 s from these)."""
        forward = self.forward_pattern
        if not self.has_qk or forward is None:
            return
        # The engine's own (``rule`` None): its forward's weights are those that later parts
        # recompute, bit for bit (tested), so the entropy is the one they would give.
        fits = self.rule is None and len(forward) == self.layers
        if derive and fits and "entropy" not in self._derived:
            # one buffer for every layer's p log p (one per device of a placed model's layers)
            terms: dict[torch.device, torch.Tensor] = {}
            for p in forward:
                if p.device not in terms:
                    terms[p.device] = torch.empty_like(p)

            def entropy() -> torch.Tensor:
                return gather([attention_entropy(p, out=terms[p.device]) for p in forward])

            self.memo("entropy", entropy)
        self.forward_pattern = None

    def nbytes(self) -> int:
        """Bytes kept, with room for the derived tensors (distances, entropy, projection)."""
        if self.backend is not None:
            return self.backend.nbytes(self)
        own = [self.states, self.embeddings]
        for kept in (self.q, self.k, self.v):
            own += kept or []
        own += [self.positional] if self.positional is not None else []
        if not self.has_qk and self.forward_pattern is not None:
            own += self.forward_pattern
        shared: dict[int, torch.Tensor] = {}  # a mask the tower's layers share, counted once
        for calls in self.vision or []:
            for call in calls:
                shared |= {id(t): t for t in call.tensors()}
        own += shared.values()
        base = sum(t.numel() * t.element_size() for t in own)
        L1, T, _ = self.states.shape
        size = self.states.element_size()
        derived = self.layers * self.heads * (T + 1) * size  # entropy, score range
        derived += self.layers * self.heads * T * size  # the values' norms (value_norms)
        # distances, the rollout of the weights and of the value-weighted norms
        for square in (L1 * T * T * size, self.layers * T * T * 8, self.layers * T * T * 8):
            derived += square if square <= KEEP_SQUARE_BYTES else 0
        return base + derived + self.attribution_bytes

    # ---- what is derived, kept on first use -------------------------------------------------

    def memo(self, name: str, compute: Callable[[], R]) -> R:
        """``name``'s derived value: computed once (under the trace's lock: ``compute`` must
        not ask for another) and kept."""
        with self._lock:
            if name not in self._derived:
                self._derived[name] = compute()
            return self._derived[name]  # type: ignore[return-value]

    def memo_square(self, name: str, nbytes: int, compute: Callable[[], R]) -> R:
        """``memo`` for a tensor of T x T per layer: kept up to KEEP_SQUARE_BYTES, else
        computed again each time."""
        return self.memo(name, compute) if nbytes <= KEEP_SQUARE_BYTES else compute()

    def derived(self, name: str) -> Any:
        """``name``'s derived value when it is kept, else None."""
        return self._derived.get(name)

    def keep(self, name: str, value: object) -> None:
        """Keep ``value`` as ``name``'s derived value, unless one is kept already: what a pass
        took on its way (each row's entropy), or what a backend brought. Not under the lock: a
        part computing under it may be what asked for it."""
        self._derived.setdefault(name, value)

    # ---- a head's scores and weights ---------------------------------------------------------

    def _rule(self) -> AttentionRule:
        if self.rule is None:
            self.bring(())  # a remote model's rule comes with its first trip
        if self.rule is not None:
            return self.rule
        return EngineRule(self.cfg, spans_of(self.layout))

    def scores(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor:
        """(H', T, T) logits after scaling (masked = -inf), before any soft-cap, of ``heads``
        (all by default)."""
        q, k, _ = self.qkv(layer)
        if heads is not None and len(heads) != q.shape[0]:
            q, k = q[list(heads)], k[list(heads)]
        return self._rule().scores(layer, q, k)

    def pattern(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor:
        """(H', T, T) softmax weights of ``heads`` (all by default); rows are queries."""
        forward = self.forward_pattern
        if forward is not None:
            p = forward[layer]
            return p if heads is None or len(heads) == p.shape[0] else p[list(heads)]
        return self._rule().weights(layer, self.scores(layer, heads))

    def head_chunks(self, layer: int) -> Iterator[tuple[list[int], torch.Tensor]]:
        """``layer``'s heads a few at a time, with their weights (h, T, T): at most about
        ``CHUNK_BYTES`` of scores at once (all heads together for a short text)."""
        step = max(1, CHUNK_BYTES // max(1, self.n * self.n * 4))
        for h in range(0, self.heads, step):
            heads = list(range(h, min(h + step, self.heads)))
            yield heads, self.pattern(layer, None if len(heads) == self.heads else heads)

    def clean_run(self) -> CleanRun:
        """The clean run of this trace's model on its tokens, for the attributions: kept for
        the trace asked last (``_CLEAN``), so that clicking one trace's cells runs it once."""
        global _CLEAN
        if self.attribution is None:
            raise TraceError("fields: this trace's model has no clean run to attribute")
        if self.ablations:
            raise TraceError(
                "fields: attributions decompose the clean run, and this trace knocks heads out "
                "(ablate): ask for them on the text without ablate"
            )
        with _CLEAN_LOCK:
            if _CLEAN is not None and _CLEAN[0]() is self:
                return _CLEAN[1]
        run = self.attribution()
        with _CLEAN_LOCK:
            _CLEAN = (weakref.ref(self), run)
        return run
