"""A long text in Python (``attnviz.long_text``): a forward that never forms a tokens x tokens
matrix (``attnviz.long``), then any window of weights, a token's row over the whole text and its
top keys, each exact and computed when asked, as numpy arrays.

>>> doc = attnviz.long_text(open("paper.txt").read(), model="models/SmolLM2-135M")
>>> doc.top_k(layer=12, query=9_000, k=16)        # every head's 16 heaviest keys
>>> doc.window(layer=12, head=3, rows=(8_500, 9_012), keys=(0, 512))  # (512, 512), exact
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from attnviz.errors import TraceError
from attnviz.long import LongTrace, Plan, fixed_blocks, run_long
from attnviz.python.local import _model_name, trace_service

KEEP = {"float32": torch.float32, "float16": torch.float16}
BLOCKS = 64  # the block map's blocks, when not given


@dataclass
class LongText:
    """One long text's trace: ``tokens`` (their labels), ``special`` (the template's and the
    text's special tokens: sinks with the first), ``blocks`` ([start, stop) of each block of
    the block map), and what is read from the kept queries and keys, exact (float32 numpy).
    A token is a query at its index; ``rows`` and ``keys`` are [start, stop) ranges."""

    model: str
    tokens: list[str]
    special: list[bool]
    trace: LongTrace = field(repr=False)

    @property
    def layers(self) -> int:
        return self.trace.cfg.n_layers

    @property
    def heads(self) -> int:
        return self.trace.cfg.n_heads

    @property
    def blocks(self) -> list[tuple[int, int]]:
        b = self.trace.plan.bounds
        return list(zip(b[:-1], b[1:], strict=True))

    def _check(self, layer: int, head: int | None = None, *spans: tuple[int, int]) -> None:
        if not 0 <= layer < self.layers:
            raise TraceError(f"layer: {layer} is not one of 0 to {self.layers - 1}")
        if head is not None and not 0 <= head < self.heads:
            raise TraceError(f"head: {head} is not one of 0 to {self.heads - 1}")
        n = len(self.tokens)
        for a, b in spans:
            if not 0 <= a < b <= n:
                raise TraceError(f"range ({a}, {b}) is not within the text's {n} tokens")

    def window(
        self, layer: int, head: int, rows: tuple[int, int], keys: tuple[int, int]
    ) -> np.ndarray:
        """``head``'s weights of the queries ``rows`` on the ``keys``: (rows, keys)."""
        self._check(layer, head, rows, keys)
        return self.trace.window(layer, head, range(*rows), range(*keys)).cpu().numpy()

    def row(self, layer: int, query: int) -> np.ndarray:
        """Every head's weights of token ``query`` on every token: (heads, tokens)."""
        self._check(layer, None, (query, query + 1))
        return self.trace.row(layer, query).cpu().numpy()

    def top_k(self, layer: int, query: int, k: int = 16) -> tuple[np.ndarray, np.ndarray]:
        """Every head's ``k`` heaviest keys of token ``query``, heaviest first: (weights,
        key indices), each (heads, k) (fewer columns when it sees fewer keys)."""
        self._check(layer, None, (query, query + 1))
        if k < 1:
            raise TraceError(f"k: {k} is not 1 or more")
        w, i = self.trace.top_k(layer, query, k)
        return w.cpu().numpy(), i.cpu().numpy()

    def entropy(self, layer: int) -> np.ndarray:
        """Every head's entropy of each token's row, nats: (heads, tokens)."""
        self._check(layer)
        return self.trace.entropy(layer).cpu().numpy()

    def sink(self, layer: int) -> np.ndarray:
        """Every head's weight of each token on the sinks (the first token and the special
        ones): (heads, tokens)."""
        self._check(layer)
        return self.trace.layers[layer].sink.cpu().numpy()

    def local(self, layer: int) -> np.ndarray:
        """Every head's weight of each token on the keys near it (fewer than ``local``
        tokens away; the sinks apart): (heads, tokens)."""
        self._check(layer)
        return self.trace.layers[layer].local.cpu().numpy()

    def block_map(self, layer: int, head: int) -> np.ndarray:
        """``head``'s block map: (blocks, blocks), the sum over a block's tokens of their
        weights on each block (a row sums to its block's length)."""
        self._check(layer, head)
        return self.trace.block_map(layer, [head])[0].cpu().numpy()

    def head_scores(self) -> dict[str, np.ndarray]:
        """Per layer and head (layers, heads): ``sink``, the mean weight on the sinks; ``far``,
        the mean weight on keys neither near nor sinks."""
        s = self.trace.head_scores()
        return {"sink": s.sink.cpu().numpy(), "far": s.far.cpu().numpy()}


def long_text(
    text: str,
    model: str | None = None,
    *,
    blocks: int = BLOCKS,
    local: int = 64,
    keep: str = "float32",
    folder: str | Path | None = None,
) -> LongText:
    """A long text's trace through ``model`` (a loaded model's name or a folder; the default
    model when None), computed in this process: ``blocks`` blocks of one size for the block
    map, ``local`` tokens for the near mass, queries and keys kept in ``keep`` ("float16"
    halves their memory; windows are then near, not exact), in memory or written to
    ``folder`` and mapped from there."""
    if keep not in KEEP:
        raise TraceError(f"keep: {keep!r} is not one of {', '.join(KEEP)}")
    if not 1 <= blocks <= 1024:
        raise TraceError(f"blocks: {blocks} is not between 1 and 1024")
    if local < 1:
        raise TraceError(f"local: {local} is not 1 or more")
    service = trace_service()
    name = service.registry.default if model is None else _model_name(service, model)
    served: Any = service.registry.get(name)
    net = getattr(served, "model", None)
    if served.backend != "native" or net is None:
        raise TraceError(
            f"model: {name} runs through transformers; a long text runs on the native "
            "engine's families for now (docs/models.md lists them)"
        )
    cfg = served.cfg
    if not cfg.causal or cfg.encoder_layers or cfg.vocab_size is None:
        raise TraceError(f"model: {name} is not a decoder that reads text (a long text needs one)")
    toks = served.tokenizer(text)
    n = len(toks.ids)
    if n == 0:
        raise TraceError("text: the tokenizer made no tokens of it")
    if n > cfg.n_ctx:
        raise TraceError(f"text: {n:,} tokens exceed model {name}'s {cfg.n_ctx:,} positions")
    sinks = (0, *(i for i, s in enumerate(toks.special) if s and i))
    plan = Plan(fixed_blocks(n, blocks), sinks, local, KEEP[keep])
    from attnviz.services import compute

    ids = torch.tensor(toks.ids)
    where = None if folder is None else Path(folder)
    trace = compute.run(run_long, net, ids, plan, None, None, where)  # on a twin: no lock
    return LongText(name, list(toks.labels), list(toks.special), trace)
