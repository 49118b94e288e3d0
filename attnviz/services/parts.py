"""A part of a computed trace (the arrays a request names, a layer or a head of the per-head
ones), and its two forms on the wire: nested JSON (``attnviz.wire.jsonarrays``), or one compact
binary body (``attnviz.wire.compact``). The thumbnails are ``thumbs.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import torch

from attnviz.capture import ComputedTrace, TraceTensors, lens
from attnviz.capture.attribution import logit_attribution, qk_attribution
from attnviz.capture.vision import TowerLayout, tile_weights
from attnviz.engine import TransformerConfig
from attnviz.engine.placement import gather
from attnviz.errors import TraceError
from attnviz.limits import LIMITS
from attnviz.schemas.trace import TraceQuery
from attnviz.services.thumbs import thumbnails
from attnviz.services.tokenview import TokenView, token_view
from attnviz.wire import compact
from attnviz.wire.constants import (
    AGGREGATE_RULES,
    ATTRIBUTION_FIELDS,
    PER_HEAD_FIELDS,
    PREDICTION_FIELDS,
    VALUE_WEIGHTED_AGGREGATES,
    VALUE_WEIGHTED_RULES,
    VISION_FIELDS,
)
from attnviz.wire.jsonarrays import dumps, pieces

# An array of the response: a tensor, null (no positional table), or an object of tensors and
# numbers (projection, thumbs).
Value = torch.Tensor | dict | None


@dataclass
class Part:
    """What one response carries: the trace's other fields and the arrays asked for."""

    meta: dict
    arrays: dict[str, Value]


def trace_view(trace: ComputedTrace, query: TraceQuery) -> TokenView:
    m = trace.meta
    return token_view(
        m["tokens"],
        special=m.get("special"),
        words=m.get("words"),
        offsets=m.get("offsets"),
        text=m.get("text"),
        hide_special=query.hide_special,
        merge_words=query.merge_words,
    )


def _index(value: int | None, count: int, name: str, what: str) -> list[int]:
    if value is None:
        return list(range(count))
    if value >= count:
        raise TraceError(f"{name}: {value} is out of range ({count} {what}: 0 to {count - 1})")
    return [value]


def _per_head(
    tensors: TraceTensors,
    name: str,
    layers: list[int],
    heads: list[int],
    tv: TokenView | None,
    query: int | None,
    value: bool = False,
) -> torch.Tensor:
    """(L', H', ...) of one per-head array: the layers and heads picked, stacked; attentions,
    scores and value_weighted of one query row when ``query`` is given. ``value``: view shows
    value_weighted (``measure``)."""
    rows = []
    pick = slice(None) if query is None else slice(query, query + 1)
    for layer in layers:
        if name == "attentions":
            rows.append(tensors.pattern(layer, heads)[:, pick])
        elif name == "value_weighted":
            rows.append(tensors.value_weighted(layer, heads)[:, pick])
        elif name == "scores":
            rows.append(tensors.scores(layer, heads)[:, pick])
        elif name == "view" and tv is not None:
            if value:
                x = tv.apply(tensors.value_weighted(layer, heads), renormalise=False)
            else:
                x = tv.apply(tensors.pattern(layer, heads))  # (H', m, m)
            if query is not None:  # the row that shows the query (a special one hidden: refused)
                r = tv.row(query)
                x = x[:, r : r + 1]
            rows.append(x)
        else:
            t = tensors.qkv(layer)[("queries", "keys", "values").index(name)]  # (nh, T, hs)
            rows.append(t if len(heads) == t.shape[0] else t[heads])
    return gather(rows)  # the chosen heads of each layer; several devices meet on the CPU


