"""What a model predicts (``attnviz.capture.lens``): the next tokens its output gives most
probability at each position, and the logit lens: every hidden state through the final norm and
the unembedding."""

from __future__ import annotations

from collections.abc import Callable

from attnviz.capture import lens
from attnviz.capture.fields.base import Ask, Bounds, Pick, TraceField, Want, index, register
from attnviz.errors import TraceError
from attnviz.limits import LIMITS


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


def _predictions(name: str) -> Callable[[Pick], dict]:
    def compute(pick: Pick) -> dict:
        """From the trace's kept blocks of predictions (``_window``'s positions)."""
        t = pick.source
        start, count = _window(name, pick)
        assert t.readout is not None  # _window refuses a trace without one
        return lens.part(name, t.predictions(name, start, count), t.readout, start, pick.ask.k)

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
    ),
)
