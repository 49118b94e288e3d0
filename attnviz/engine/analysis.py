"""What the page shows beside the raw trace: distances, attention entropy, PCA of trajectories."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnviz.engine.reduce import PCA_AXES, principal_axes

# Each query row's entropy: one function wherever the weights are (a remote trace's too).
from attnviz.engine.reduce import entropy as attention_entropy  # noqa: F401

# Differences of at most this many values at once, in one buffer reused block to block: 512 KB
# of float32, well within a core's L2, so that each block's differences are summed while
# still in cache and no block is a fresh mapping of zeroed pages (``attnviz serve`` maps every
# block from 1 MiB up).
DISTANCE_BLOCK = 1 << 17


def pairwise_distances(states: torch.Tensor) -> torch.Tensor:
    """Euclidean distance between every pair of tokens at every layer. (L+1, T, C) -> (L+1, T, T)

    Computed from differences, never through the |a|^2 + |b|^2 - 2ab shortcut, so that equal
    vectors are exactly 0 apart. Each pair once: (a - b)^2 is (b - a)^2 bit for bit and each
    sum runs over the same C terms in the same order, so the block of rows i.. against columns
    i.. gives both halves (the same numbers as all of T x T, half the work), a few rows at a
    time of every layer (``DISTANCE_BLOCK``).
    """
    L1, T, C = states.shape
    out = states.new_empty(L1, T, T)
    buffer = states.new_empty(min(DISTANCE_BLOCK, max(1, L1 * T * C)))
    i = 0
    while i < T:
        width = T - i  # the columns i.. (the rest are the mirror of earlier blocks)
        rows = max(1, min(width, DISTANCE_BLOCK // max(1, L1 * width * C)))
        if rows * L1 * width * C > buffer.numel():  # one row alone is larger than a block
            buffer = states.new_empty(rows * L1 * width * C)
        diff = buffer[: L1 * rows * width * C].view(L1, rows, width, C)
        torch.sub(states[:, i : i + rows, None, :], states[:, None, i:, :], out=diff)
        block = diff.mul_(diff).sum(-1)  # (L+1, rows, width) squared distances
        out[:, i : i + rows, i:] = block
        out[:, i:, i : i + rows] = block.transpose(1, 2)
        i += rows
    return out.sqrt_()


@dataclass(frozen=True)
class PCA:
    mean: torch.Tensor  # (C,)
    axes: torch.Tensor  # (k, C) unit rows
    explained_variance_ratio: torch.Tensor  # (k,)
    coords: torch.Tensor  # (L+1, T, k)


def trajectory_pca(states: torch.Tensor, k: int = PCA_AXES) -> PCA:
    """One PCA fitted on the hidden states of all layers together, so frames are comparable.

    states: (L+1, T, C). k = min(k, C). The directions are the top eigenvectors of the
    covariance (``reduce.principal_axes``, which a remote trace runs on its deployment too).
    Signs are fixed (largest loading of each axis positive) so the same input always gives the
    same picture.
    """
    mean, axes, ratio, coords = principal_axes(list(states), k)  # coords: (L+1, T, k)
    dtype = states.dtype
    return PCA(
        mean=mean.to(dtype),
        axes=axes.to(dtype),
        explained_variance_ratio=ratio.to(dtype),
        coords=coords.to(dtype),
    )
