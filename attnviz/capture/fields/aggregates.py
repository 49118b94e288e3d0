"""A layer's heads taken together, [layers][m][m] under the token options (``layer`` picks
one): their mean, each cell's largest weight, and attention rollout through the layers up to
it; of the weights, or of the value-weighted norms (``measure``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from attnviz.capture.fields.base import (
    Ask,
    Pick,
    Shape,
    TraceField,
    TraceSource,
    Want,
    layer_wants,
    register,
)
from attnviz.capture.tokenview import TokenView
from attnviz.capture.value_norms import value_weighted, value_weighted_sum
from attnviz.engine.placement import gather
from attnviz.errors import TraceError
from attnviz.limits import LIMITS


def check_rollout(source: TraceSource, layers: int) -> None:
    work = 2 * source.n**3 * layers
    if work > LIMITS.max_rollout_flops:
        raise TraceError(
            f"fields: rollout through {layers} layers of {source.n:,} tokens is {work:.1e} "
            f"operations, over this server's bound of {LIMITS.max_rollout_flops:.0e}; a shorter "
            "text, an earlier layer, or the mean of the heads"
        )


def check_value_sum(source: TraceSource, layers: int) -> None:
    work = 2 * source.heads**2 * source.n**2 * layers
    if work > LIMITS.max_rollout_flops:
        raise TraceError(
            f"fields: the value-weighted sum over heads through {layers} layers of "
            f"{source.n:,} tokens is {work:.1e} operations, over this server's bound of "
            f"{LIMITS.max_rollout_flops:.0e}; a shorter text or one layer"
        )


def _heads(source: TraceSource, layer: int, tv: TokenView, value: bool) -> torch.Tensor:
    """(H, m, m) float64: each head of ``layer`` as it is shown."""
    each = value_weighted(source, layer) if value else source.pattern(layer)
    return tv.apply(each, renormalise=not value).double()


def _over_heads(name: str, reduce: str) -> TraceField:
    def compute(pick: Pick) -> torch.Tensor:
        assert pick.view is not None  # a drawn field's pick has one
        tv, value = pick.view, pick.value
        rows = [getattr(_heads(pick.source, i, tv, value), reduce)(0) for i in pick.layers]
        return gather(rows)  # (L', m, m)

    return _aggregate(name, compute, RULES[name], VALUE_RULES[name], layer_wants)


def _rollout(pick: Pick) -> torch.Tensor:
    source, tv = pick.source, pick.view
    assert tv is not None  # a drawn field's pick has one
    check_rollout(source, max(pick.layers) + 1)
    if pick.value:
        check_value_sum(source, max(pick.layers) + 1)
    through = value_rollout(source) if pick.value else rollout(source)
    return gather([tv.apply(through[layer]).double() for layer in pick.layers])


def _through(
    source: TraceSource, name: str, layer: Callable[[int], torch.Tensor]
) -> list[torch.Tensor]:
    """L x (T, T) float64: R_l = Â_l R_(l-1) with Â = (``layer(l)`` + I) / 2 (just
    ``layer(l)`` in a model without a residual), kept with the trace as ``name`` (up to
    ``KEEP_SQUARE_BYTES``). Refused where the states stay with a remote model (``lacking``):
    every layer's q and k would come here."""
    source.refuse("rollout")

    def compute() -> list[torch.Tensor]:
        out: list[torch.Tensor] = []
        eye = torch.eye(source.n, dtype=torch.float64, device=source.states.device)
        for i in range(source.layers):
            a = layer(i).to(eye.device)  # a placed model's layer meets the product here
            if source.cfg.residual:
                a = (a + eye) / 2
            out.append(a if not out else a @ out[-1])
        return out

    return source.memo_square(name, source.layers * source.n * source.n * 8, compute)


def rollout(source: TraceSource) -> list[torch.Tensor]:
    """L x (T, T) float64: attention rollout up to each layer, over every token:
    R_l = Â_l R_(l-1), Â = (mean over heads + I) / 2 with a residual."""

    def mean(layer: int) -> torch.Tensor:
        a = sum(p.double().sum(0) for _, p in source.head_chunks(layer)) / source.heads
        assert isinstance(a, torch.Tensor)  # (T, T) the mean over heads
        return a

    return _through(source, "rollout", mean)


def value_rollout(source: TraceSource) -> list[torch.Tensor]:
    """L x (T, T) float64: rollout over the value-weighted norms of the layer (Kobayashi et
    al.'s ||sum_h a v W_O||, each row scaled to sum to 1), with the residual as ``rollout``:
    R_l = ((N_l + I) / 2) R_(l-1)."""

    def norms(layer: int) -> torch.Tensor:
        a = value_weighted_sum(source, layer).to(source.states.device)
        total = a.sum(-1, keepdim=True)
        return torch.where(total > 0, a / total.clamp_min(torch.finfo(a.dtype).tiny), a)

    return _through(source, "value_rollout", norms)


def numbers(ask: Ask, shape: Shape) -> int:
    """[layers][m][m]: ``layer`` picks one."""
    return (1 if ask.layer is not None else shape.layers) * shape.rows**2


def _aggregate(
    name: str,
    compute: Callable[[Pick], torch.Tensor],
    rule: str,
    value_rule: str,
    wants: Callable[[Pick], Sequence[Want]] | None = None,
) -> TraceField:
    """``wants``: none beyond the first trace by default (the rollout reads every layer, one
    at a time)."""
    return TraceField(
        name,
        f"[layers][m][m] under the token options: {rule}",
        numbers,
        compute,
        params=("layer", "hide_special", "merge_words", "measure"),
        drawn=True,
        measured=True,
        over_heads=True,
        rule=rule,
        value_rule=value_rule,
        wants=wants or (lambda pick: []),
    )


RULES = {
    "head_mean": "The mean of the layer's heads (as each is shown): rows still sum to 1.",
    "head_max": "Each cell's largest weight over the layer's heads: rows no longer sum to 1; it "
    "shows where any head looks.",
    "rollout": "Attention rollout (Abnar and Zuidema, 2020): each layer's mean over heads, "
    "A = mean_h(A_h), with the residual stream added, Â = (A + I) / 2 (just A in a model "
    "without a residual), multiplied through the layers, R_l = Â_l ⋯ Â_1: how much of each "
    "token's input reaches each row by this layer, if attention alone moved it.",
}
VALUE_RULES = {
    "head_mean": "The mean of the layer's heads' value-weighted norms ||a_ij v_j W_O^h||.",
    "head_max": "Each cell's largest value-weighted norm over the layer's heads: where any head "
    "moves the most.",
    "rollout": "Rollout over value-weighted attention: each layer's ||Σ_h a^h_ij v^h_j W_O^h||, "
    "each row scaled to sum to 1, N, with the residual stream added, (N + I) / 2 (just N "
    "without a residual), multiplied through the layers.",
}

register(
    _over_heads("head_mean", "mean"),
    _over_heads("head_max", "amax"),
    _aggregate("rollout", _rollout, RULES["rollout"], VALUE_RULES["rollout"]),
)
