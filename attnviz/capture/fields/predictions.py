"""What a model predicts (``attnviz.capture.lens``): the next tokens its output gives most
probability at each position, and the logit lens: every hidden state through the final norm and
the unembedding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from pydantic import Field

from attnviz.capture import lens
from attnviz.capture.fields.base import (
    Ask,
    Bounds,
    Members,
    Pick,
    TraceField,
    TraceSource,
    Want,
    index,
    register,
)
from attnviz.errors import TraceError
from attnviz.limits import LIMITS

Predicts = Literal["next", "masked"]


class TopKMeta(Members):
    """top_k: the window of positions and each token id's label."""

    k: int
    predicts: Predicts = Field(description="next: the token after; masked: the token there")
    start: int = Field(description="The first position of the window")
    vocab: dict[str, str] = Field(description="Each token id sent, its label")


class LensMeta(Members):
    """lens: the window of positions, the rows (hidden states) and each token id's label."""

    rows: int = Field(description="Hidden states read: layers + 1")
    predicts: Predicts
    start: int = Field(description="The first position of the window")
    vocab: dict[str, str] = Field(description="Each token id sent, its label")


def _check(ask: Ask, bounds: Bounds) -> None:
    index(ask.pos_start, bounds.tokens, "pos_start", bounds.tokens_are)


def _positions(ask: Ask, tokens: int) -> int:
    """How many positions the window from ``pos_start`` covers."""
    return max(0, min(ask.pos_count or tokens, tokens - ask.pos_start))


def _window(name: str, pick: Pick) -> tuple[int, int]:
    """The positions asked for (start, count); a window whose unembedding is over
    ``LIMITS.max_unembed_flops`` is refused, naming it."""
    t, ask = pick.source, pick.ask
    if t.readout is None:
        raise TraceError(f"fields: {name} needs a model that predicts tokens (this trace has none)")
    index(ask.pos_start, t.n, "pos_start", "tokens")
    start, count = ask.pos_start, _positions(ask, t.n)
    cost = lens.work(t.states, name, count, t.readout.vocab)
    if cost > LIMITS.max_unembed_flops:
        rows = "the output" if name == "top_k" else f"{t.layers + 1} hidden states"
        raise TraceError(
            f"pos_count: {name} of {count:,} positions ({rows} through a vocabulary of "
            f"{t.readout.vocab:,}) is {cost:.1e} operations, over this server's bound of "
            f"{LIMITS.max_unembed_flops:.0e}; ask for fewer positions (pos_start, pos_count)"
        )
    return start, count


def predictions(source: TraceSource, kind: str, start: int, count: int) -> list[dict]:
    """Positions ``start`` .. ``start + count - 1`` through the readout: the output's top
    tokens (``kind`` "top_k") or the logit lens and the target's rank ("lens"), one dict a
    position (``lens.at``). Each position is unembedded once, those not yet kept together
    (a few rows of vocabulary logits at a time), and kept: a window that moves by a token
    computes one more. A remote model's are made where it runs (its vocabulary's logits never
    leave it) and kept the same way."""
    if source.readout is None:
        raise TraceError("fields: this trace's model predicts no tokens")
    source.bring([Want("predict", kind=kind, start=start, count=count)])
    kept: dict[int, dict] = source.memo(f"{kind}.positions", dict)
    want = range(start, start + count)
    missing = [p for p in want if p not in kept]
    if missing:
        rows = lens.at(source.states, source.readout, kind, missing)
        for p, got in zip(missing, rows, strict=True):
            kept[p] = got
    return [kept[p] for p in want]


def _predictions(name: str) -> Callable[[Pick], dict]:
    def compute(pick: Pick) -> dict:
        """From the trace's kept blocks of predictions (``_window``'s positions)."""
        t = pick.source
        start, count = _window(name, pick)
        assert t.readout is not None  # _window refuses a trace without one
        return lens.part(name, predictions(t, name, start, count), t.readout, start, pick.ask.k)

    return compute


def _wants(name: str) -> Callable[[Pick], list[Want]]:
    def wants(pick: Pick) -> list[Want]:
        start, count = _window(name, pick)
        return [Want("predict", kind=name, start=start, count=count)]

    return wants


register(
    TraceField(
        "top_k",
        "{k, start, ids: [m][k], probs: [m][k], target_probs: [m], vocab: {id: label}}: the k "
        "most probable next tokens at each position (m of them from start: pos_start, "
        "pos_count), from the model's output (softmax of its logits), most probable first; "
        "target_probs: the probability of the token that comes next (0 at the last position; an "
        "encoder's head: of the text's own token, 0 at a mask), whose -log is the position's "
        "loss.",
        lambda ask, shape: (2 * ask.k + 1) * _positions(ask, shape.tokens),
        _predictions("top_k"),
        params=("k", "pos_start", "pos_count"),
        check=_check,
        needs="readout",
        words="predictions",
        wants=_wants("top_k"),
        members=TopKMeta,
    ),
    TraceField(
        "lens",
        "{rows, start, ids: [layers+1][m], probs, targets: [m], target_ranks, target_probs, "
        "vocab}: the logit lens (nostalgebraist, 2020): hidden state l (0: the embeddings; the "
        "last: the output) through the final norm and the unembedding; each cell's most "
        "probable token and its probability, and the rank (1: the top) and probability of the "
        "token that comes next (targets[i], -1 and rank 0 at the last position). An encoder "
        "with a masked-language-model head (predicts: masked) predicts the token at each "
        "position instead: targets[i] is the text's own token, -1 at a mask ([MASK], <mask>).",
        lambda ask, shape: (4 * (shape.layers + 1) + 1) * _positions(ask, shape.tokens),
        _predictions("lens"),
        params=("pos_start", "pos_count"),
        check=_check,
        needs="readout",
        words="predictions",
        wants=_wants("lens"),
        members=LensMeta,
    ),
)