def check_part(
    query: TraceQuery,
    layers: int,
    heads: int,
    tokens: int,
    unavailable: Mapping[str, str],
    tokens_are: str = "tokens",
) -> None:
    """Before a trace is computed (a job accepted): the refusals ``select`` would give that
    the model's shape tells already, a TraceError naming the parameter. ``tokens``: the most
    the trace can have (the text's and any it writes; with images, a bound: ``select`` checks
    the trace's own count), said as ``tokens_are``; ``unavailable``: the model's own missing
    arrays, with why."""
    names = query.names()
    if any(n not in VISION_FIELDS for n in names):  # a vision tower's layers are its own
        _index(query.layer, layers, "layer", "layers")
        _index(query.head, heads, "head", "heads")
    if query.query is not None:
        _index(query.query, tokens, "query", tokens_are)
    if any(n in ATTRIBUTION_FIELDS for n in names):
        for value, name in ((query.key, "key"), (query.position, "position")):
            if value is not None and value >= tokens:
                raise TraceError(f"{name}: {value} is out of range (0 .. {tokens - 1})")
    if any(n in PREDICTION_FIELDS for n in names):
        _index(query.pos_start, tokens, "pos_start", tokens_are)
    if "thumbs" in names:
        _index(query.thumb_layer, layers, "thumb_layer", "layers")
    for name in names if query.fields is not None else ():
        if name in unavailable:
            raise TraceError(f"fields: {unavailable[name]}")
    if query.measure == "value_weighted" and "value_weighted" in unavailable:
        raise TraceError(f"measure: {unavailable['value_weighted']}")


def select(trace: ComputedTrace, query: TraceQuery, annotate: bool = True) -> Part:
    """The arrays ``query`` names, for its layer and head; a TraceError names a parameter out
    of range. ``annotate``: say in the fields what was picked (the full JSON trace does not)."""
    t = trace.tensors
    names = query.names()
    # ``layer`` and ``head`` of the vision tower are its own: checked by ``_vision``.
    own = any(n not in VISION_FIELDS for n in names)
    layers = _index(query.layer, t.layers, "layer", "layers") if own else []
    heads = _index(query.head, t.heads, "head", "heads") if own else []
    if query.query is not None:
        _index(query.query, t.n, "query", "tokens")
    # Arrays the model cannot give (a bridged model without q and k): a 4xx when asked for by
    # name, null in the whole trace.
    lacking = trace.meta.get("unavailable") or {}
    for name in names if query.fields is not None else ():
        if name in lacking:
            raise TraceError(f"fields: {lacking[name]}")
    value = query.measure == "value_weighted"
    if value and "value_weighted" in lacking:
        raise TraceError(f"measure: {lacking['value_weighted']}")
    wants_value = value and any(n in ("view", "thumbs", *AGGREGATE_RULES) for n in names)
    if (wants_value or any(n in VALUE_WEIGHTED_RULES for n in names)) and not t.has_value_weighted:
        what = "measure" if wants_value else "fields"
        raise TraceError(f"{what}: this trace has no values or output projection to weigh")
    options = query.hide_special or query.merge_words
    # The rows and columns under the token options: only what view and thumbs draw needs them.
    # the fields drawn under the token options
    shown = ("view", "thumbs", *AGGREGATE_RULES, "value_weighted_sum")
    tv = trace_view(trace, query) if options or any(n in shown for n in names) else None
    if tv is not None and query.query is not None and "view" in names:
        try:
            tv.row(query.query)
        except ValueError as exc:
            raise TraceError(f"query: {exc}; view shows no row for it") from exc
    arrays: dict[str, Value] = {}
    for name in names:
        if name in lacking:
            arrays[name] = None
        elif name in PER_HEAD_FIELDS:
            arrays[name] = _per_head(t, name, layers, heads, tv, query.query, value)
        elif name == "embeddings":
            arrays[name] = t.token_vectors()
        elif name == "positional":
            arrays[name] = t.positional
        elif name == "hidden_states":
            arrays[name] = t.hidden_states()
        elif name == "distances":
            arrays[name] = t.distances()
        elif name == "entropy":
            arrays[name] = t.entropy()
        elif name == "entropy_mean":
            arrays[name] = t.entropy_mean()
        elif name == "projection":
            arrays[name] = _projection(t, tv)
        elif name == "thumbs" and tv is not None:
            thumb_layers = _index(query.thumb_layer, t.layers, "thumb_layer", "layers")
            arrays[name] = thumbnails(t, tv, query.thumb, thumb_layers, value)
        elif name == "score_range":
            arrays[name] = t.score_range()
        elif name in PREDICTION_FIELDS:
            arrays[name] = _predictions(t, name, query)
        elif name in ATTRIBUTION_FIELDS:
            arrays[name] = _attribution(t, name, query)
        elif name in AGGREGATE_RULES and tv is not None:
            if name == "rollout":
                _check_rollout(t, max(layers) + 1)
                if value:
                    _check_value_sum(t, max(layers) + 1)
            rows = [_aggregate(t, name, layer, tv, value) for layer in layers]
            arrays[name] = gather(rows)
        elif name in VISION_FIELDS:
            arrays[name] = _vision(t, query)
        elif name == "value_weighted_sum" and tv is not None:
            _check_value_sum(t, len(layers))
            sums = [tv.apply(t.value_weighted_sum(layer), renormalise=False) for layer in layers]
            arrays[name] = gather(sums)
    meta = dict(trace.meta)
    if annotate:
        meta["fields"] = names
        meta["layer"], meta["head"], meta["query"] = query.layer, query.head, query.query
        if tv is not None:
            meta["token_view"] = tv.meta()
        rules = {n: AGGREGATE_RULES[n] for n in names if n in AGGREGATE_RULES}
        if value:
            rules = {n: VALUE_WEIGHTED_AGGREGATES[n] for n in rules}
        rules |= {n: VALUE_WEIGHTED_RULES[n] for n in names if n in VALUE_WEIGHTED_RULES}
        if value and any(n in ("view", "thumbs") for n in names):
            rules["value_weighted"] = VALUE_WEIGHTED_RULES["value_weighted"]
        if rules:
            meta["rules"] = rules
        meta["measure"] = query.measure
    return Part(meta, arrays)


