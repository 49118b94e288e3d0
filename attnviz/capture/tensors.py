"""One trace's tensors, kept small: q, k, v per layer and the hidden states, on the device they
were computed on. Scores and attention weights (T x T per head, most of a trace's bytes) are
recomputed from q and k, a head or a layer at a time, by the engine's own attention functions:
the very numbers of the forward, at a fraction of the memory.

A trace is computed once (``capture_trace``, ``trace.py``) and then read many times, whole or in
parts, by the JSON and the compact forms. The forward's own weights are kept only until the first
response is built. Distances, entropy and the PCA of the trajectories are computed on first use
and kept.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from attnviz.capture.decompose import CleanRun
from attnviz.capture.lens import Readout, at
from attnviz.capture.rules import AttentionRule, EngineRule
from attnviz.capture.vision import TowerCall, TowerLayout
from attnviz.engine import Layout, TransformerConfig
from attnviz.engine.ablate import HeadAblation
from attnviz.engine.analysis import PCA, attention_entropy, pairwise_distances, trajectory_pca
from attnviz.engine.layout import spans_of
from attnviz.engine.model import CHUNK_BYTES
from attnviz.engine.placement import gather
from attnviz.errors import TraceError

if TYPE_CHECKING:
    from attnviz.capture.fields.base import Want

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
    # large to send), each with why: the trace's ``unavailable`` says so.
    lacking: dict[str, str] = field(default_factory=dict)
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
        return self.q is not None or self.recompute is not None

    def qkv(self, layer: int) -> QKV:
        """(q, k, v) of ``layer``, each (nh, T, hs): kept, or recomputed for that layer alone."""
        if self.q is not None and self.k is not None and self.v is not None:
            return self.q[layer], self.k[layer], self.v[layer]
        if self.recompute is None:
            raise TraceError(self.no_qk_reason or "fields: this trace has no queries or keys")
        return self.recompute(layer)

    def hidden_states(self) -> torch.Tensor:
        """(L+1, T, C) the hidden states (a remote trace's: fetched when first asked)."""
        return self.states

    def token_vectors(self) -> torch.Tensor:
        """(T, C) the token vectors before positions (a remote trace's: as the states)."""
        return self.embeddings

    def bring(self, wants: Sequence[Want]) -> None:
        """What fields want of a source elsewhere (``capture.fields.Want``): all here."""
        return None

    def reduced_thumbnails(self, tv: Any, size: int, layers: list[int]) -> dict | None:
        """Every head's thumbnail as ``capture.thumbs`` makes them, made where the weights are
        when that is not here (a remote trace's, on its deployment); None: made here."""
        return None

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

            self._memo("entropy", entropy)
        self.forward_pattern = None

    def nbytes(self) -> int:
        """Bytes kept, with room for the derived tensors (distances, entropy, projection)."""
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

    def _memo_square(self, name: str, nbytes: int, compute: Callable[[], R]) -> R:
        """``_memo`` for a tensor of T x T per layer: kept up to KEEP_SQUARE_BYTES, else
        computed again each time."""
        return self._memo(name, compute) if nbytes <= KEEP_SQUARE_BYTES else compute()

    def _rule(self) -> AttentionRule:
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

    def _memo(self, name: str, compute: Callable[[], R]) -> R:
        with self._lock:
            if name not in self._derived:
                self._derived[name] = compute()
            return self._derived[name]  # type: ignore[return-value]

    def predictions(self, kind: str, start: int, count: int) -> list[dict]:
        """Positions ``start`` .. ``start + count - 1`` through the readout: the output's top
        tokens (``kind`` "top_k") or the logit lens and the target's rank ("lens"), one dict a
        position (``lens.at``). Each position is unembedded once, those not yet kept together
        (a few rows of vocabulary logits at a time), and kept: a window that moves by a token
        computes one more."""
        if self.readout is None:
            raise TraceError("fields: this trace's model predicts no tokens")
        kept: dict[int, dict] = self._memo(f"{kind}.positions", dict)
        want = range(start, start + count)
        missing = [p for p in want if p not in kept]
        if missing:
            for p, got in zip(missing, at(self.states, self.readout, kind, missing), strict=True):
                kept[p] = got
        return [kept[p] for p in want]

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

    def distances(self) -> torch.Tensor:
        """(L+1, T, T) Euclidean distance between tokens at each layer."""
        L1, T, _ = self.states.shape
        nbytes = L1 * T * T * self.states.element_size()
        return self._memo_square("distances", nbytes, lambda: pairwise_distances(self.states))

    def entropy(self) -> torch.Tensor:
        """(L, nh, T) entropy in nats of each query's attention row (from the forward's own
        weights while they are held: ``release`` takes it from them)."""
        if self.forward_pattern is not None and self.has_qk:
            self.release()

        def layer(i: int) -> torch.Tensor:
            return torch.cat([attention_entropy(p) for _, p in self.head_chunks(i)])  # (nh, T)

        return self._memo("entropy", lambda: gather([layer(i) for i in range(self.layers)]))

    def entropy_mean(self) -> torch.Tensor:
        """(L, nh) each head's mean entropy over its rows (the model view's titles)."""
        return self.entropy().mean(-1)

    def wants_entropy(self) -> bool:
        """Whether a pass over every layer's recomputed weights (the first response's
        thumbnails) should take each row's entropy on the way: the forward's weights are not
        held (a long text) and it is not taken yet. Asked later it would take every layer's
        weights again: at 3,600 tokens of SmolLM2-135M as long as the thumbnails did."""
        return self.has_qk and self.forward_pattern is None and "entropy" not in self._derived

    def keep_entropy(self, rows: torch.Tensor) -> None:
        """(L, nh, T) each row's entropy, taken from the weights ``entropy`` reads (the same
        ``head_chunks``), kept as if it had been asked."""
        self._memo("entropy", lambda: rows)

    def projection(self) -> PCA:
        """One PCA of every layer's hidden states together, so that frames are comparable."""
        return self._memo("projection", lambda: trajectory_pca(self.states))

    def rollout(self) -> list[torch.Tensor]:
        """L x (T, T) float64: attention rollout up to each layer
        (``capture.fields.aggregates``), over every token: R_l = Â_l R_(l-1), Â = (mean over
        heads + I) / 2 with a residual."""

        def compute() -> list[torch.Tensor]:
            out: list[torch.Tensor] = []
            eye = torch.eye(self.n, dtype=torch.float64, device=self.states.device)
            for layer in range(self.layers):
                a = sum(p.double().sum(0) for _, p in self.head_chunks(layer)) / self.heads
                assert isinstance(a, torch.Tensor)  # (T, T) the mean over heads
                a = a.to(eye.device)  # a placed model's layer meets the product here
                if self.cfg.residual:
                    a = (a + eye) / 2
                out.append(a if not out else a @ out[-1])
            return out

        return self._memo_square("rollout", self.layers * self.n * self.n * 8, compute)

    # ---- value-weighted attention (Kobayashi et al., 2020) ---------------------------------

    @property
    def has_value_weighted(self) -> bool:
        return self.w_o is not None and (self.v is not None or self.recompute is not None)

    def _w_o(self) -> list[torch.Tensor]:
        if self.w_o is None or not self.has_value_weighted:
            raise TraceError("fields: this trace has no values or output projection")
        return self.w_o

    def value_norms(self) -> torch.Tensor:
        """(L, nh, T) ||v_j W_O^h||: the norm of what key j would add to any query's output
        through head h at weight 1 (its value through the head's slice of W_O; the output's
        bias, the same for every key, left out)."""
        w_o = self._w_o()

        def compute() -> torch.Tensor:
            rows = []
            for layer in range(self.layers):
                v = self.qkv(layer)[2]  # (nh, T, hs)
                rows.append(torch.linalg.vector_norm(v @ w_o[layer].to(v.dtype), dim=-1))
            return gather(rows)

        return self._memo("value_norms", compute)

    def _written(self, layer: int, heads: Sequence[int], p: torch.Tensor) -> torch.Tensor:
        """``p`` (len(heads), T, T), the weights of ``heads``, as the weights by which each key
        reaches the layer's output in this run: a knocked-out head's output is not its weights
        times its values. Zeroed: no key adds anything. Averaged over the positions: every query
        gets sum_j (mean_p a_pj) v_j, so each row is the column means. Patched from another
        text: the patched queries' outputs come from that text, none from this text's keys."""
        marks = [(i, a) for i, h in enumerate(heads) for a in self.ablations
                 if a.layer == layer and a.head == h]  # fmt: skip
        if not marks:
            return p
        p = p.clone()
        for i, a in marks:
            if a.mode == "zero":
                p[i] = 0
            elif a.mode == "mean":
                p[i] = p[i].mean(dim=0, keepdim=True)  # (1, T) broadcast to every query row
            else:
                p[i, : a.patched(self.n)] = 0
        return p

    def value_weighted(self, layer: int, heads: Sequence[int] | None = None) -> torch.Tensor:
        """(H', T, T) ||a_ij v_j W_O^h|| = a_ij ||v_j W_O^h|| of ``heads`` (all by default): the
        norm of what each key adds to each query's output through the head (through a knocked
        out head: ``_written``)."""
        norms = self.value_norms()[layer]  # (nh, T)
        if heads is not None and len(heads) != norms.shape[0]:
            norms = norms[list(heads)]
        chosen = list(range(self.heads)) if heads is None else list(heads)
        p = self._written(layer, chosen, self.pattern(layer, heads))
        return p * norms.to(p.device, p.dtype)[:, None, :]

    def value_chunks(self, layer: int) -> Iterator[tuple[list[int], torch.Tensor]]:
        """``head_chunks`` of the value-weighted norms."""
        norms = self.value_norms()[layer]
        for heads, p in self.head_chunks(layer):
            p = self._written(layer, heads, p)
            yield heads, p * norms[heads].to(p.device, p.dtype)[:, None, :]

    def value_weighted_sum(self, layer: int) -> torch.Tensor:
        """(T, T) float64 ||sum_h a^h_ij v^h_j W_O^h||: the norm of what key j adds to query i's
        output through the whole layer's attention. With f^h_j = v^h_j W_O^h and the Gram
        G_j[h, k] = <f^h_j, f^k_j>, the squared norm is sum_hk a^h_ij a^k_ij G_j[h, k]: heads x
        heads per cell instead of d_model, a few heads' weights at a time."""
        w_o = self._w_o()
        v = self.qkv(layer)[2].double()  # (nh, T, hs)
        f = v @ w_o[layer].double()  # (nh, T, C)
        gram = torch.einsum("hjc,kjc->jhk", f, f)  # (T, nh, nh)
        del f
        chunks = [heads for heads, _ in self._chunk_heads()]
        acc = torch.zeros(self.n, self.n, dtype=torch.float64, device=v.device)
        for i, hp in enumerate(chunks):
            ap = self._written(layer, hp, self.pattern(layer, hp)).double()  # (h, T, T)
            for hq in chunks[i:]:
                aq = ap if hq is hp else self._written(layer, hq, self.pattern(layer, hq)).double()
                g = gram[:, hp][:, :, hq]  # (T, h, k)
                # tmp[j, h, i] = sum_k G_j[h, k] a^k_ij
                tmp = torch.bmm(g, aq.permute(2, 0, 1))  # (T, h, T)
                term = (tmp.permute(1, 2, 0) * ap).sum(0)  # (T, T)
                acc += term if hq is hp else 2 * term
        return acc.clamp_min_(0).sqrt_()

    def _chunk_heads(self) -> Iterator[tuple[list[int], None]]:
        step = max(1, CHUNK_BYTES // max(1, self.n * self.n * 8))
        for h in range(0, self.heads, step):
            yield list(range(h, min(h + step, self.heads))), None

    def value_rollout(self) -> list[torch.Tensor]:
        """L x (T, T) float64: rollout over the value-weighted norms of the layer (Kobayashi et
        al.'s ||sum_h a v W_O||, each row scaled to sum to 1), with the residual as
        ``rollout``: R_l = ((N_l + I) / 2) R_(l-1)."""

        def compute() -> list[torch.Tensor]:
            out: list[torch.Tensor] = []
            eye = torch.eye(self.n, dtype=torch.float64, device=self.states.device)
            for layer in range(self.layers):
                a = self.value_weighted_sum(layer).to(eye.device)
                total = a.sum(-1, keepdim=True)
                a = torch.where(total > 0, a / total.clamp_min(torch.finfo(a.dtype).tiny), a)
                if self.cfg.residual:
                    a = (a + eye) / 2
                out.append(a if not out else a @ out[-1])
            return out

        return self._memo_square("value_rollout", self.layers * self.n * self.n * 8, compute)

    def score_range(self) -> torch.Tensor:
        """(L, nh) the largest finite |score| of each head."""

        def compute() -> torch.Tensor:
            rows = []
            step = max(1, CHUNK_BYTES // max(1, self.n * self.n * 4))
            for i in range(self.layers):
                row = []
                for h in range(0, self.heads, step):
                    heads = list(range(h, min(h + step, self.heads)))
                    s = self.scores(i, None if len(heads) == self.heads else heads)
                    row.append(s.masked_fill_(torch.isneginf(s), 0).abs_().amax(dim=(-2, -1)))
                rows.append(torch.cat(row))
            return gather(rows)

        return self._memo("score_range", compute)
