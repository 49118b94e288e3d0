"""The corpus view's runs: a set's texts through the model, keeping the queries and keys of some
layers (concatenated over the texts, token by token) and the Gram matrix of every head's
patterns (sum over texts of P P^T, P the (L*nh, T*T) weights of a text).

A model the engine runs (``native``) takes its texts in batches (``run_batched``), a few
thousand tokens at a time, texts of near lengths padded on the right: a causal model's pads come
after every real token (no real query sees them); an encoder's are hidden as keys by a mask on
the scores (``hiding``); their rows and columns are left out of the Gram matrix. Any other model
(the transformers bridge) runs one text at a time through ``ServedModel.trace``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

from attnviz.capture import qk_names
from attnviz.engine import Transformer, act_name, capture
from attnviz.engine.model import Block
from attnviz.errors import TraceError
from attnviz.pretrained.registry import ServedModel
from attnviz.services.corpus.sets import SetText

QK = tuple[torch.Tensor, torch.Tensor]  # (N, nh, hs) queries and keys of every token of the set
BATCH_TOKENS = 4096  # padded tokens of one batch
BATCH_PATTERN_BYTES = 256 * 2**20  # one batch's weights of every layer
PAD_SHARE = 1.2  # a causal batch's padded tokens over its real ones, at most


def _qk(trace, layer: int) -> QK:
    q, k, _ = trace.qkv(layer)  # (nh, T, hs) each
    return q.transpose(0, 1).float().cpu(), k.transpose(0, 1).float().cpu()  # (T, nh, hs)


def user_qk(m: ServedModel, ids: list[int]) -> list[QK]:
    """The queries and keys (T, nh, hs) of one text at every layer (through ``m.trace``)."""
    with m.lock:
        trace = m.trace(ids)
    return [_qk(trace, i) for i in range(m.cfg.n_layers)]


def engine_of(m: ServedModel) -> Transformer | None:
    model = getattr(m, "model", None)
    native = m.backend == "native" and isinstance(model, Transformer)
    return model if native and not m.cfg.encoder_layers else None  # type: ignore[return-value]


def run_texts(
    m: ServedModel, texts: list[SetText], layers: list[int], gram: bool
) -> tuple[dict[int, QK], str | None, torch.Tensor | None]:
    """Every text through the model: the queries and keys of ``layers`` concatenated over the
    texts in order, why there are none (or None), and with ``gram`` the heads' Gram matrix."""
    engine = engine_of(m)
    if engine is not None:
        return run_batched(m, engine, texts, layers, gram)
    L, H = m.cfg.n_layers, m.cfg.n_heads
    parts: dict[int, tuple[list[torch.Tensor], list[torch.Tensor]]] = {i: ([], []) for i in layers}
    g = torch.zeros(L * H, L * H, dtype=torch.float64) if gram else None
    no_qk: str | None = None
    for t in texts:
        with m.lock:
            trace = m.trace(t.ids)
        if trace.has_qk:
            for i in layers:
                q, k = _qk(trace, i)
                parts[i][0].append(q)
                parts[i][1].append(k)
        else:
            no_qk = trace.no_qk_reason or f"model {m.name} records no queries or keys"
        if g is not None:
            p = torch.cat([trace.pattern(i).float().reshape(H, -1) for i in range(L)]).cpu()
            g += (p @ p.T).double()  # (L*nh, L*nh)
    qk = {} if no_qk else {i: (torch.cat(qs), torch.cat(ks)) for i, (qs, ks) in parts.items()}
    return qk, no_qk, g