def _tower(t: TraceTensors) -> TowerLayout:
    """The trace's vision tower's layout, or a TraceError saying why it has none."""
    if t.vision is None:
        raise TraceError(
            "fields: vision: this trace has no images, so no vision tower ran (a text with "
            "images, on a model that reads them, has one)"
        )
    if not isinstance(t.tower, TowerLayout):
        raise TraceError(
            "fields: vision: the vision tower's weights could not be put on the images' tiles "
            f"({t.tower or 'no layout'})"
        )
    return t.tower


def _vision(t: TraceTensors, query: TraceQuery) -> torch.Tensor:
    """(Lv', Hv', P, P): the vision tower's weights over tile ``query.tile`` of image
    ``query.image``, of the tower's ``layer`` and ``head`` (all by default)."""
    tower = _tower(t)
    assert t.vision is not None
    index = tower.index(query.image, query.tile)
    layers = _index(query.layer, len(t.vision), "layer", "layers of the vision tower")
    heads = _index(query.head, int(t.vision[0][0].shape[1]), "head", "heads of the vision tower")
    return torch.stack([tile_weights(t.vision[i], tower, index, i)[heads] for i in layers])


def _positions(t: TraceTensors, query: TraceQuery) -> tuple[int, int]:
    """The positions ``top_k`` and ``lens`` cover: (start, count)."""
    _index(query.pos_start, t.n, "pos_start", "tokens")
    return query.pos_start, min(query.pos_count or t.n, t.n - query.pos_start)


def _predictions(t: TraceTensors, name: str, query: TraceQuery) -> dict:
    """``top_k`` or ``lens`` (``attnviz.capture.lens``), from the trace's kept blocks of
    predictions; a window whose unembedding is over ``LIMITS.max_unembed_flops`` is refused,
    naming it."""
    if t.readout is None:
        raise TraceError(f"fields: {name} needs a model that predicts tokens (this trace has none)")
    start, count = _positions(t, query)
    cost = lens.work(t.states, name, count, t.readout.vocab)
    if cost > LIMITS.max_unembed_flops:
        rows = "the output" if name == "top_k" else f"{t.layers + 1} hidden states"
        raise TraceError(
            f"pos_count: {name} of {count:,} positions ({rows} through a vocabulary of "
            f"{t.readout.vocab:,}) is {cost:.1e} operations, over this server's bound of "
            f"{LIMITS.max_unembed_flops:.0e}; ask for fewer positions (pos_start, pos_count)"
        )
    return lens.part(name, t.predictions(name, start, count), t.readout, start, query.k)


