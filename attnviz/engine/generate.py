"""A causal model writes: one token at a time, each from the logits of the last position.
Deterministic: greedy at temperature 0 (the first of equal logits), else drawn from
softmax(logits / T) by a CPU generator seeded with ``seed``, so the same call gives the same
tokens on any device."""

from __future__ import annotations

from collections.abc import Collection

import torch

from attnviz.engine.model import Transformer


@torch.no_grad()
def continue_ids(
    model: Transformer,
    ids: list[int],
    n: int,
    temperature: float = 0.0,
    seed: int = 0,
    window: int | None = None,
    stop: Collection[int] = (),
) -> list[int]:
    """The ``n`` token ids the model writes after ``ids`` (which are not included), or fewer:
    it stops after writing one of ``stop`` (an end-of-text token), which is kept. Each step
    reads the last ``window`` tokens at most (all when None). No cache of keys and values: each
    step is the same forward a trace makes."""
    cfg = model.cfg
    if not cfg.causal or not cfg.unembed:
        raise ValueError("model: only a causal model with an unembedding writes tokens")
    if not ids:
        raise ValueError("ids: needs at least one token to continue")
    if not temperature >= 0:
        raise ValueError(f"temperature: must be 0 (greedy) or more (got {temperature!r})")
    device = model.param_device
    g = torch.Generator().manual_seed(seed)
    seq = list(ids)
    out: list[int] = []
    for _ in range(n):
        context = seq if window is None else seq[-window:]
        logits = model.logits(model(torch.tensor([context], device=device)))[0, -1]  # (V,)
        logits = logits.float().cpu()
        if temperature == 0:
            nxt = int(logits.argmax())
        else:
            probs = torch.softmax(logits.double() / temperature, dim=-1)
            nxt = int(torch.multinomial(probs, 1, generator=g))
        seq.append(nxt)
        out.append(nxt)
        if nxt in stop:
            break
    return out
