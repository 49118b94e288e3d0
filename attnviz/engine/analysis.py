"""What the page shows beside the raw trace: distances, attention entropy, PCA of trajectories."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def pairwise_distances(states: torch.Tensor) -> torch.Tensor:
    """Euclidean distance between every pair of tokens at every layer. (L+1, T, C) -> (L+1, T, T)

    Computed from differences, never through the |a|^2 + |b|^2 - 2ab shortcut, so that equal
    vectors are exactly 0 apart. A few query rows at a time: the differences of all of them at
    once, (L+1, T, T, C), are 2.8 GB for a 512-token MiniLM trace.
    """
    L1, T, C = states.shape
    rows = max(1, (1 << 22) // max(1, L1 * T * C))  # differences of at most 4M values at once
    out = states.new_empty(L1, T, T)
    for i in range(0, T, rows):
        diff = states[:, i : i + rows, None, :] - states[:, None, :, :]  # (L+1, rows, T, C)
        out[:, i : i + rows] = diff.pow_(2).sum(-1)
    return out.sqrt_()


def attention_entropy(pattern: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Entropy in nats of each query's attention row, 0 log 0 = 0. (..., T, T) -> (..., T)

    ``out``: a tensor of the pattern's shape and dtype to hold the terms (reused over layers
    instead of a new one each: the same numbers)."""
    terms = torch.special.entr(pattern) if out is None else torch.special.entr(pattern, out=out)
    return terms.sum(-1)


@dataclass(frozen=True)
class PCA:
    mean: torch.Tensor  # (C,)
    axes: torch.Tensor  # (k, C) unit rows
    explained_variance_ratio: torch.Tensor  # (k,)
    coords: torch.Tensor  # (L+1, T, k)


def trajectory_pca(states: torch.Tensor, k: int = 3) -> PCA:
    """One PCA fitted on the hidden states of all layers together, so frames are comparable.

    states: (L+1, T, C). k = min(k, C). The directions are the top eigenvectors of the
    covariance (C x C, in float64: a 512-token trace's 3,584 points in 384 dimensions take 20 ms,
    a third of an SVD of the points). Signs are fixed (largest loading of each axis positive) so
    the same input always gives the same picture.
    """
    L1, T, C = states.shape
    k = min(k, C)
    flat = states.reshape(L1 * T, C)  # (L+1)*T points in C dims
    mean = flat.mean(0)
    centred = flat - mean
    c64 = centred.double()
    var, vecs = torch.linalg.eigh(c64.T @ c64)  # ascending; (C,), (C, C) columns
    var = var.flip(0).clamp_min(0)  # descending, rounding below 0 is 0
    axes = vecs.flip(1)[:, :k].T  # (k, C) unit rows
    idx = axes.abs().argmax(dim=1)
    signs = torch.sign(axes[torch.arange(k), idx])
    axes = axes * torch.where(signs == 0, torch.ones_like(signs), signs)[:, None]
    total = var.sum()
    ratio = var[:k] / total if total > 0 else torch.zeros_like(var[:k])
    coords = (c64 @ axes.T).reshape(L1, T, k)  # (L+1, T, k)
    dtype = states.dtype
    return PCA(
        mean=mean,
        axes=axes.to(dtype),
        explained_variance_ratio=ratio.to(dtype),
        coords=coords.to(dtype),
    )
