"""A trace whose model runs on an NDIF deployment: ``TraceTensors`` as every trace's, with an
``NdifBackend`` that fills them by remote traces (``block.run_plan``) with what a request's
fields want, in one trip, before they compute; the fields compute as they do on any trace.

The first trace reads every layer's rule (scaling, soft-cap, mask: checked against the model's
own attention output there), each head's mean entropy (each row's too, when small) and its
largest score, and whatever the part that asked needs (every head's thumbnail, say); later parts
ask for one layer's q, k and v (every head's exact weights and scores are then computed here
from them, by that rule: the bridge's ``RecordedRule``), or the predictions of the positions
shown. The hidden states come back with the first trace when they are small (``STATES_BYTES``);
a larger model keeps them on the deployment and its trace says so (``lacking``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from attnviz.capture import TraceTensors
from attnviz.capture.fields import Want
from attnviz.capture.tensors import KEEP_SQUARE_BYTES, QKV
from attnviz.engine.analysis import PCA
from attnviz.engine.reduce import PCA_AXES
from attnviz.errors import TraceError
from attnviz.limits import LIMITS
from attnviz.pretrained.bridge.head import HEAD_TOLERANCE
from attnviz.pretrained.bridge.record import Mask, as_mask
from attnviz.pretrained.bridge.rule import LayerRule, RecordedRule

if TYPE_CHECKING:
    from attnviz.capture.tokenview import TokenView

# The hidden states and token vectors come back with the first trace up to this many bytes
# (float32): a 1B model's at 512 tokens (71 MB) just over; an 8B's stay there.
STATES_BYTES = 96 * 2**20
# Each row's entropy comes with the first trace up to this many bytes (float32): else each head's
# mean alone (what the page shows), the rows on a trip of their own when asked. A 405B model's
# rows at 4,096 tokens are 264 MB, its means 64 KB.
ROWS_BYTES = 16 * 2**20
# Layers whose q, k and v are kept here at once (the page reads one layer at a time).
KEPT_LAYERS = 4
# An attention whose rule here reproduces the model's output within this is the model's.
RULE_TOLERANCE = 1e-3

Run = Callable[[dict], dict]  # a plan -> what the deployment sent back


def _mask(layer: dict) -> Mask:
    """The mask a layer's attention used, as the deployment described it: the causal triangle,
    none, or the keys it hid (as a rule when one describes them: ``as_mask``), or its bias."""
    hidden, bias = layer.get("hidden"), layer.get("bias")
    if bias is not None:
        return Mask(bias=bias.masked_fill(hidden, float("-inf")))
    if layer.get("triangle"):
        return Mask(causal=True)
    return Mask() if hidden is None else as_mask((~hidden)[None, None])  # True: seen


class NdifBackend:
    """Where a remote model's trace is made: ``run`` sends a plan and answers what came back.
    It keeps the last few layers' q, k and v (``KEPT_LAYERS``) and the thumbnails brought; what
    else comes is kept in the trace's storage as if computed here (``TraceTensors.keep``)."""

    def __init__(self, run: Run, plan_base: dict, model_name: str) -> None:
        self.run = run
        self.plan_base = plan_base
        self.model_name = model_name
        self._based = False
        self._layers_qkv: OrderedDict[int, QKV] = OrderedDict()
        self._thumbs: dict[tuple, dict] = {}
        # The first trace is sent once (parts asked at once wait for it); later trips go at once.
        self._first = threading.Lock()
        self._keep = threading.Lock()

    # -- asking the deployment -----------------------------------------------------------------

    def _send(self, plan: dict) -> dict:
        return self.run({**self.plan_base, **plan})

    def _base(self, trace: TraceTensors, extra: dict | None = None) -> dict | None:
        """The first trace (every layer's rule, entropy and score range, the small states),
        with ``extra`` asked in the same trace; what came back, or None when it came already."""
        if self._based:
            return None
        with self._first:
            return None if self._based else self._first_trace(trace, extra)

    def _first_trace(self, trace: TraceTensors, extra: dict | None) -> dict:
        got = self._send(
            {"base": True, "states": self.plan_base.get("small", False), **(extra or {})}
        )
        layers = got["layers"]
        bad = [(i, r["unmodelled"]) for i, r in enumerate(layers) if r["unmodelled"]]
        if bad:
            i, names = bad[0]
            raise TraceError(
                f"model: {self.model_name}'s attention (layer {i}) also takes "
                f"{', '.join(names)}, which attnviz's rule (softmax of scaled q k^T under the "
                "mask) does not model"
            )
        for i, r in enumerate(layers):
            if not r["eager"] and float(r["check"]) > RULE_TOLERANCE:
                raise TraceError(
                    f"model: {self.model_name}'s attention (layer {i}) is not softmax(q k^T x "
                    f"{r['scaling']:.4g}) under its mask: recomputed, its output differs by "
                    f"{float(r['check']):.2e} (over {RULE_TOLERANCE:g})"
                )
        trace.rule = RecordedRule(
            tuple(LayerRule(r["scaling"], r["softcap"], _mask(r)) for r in layers)
        )
        trace.keep("entropy_mean", torch.stack([r["entropy_mean"] for r in layers]))
        if "entropy" in layers[0]:
            trace.keep("entropy", torch.stack([r["entropy"] for r in layers]))
        trace.keep("score_range", torch.stack([r["score_range"] for r in layers]))
        if "states" in got:
            trace.states, trace.embeddings = got["states"], got["embeddings"]
        self._based = True
        return got

    def qkv(self, trace: TraceTensors, layer: int) -> QKV:
        """q, k and v of ``layer`` (nh, T, hs): the deployment's, each key/value head repeated
        for the query heads that read it; the last few layers kept (as sent: k and v of the
        key/value heads alone)."""
        while True:  # brought, unless other layers brought at once pushed it out meanwhile
            with self._keep:
                kept = self._layers_qkv.get(layer)
                if kept is not None:
                    self._layers_qkv.move_to_end(layer)
                    break
            self.bring(trace, [Want("layer", layer=layer)])
        q, k, v = kept
        group = q.shape[0] // k.shape[0]
        return q, k.repeat_interleave(group, 0), v.repeat_interleave(group, 0)

    # -- one trip for what a request's fields want ----------------------------------------------

    def bring(self, trace: TraceTensors, wants: Sequence[Want]) -> None:
        """Every want (``capture.fields.Want``) not yet here, in one trip to the deployment:
        with the first trace when it is still to come. A trip asks at most ``KEPT_LAYERS``
        layers' q, k and v (any more come a layer at a time, as they are read), one set of
        thumbnails and one kind of predictions. What comes is kept without the trace's lock
        (its other parts go on meanwhile)."""
        ask = self._plan(trace, wants)
        got = self._base(trace, ask)
        if got is None and ask:
            got = self._send(ask)
        if got is not None:
            self._store(trace, ask, got)

    def _plan(self, trace: TraceTensors, wants: Sequence[Want]) -> dict:
        """The plan's part for the wants not yet here."""
        ask: dict = {}
        layers: list[int] = []
        with self._keep:
            held = set(self._layers_qkv)
        for w in wants:
            if w.what == "layer":
                if w.layer not in held and w.layer not in layers and len(layers) < KEPT_LAYERS:
                    layers.append(w.layer)
            elif w.what == "rows":
                if trace.derived("entropy") is None:
                    ask.update(base=True, rows=True)
            elif w.what == "pca":
                if "hidden_states" in trace.lacking and trace.derived("projection") is None:
                    ask["pca"] = True
            elif w.what == "thumbs":
                assert w.view is not None  # a thumbs want names its token options
                thumbs = _thumbs_ask(w.view, w.size)
                if "thumbs" not in ask and _thumbs_key(thumbs) not in self._thumbs:
                    ask["thumbs"] = thumbs
            elif "predict" not in ask:
                kept: dict[int, dict] = trace.memo(f"{w.kind}.positions", dict)
                missing = [p for p in range(w.start, w.start + w.count) if p not in kept]
                if missing:
                    ask["predict"] = self._predict_ask(trace, w.kind, missing)
        if layers:
            ask["qkv"] = layers
        return ask

    def _store(self, trace: TraceTensors, ask: dict, got: dict) -> None:
        """Keep what came for ``ask`` (the first trace keeps its own: ``_first_trace``)."""
        layers = got["layers"]
        with self._keep:
            for layer in ask.get("qkv", ()):
                r = layers[layer]
                self._layers_qkv[layer] = (r["q"], r["k"], r["v"])
                self._layers_qkv.move_to_end(layer)
            while len(self._layers_qkv) > KEPT_LAYERS:
                self._layers_qkv.popitem(last=False)
        if ask.get("rows"):
            trace.keep("entropy", torch.stack([r["entropy"] for r in layers]))
        if "pca" in got:
            r, dtype = got["pca"], torch.float32  # as the states here would be
            pca = PCA(mean=r["mean"].to(dtype), axes=r["axes"].to(dtype),
                      explained_variance_ratio=r["ratio"].to(dtype),
                      coords=r["coords"].to(dtype))  # fmt: skip
            trace.keep("projection", pca)
        if "thumbs" in ask:
            self._thumbs.setdefault(_thumbs_key(ask["thumbs"]), {
                "values": torch.stack([r["thumbs"] for r in layers]),
                "scale": torch.stack([r["thumb_scale"] for r in layers]),
            })  # fmt: skip
        if "predict" in ask:
            self._keep_predictions(trace, ask["predict"], got["predict"])

    def nbytes(self, trace: TraceTensors) -> int:
        """What this trace will hold here at most (the cache counts it when it is made, before
        anything is fetched): the states when they come, ``KEPT_LAYERS`` layers' q, k and v,
        every head's entropy row and score range, a thumbnail of every head, and the distances
        when they are kept (``KEEP_SQUARE_BYTES``), or else the trajectories' PCA; never the
        deployment's share."""
        L, H, T, C = trace.layers, trace.heads, trace.n, trace.states.shape[-1]
        k = min(PCA_AXES, C)
        small = self.plan_base.get("small")
        total = (L + 2) * T * C * 4 if small else (1 + k) * C * 4 + (L + 1) * T * k * 4 + k * 4
        total += min(KEPT_LAYERS, L) * (H + 2 * trace.cfg.kv_heads) * T * trace.cfg.d_head * 4
        total += L * H * (T + 1) * 4 + L * H * (16 * 16 + 4)
        square = (L + 1) * T * T * 4
        return total + (square if small and square <= KEEP_SQUARE_BYTES else 0)

    def thumbnails(self, trace: TraceTensors, tv: TokenView, size: int, layers: list[int]) -> dict:
        """Every head's thumbnail of ``layers`` under the token options, reduced on the
        deployment (``capture.thumbs``'s rule: max-pooled, 8-bit, one scale per head)."""
        self.bring(trace, [Want("thumbs", view=tv, size=size)])
        ask = _thumbs_ask(tv, size)
        t = self._thumbs[_thumbs_key(ask)]
        pick = torch.tensor(layers)
        values = t["values"].index_select(0, pick)
        return {"pool": ask["pool"], "size": values.shape[-1], "layers": layers, "values": values,
                "scale": t["scale"].index_select(0, pick)}  # fmt: skip

    # -- the predictions ---------------------------------------------------------------------

    def _predict_ask(self, trace: TraceTensors, kind: str, missing: list[int]) -> dict:
        """The plan's ``predict`` for positions ``missing``: their hidden states through the
        model's final norm and unembedding there, each with the token that comes next."""
        assert trace.readout is not None  # a predictions field refuses a trace without one
        ids = trace.readout.ids
        return {
            "kind": kind, "positions": missing, "k": LIMITS.max_top_k,
            "targets": [ids[p + 1] if p + 1 < len(ids) else -1 for p in missing],
            "vocab": trace.readout.vocab, "softcap": self.plan_base.get("logit_softcap"),
            "tolerance": HEAD_TOLERANCE,  # the bridge's, for the logit scale found there
        }  # fmt: skip

    def _keep_predictions(self, trace: TraceTensors, ask: dict, got: dict) -> None:
        """Keep each position's predictions as ``fields.predictions`` keeps its own."""
        if got["scale"] is None:
            raise TraceError(
                f"fields: {self.model_name}'s logits are not its output embedding of its last "
                "hidden state times one number, so attnviz reads no predictions of it"
            )
        kind, rows = ask["kind"], got["rows"]
        kept: dict[int, dict] = trace.memo(f"{kind}.positions", dict)
        last = max(rows)
        for j, p in enumerate(ask["positions"]):
            if kind == "top_k":
                r = rows[last]
                kept.setdefault(p, {"ids": r["ids"][j], "probs": r["probs"][j],
                                    "target_probs": r["target_probs"][j]})  # fmt: skip
            else:
                stack = [rows[i] for i in sorted(rows)]
                kept.setdefault(p, {
                    "targets": torch.tensor(ask["targets"][j], dtype=torch.int32),
                    **{key: torch.stack([r[key][j, 0] if key in ("ids", "probs") else
                                         r[key][j] for r in stack])
                       for key in ("ids", "probs", "target_probs", "target_ranks")},
                })  # fmt: skip