def batches(lengths: list[int], per_token: int) -> list[list[int]]:
    """Indices of the texts, shortest first, in batches of at most BATCH_TOKENS padded tokens
    and BATCH_PATTERN_BYTES of weights (``per_token``: bytes per T^2), the padding at most
    PAD_SHARE of the real tokens."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    out: list[list[int]] = []
    real = 0  # the last batch's tokens before padding
    for i in order:
        T = lengths[i]  # the longest so far: sorted
        if out:
            last = out[-1]
            n = len(last) + 1
            padded = n * T <= PAD_SHARE * (real + T)
            fits = n * T <= BATCH_TOKENS and n * T * T * per_token <= BATCH_PATTERN_BYTES
            if padded and fits:
                last.append(i)
                real += T
                continue
        out.append([i])
        real = T
    return out


@contextmanager
def hiding(model: Transformer, valid: torch.Tensor, causal: bool) -> Iterator[None]:
    """Pads hidden as keys from every query (their scores -inf, as a mask's), for a model that
    is not causal: each text's tokens then attend to its own tokens alone, as when run alone
    (every other step is position by position). A causal model's pads follow every real token
    and no real query sees them: nothing to do. ``valid`` (B, T)."""
    if causal:
        yield
        return
    hidden = ~valid[:, None, None, :]  # (B, 1, 1, T) over (B, nh, T, S)

    def hide(_m: torch.nn.Module, _inp: tuple, scores: torch.Tensor) -> torch.Tensor:
        return scores.masked_fill(hidden, float("-inf"))

    points = [b.attn.hook_scores for b in model.blocks if isinstance(b, Block)]
    handles = [p.register_forward_hook(hide) for p in points]
    try:
        yield
    finally:
        for h in handles:
            h.remove()


def run_batched(
    m: ServedModel, model: Transformer, texts: list[SetText], layers: list[int], gram: bool
) -> tuple[dict[int, QK], str | None, torch.Tensor | None]:
    """``run_texts`` for a model the engine runs: batches of texts in one forward each."""
    cfg = m.cfg
    L, H = cfg.n_layers, cfg.n_heads
    lengths = [len(t.ids) for t in texts]
    names = [n for i in layers for n in qk_names(cfg, i)]
    pattern_names = [act_name("pattern", i) for i in range(L)] if gram else []
    got_q: dict[int, list[torch.Tensor | None]] = {i: [None] * len(texts) for i in layers}
    got_k: dict[int, list[torch.Tensor | None]] = {i: [None] * len(texts) for i in layers}
    g = torch.zeros(L * H, L * H, dtype=torch.float64) if gram else None
    for batch in batches(lengths, 4 * L * H):
        T = max(lengths[i] for i in batch)
        ids = torch.zeros(len(batch), T, dtype=torch.long)
        valid = torch.zeros(len(batch), T, dtype=torch.bool)
        for row, i in enumerate(batch):
            ids[row, : lengths[i]] = torch.tensor(texts[i].ids)
            valid[row, : lengths[i]] = True
        hide = hiding(model, valid.to(m.device), cfg.causal)
        with m.lock, torch.inference_mode(), hide, capture(model, names + pattern_names) as cache:
            out = model(ids.to(m.device))
        if not bool(torch.isfinite(out.sum())):
            raise TraceError("source: the computation overflowed on the set's texts")
        for i in layers:
            qn, kn = qk_names(cfg, i)
            q = cache[qn].transpose(1, 2).float().cpu()  # (B, T, nh, hs)
            k = cache[kn].transpose(1, 2).float().cpu()
            for row, j in enumerate(batch):
                got_q[i][j] = q[row, : lengths[j]]
                got_k[i][j] = k[row, : lengths[j]]
        if g is not None:
            pair = (valid[:, :, None] & valid[:, None, :]).to(m.device)  # (B, T, T)
            p = torch.stack([cache[n].float() for n in pattern_names], dim=1)  # (B, L, nh, T, T)
            p = (p * pair[:, None, None]).reshape(len(batch), L * H, T * T)
            g += torch.bmm(p, p.transpose(1, 2)).sum(0).double().cpu()
        del cache
    qk = {
        i: (torch.cat([t for t in got_q[i] if t is not None]),
            torch.cat([t for t in got_k[i] if t is not None]))
        for i in layers
    }  # fmt: skip
    return qk, None, g
