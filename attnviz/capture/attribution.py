"""Exact attributions of one clean run (``decompose.py``): why a head scores a key as it does
(``qk_attribution``) and what each part of the model adds directly to a logit
(``logit_attribution``, direct logit attribution).

Every norm's scale is frozen from the clean run, so each one is affine per token and the stream
is a sum of components; the projections, the q/k norms (frozen too) and the rotations (RoPE of
every kind, partial rotary: linear, so applied to each component) carry that sum to each
component's own query and key. A score is then the bilinear sum over (query component a, key
component b) of scale * q_a . k_b, which adds up to the trace's score exactly (before any
soft-cap); a logit is the sum over components of their final-normed vector times the token's
column of the unembedding, which adds up to the logit (before any soft-cap).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.capture.decompose import CleanRun, Component, Stream, affine, stream_at, through
from attnviz.engine.layout import positions_of, spans_of
from attnviz.engine.model import Block, LayerNorm, hidden_keys
from attnviz.errors import TraceError

REST = Component("rest", "rest")


def _side(run: CleanRun, stream: Stream, layer: int, head: int, side: str, biased: bool):
    """(N, T, hs) each component's query (``side`` "q") or key ("k") of ``head`` at layer
    ``layer``, as the scores meet them: projected, q/k-normed (frozen) and rotated."""
    cfg = run.model.cfg
    block = run.model.blocks[layer]
    assert isinstance(block, Block)
    attn, hs = block.attn, cfg.d_head
    at = head if side == "q" else cfg.kv_head_of(head)
    cols = slice(at * hs, (at + 1) * hs)
    name = "W_Q" if side == "q" else "W_K"
    w = run.weight(f"{layer}.{name}", getattr(attn, name))[:, cols]  # (C, hs)
    b_full = attn.b_Q if side == "q" else attn.b_K
    b = b_full[cols].to(w.device, w.dtype) if b_full is not None else None
    if biased and b is None:
        b = torch.zeros(hs, dtype=w.dtype, device=w.device)
    out = stream.project(w, b)  # (N, T, hs)
    norm = getattr(attn, f"{side}_norm", None)
    if norm is not None:
        assert isinstance(norm, LayerNorm)
    if norm is not None and cfg.qk_norm == "proj":  # over the projection: the head's slice
        _, nw, _ = affine(norm, w.dtype, w.device)
        s = run.scales[f"blocks.{layer}.attn.{side}_norm"]  # (T,)
        out = out * s[None, :, None] * (nw[cols] if nw is not None else 1)
    elif norm is not None and cfg.qk_norm == "head":  # per head, after the key heads are repeated
        _, nw, _ = affine(norm, w.dtype, w.device)
        s = run.scales[f"blocks.{layer}.attn.{side}_norm"][head]  # (nh, T) -> (T,)
        out = out * s[None, :, None] * (nw if nw is not None else 1)
    if attn.rotary:
        positions = positions_of(run.layout, out.shape[-2])  # the forward's, when it had any
        out = attn._rotate(out[None], 0, positions)[0]  # its own rotation, each row a "head"
    return out


def _read(run: CleanRun, layer: int) -> Stream:
    """The stream block ``layer``'s attention reads: its input, through ln1 when pre-norm."""
    stream = stream_at(run, layer)
    block = run.model.blocks[layer]
    assert isinstance(block, Block)
    if run.model.cfg.norm == "pre" and block.ln1 is not None:
        stream = through(stream, block.ln1, run.scales[f"blocks.{layer}.ln1"])
    return stream


def _keep(importance: torch.Tensor, top: int | None) -> list[int] | None:
    """The indices of the ``top`` largest ``importance``, in their order; None: keep all."""
    if top is None or top >= importance.shape[0]:
        return None
    return sorted(importance.topk(top).indices.tolist())


def _fold(x: torch.Tensor, keep: list[int] | None, dim: int) -> torch.Tensor:
    """``x`` with only ``keep`` along ``dim`` and the rest summed into one last entry."""
    if keep is None:
        return x
    mask = torch.ones(x.shape[dim], dtype=torch.bool, device=x.device)
    mask[keep] = False
    kept = x.index_select(dim, torch.tensor(keep, device=x.device))
    rest = x.index_select(dim, mask.nonzero()[:, 0]).sum(dim, keepdim=True)
    return torch.cat([kept, rest], dim)


@dataclass
class QKAttribution:
    """One score split by the query side's components (rows) and the key side's (columns).

    ``matrix`` [q][k] sums to ``score``, the trace's score at (query, key) before any soft-cap.
    For the key-position view, ``keys`` are the positions the query sees, ``key_scores`` their
    scores, ``by_key`` [keys][components] each score split by the key's components (the whole
    query against each), ``by_query`` by the query's (each against the whole key); each row sums
    to its score. With ``top``, the same components on both sides and in both views, the rest
    summed into a last ``rest``."""

    layer: int
    head: int
    query: int
    key: int
    components: list[Component]
    matrix: torch.Tensor  # (N, N) float64
    score: float
    keys: list[int]
    key_scores: torch.Tensor  # (K,)
    by_key: torch.Tensor  # (K, N)
    by_query: torch.Tensor  # (K, N)