def _attribution(t: TraceTensors, name: str, query: TraceQuery) -> dict:
    """``qk_attribution`` or ``logit_attribution`` (``attnviz.capture.attribution``) as the
    wire sends them (``ATTRIBUTION_FIELDS``)."""
    if name == "qk_attribution":
        missing = [p for p in ("layer", "head", "query", "key") if getattr(query, p) is None]
        if missing:
            raise TraceError(f"{missing[0]}: qk_attribution needs layer, head, query and key")
        assert query.layer is not None and query.head is not None
        assert query.query is not None and query.key is not None
        a = qk_attribution(t.clean_run(), query.layer, query.head, query.query, query.key,
                           query.top)  # fmt: skip
        return {
            "layer": a.layer, "head": a.head, "query": a.query, "key": a.key,
            "components": [c.as_dict() for c in a.components], "matrix": a.matrix,
            "score": a.score, "keys": torch.tensor(a.keys, dtype=torch.int32),
            "key_scores": a.key_scores, "by_key": a.by_key, "by_query": a.by_query,
        }  # fmt: skip
    position = t.n - 1 if query.position is None else query.position
    d = logit_attribution(t.clean_run(), position, query.token, query.versus)
    return {"position": d.position, "token": d.token, "versus": d.versus,
            "components": [c.as_dict() for c in d.components], "values": d.values,
            "logit": d.logit}  # fmt: skip


def _check_rollout(t: TraceTensors, layers: int) -> None:
    work = 2 * t.n**3 * layers
    if work > LIMITS.max_rollout_flops:
        raise TraceError(
            f"fields: rollout through {layers} layers of {t.n:,} tokens is {work:.1e} "
            f"operations, over this server's bound of {LIMITS.max_rollout_flops:.0e}; a shorter "
            "text, an earlier layer, or the mean of the heads"
        )


def _check_value_sum(t: TraceTensors, layers: int) -> None:
    work = 2 * t.heads**2 * t.n**2 * layers
    if work > LIMITS.max_rollout_flops:
        raise TraceError(
            f"fields: the value-weighted sum over heads through {layers} layers of {t.n:,} tokens "
            f"is {work:.1e} operations, over this server's bound of "
            f"{LIMITS.max_rollout_flops:.0e}; a shorter text or one layer"
        )


def _aggregate(
    t: TraceTensors, name: str, layer: int, tv: TokenView, value: bool = False
) -> torch.Tensor:
    """(m, m) float64: one layer's head aggregate under the token options, of the weights or
    (``value``) of the value-weighted norms."""
    if name == "rollout":
        rollout = t.value_rollout() if value else t.rollout()
        return tv.apply(rollout[layer]).double()
    each = t.value_weighted(layer) if value else t.pattern(layer)
    heads = tv.apply(each, renormalise=not value).double()  # (H, m, m), each head as shown
    return heads.mean(0) if name == "head_mean" else heads.amax(0)


def _projection(t: TraceTensors, tv: TokenView | None) -> dict | None:
    """The PCA of every layer's hidden states (fitted on every token); under the token options
    coords are the rows' points: the special tokens left out, a word the mean of its pieces."""
    if t.states.shape[-1] == 3:  # the page draws the three named axes themselves
        return None
    pca = t.projection()
    return {
        "components": pca.axes.shape[0],
        "mean": pca.mean,
        "axes": pca.axes,
        "explained_variance_ratio": pca.explained_variance_ratio,
        "coords": pca.coords if tv is None else tv.mean_points(pca.coords),
    }


# ---- JSON -------------------------------------------------------------------------------------


def json_body(part: Part) -> dict:
    """The part as one JSON object: the fields, then every array (tensors, which ``dumps``
    writes as nested arrays of their numbers)."""
    return {**part.meta, **part.arrays}


def json_pieces(part: Part) -> Iterator[bytes]:
    """``json_body(part)`` as compact UTF-8 JSON, in pieces: orjson writes each tensor's numbers
    from its memory (``attnviz.wire.jsonarrays``), a large array a row at a time
    (``jsonarrays.pieces``), each piece made as it is asked for. So only one piece's text need
    be alive at once (the server compresses each as it comes: a 128-token trace's largest
    array, 1.2M weights, is 15 MB of text, in pieces of 0.2 MB, a head each), and between two
    pieces another thread (the event loop) gets its turn, never waiting for a whole trace's
    numbers."""
    sep = b"{"
    for key, value in json_body(part).items():
        yield sep + dumps(key) + b":"
        yield from pieces(value)
        sep = b","
    yield b"}" if sep == b"," else b"{}"


