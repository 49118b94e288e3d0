"""The heads the page points a reader to ("look at layer 4, head 2"): measured on the model,
never written by hand.

A head singles out a key for a query when the query's weight on the key stands out from what
the key gets from the other tokens (the mean of the key's column, the query left out). A head in
which every token looks at the key (a column: a "sink", or a word everyone reads) puts weight
there from the query too, and says nothing about the query; ranking heads by the query's weight
alone points at such a head. Each pointer's note says what its head does, with its numbers,
and when no head singles the key out, it says so."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

import torch

from attnviz.errors import TraceError
from attnviz.numbers import readable_share, readable_weight
from attnviz.presets import SHOWCASE
from attnviz.pretrained.folder import REMOTE_BACKENDS
from attnviz.pretrained.registry import ModelRegistry
from attnviz.schemas.models import ExampleHead
from attnviz.schemas.trace import TextTraceRequest
from attnviz.services.text_trace import EXAMPLES, find_model, run_text_trace

# The least margin of the query's weight over the key's column mean for a head to be named as
# singling the key out (a share of the query's attention).
SINGLES_OUT = 0.25

# A head that gives the previous token at least this much on average is a previous-token head.
PREVIOUS_TOKEN = 0.5

# What the page points at in its example texts: (text, query, key).
POINTED: tuple[tuple[str, str, str], ...] = (
    (EXAMPLES[0], "bank", "river"),
    (EXAMPLES[1], "bank", "investment"),
    (SHOWCASE, "it", "animal"),
)


class NoSuchToken(ValueError):
    """A query or key word that is not exactly one of the text's tokens; the message starts with
    the field."""


@dataclass(frozen=True)
class Margin:
    """One head: the query's weight on the key, the key's column mean over the other queries,
    and the difference (how much the head singles the key out for the query)."""

    layer: int
    head: int
    weight: float
    column: float

    @property
    def margin(self) -> float:
        return self.weight - self.column


def margins(pattern: list[torch.Tensor], query: int, key: int) -> list[Margin]:
    """Every head's margin, largest first. ``pattern``: L x (nh, T, T) weights (rows queries)."""
    out = []
    for layer, p in enumerate(pattern):
        col = p[:, :, key]  # (nh, T): what each query gives the key, per head
        others = torch.cat([col[:, :query], col[:, query + 1 :]], dim=1)  # (nh, T - 1)
        for head in range(p.shape[0]):
            out.append(Margin(layer, head, float(col[head, query]), float(others[head].mean())))
    return sorted(out, key=lambda m: m.margin, reverse=True)


def _bare(token: str) -> str:
    """A token as a word: without a word piece's marks, lower case."""
    for mark in ("##", "Ġ", "▁"):
        token = token.removeprefix(mark)
    return token.strip().lower()


def _index(tokens: list[str], word: str, field: str) -> int:
    found = [i for i, t in enumerate(tokens) if _bare(t) == word.lower()]
    if len(found) != 1:
        said = "is not one of" if not found else f"is {len(found)} of"
        raise NoSuchToken(f"{field}: {word!r} {said} the text's tokens; it must be exactly one")
    return found[0]


def previous_token(pattern: torch.Tensor) -> float:
    """One head's mean weight from each token on the one before it. (T, T) -> float"""
    return float(pattern.diagonal(offset=-1).mean()) if pattern.shape[0] > 1 else 0.0


def note(
    model: str, query: str, key: str, ranked: list[Margin], previous: float | None = None
) -> str:
    """What the page says about the pointer: the head that singles the key out and what it
    does (``previous``: its previous-token weight, when the key is just before the query), or
    that none does; and a head that gives the key more only as a column."""
    best = ranked[0]
    heads = len(ranked)
    q, k = f'"{query}"', f'"{key}"'
    where = f"layer {best.layer + 1}, head {best.head + 1}"
    if best.margin < SINGLES_OUT:
        return (
            f"No head of {model} singles out {k} for {q} here. The closest, {where}, gives it "
            f"{readable_share(best.weight)} of {q}'s attention, and "
            f"{readable_share(best.column)} of each other token's on average."
        )
    said = (
        f"Look at {where}: there {q} gives {readable_share(best.weight)} of its attention to {k}, "
        f"while the other tokens give {k} {readable_weight(best.column)} on average. Of {model}'s "
        f"{heads} heads, this one singles out {k} for {q} the most. Read the row of {q}."
    )
    if previous is not None and previous >= PREVIOUS_TOKEN:
        said += (
            " It is a previous-token head: each token gives the one before it "
            f"{readable_share(previous)} of its attention on average, and {k} is just before {q}. "
            "It links them by position, whatever the words."
        )
    most = max(ranked, key=lambda m: m.weight)
    if most != best and most.weight > best.weight:
        said += (
            f" (Layer {most.layer + 1}, head {most.head + 1} gives {k} more, "
            f"{readable_weight(most.weight)}, but it gives {k} {readable_weight(most.column)} from "
            f"every token on average: a column, not a link from {q}.)"
        )
    return said


def point(registry: ModelRegistry, model: str, text: str, query: str, key: str) -> ExampleHead:
    """The pointer for ``query`` -> ``key`` in ``text`` on ``model``, measured now."""
    trace = run_text_trace(TextTraceRequest(model=model, text=text), registry, None)
    tokens: list[str] = trace.meta["tokens"]
    i, j = _index(tokens, query, "query"), _index(tokens, key, "key")
    t = trace.tensors
    pattern = [t.pattern(layer) for layer in range(t.layers)]  # L x (nh, T, T)
    ranked = margins(pattern, i, j)
    best = ranked[0]
    previous = previous_token(pattern[best.layer][best.head]) if j == i - 1 else None
    return ExampleHead(
        model=model,
        text=text,
        query=query,
        key=key,
        layer=best.layer,
        head=best.head,
        weight=round(best.weight, 2),
        column=round(best.column, 2),
        singles_out=best.margin >= SINGLES_OUT,
        note=note(find_model(registry, model).name, query, key, ranked, previous),
    )


# Each registry's pointers, measured once (by model, text, query and key).
_kept: weakref.WeakKeyDictionary[ModelRegistry, dict[tuple[str, ...], ExampleHead | None]] = (
    weakref.WeakKeyDictionary()
)


def example_heads(registry: ModelRegistry) -> list[ExampleHead]:
    """The pointers of the example texts on the server's default model, each measured once: a
    local model's (a remote deployment's would cost a round trip per page); none for an example
    whose words are not one token each in the model's vocabulary (or that it cannot read), and
    none on a trained run's model (the examples are English; a run reads its task's letters)."""
    model = registry.get(registry.default) if registry.default else None
    if model is None or model.run is not None or model.backend in REMOTE_BACKENDS:
        return []
    kept = _kept.setdefault(registry, {})
    for text, query, key in POINTED:
        if (model.name, text, query, key) not in kept:
            try:
                got: ExampleHead | None = point(registry, model.name, text, query, key)
            except (NoSuchToken, TraceError):
                got = None
            kept[(model.name, text, query, key)] = got
    return [h for p in POINTED if (h := kept[(model.name, *p)]) is not None]
