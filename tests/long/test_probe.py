"""The needle-in-a-haystack probe: where the needle and its copy sit, and the retrieval score
(Wu et al. 2024) that finds the copying heads of Train mode's induction run (its second layer's)
and none in its first layer or in a random model of the same shape. The haystack stays within
the run's trained lengths (a repeat up to 24 letters back): past them RoPE's unseen distances
leave its heads unable to copy, which is the model's limit, not the probe's."""

from __future__ import annotations

import pytest
import torch

from attnviz.engine.init import standard_weights
from attnviz.engine.model import Transformer
from attnviz.long import Plan, fixed_blocks, run_long
from attnviz.long.probe import place, retrieval_scores

DEPTHS = (0.0, 0.5, 1.0)


def test_the_needle_sits_where_asked_and_its_copy_ends_the_text():
    n = place([10, 11, 12, 13], [1, 2, 3], 0.5, question=[7])
    assert n.ids == (10, 11, 1, 2, 3, 12, 13, 7, 1, 2, 3)
    assert (n.start, n.answer, n.length) == (2, 8, 3)
    assert list(n.queries) == [8, 9] and [n.copied(q) for q in n.queries] == [3, 4]
    assert place([5, 6], [1, 2], 0.0).start == 0 and place([5, 6], [1, 2], 1.0).start == 2
    with pytest.raises(ValueError, match="depth: 1.5 is not between 0 and 1"):
        place([5], [1, 2], 1.5)


def scores(model: Transformer, haystack: list[int], needle: list[int]) -> torch.Tensor:
    """(layers, heads) retrieval scores, the mean over the depths."""
    out = []
    for depth in DEPTHS:
        n = place(haystack, needle, depth)
        trace = run_long(model, torch.tensor(n.ids), Plan(fixed_blocks(len(n.ids))))
        out.append(retrieval_scores(trace, n))
    return torch.stack(out).mean(0)


@pytest.mark.slow
def test_the_probe_finds_the_induction_runs_copying_heads_and_none_at_random(
    default_induction_run,
):
    model = default_induction_run.model.eval()
    g = torch.Generator().manual_seed(5)
    needle = torch.randperm(10, generator=g).tolist()  # letters a to j, each once
    haystack = (10 + torch.randint(0, 16, (16,), generator=g)).tolist()  # k to z
    trained = scores(model, haystack, needle)
    assert trained[1].max() >= 0.7, trained  # a second-layer head copies from the needle
    assert trained[0].max() <= 0.2, trained  # the first layer alone cannot
    random = Transformer(model.cfg)
    random.load_state_dict(standard_weights(model.cfg, seed=1))
    assert scores(random.eval(), haystack, needle).max() <= 0.3
