"""The corpus view's numbers: AttentionViz's normalisation of one head's queries and keys (Yeh et
al. 2023), which leaves every softmax unchanged; a PCA of them fitted on the set and applied to
the user's points; the heads' cosine similarity from the Gram matrix of their patterns; average
linkage (UPGMA, as scipy's ``linkage(method="average")``), its leaf order and a cut into k
clusters."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import orjson
import torch

from attnviz.engine.analysis import trajectory_pca
from attnviz.wire.jsonarrays import dumps

NOTE = (
    "Keys are translated by c = mean(queries) - mean(keys) (each query's scores all grow by "
    "q . c: its softmax is unchanged), then queries are multiplied by s and keys divided by s, "
    "s = sqrt(mean |k + c| / mean |q|), so that both have the same mean norm (every q . k is "
    "unchanged). The points are q s and (k + c) / s, fitted on the set's tokens only."
)


@dataclass(frozen=True)
class Fit:
    """The map of one head on the set: the normalisation and the projection's axes."""

    shift: torch.Tensor  # (hs,) float64: c, added to every key
    scale: float  # s
    mean: torch.Tensor  # (hs,) float64: the normalised points' mean
    axes: torch.Tensor  # (2, hs) float64 unit rows (a zero row when hs is 1)
    explained: tuple[float, float]

    def normalise(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, hs) queries and keys -> q s and (k + c) / s, float64."""
        return q.double() * self.scale, (k.double() + self.shift) / self.scale

    def place(self, q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(n, hs) queries and keys -> their (n, 2) coordinates on this map."""
        qn, kn = self.normalise(q, k)
        return (qn - self.mean) @ self.axes.T, (kn - self.mean) @ self.axes.T


def normalisation(q: torch.Tensor, k: torch.Tensor) -> tuple[torch.Tensor, float]:
    """AttentionViz's key shift c and scale s of a head's queries and keys (n, hs)."""
    q64, k64 = q.double(), k.double()
    shift = q64.mean(0) - k64.mean(0)
    q_norm = float(torch.linalg.vector_norm(q64, dim=1).mean())
    k_norm = float(torch.linalg.vector_norm(k64 + shift, dim=1).mean())
    scale = math.sqrt(k_norm / q_norm) if q_norm > 0 and k_norm > 0 else 1.0
    return shift, scale


def fit_pca(q: torch.Tensor, k: torch.Tensor) -> Fit:
    """Normalise, then PCA of the queries and keys together (2 axes; ``trajectory_pca``: the
    covariance's eigenvectors in float64, each axis's largest loading positive)."""
    shift, scale = normalisation(q, k)
    half = Fit(shift, scale, torch.zeros_like(shift), torch.zeros(2, shift.numel()), (0.0, 0.0))
    qn, kn = half.normalise(q, k)
    pca = trajectory_pca(torch.cat([qn, kn])[None], k=2)  # (1, 2n, hs) float64
    axes = torch.zeros(2, shift.numel(), dtype=torch.float64)
    axes[: pca.axes.shape[0]] = pca.axes
    ratio = [float(x) for x in pca.explained_variance_ratio] + [0.0, 0.0]
    return Fit(shift, scale, pca.mean, axes, (ratio[0], ratio[1]))


def significant(x: np.ndarray, digits: int = 4) -> list[float]:
    """Each value rounded to ``digits`` significant digits."""
    x = np.asarray(x, dtype=np.float64)
    mag = np.floor(np.log10(np.abs(np.where(x == 0, 1.0, x))))
    factor = 10.0 ** (digits - 1 - mag)
    return (np.round(x * factor) / factor).tolist()


def as_float32(x: np.ndarray) -> list:
    """Each value as the float32 nearest it, unrounded beyond that, in nested lists of floats
    spelled with the float32's shortest digits (as the trace's JSON spells a float32: 0.9996,
    not 0.99959999322891235 nor, rounded to 3 decimals, 1.0). The page rounds them as a person
    reads them."""
    return orjson.loads(dumps(np.ascontiguousarray(x, dtype=np.float32)))


# ---- heads clustered -----------------------------------------------------------------------


def centered(gram: torch.Tensor) -> torch.Tensor:
    """The Gram matrix of the heads' patterns less their mean over heads, from the Gram matrix
    of the patterns (double centring: (I - 11'/n) G (I - 11'/n)). What every head shares (the
    weight each puts on [CLS] or [SEP], a causal model's first token) would otherwise make every
    pair alike, and average linkage would chain them into one cluster."""
    n = gram.shape[0]
    j = torch.eye(n, dtype=torch.float64) - 1.0 / n
    return j @ gram.double() @ j


def cosine(gram: torch.Tensor) -> np.ndarray:
    """(n, n) Gram matrix of the heads' flattened patterns -> their cosine similarities."""
    g = gram.double().numpy()
    d = np.sqrt(np.clip(np.diag(g), 1e-300, None))
    sim = np.clip(g / d[:, None] / d[None, :], -1.0, 1.0)
    np.fill_diagonal(sim, 1.0)
    return sim


def average_linkage(dist: np.ndarray) -> np.ndarray:
    """(n, n) symmetric distances -> (n - 1, 4) linkage: each row the two clusters merged
    (leaves 0 .. n-1, the i-th merge n + i; the smaller id first), their distance (the mean
    distance between their members) and the new cluster's size. The closest pair first; equal
    distances: the pair whose smaller, then larger, slot comes first. O(n^3), vectorised per
    merge (a few hundred heads)."""
    n = dist.shape[0]
    d = np.array(dist, dtype=np.float64)
    np.fill_diagonal(d, np.inf)
    ids = np.arange(n)
    size = np.ones(n)
    alive = np.ones(n, dtype=bool)
    upper = np.triu(np.ones((n, n), dtype=bool), 1)
    out = np.zeros((max(n - 1, 0), 4))
    for step in range(n - 1):
        masked = np.where(upper & alive[:, None] & alive[None, :], d, np.inf)
        flat = int(np.argmin(masked))  # the first of equal minima, row by row
        i, j = divmod(flat, n)  # i < j: slot i keeps the merged cluster
        a, b = sorted((int(ids[i]), int(ids[j])))
        out[step] = (a, b, d[i, j], size[i] + size[j])
        merged = (size[i] * d[i] + size[j] * d[j]) / (size[i] + size[j])
        d[i, :], d[:, i] = merged, merged
        d[i, i] = np.inf
        alive[j] = False
        size[i] += size[j]
        ids[i] = n + step
    return out


def leaf_order(merges: np.ndarray, n: int) -> list[int]:
    """The dendrogram's leaves left to right (scipy's ``leaves_list``)."""
    if n == 1:
        return [0]
    order: list[int] = []
    stack = [2 * n - 2]
    while stack:
        node = stack.pop()
        if node < n:
            order.append(node)
        else:
            a, b = merges[node - n, :2]
            stack += [int(b), int(a)]  # a is visited first
    return order


def cut(merges: np.ndarray, n: int, k: int, order: list[int]) -> list[int]:
    """Each leaf's cluster after the first n - k merges, numbered in order of first appearance
    along ``order`` (0 .. min(k, n) - 1)."""
    parent = list(range(2 * n))

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for step in range(max(0, n - k)):
        a, b = int(merges[step, 0]), int(merges[step, 1])
        parent[root(a)] = n + step
        parent[root(b)] = n + step
    names: dict[int, int] = {}
    labels = [0] * n
    for leaf in order:
        labels[leaf] = names.setdefault(root(leaf), len(names))
    return labels
