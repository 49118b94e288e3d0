"""A long text's trace: what ``run_long`` keeps of every layer (``LayerRecord``), and what is
read from it: any window of a head's weights, a query's row over the whole text and its top
keys, exact, recomputed from the kept queries and keys; and the per-head scores of a layer x
head grid, from the summaries made during the forward. ``attnviz.long.run`` makes one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from attnviz.engine.model import TransformerConfig
from attnviz.long.attend import (
    LayerRecord,
    LayerRule,
    Plan,
    Spans,
    block_map,
    exact_weights,
    row_entropy,
)


@dataclass
class HeadScores:
    """Per layer and head (L, nh), each a mean over the queries: ``sink``, the mass on the sink
    positions; ``far``, the mass on keys neither local nor sinks, over the queries that have
    keys that far (all of them in a bidirectional model)."""

    sink: torch.Tensor
    far: torch.Tensor


@dataclass
class LongTrace:
    """Every layer's ``LayerRecord`` of one text of ``T`` tokens, read with the model's rule
    (``cfg``, and the run's bidirectional ``spans``)."""

    cfg: TransformerConfig
    plan: Plan
    T: int
    spans: Spans = ()
    layers: dict[int, LayerRecord] = field(default_factory=dict)
    _maps: dict[tuple[int, int], torch.Tensor] = field(default_factory=dict, repr=False)

    def rule(self, layer: int) -> LayerRule:
        return LayerRule(self.cfg, layer, self.spans)

    def _qk(self, layer: int, head: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rec = self.layers[layer]
        return rec.q[head], rec.k[self.cfg.kv_head_of(head)], rec.lse[head]

    def window(self, layer: int, head: int, rows: range, keys: range) -> torch.Tensor:
        """``head``'s exact weights of queries ``rows`` on keys ``keys`` (step 1 each):
        (R, C) float32, 0 where the rule hides a key."""
        q, k, lse = self._qk(layer, head)
        r, c = slice(rows.start, rows.stop), slice(keys.start, keys.stop)
        rule = self.rule(layer)
        w = exact_weights(q[None, r], k[None, c], lse[None, r], rule, rows.start, keys.start)
        return w[0]

    def rows(self, layer: int, queries: range) -> torch.Tensor:
        """Every head's weights of the ``queries`` (a few: each row is T numbers) on every key:
        (nh, R, T) float32."""
        rec = self.layers[layer]
        group = self.cfg.n_heads // self.cfg.kv_heads
        rule = self.rule(layer)
        r0, r1 = queries.start, queries.stop
        c0, c1 = rule.keys_seen(r0, r1, self.T)
        k = rec.k[:, c0:c1].repeat_interleave(group, dim=0)  # (nh, C, hs)
        q, lse = rec.q[:, r0:r1], rec.lse[:, r0:r1]
        w = exact_weights(q, k, lse, rule, r0, c0)  # (nh, R, C)
        out = torch.zeros(self.cfg.n_heads, r1 - r0, self.T, device=w.device)
        out[:, :, c0:c1] = w
        return out

    def row(self, layer: int, query: int) -> torch.Tensor:
        """Every head's weights of ``query`` on every key: (nh, T) float32."""
        return self.rows(layer, range(query, query + 1))[:, 0]

    def top_k(self, layer: int, query: int, k: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Every head's ``k`` heaviest keys of ``query`` (fewer when it sees fewer), heaviest
        first: (weights, key indices), each (nh, k)."""
        row = self.row(layer, query)
        seen = int((row > 0).sum(-1).max())
        return torch.topk(row, min(k, max(seen, 1)), dim=-1)

    def block_row(self, layer: int, query: int) -> torch.Tensor:
        """Every head's mass of ``query`` on each block: (nh, nb)."""
        row = self.row(layer, query)
        out = torch.zeros(row.shape[0], self.plan.n_blocks, device=row.device)
        return out.index_add_(1, self.plan.block_of(row.device), row)

    def block_map(self, layer: int, heads: Sequence[int]) -> torch.Tensor:
        """``heads``' block maps (len(heads), nb, nb): the sum over each block's queries of
        their weights on each block's keys (a row sums to its block's length), made on the
        first ask from the kept queries and keys (one weighing of a head: what the forward's
        attention cost it) and kept."""
        todo = [h for h in dict.fromkeys(heads) if (layer, h) not in self._maps]
        if todo:
            rec = self.layers[layer]
            kv = [self.cfg.kv_head_of(h) for h in todo]
            maps = block_map(rec.q[todo], rec.k[kv], self.rule(layer), self.plan)
            for h, m in zip(todo, maps, strict=True):
                self._maps[(layer, h)] = m
        return torch.stack([self._maps[(layer, h)] for h in heads])

    def entropy(self, layer: int) -> torch.Tensor:
        """Every head's entropy of each row (nats): (nh, T), made on the first ask (one
        weighing of the layer) unless its tiles gave it, and kept."""
        rec = self.layers[layer]
        if rec.entropy is None:
            k = rec.k.repeat_interleave(self.cfg.n_heads // self.cfg.kv_heads, dim=0)
            rec.entropy = row_entropy(rec.q, k, self.rule(layer))
        return rec.entropy

    def head_scores(self) -> HeadScores:
        """The layer x head grid's scores (``HeadScores``)."""
        order = sorted(self.layers)
        first_far = self.plan.local if self.cfg.causal else 0
        sink, far = [], []
        for layer in order:
            rec = self.layers[layer]
            sink.append(rec.sink.mean(-1))
            rest = (1 - rec.sink - rec.local)[:, first_far:]
            far.append(rest.mean(-1) if rest.shape[-1] else torch.full_like(rec.sink[:, 0], 0))
        return HeadScores(torch.stack(sink), torch.stack(far))
