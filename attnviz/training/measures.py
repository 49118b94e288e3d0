"""What is measured on a trained model's attention, shared by the training service (the scores a
finished run reports), the ablation presets' claims and ``attnviz bench``'s training figures.

Every measure runs the model on fresh inputs drawn from its own seeded generator (neither the
training data nor the held-out batch) and reads the attention patterns through the hook points
(``act_name("pattern", layer)``). Scores come per head, as (layers, heads) tensors; callers pick
the best head of a layer or round them for the wire.
"""

from __future__ import annotations

import torch

from attnviz.engine import Transformer, act_name, capture
from attnviz.training.tasks import Induction, Reverse
from attnviz.training.trainer import pattern_names

MEASURE_BATCH = 64  # fresh inputs each score is measured on
MEASURE_SEED = 99  # their generator's seed
# The letters of the fresh strings a finished run reports its scores on (the training service,
# attnviz bench): an induction model's repeats, an encoder-decoder's sources.
INDUCTION_LETTERS = 20
ALIGNMENT_LETTERS = 10


def induction_letters(task: Induction) -> int:
    """The letters of the fresh strings (each then repeated) an induction model's heads are
    scored on: the scores its run reports, Learn's step-12 checks and the positions preset's
    claims, so that a head's score reads the same wherever it is shown."""
    return min(INDUCTION_LETTERS, task.max_len)


def repeats(n: int, vocab: int, device: torch.device) -> torch.Tensor:
    """MEASURE_BATCH fresh strings of ``n`` tokens (ids below ``vocab``), each then repeated:
    (B, 2n), on ``device``."""
    g = torch.Generator().manual_seed(MEASURE_SEED)
    half = torch.randint(0, vocab, (MEASURE_BATCH, n), generator=g)  # (B, n)
    return torch.cat([half, half], dim=1).to(device)  # (B, 2n)


@torch.no_grad()
def patterns(model: Transformer, inputs: torch.Tensor) -> list[torch.Tensor]:
    """Every layer's attention pattern on ``inputs``, float32 on the CPU: L x (B, nh, T, T)."""
    names = [act_name("pattern", i) for i in range(model.cfg.n_layers)]
    with capture(model, names) as cache:
        model(inputs)
    return [cache[name].float().cpu() for name in names]


def induction_by_head(model: Transformer, task: Induction, n: int) -> torch.Tensor:
    """Each head's induction score on fresh repeats of length ``n``: the mean weight from each
    token of the repeat on the token after its earlier occurrence (``Induction.induction_score``).
    (L, nh)"""
    ids = repeats(n, task.vocab.size, model.param_device)[:, :-1]  # (B, 2n - 1)
    return torch.stack([task.induction_score(p, n) for p in patterns(model, ids)])


def at_offset(pattern: torch.Tensor, k: int) -> torch.Tensor:
    """Per head, the mean weight from each query q on the key ``k`` tokens before it (q - k;
    after it when ``k`` is negative), over the queries that have one. (B, nh, T, T) -> (nh,)"""
    T = pattern.shape[-1]
    q = torch.arange(max(k, 0), T + min(k, 0))
    return pattern[:, :, q, q - k].mean(dim=(0, 2))


def previous_token(pattern: torch.Tensor) -> torch.Tensor:
    """Per head, the mean weight from each token after the first on the one before it.
    (B, nh, T, T) -> (nh,)"""
    return at_offset(pattern, 1)


def previous_token_by_head(model: Transformer, n: int, vocab: int) -> torch.Tensor:
    """Each head's previous-token score (``previous_token``) on fresh repeats of length ``n``.
    (L, nh)"""
    ids = repeats(n, vocab, model.param_device)[:, :-1]  # (B, 2n - 1)
    return torch.stack([previous_token(p) for p in patterns(model, ids)])


@torch.no_grad()
def alignment_by_head(model: Transformer, task: Reverse, n: int) -> torch.Tensor:
    """Each cross-attention head's alignment (``Reverse.alignment``) on MEASURE_BATCH fresh
    strings of ``n`` letters. (L, nh)"""
    g = torch.Generator().manual_seed(MEASURE_SEED)
    batch = task._pairs(task._letters(g, MEASURE_BATCH, n)).to(model.param_device)
    names = pattern_names(model.cfg)["cross"]
    with capture(model, names) as cache:
        model(batch.inputs, batch.source)
    return torch.stack([task.alignment(cache[name].float().cpu(), n) for name in names])


def rounded(scores: torch.Tensor, digits: int = 4) -> list[list[float]]:
    """(L, nh) scores rounded, for a table (``attnviz bench``)."""
    return [[round(float(x), digits) for x in row] for row in scores]


def as_sent(scores: torch.Tensor) -> list[list[float]]:
    """(L, nh) scores as the API sends them: each score's own value, unrounded, so that the
    page's readable() of a head's score says what a claim's sentence, measured on the same
    strings, says (rounded here first, 0.00259 would read 0.0026 on the page)."""
    return [[float(x) for x in row] for row in scores]
