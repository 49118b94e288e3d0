"""The measures shared by the training service, the ablation presets and the bench: closed forms
on patterns built by hand, and one number whichever of them asks."""

from types import SimpleNamespace

import pytest
import torch

from attnviz.engine import Transformer
from attnviz.training import ablations, measures
from attnviz.training.tasks import Induction
from attnviz.training.trainer import model_config

N = 6  # letters per half of a repeat


def _causal_uniform(t: int) -> torch.Tensor:
    """Each query spreads its weight evenly over itself and the keys before it: (t, t)."""
    mask = torch.tril(torch.ones(t, t))
    return mask / mask.sum(-1, keepdim=True)


def _previous(t: int) -> torch.Tensor:
    """Each query after the first puts all its weight on the token before it: (t, t)."""
    p = torch.zeros(t, t)
    p[0, 0] = 1.0
    p[torch.arange(1, t), torch.arange(t - 1)] = 1.0
    return p


def _induction(t: int, n: int) -> torch.Tensor:
    """Each query of the repeat on the token after its earlier occurrence, the rest on itself."""
    p = torch.eye(t)
    q = torch.arange(n, 2 * n - 1)
    p[q] = 0.0
    p[q, q - n + 1] = 1.0
    return p


@pytest.fixture
def hand_made(monkeypatch):
    """Two layers of two heads whose patterns are the shapes above, whatever the inputs."""
    t = 2 * N - 1

    def patterns(model, inputs):
        b = inputs.shape[0]
        layer0 = torch.stack([_previous(t), _causal_uniform(t)])  # (2, t, t)
        layer1 = torch.stack([_causal_uniform(t), _induction(t, N)])
        return [x.expand(b, -1, -1, -1) for x in (layer0, layer1)]

    monkeypatch.setattr(measures, "patterns", patterns)
    return SimpleNamespace(param_device=torch.device("cpu"))


def test_closed_forms(hand_made):
    prev = measures.previous_token_by_head(hand_made, N, 26)
    t = 2 * N - 1
    uniform_prev = sum(1 / (q + 1) for q in range(1, t)) / (t - 1)  # weight 1/(q+1) on q-1
    assert prev.flatten().tolist() == pytest.approx([1.0, uniform_prev, uniform_prev, 0.0])
    ind = measures.induction_by_head(hand_made, Induction(), N)
    uniform_ind = sum(1 / (q + 1) for q in range(N, 2 * N - 1)) / (N - 1)
    assert ind.flatten().tolist() == pytest.approx([0.0, uniform_ind, uniform_ind, 1.0])
    assert measures.rounded(ind, 2) == [[0.0, round(uniform_ind, 2)], [round(uniform_ind, 2), 1.0]]


def test_one_number_whichever_asks():
    """The ablation claims read the same measure as a finished run's reported scores."""
    task = Induction()
    torch.manual_seed(0)
    model = Transformer(model_config(_arch(), task.vocab.size, task.max_tokens))
    run = SimpleNamespace(model=model)
    scores = measures.induction_by_head(model, task, 12)
    prev = measures.previous_token_by_head(model, 12, ablations.LETTERS)
    for layer in range(model.cfg.n_layers):
        assert ablations.induction_score(task, run, 12, layer) == scores[layer].max().item()
        assert ablations.previous_token_score(run, 12, layer) == prev[layer].max().item()
    assert 0 < scores.max().item() < 1


def _arch():
    from attnviz.training.catalog import TASKS

    return TASKS["induction"].arch
