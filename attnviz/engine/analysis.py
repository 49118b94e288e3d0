"""What the page shows beside the raw trace: distances, attention entropy, PCA of trajectories."""

from __future__ import annotations

from dataclasses import dataclass

import torch


def pairwise_distances(states: torch.Tensor) -> torch.Tensor:
    """Euclidean distance between every pair of tokens at every layer. (L+1, T, C) -> (L+1, T, T)

    Computed from differences, never through the |a|^2 + |b|^2 - 2ab shortcut, so that equal
    vectors are exactly 0 apart.
    """
    diff = states[:, :, None, :] - states[:, None, :, :]  # (L+1, T, T, C)
    return diff.pow(2).sum(-1).sqrt()


def attention_entropy(pattern: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of each query's attention row, 0 log 0 = 0. (..., T, T) -> (..., T)"""
    return torch.special.entr(pattern).sum(-1)


@dataclass(frozen=True)
class PCA:
    mean: torch.Tensor  # (C,)
    axes: torch.Tensor  # (k, C) unit rows
    explained_variance_ratio: torch.Tensor  # (k,)
    coords: torch.Tensor  # (L+1, T, k)


def trajectory_pca(states: torch.Tensor, k: int = 3) -> PCA:
    """One PCA fitted on the hidden states of all layers together, so frames are comparable.

    states: (L+1, T, C). k = min(k, C). Signs are fixed (largest loading of each axis positive) so
    the same input always gives the same picture.
    """
    L1, T, C = states.shape
    k = min(k, C)
    flat = states.reshape(L1 * T, C)  # (L+1)*T points in C dims
    mean = flat.mean(0)
    centred = flat - mean
    _, s, vh = torch.linalg.svd(centred, full_matrices=False)  # vh: (min(N, C), C)
    axes = vh[:k]
    if axes.shape[0] < k:  # fewer points than dimensions: pad with zero directions
        axes = torch.cat([axes, axes.new_zeros(k - axes.shape[0], C)])
        s = torch.cat([s, s.new_zeros(k - s.shape[0])])
    idx = axes.abs().argmax(dim=1)
    signs = torch.sign(axes[torch.arange(k), idx])
    axes = axes * torch.where(signs == 0, torch.ones_like(signs), signs)[:, None]
    var = s.pow(2)
    total = var.sum()
    ratio = var[:k] / total if total > 0 else torch.zeros_like(var[:k])
    coords = (centred @ axes.T).reshape(L1, T, k)  # (L+1, T, k)
    return PCA(mean=mean, axes=axes, explained_variance_ratio=ratio, coords=coords)
