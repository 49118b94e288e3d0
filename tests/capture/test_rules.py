"""The attention rule a trace's meta states (capture/rules.py attention_meta): the scale a
person reads, and the exact one the numbers use."""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch

from attnviz.capture.rules import attention_meta
from attnviz.engine.config import TransformerConfig
from attnviz.engine.layout import hidden_keys


@pytest.mark.parametrize(
    ("scale", "label"),
    [(1 / 24**0.5, "÷ √24"), (1 / 256**0.5, "÷ √256"), (0.08838834764831845 * 1.1, "× 0.0972")],
)
def test_the_scale_reads_as_a_root_or_three_significant_digits_and_stays_exact(scale, label):
    cfg = dataclasses.replace(TransformerConfig(d_model=8, n_heads=2), attn_scale=scale)
    rule = attention_meta(cfg)["attention"]
    assert rule["scale_label"] == label
    assert rule["scale"] == scale  # the exact value, for the numbers


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("window", [2, 9, 1500])
def test_a_windows_words_say_the_keys_its_mask_lets_a_query_see(causal, window):
    """A sliding layer's note (issue 42) counts the keys the engine's mask lets a query far from
    either end see: the last w, itself included, in a causal model; w - 1 on each side, and
    itself, in a bidirectional one (ModernBERT's local layers), never "the last w"."""
    cfg = TransformerConfig(d_model=8, n_heads=2, causal=causal, sliding_window=window,
                            layer_types=("sliding_attention", "full_attention"), n_layers=2)  # fmt: skip
    rule = attention_meta(cfg)["attention"]
    assert rule["windows"] == [window, None] and rule["window_notes"][1] is None
    note = rule["window_notes"][0]
    T = 2 * window + 3
    i = window + 1  # a query with w keys or more on each side
    seen = (~hidden_keys(T, T, 0, causal, window, torch.device("cpu"))[i]).nonzero()[:, 0]
    count = re.search(r"only the (?:last )?([\d,]+) tokens?", note)
    assert count is not None, note
    n = int(count.group(1).replace(",", ""))
    if causal:
        assert "the last" in note and "itself included" in note
        assert seen.tolist() == list(range(i - n + 1, i + 1))
    else:
        assert "on each side of it, and itself" in note and "last" not in note
        assert seen.tolist() == list(range(i - n, i + n + 1))
