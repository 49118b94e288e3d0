"""The encoder-decoder tasks: reverse and copy. Their batches in closed form, the alignment
measure on patterns made by hand, and the default runs: they learn the task, and their
cross-attention becomes the (anti-)diagonal."""

from __future__ import annotations

import pytest
import torch

from attnviz.training.catalog import TASKS
from attnviz.training.tasks import END, Reverse
from attnviz.training.trainer import Architecture, Optimiser, train


@pytest.mark.parametrize("copy", [False, True])
def test_a_batch_is_source_then_the_answer_shifted_by_the_start_mark(copy):
    task = Reverse(copy=copy)
    b = task.batch(torch.Generator().manual_seed(5), 16)
    assert b.source is not None
    n = b.source.shape[1] - 1
    assert task.min_len <= n <= task.max_len
    end = task.vocab.encode(END)[0]
    letters = b.source[:, :n]
    assert (letters != end).all() and (b.source[:, n] == end).all()
    answer = letters if copy else letters.flip(1)
    assert torch.equal(b.targets[:, :n], answer) and (b.targets[:, n] == end).all()
    assert torch.equal(b.inputs[:, 1:], b.targets[:, :-1]) and (b.inputs[:, 0] == end).all()
    assert b.mask.all()
    # The held-out batch is fixed, and never drawn from the training generator.
    assert torch.equal(task.heldout(8).source, task.heldout(8).source)


def test_alignment_is_one_on_the_anti_diagonal_and_small_when_uniform():
    task, n = Reverse(), 10
    rows = torch.arange(n + 1)
    exact = torch.zeros(1, 2, n + 1, n + 1)
    exact[0, 0, rows[:n], n - 1 - rows[:n]] = 1.0  # head 0: the letter each row writes
    shifted = (n - rows).clamp(max=n)  # head 1: one column right, the end mark for row 0
    exact[0, 1, rows, shifted] = 1.0
    exact[0, :, n, n] = 1.0  # the row writing the end mark
    assert task.alignment(exact, n).tolist() == [1.0, 1.0]
    uniform = torch.full((1, 2, n + 1, n + 1), 1 / (n + 1))
    assert torch.allclose(task.alignment(uniform, n), torch.full((2,), 1 / (n + 1)))
    diagonal = torch.eye(n + 1)[None, None].expand(1, 2, -1, -1)
    assert task.alignment(diagonal, n).max() < 0.3  # a diagonal is not an anti-diagonal
    assert Reverse(copy=True).alignment(diagonal, n).tolist() == [1.0, 1.0]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reverse", "copy"])
def test_the_default_run_learns_the_task_and_aligns_its_cross_attention(name):
    entry = TASKS[name]
    task = entry.make(None, 0)
    assert isinstance(task, Reverse)
    run = train(task, entry.arch, entry.opt, checkpoints=4)
    first, last = run.checkpoints[0], run.checkpoints[-1]
    assert first.heldout > 3.0 and last.heldout < 0.25, [c.heldout for c in run.checkpoints]
    n = len(task.probe_word)
    assert last.cross is not None and first.cross is not None
    before = float(task.alignment(first.cross, n).max())
    after = float(task.alignment(last.cross, n).max())
    assert before < 0.3 < 0.7 <= after, (before, after)
    # It writes the probe's answer, and another string's.
    want = task.probe_word if task.copy else task.probe_word[::-1]
    source = task.probe().source
    assert source is not None and task.vocab.decode(task.decode(run.model, source)) == want
    assert task.vocab.decode(task.decode(run.model, task.vocab.encode("zebra") + [0])) == (
        "zebra" if task.copy else "arbez"
    )


def test_same_seed_same_run_and_the_encoder_trains_too():
    task = Reverse()
    arch, opt = Architecture(layers=1, heads=2, d_model=16), Optimiser(steps=5, seed=4)
    torch.set_num_threads(1)
    try:
        a, b = train(task, arch, opt), train(task, arch, opt)
    finally:
        torch.set_num_threads(2)
    assert [s.loss for s in a.history] == [s.loss for s in b.history]
    assert all(len(s.grad_norms) == 2 and min(s.grad_norms) > 0 for s in a.history)
    assert a.cfg.encoder_layers == 1 and not a.cfg.encoder().causal
