"""Tasks to train on, each with what it teaches and what to look for.

A task makes batches of token ids from a generator (so that a seed fixes the data order) and
says which positions the loss counts: (inputs, targets, mask), each (B, T).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from typing import Protocol

import torch

# The held-out batch is drawn from its own generator, never from the training one, so that
# measuring it does not change the training data's order.
HELDOUT_SEED = 2_147_483_647


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
class Probe:
    """The fixed input whose attention is shown at every checkpoint, and where to look."""

    ids: list[int]
    labels: list[str]  # one per token
    look: str  # what the pattern shows once the task is learned


class Task(Protocol):
    """What the trainer needs of a task. ``name`` is the API's; ``about`` says, in a sentence or
    three, what the task teaches and what to look for."""

    name: str
    about: str
    vocab: CharVocab

    @property
    def max_tokens(self) -> int: ...

    def batch(self, g: torch.Generator, size: int) -> Batch: ...

    def heldout(self, size: int) -> Batch: ...

    def probe(self) -> Probe: ...


@dataclass(frozen=True)
class Induction:
    """A random string of lowercase letters, then the same string again; the loss is on the
    repeat. Its length changes from batch to batch (``min_len`` to ``max_len``): with one fixed
    length a model learns "copy the token L back" by position alone, in a few dozen steps, and
    no induction head forms."""

    min_len: int = 8
    max_len: int = 24
    vocab: CharVocab = CharVocab(string.ascii_lowercase)
    name: str = "induction"
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
        return self._repeat(torch.randint(0, self.vocab.size, (size, n), generator=g))

    def _repeat(self, half: torch.Tensor) -> Batch:
        n = half.shape[1]  # half: (B, n)
        ids = torch.cat([half, half], dim=1)  # (B, 2n)
        inputs, targets = ids[:, :-1], ids[:, 1:]  # (B, 2n - 1) each
        mask = torch.zeros_like(inputs, dtype=torch.bool)
        # Position t predicts token t + 1. The repeat's first letter (token n) follows a letter
        # not seen before, so it cannot be known; the rest (tokens n + 1 .. 2n - 1) can.
        mask[:, n:] = True
        return Batch(inputs, targets, mask)

    def heldout(self, size: int) -> Batch:
        """Fresh strings, never trained on (with 26^8 strings and more, almost surely), at the
        middle length."""
        n = (self.min_len + self.max_len) // 2
        g = torch.Generator().manual_seed(HELDOUT_SEED)
        return self._repeat(torch.randint(0, self.vocab.size, (size, n), generator=g))

    def probe(self) -> Probe:
        n = min(12, self.max_len)
        g = torch.Generator().manual_seed(HELDOUT_SEED - 1)
        half = torch.randint(0, self.vocab.size, (n,), generator=g).tolist()
        ids = (half + half)[:-1]
        return Probe(
            ids,
            list(self.vocab.decode(ids)),
            f"From each letter of the repeat (tokens {n + 1} to {2 * n - 1}), an induction head "
            f"attends to the letter after its earlier occurrence: a stripe {n - 1} tokens "
            "left of the diagonal. A previous-token head attends one token left.",
        )

    def induction_score(self, pattern: torch.Tensor, n: int) -> torch.Tensor:
        """Per head, the mean weight from each query of the repeat (positions n .. 2n - 2) on
        the token after its earlier occurrence (position q - n + 1). (B, nh, T, T) -> (nh,)"""
        queries = torch.arange(n, 2 * n - 1)
        keys = queries - n + 1
        return pattern[:, :, queries, keys].mean(dim=(0, 2))
