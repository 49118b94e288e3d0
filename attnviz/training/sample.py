"""Text from a trained character model, one character at a time: what it has learned, in its own
words. Deterministic: greedy at temperature 0, else drawn with a generator seeded by ``seed``."""

from __future__ import annotations

import torch

from attnviz.engine import Transformer
from attnviz.engine.generate import continue_ids
from attnviz.training.tasks import CharVocab


@torch.no_grad()
def generate(
    model: Transformer, vocab: CharVocab, prompt: str, n: int, temperature: float, seed: int = 0
) -> str:
    """The ``n`` characters the model writes after ``prompt`` (the prompt itself not included).

    Each step reads the last ``cfg.n_ctx`` characters at most (the length the model was
    trained on; a learned position table has no more rows). At ``temperature`` 0 the most likely
    character is taken (the first of equals); otherwise one is drawn from softmax(logits / T) by
    a CPU generator seeded with ``seed``, so the same call gives the same text. The model's mode
    (train or eval) is left as it was."""
    if not prompt:
        raise ValueError("prompt: needs at least one character to continue")
    outside = sorted(set(prompt) - set(vocab.chars))
    if outside:
        raise ValueError(
            f"prompt: characters {''.join(outside)!r} are not in the model's vocabulary "
            f"({vocab.chars!r})"
        )
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n: must be a non-negative integer (got {n!r})")
    if not temperature >= 0:
        raise ValueError(f"temperature: must be 0 (greedy) or more (got {temperature!r})")
    cfg = model.cfg
    if not cfg.unembed or cfg.vocab_size != vocab.size:
        raise ValueError(
            f"model: needs an unembedding over the vocabulary's {vocab.size} characters "
            f"(has vocab_size {cfg.vocab_size}, unembed {cfg.unembed})"
        )
    out = continue_ids(model, vocab.encode(prompt), n, temperature, seed, cfg.n_ctx)
    return vocab.decode(out)
