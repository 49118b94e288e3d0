"""A causal model writes: one token at a time, each from the logits of the last position.
Deterministic: greedy at temperature 0 (the first of equal logits), else drawn from
softmax(logits / T) by a CPU generator seeded with ``seed``, so the same call gives the same
tokens on any device.

Each step runs only the new token: the keys and values of the tokens before it are kept in the
engine's ``KVCache``. A sliding context (``window``) drops the oldest token once it is full, which
moves every other token's position: from then on a step reads its window afresh, as a trace of
those tokens would. A ``Layout`` places the prompt's tokens (a picture's rotary positions, its
bidirectional spans): each written token's positions continue from the prompt's largest
(``layout.continued``), and the cache keeps the prompt's keys as the layout turned them."""

from __future__ import annotations

from collections.abc import Collection

import torch

from attnviz.engine.layout import Layout, continued
from attnviz.engine.model import KVCache, Transformer


class _Reader:
    """The logits after a growing sequence: ``read(seq)`` gives those of the next token of
    ``seq``, which extends the sequence of the previous call by at most one token (the cache
    then runs that token alone) or is read afresh."""

    def __init__(
        self,
        model: Transformer,
        window: int | None,
        use_cache: bool,
        layout: Layout | None = None,
        prompt: int = 0,
    ) -> None:
        if layout is not None and window is not None:
            raise ValueError("window: a sliding context moves the positions a layout fixes")
        if layout is not None and any(stop > prompt for _, stop in layout.spans):
            raise ValueError("layout: a span reaches past the prompt (written tokens are causal)")
        self.model = model
        self.window = window
        self.use_cache = use_cache
        self.layout = layout
        self.prompt = prompt  # the tokens ``layout`` places
        self.device = model.embed_device  # where the token ids go (a placed model's table)
        self.cache: KVCache | None = None
        self.read_to = 0  # how many tokens of the sequence the cache holds

    def _forward(self, ids: list[int], cache: KVCache | None, start: int = 0) -> torch.Tensor:
        x = torch.tensor([ids], device=self.device)  # (1, T)
        layout = continued(self.layout, self.prompt, start, len(ids))
        if layout is not None:
            h = self.model(x, cache=cache, layout=layout)  # (1, T, C)
        else:
            h = self.model(x) if cache is None else self.model(x, cache=cache)  # (1, T, C)
        return self.model.logits(h[:, -1:])[0, -1]  # (V,): only the last position's

    def read(self, seq: list[int]) -> torch.Tensor:
        window = self.window
        context = seq if window is None else seq[-window:]
        if not self.use_cache:
            return self._forward(context, None)
        whole = window is None or len(seq) <= window  # every token at the position it had
        if self.cache is not None and whole and len(seq) == self.read_to + 1:
            logits = self._forward(seq[-1:], self.cache, len(seq) - 1)  # the new token alone
        else:  # the first step, or the window moved: every position changed
            self.cache = KVCache()
            logits = self._forward(context, self.cache)
        self.read_to = len(seq)
        return logits


@torch.no_grad()
def continue_ids(
    model: Transformer,
    ids: list[int],
    n: int,
    temperature: float = 0.0,
    seed: int = 0,
    window: int | None = None,
    stop: Collection[int] = (),
    *,
    use_cache: bool = True,
    layout: Layout | None = None,
) -> list[int]:
    """The ``n`` token ids the model writes after ``ids`` (which are not included), or fewer:
    it stops after writing one of ``stop`` (an end-of-text token), which is kept. Each step
    reads the last ``window`` tokens at most (all when None). With ``use_cache`` (the default)
    each step runs only its new token against the keys and values kept from the steps before;
    without it, each step is the whole forward a trace makes (the same numbers, tested).
    ``layout`` places ``ids`` (no ``window`` then); the written tokens continue after it."""
    cfg = model.cfg
    if not cfg.causal or not cfg.unembed:
        raise ValueError("model: only a causal model with an unembedding writes tokens")
    if not ids:
        raise ValueError("ids: needs at least one token to continue")
    if not temperature >= 0:
        raise ValueError(f"temperature: must be 0 (greedy) or more (got {temperature!r})")
    if window is not None and window < 1:
        raise ValueError(f"window: must be at least 1 token (got {window!r})")
    g = torch.Generator().manual_seed(seed)
    reader = _Reader(model, window, use_cache, layout, len(ids))
    seq = list(ids)
    out: list[int] = []
    for _ in range(n):
        logits = reader.read(seq).float().cpu()  # (V,)
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


@torch.no_grad()
def next_logits(
    model: Transformer,
    ids: list[int],
    n: int,
    window: int | None = None,
    *,
    use_cache: bool = True,
    layout: Layout | None = None,
) -> tuple[list[int], torch.Tensor]:
    """Greedy ``continue_ids`` that also returns each step's logits (n, V) float32 on the CPU:
    what a test compares between the cached and the uncached ways."""
    reader = _Reader(model, window, use_cache, layout, len(ids))
    seq = list(ids)
    rows = []
    for _ in range(n):
        logits = reader.read(seq).float().cpu()  # (V,)
        rows.append(logits)
        seq.append(int(logits.argmax()))
    return seq[len(ids) :], torch.stack(rows)  # (n, V)