def _check(run: CleanRun, name: str, value: int, bound: int) -> None:
    if not 0 <= value < bound:
        raise TraceError(f"{name}: {value} is out of range (0 .. {bound - 1})")


def qk_attribution(
    run: CleanRun, layer: int, head: int, query: int, key: int, top: int | None = None
) -> QKAttribution:
    """Why head ``head`` of layer ``layer`` gives key ``key`` the score it does at query
    ``query``: the score split into [query component][key component] (module docstring), with
    every key ``query`` sees split the same way. ``top``: keep that many components (the
    largest by their rows' and columns' absolute sums), the rest summed as ``rest``."""
    cfg = run.model.cfg
    T = run.n
    _check(run, "layer", layer, cfg.n_layers)
    _check(run, "head", head, cfg.n_heads)
    _check(run, "query", query, T)
    _check(run, "key", key, T)
    if top is not None and top < 1:
        raise TraceError(f"top: {top} must be at least 1")
    stream = _read(run, layer)
    block = run.model.blocks[layer]
    assert isinstance(block, Block)
    biased = stream.biased or block.attn.b_Q is not None or block.attn.b_K is not None
    components = stream.components
    if biased and not stream.biased:
        components = [*components, Component("bias", "bias")]
    q = _side(run, stream, layer, head, "q", biased)[:, query]  # (N, hs)
    k = _side(run, stream, layer, head, "k", biased)  # (N, T, hs)
    spans = spans_of(run.layout)
    hidden = hidden_keys(T, T, 0, cfg.causal, cfg.window_of(layer), k.device, spans,
                         cfg.window_in_spans)[query].cpu()  # fmt: skip
    if bool(hidden[key]):
        raise TraceError(
            f"key: query {query} does not see key {key} in layer {layer} (it is after the "
            "query, or out of the layer's sliding window): its score is -inf"
        )
    scale = run.model.cfg.score_scale
    matrix = (q @ k[:, key].T) * scale  # (N, N) [q][k]
    keys = (~hidden).nonzero()[:, 0].tolist()
    kk = k[:, keys]  # (N, K, hs)
    by_key = (kk @ q.sum(0)).T * scale  # (N, K, hs) @ (hs,) -> (K, N)
    by_query = (kk.sum(0) @ q.T) * scale  # (K, hs) @ (hs, N) -> (K, N)
    keep = _keep(matrix.abs().sum(1) + matrix.abs().sum(0), top)
    if keep is not None:
        components = [components[i] for i in keep] + [REST]
        matrix = _fold(_fold(matrix, keep, 0), keep, 1)
        by_key, by_query = _fold(by_key, keep, 1), _fold(by_query, keep, 1)
    return QKAttribution(
        layer=layer,
        head=head,
        query=query,
        key=key,
        components=components,
        matrix=matrix.cpu(),
        score=float(matrix.sum()),
        keys=keys,
        key_scores=by_key.sum(1).cpu(),
        by_key=by_key.cpu(),
        by_query=by_query.cpu(),
    )


@dataclass
class LogitAttribution:
    """Each component's direct contribution to the logit of ``token`` at ``position`` (minus
    that of ``versus``, when given), through the final norm (its scale frozen) and the
    unembedding: ``values`` sums to ``logit``, the logit (or the difference) before any final
    soft-cap."""

    position: int
    token: int
    versus: int | None
    components: list[Component]
    values: torch.Tensor  # (N,) float64
    logit: float


def logit_attribution(
    run: CleanRun, position: int, token: int | None = None, versus: int | None = None
) -> LogitAttribution:
    """Direct logit attribution at ``position`` of ``token`` (None: the top prediction there),
    or of logit[token] - logit[versus]. A TraceError for a model without an unembedding."""
    model, cfg = run.model, run.model.cfg
    if not cfg.unembed:
        raise TraceError(
            "fields: logit_attribution needs the model's unembedding, and this model has none "
            "(an encoder predicts no next token)"
        )
    assert cfg.vocab_size is not None
    _check(run, "position", position, run.n)
    if token is None:
        token = int(run.logits(position).argmax())
    _check(run, "token", token, cfg.vocab_size)
    if versus is not None:
        _check(run, "versus", versus, cfg.vocab_size)
    one = run.at([position])  # a norm and a head's output at one token need no other
    stream = stream_at(one, cfg.n_layers)
    if model.ln_final is not None:
        stream = through(stream, model.ln_final, one.scales["ln_final"])
    u = model.W_U[:, token].to(run.embed.device, run.dtype)
    if versus is not None:
        u = u - model.W_U[:, versus].to(run.embed.device, run.dtype)
    values = stream.project(u[:, None])[:, 0, 0]  # (N, 1, 1) -> (N,)
    return LogitAttribution(
        position=position,
        token=token,
        versus=versus,
        components=stream.components,
        values=values.cpu(),
        logit=float(values.sum()),
    )
