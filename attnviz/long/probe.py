"""Heads that retrieve: a needle in a haystack (a fact placed at a chosen depth of a long filler,
asked for at the end, its answer the fact again) and each head's retrieval score on it, as Wu et
al. (2024, "Retrieval Head Mechanistically Explains Long-Context Factuality") define it: the
share of the answer's tokens at which the head's heaviest key is the needle's token being
copied. Here the answer is the needle itself, given (teacher-forced): at the answer's i-th
token the model is about to write the needle's (i + 1)-th, which sits at needle start + i + 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attnviz.long.trace import LongTrace


@dataclass(frozen=True)
class Needle:
    """One probe's token ids: the haystack with the needle at ``start``, then the question,
    then the needle again from ``answer``; ``depth``, the needle's place in the haystack, 0 (its
    start) to 1 (its end)."""

    ids: tuple[int, ...]
    start: int
    answer: int
    length: int
    depth: float

    @property
    def queries(self) -> range:
        """The answer's tokens that predict a needle token: all but its last."""
        return range(self.answer, self.answer + self.length - 1)

    def copied(self, query: int) -> int:
        """The needle position the answer's token ``query`` copies next."""
        return self.start + (query - self.answer) + 1


def place(
    haystack: Sequence[int], needle: Sequence[int], depth: float, question: Sequence[int] = ()
) -> Needle:
    """``needle`` inserted into ``haystack`` at ``depth`` (0 to 1; between two of its tokens),
    then ``question``, then ``needle`` again."""
    if not 0.0 <= depth <= 1.0:
        raise ValueError(f"depth: {depth} is not between 0 and 1")
    if len(needle) < 2:
        raise ValueError("needle: at least two tokens")
    at = round(depth * len(haystack))
    head, tail = list(haystack[:at]), list(haystack[at:])
    ids = (*head, *needle, *tail, *question)
    return Needle((*ids, *needle), len(head), len(ids), len(needle), depth)


def retrieval_scores(trace: LongTrace, needle: Needle) -> torch.Tensor:
    """(layers, heads): each head's share of the answer's tokens whose heaviest key is the
    needle token they copy next, from the weights recomputed exactly (``LongTrace.rows``)."""
    queries = needle.queries
    want = torch.tensor([needle.copied(q) for q in queries])  # (n,)
    out = torch.zeros(trace.cfg.n_layers, trace.cfg.n_heads)
    for layer in sorted(trace.layers):
        top = trace.rows(layer, queries).argmax(-1)  # (nh, n)
        out[layer] = (top == want.to(top.device)).float().mean(-1).cpu()
    return out
