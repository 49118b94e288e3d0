"""Exact attributions of the clean run (``attnviz.capture.attribution``), every norm's scale
frozen: a head's score split by the query's and the key's components, and a logit by each
component's direct contribution."""

from __future__ import annotations

from collections.abc import Callable

import torch
from pydantic import Field

from attnviz.capture.attribution import logit_attribution, qk_attribution
from attnviz.capture.fields.base import Ask, Bounds, Members, Pick, Shape, TraceField, register
from attnviz.errors import TraceError


class Component(Members):
    """One part of the residual stream an attribution splits by."""

    name: str = Field(
        description="embed, pos, type, L{l}.H{h}, L{l}.attn_bias, L{l}.mlp, bias, or rest (the "
        "smaller ones summed)"
    )
    kind: str
    layer: int | None
    head: int | None


class QkAttributionMeta(Members):
    """qk_attribution: the score split, and its components."""

    layer: int
    head: int
    query: int
    key: int
    components: list[Component]
    score: float = Field(description="The score the matrix sums to")


class LogitAttributionMeta(Members):
    """logit_attribution: the logit split, and its components."""

    position: int
    token: int
    versus: int | None
    components: list[Component]
    logit: float = Field(description="The logit (or the difference) the values sum to")


def _within(name: str) -> Callable[[Ask, Bounds], None]:
    def check(ask: Ask, bounds: Bounds) -> None:
        value = getattr(ask, name)
        if value is not None and value >= bounds.tokens:
            raise TraceError(f"{name}: {value} is out of range (0 .. {bounds.tokens - 1})")

    return check


def components(shape: Shape) -> int:
    """The components a residual stream is split into: token vectors, positions and type; each
    head, b_O and MLP of each layer; the biases (at most)."""
    return 3 + shape.layers * (shape.heads + 2) + 1


def _qk_numbers(ask: Ask, shape: Shape) -> int:
    parts = components(shape)
    kept = parts if ask.top is None else min(parts, ask.top + 1)  # the top, and the rest
    return kept * kept + 2 * shape.tokens * kept + 2 * shape.tokens  # the matrix, the keys


def _qk(pick: Pick) -> dict:
    ask = pick.ask
    missing = [p for p in ("layer", "head", "query", "key") if getattr(ask, p) is None]
    if missing:
        raise TraceError(f"{missing[0]}: qk_attribution needs layer, head, query and key")
    assert ask.layer is not None and ask.head is not None
    assert ask.query is not None and ask.key is not None
    a = qk_attribution(pick.source.clean_run(), ask.layer, ask.head, ask.query, ask.key, ask.top)
    return {
        "layer": a.layer, "head": a.head, "query": a.query, "key": a.key,
        "components": [c.as_dict() for c in a.components], "matrix": a.matrix,
        "score": a.score, "keys": torch.tensor(a.keys, dtype=torch.int32),
        "key_scores": a.key_scores, "by_key": a.by_key, "by_query": a.by_query,
    }  # fmt: skip


def _logit(pick: Pick) -> dict:
    ask, t = pick.ask, pick.source
    position = t.n - 1 if ask.position is None else ask.position
    d = logit_attribution(t.clean_run(), position, ask.token, ask.versus)
    return {"position": d.position, "token": d.token, "versus": d.versus,
            "components": [c.as_dict() for c in d.components], "values": d.values,
            "logit": d.logit}  # fmt: skip


register(
    TraceField(
        "qk_attribution",
        "{layer, head, query, key, components: [{name, kind, layer, head}], matrix: [q][k], "
        "score, keys: [K], key_scores: [K], by_key: [K][components], by_query: "
        "[K][components]}: head's score of key at query split by the query side's components "
        "(rows) and the key side's (columns): the token vectors (embed), the position table "
        "(pos), the token type (type), each earlier head (L{l}.H{h}), b_O (L{l}.attn_bias) and "
        "MLP (L{l}.mlp), and the norms' and projections' biases (bias); the matrix sums to the "
        "trace's score before any soft-cap. keys: the keys the query sees, each score split by "
        "the key's components (by_key) and by the query's (by_query). top keeps that many "
        "components, the rest summed as rest.",
        _qk_numbers,
        _qk,
        params=("layer", "head", "query", "key", "top"),
        check=_within("key"),
        needs="clean run",
        words="score breakdown",
        members=QkAttributionMeta,
    ),
    TraceField(
        "logit_attribution",
        "{position, token, versus, components, values: [components], logit}: each component's "
        "direct contribution to token's logit at position (default: the top prediction), minus "
        "versus's when given, through the final norm (its scale frozen) and the unembedding; "
        "values sum to logit, before any final soft-cap.",
        lambda ask, shape: components(shape),
        _logit,
        params=("position", "token", "versus"),
        check=_within("position"),
        needs="clean run",
        words="logit split",
        members=LogitAttributionMeta,
    ),
)