def json_bytes(part: Part) -> bytes:
    """``json_body(part)`` as compact UTF-8 JSON: the pieces of ``json_pieces``, joined."""
    return b"".join(json_pieces(part))


# ---- Compact ----------------------------------------------------------------------------------


def compact_body(part: Part) -> bytes:
    """The part as a safetensors file (``attnviz.wire.compact``): the header's
    ``__metadata__["attnviz"]`` is the JSON of the other fields, the tensors keep their dtype."""
    return compact.encode(part.meta, part.arrays)


def json_numbers(trace: ComputedTrace, query: TraceQuery) -> int:
    """How many numbers ``select(trace, query)`` would hold, from the shapes alone (so that a
    JSON body over the cap is refused before anything is stacked)."""
    t = trace.tensors
    options = query.hide_special or query.merge_words
    lacking = trace.meta.get("unavailable") or {}
    return _numbers(
        query,
        (t.layers, t.heads, t.n, t.states.shape[-1], t.cfg.d_head),
        len(trace_view(trace, query).groups) if options else t.n,  # rows under the options
        t.positional is not None,
        _vision_numbers(t, query),
        lacking,
    )


def shape_numbers(query: TraceQuery, cfg: TransformerConfig, tokens: int) -> int:
    """How many numbers the part ``query`` names would hold for a trace of ``tokens`` on a model
    of ``cfg``, before it is computed (at most: every token a row under the token options, a
    positional table, every array the model could lack counted; an image's arrays not)."""
    shape = (cfg.n_layers, cfg.n_heads, tokens, cfg.d_model, cfg.d_head)
    return _numbers(query, shape, tokens, True, 0, {})


def _numbers(
    query: TraceQuery,
    shape: tuple[int, int, int, int, int],
    m: int,
    positional: bool,
    vision: int,
    lacking: Mapping[str, str],
) -> int:
    """``json_numbers``'s count from the shapes: ``shape`` (layers, heads, tokens, the residual
    stream's width, a head's), ``m`` rows under the token options."""
    L, H, T, C, hs = shape
    Ls = 1 if query.layer is not None else L
    Hs = 1 if query.head is not None else H
    Qs = 1 if query.query is not None else T
    thumb_layers = 1 if query.thumb_layer is not None else L
    P = max(0, min(query.pos_count or T, T - query.pos_start))  # top_k's and lens's positions
    # The attributions' components: token vectors, positions and type; each head, b_O and MLP;
    # the biases (at most); qk_attribution's ``top`` of them and the rest.
    parts = 3 + L * (H + 2) + 1
    N = parts if query.top is None else min(parts, query.top + 1)
    size = {
        "attentions": Ls * Hs * Qs * T,
        "scores": Ls * Hs * Qs * T,
        "queries": Ls * Hs * T * hs,
        "keys": Ls * Hs * T * hs,
        "values": Ls * Hs * T * hs,
        "view": Ls * Hs * (1 if query.query is not None else m) * m,
        "value_weighted": Ls * Hs * Qs * T,
        "value_weighted_sum": Ls * m * m,
        **{name: Ls * m * m for name in AGGREGATE_RULES},
        "embeddings": T * C,
        "positional": T * C if positional else 0,
        "hidden_states": (L + 1) * T * C,
        "distances": (L + 1) * T * T,
        "entropy": L * H * T,
        "entropy_mean": L * H,
        "projection": 0 if C == 3 else (L + 1) * m * 3 + 4 * C + 3,
        "score_range": L * H,
        "thumbs": thumb_layers * H * (min(m, query.thumb or m) ** 2 + 1),
        "top_k": 2 * P * query.k + P,
        "lens": 4 * (L + 1) * P + P,
        "qk_attribution": N * N + 2 * T * N + 2 * T,  # the matrix, the key view, its keys
        "logit_attribution": parts,
        "vision": vision,
    }
    return sum(size[name] for name in query.names() if name not in lacking)


def _vision_numbers(t: TraceTensors, query: TraceQuery) -> int:
    """How many numbers ``vision`` would hold (0 when it is refused)."""
    if t.vision is None or not isinstance(t.tower, TowerLayout):
        return 0
    P = max(tile.patches for tile in t.tower.tiles)
    Lv = len(t.vision) if query.layer is None else 1
    Hv = int(t.vision[0][0].shape[1]) if query.head is None else 1
    return Lv * Hv * P * P
