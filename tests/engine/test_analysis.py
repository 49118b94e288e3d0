import math

import pytest
import torch

from attnviz.engine.analysis import attention_entropy, pairwise_distances, trajectory_pca

G = torch.Generator().manual_seed(11)


def test_distances_are_euclidean_and_exactly_zero_on_the_diagonal():
    states = torch.randn(3, 6, 5, generator=G, dtype=torch.float64)
    dist = pairwise_distances(states)
    for layer in range(3):
        for i in range(6):
            assert dist[layer, i, i].item() == 0.0
            for j in range(6):
                want = math.dist(states[layer, i].tolist(), states[layer, j].tolist())
                assert dist[layer, i, j].item() == pytest.approx(want, abs=1e-14)


def test_entropy_closed_forms():
    uniform = torch.full((4, 4), 0.25, dtype=torch.float64)
    assert torch.allclose(
        attention_entropy(uniform), torch.full((4,), math.log(4), dtype=torch.float64)
    )
    one_hot = torch.eye(3, dtype=torch.float64)
    assert torch.equal(attention_entropy(one_hot), torch.zeros(3, dtype=torch.float64))
    causal = torch.tensor([[1.0, 0.0], [0.5, 0.5]], dtype=torch.float64)
    assert attention_entropy(causal).tolist() == pytest.approx([0.0, math.log(2)])


def test_pca_fits_all_layers_at_once():
    # Points in a 2-D plane of a 5-D space: two components explain everything.
    basis = torch.linalg.qr(torch.randn(5, 2, generator=G, dtype=torch.float64))[0].T  # (2, 5)
    coeffs = torch.randn(4, 7, 2, generator=G, dtype=torch.float64) * torch.tensor(
        [3.0, 1.0], dtype=torch.float64
    )
    offset = torch.randn(5, generator=G, dtype=torch.float64)
    states = coeffs @ basis + offset  # (4, 7, 5)
    pca = trajectory_pca(states)
    assert pca.axes.shape == (3, 5) and pca.coords.shape == (4, 7, 3)
    assert torch.allclose(
        pca.axes[:2] @ pca.axes[:2].T, torch.eye(2, dtype=torch.float64), atol=1e-12
    )
    assert pca.explained_variance_ratio[:2].sum().item() == pytest.approx(1.0, abs=1e-12)
    assert pca.explained_variance_ratio[2].item() == pytest.approx(0.0, abs=1e-12)
    assert pca.explained_variance_ratio[0] > pca.explained_variance_ratio[1]
    # Reconstruction from two components is exact, and the frames share one mean and one basis.
    recon = pca.coords[..., :2] @ pca.axes[:2] + pca.mean
    assert torch.allclose(recon, states, atol=1e-12)
    assert torch.allclose(pca.mean, states.reshape(-1, 5).mean(0), atol=1e-14)
    # Signs are fixed: the largest loading of each axis is positive.
    idx = pca.axes.abs().argmax(1)
    assert (pca.axes[torch.arange(2), idx[:2]] > 0).all()


def test_pca_in_fewer_dimensions_than_three():
    states = torch.randn(2, 3, 2, generator=G, dtype=torch.float64)
    pca = trajectory_pca(states)
    assert pca.coords.shape == (2, 3, 2)
    assert pca.explained_variance_ratio.sum().item() == pytest.approx(1.0)


def test_pca_of_a_collapsed_stack_is_all_zero_not_nan():
    states = torch.ones(3, 4, 6, dtype=torch.float64)
    pca = trajectory_pca(states)
    assert torch.isfinite(pca.coords).all() and torch.equal(
        pca.coords, torch.zeros(3, 4, 3, dtype=torch.float64)
    )
    assert torch.equal(pca.explained_variance_ratio, torch.zeros(3, dtype=torch.float64))


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 3, 2), (7, 40, 384), (3, 300, 64), (2, 9, 5000)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_distances_each_pair_once_are_those_of_every_pair(shape, dtype):
    """Each pair computed once and mirrored (in blocks of a few rows): the very numbers of all
    T x T differences summed, bit for bit, equal vectors exactly 0 apart."""
    states = torch.randn(*shape, generator=G, dtype=dtype) * 3
    states[:, -1] = states[:, 0]
    every = ((states[:, :, None, :] - states[:, None, :, :]) ** 2).sum(-1).sqrt()
    dist = pairwise_distances(states)
    assert torch.equal(dist, every)
    assert torch.equal(dist, dist.transpose(1, 2))
    assert (dist[:, -1, 0] == 0).all()
