"""Tasks to train on, each with what it teaches and what to look for.

A task makes batches of token ids from a generator (so that a seed fixes the data order) and
says which positions the loss counts: (inputs, targets, mask), each (B, T).
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Batch:
    inputs: torch.Tensor  # (B, T) token ids
    targets: torch.Tensor  # (B, T): the id each position should predict next
    mask: torch.Tensor  # (B, T) bool: the positions the loss counts


@dataclass(frozen=True)
class CharVocab:
    """One token per character."""

    chars: str

    @property
    def size(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        return [self.chars.index(c) for c in text]

    def decode(self, ids: list[int]) -> str:
        return "".join(self.chars[i] for i in ids)


@dataclass(frozen=True)
class Induction:
    """A random string of lowercase letters, then the same string again; the loss is on the
    repeat. Its length changes from batch to batch (``min_len`` to ``max_len``): with one fixed
    length a model learns "copy the token L back" by position alone, in a few dozen steps, and
    no induction head forms."""

    min_len: int = 8
    max_len: int = 24
    vocab: CharVocab = CharVocab(string.ascii_lowercase)
    about: str = (
        "A random string, then the same string again. The first copy cannot be predicted; the "
        "second can, by finding the earlier occurrence of the current letter and copying the "
        "letter after it. Look for a head in the first layer that attends to the previous "
        "token, and a head in the second that attends, from each letter of the repeat, to the "
        "letter after its earlier occurrence: an induction head."
    )

    @property
    def max_tokens(self) -> int:
        return 2 * self.max_len - 1

    def batch(self, g: torch.Generator, size: int) -> Batch:
        n = int(torch.randint(self.min_len, self.max_len + 1, (1,), generator=g))
        half = torch.randint(0, self.vocab.size, (size, n), generator=g)  # (B, n)
        ids = torch.cat([half, half], dim=1)  # (B, 2n)
        inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, 2n - 1) each
        mask = torch.zeros_like(inputs, dtype=torch.bool)
        # Position t predicts token t + 1. The repeat's first letter (token n) follows a letter
        # not seen before, so it cannot be known; the rest (tokens n + 1 .. 2n - 1) can.
        mask[:, n:] = True
        return Batch(inputs, targets, mask)

    def induction_score(self, pattern: torch.Tensor, n: int) -> torch.Tensor:
        """Per head, the mean weight from each query of the repeat (positions n .. 2n - 2) on
        the token after its earlier occurrence (position q - n + 1). (B, nh, T, T) -> (nh,)"""
        queries = torch.arange(n, 2 * n - 1)
        keys = queries - n + 1
        return pattern[:, :, queries, keys].mean(dim=(0, 2))
