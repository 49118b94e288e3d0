"""The training loop on the induction task: it learns, the same seed gives the same numbers, it
stops when told, and the default run forms the heads the task is about."""

from __future__ import annotations

import pytest
import torch

from attnviz.engine import capture
from attnviz.training.tasks import Induction
from attnviz.training.trainer import Architecture, Optimiser, train

TINY = Architecture(layers=2, heads=2, d_model=16)


def test_the_repeat_is_the_only_thing_the_loss_counts():
    task = Induction(min_len=5, max_len=5)
    b = task.batch(torch.Generator().manual_seed(0), 3)
    assert b.inputs.shape == b.targets.shape == b.mask.shape == (3, 9)
    full = torch.cat([b.inputs, b.targets[:, -1:]], dim=1)  # (3, 10): the string, twice
    assert torch.equal(full[:, :5], full[:, 5:])
    assert torch.equal(b.targets[:, :-1], b.inputs[:, 1:])
    assert b.mask[:, :5].sum() == 0 and bool(b.mask[:, 5:].all())
    # What the counted positions predict is the first copy again, from its second letter on.
    assert torch.equal(b.targets[:, 5:], b.inputs[:, 1:5])


def test_the_same_seed_gives_the_same_numbers_and_another_seed_others():
    runs = [train(Induction(), TINY, Optimiser(steps=15, seed=s)) for s in (7, 7, 8)]
    a, b, c = ([step.loss for step in r.history] for r in runs)
    assert a == b and a != c
    for name, w in runs[0].model.state_dict().items():
        assert torch.equal(w, runs[1].model.state_dict()[name]), name


@pytest.mark.slow
def test_it_learns():
    run = train(Induction(), TINY, Optimiser(steps=150, lr=1e-2))
    first = sum(s.loss for s in run.history[:10]) / 10
    last = sum(s.loss for s in run.history[-10:]) / 10
    assert first > 3.0  # about ln 26: guessing
    assert last < first - 0.25  # (a tiny model is still on the plateau before induction)
    assert all(len(s.grad_norms) == 2 and min(s.grad_norms) > 0 for s in run.history)


def test_a_run_computes_on_one_thread_and_gives_the_threads_back():
    """A run's many small steps on one torch thread (two spin against whatever else runs:
    see trainer.py), and the caller's thread count as it was afterwards, also after a failure."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        counts: list[int] = []
        train(Induction(), TINY, Optimiser(steps=3),
              on_step=lambda _: counts.append(torch.get_num_threads()))  # fmt: skip
        assert counts == [1, 1, 1] and torch.get_num_threads() == 2

        def fail(_):
            raise RuntimeError("stop")

        with pytest.raises(RuntimeError, match="stop"):
            train(Induction(), TINY, Optimiser(steps=3), on_step=fail)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_it_stops_when_told_and_reports_every_step():
    seen = []
    run = train(Induction(), TINY, Optimiser(steps=100), on_step=seen.append,
                should_stop=lambda: len(seen) >= 5)  # fmt: skip
    assert run.state == "cancelled"
    assert [s.step for s in run.history] == [1, 2, 3, 4, 5] and seen == run.history
    assert not any(p.requires_grad for p in run.model.parameters())


@pytest.mark.slow
def test_the_default_run_forms_an_induction_head(default_induction_run):
    """The task's claim: 2 layers x 4 heads, d = 64, RoPE, attention only; 800 steps (about
    10 s here). The repeat is then predicted, and a second-layer head attends from each letter
    of the repeat to the letter after its earlier occurrence."""
    task = Induction()
    run = default_induction_run
    assert sum(s.loss for s in run.history[-20:]) / 20 < 0.3
    n = 20
    half = torch.randint(0, 26, (64, n), generator=torch.Generator().manual_seed(99))
    with torch.no_grad(), capture(run.model) as cache:
        run.model(torch.cat([half, half], dim=1)[:, :-1])
    second = task.induction_score(cache["blocks.1.attn.hook_pattern"], n)
    first = task.induction_score(cache["blocks.0.attn.hook_pattern"], n)
    assert second.max() >= 0.7, second
    assert first.max() < 0.2, first  # the first layer alone cannot do it


@pytest.mark.slow
def test_checkpoints_hold_the_heldout_loss_and_every_heads_pattern_on_the_probe():
    task = Induction()
    seen = []
    run = train(task, TINY, Optimiser(steps=30), checkpoints=5, on_checkpoint=seen.append)
    assert [c.step for c in run.checkpoints] == [0, 1, 5, 11, 19, 30] and seen == run.checkpoints
    T = len(task.probe().ids)
    for c in run.checkpoints:
        assert c.pattern.shape == (2, 2, T, T)
        assert torch.allclose(c.pattern.sum(-1), torch.ones(2, 2, T))
        assert torch.all(c.pattern.triu(1) == 0)  # causal
    # The last one is the final model's own attention on the probe.
    with torch.no_grad(), capture(run.model) as cache:
        run.model(torch.tensor([task.probe().ids]))
    assert torch.equal(run.checkpoints[-1].pattern[1], cache["blocks.1.attn.hook_pattern"][0])
    # Measuring the held-out loss leaves the training data's order alone.
    plain = train(task, TINY, Optimiser(steps=30))
    assert [s.loss for s in plain.history] == [s.loss for s in run.history]
    assert run.checkpoints[-1].heldout < run.checkpoints[0].heldout


def test_a_cancelled_run_keeps_a_checkpoint_where_it_stopped():
    seen = []
    run = train(Induction(), TINY, Optimiser(steps=100), on_step=seen.append,
                should_stop=lambda: len(seen) >= 7, checkpoints=4)  # fmt: skip
    assert [c.step for c in run.checkpoints] == [0, 6, 7]
