"""What the training service sends to clients, against closed forms: a run's thumbnails read back
within one 8-bit step of the weights, the loss columns are the steps', and an encoder-decoder's
probe is its word reversed (or copied) then the end mark."""

from __future__ import annotations

import base64
import dataclasses

import numpy as np
import pytest
import torch

from attnviz.engine import Transformer
from attnviz.services.training.report import ask, columns, thumbs, writes
from attnviz.services.training.runs import param_count
from attnviz.training.tasks import END, Induction, Reverse
from attnviz.training.trainer import Architecture, Step, model_config


def test_thumbnails_read_back_within_one_step_of_each_heads_peak():
    torch.manual_seed(0)
    pattern = torch.softmax(torch.randn(2, 3, 5, 5), dim=-1)  # (L, nh, T, T)
    t = thumbs(pattern)
    assert t.shape == [2, 3, 5, 5]
    values = np.frombuffer(base64.b64decode(t.values), dtype=np.uint8).reshape(t.shape)
    scale = np.array(t.scale)
    assert np.allclose(scale, pattern.amax(dim=(-2, -1)).numpy(), atol=1e-6)
    assert (values.reshape(2, 3, -1).max(axis=-1) == 255).all()  # each head's peak is 255
    back = values * scale[..., None, None] / 255
    assert np.abs(back - pattern.numpy()).max() <= scale.max() / 255 / 2 + 1e-6


def test_columns_are_the_steps_rounded():
    steps = [Step(1, 3.2958368, [0.51234567, 1.0], 0.01234), Step(2, 2.9, [0.4, 0.9], 0.02)]
    c = columns(steps)
    assert c == {
        "step": [1, 2],
        "loss": [3.295837, 2.9],
        "grad_norms": [[0.512346, 1.0], [0.4, 0.9]],
        "seconds": [0.0123, 0.02],
    }


@pytest.mark.parametrize("copy", [False, True])
def test_an_encoder_decoders_probe_writes_its_word_then_the_end_mark(copy):
    task = Reverse(copy=copy)
    word = task.probe_word[: task.max_len]
    assert writes(task) == list(word if copy else word[::-1]) + [END]
    a = ask(task)
    assert a is not None
    assert (a.alphabet, a.min_len, a.max_len) == (task.vocab.chars[1:], task.min_len, task.max_len)


def test_a_next_token_task_has_nothing_to_ask_or_write():
    assert ask(Induction()) is None and writes(Induction()) is None


@pytest.mark.parametrize(
    ("task", "arch"),
    [
        (Induction(), Architecture()),
        (Induction(), Architecture(layers=1, heads=2, d_model=32, ffn=True, positional="learned")),
        (Reverse(), Architecture(norm="post")),
    ],
)
def test_the_parameter_count_is_a_built_models(task, arch):
    cfg = model_config(arch, task.vocab.size, task.max_tokens, task.encoder_decoder)
    built = sum(p.numel() for p in Transformer(cfg).parameters())
    assert param_count(arch, task) == built
    assert param_count(dataclasses.replace(arch, d_model=arch.d_model * 2), task) > built