def _thumbs_ask(tv: TokenView, size: int) -> dict:
    """The plan's ``thumbs``: every head's thumbnail under the token options ``tv``, pooled to
    at most ``size`` a side (``capture.thumbs``'s rule)."""
    m = len(tv.groups)
    pool = 1 if size == 0 or m <= size else -(-m // size)
    return {
        "groups": tv.groups, "hide": tv.hide_special, "merge": tv.merge_words,
        "regroup": not tv.identity, "pool": pool, "side": -(-m // pool),
    }  # fmt: skip


def _thumbs_key(ask: dict) -> tuple:
    """Thumbnails asked alike are kept once."""
    return (tuple(map(tuple, ask["groups"])), ask["hide"], ask["merge"], ask["pool"])


def remote_tensors(
    cfg: Any, ids: Sequence[int], run: Run, base: dict, name: str, d_model: int
) -> TraceTensors:
    """The remote trace of ``ids``: nothing asked yet (the first part asks); the hidden states
    come with the first trace when small, else they stay on the deployment (``lacking``), and
    with them what reads every layer's weights here (the rollout: every layer's q and k would
    come)."""
    T, L = len(ids), cfg.n_layers
    nbytes = (L + 1) * T * d_model * 4
    small = nbytes <= STATES_BYTES
    lacking = {}
    if not small:
        why = (
            f"the hidden states of {name} ({L + 1} x {T:,} x {d_model:,} numbers, "
            f"{nbytes / 2**20:,.0f} MiB) stay on the NDIF deployment (this server takes at most "
            f"{STATES_BYTES / 2**20:.0f} MiB of them)"
        )
        lacking = {n: f"{n}: {why}" for n in ("hidden_states", "embeddings", "distances")}
        lacking["rollout"] = (
            f"rollout: it multiplies every layer's weights here, which for {name} would bring "
            "every layer's queries and keys from the NDIF deployment; ask for one layer's head "
            "mean or head max"
        )
    states = torch.empty((L + 1, T, d_model), device="meta")
    embeddings = torch.empty((T, d_model), device="meta")
    plan_base = {**base, "small": small, "rows": L * cfg.n_heads * T * 4 <= ROWS_BYTES}
    return TraceTensors(
        cfg=cfg, q=None, k=None, v=None, states=states, embeddings=embeddings, positional=None,
        backend=NdifBackend(run, plan_base, name), lacking=lacking,
    )  # fmt: skip
