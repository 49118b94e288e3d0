"""The attention rule a trace's meta states (capture/rules.py attention_meta): the scale a
person reads, and the exact one the numbers use."""

from __future__ import annotations

import dataclasses

import pytest

from attnviz.capture.rules import attention_meta
from attnviz.engine.config import TransformerConfig


@pytest.mark.parametrize(
    ("scale", "label"),
    [(1 / 24**0.5, "÷ √24"), (1 / 256**0.5, "÷ √256"), (0.08838834764831845 * 1.1, "× 0.0972")],
)
def test_the_scale_reads_as_a_root_or_three_significant_digits_and_stays_exact(scale, label):
    cfg = dataclasses.replace(TransformerConfig(d_model=8, n_heads=2), attn_scale=scale)
    rule = attention_meta(cfg)["attention"]
    assert rule["scale_label"] == label
    assert rule["scale"] == scale  # the exact value, for the numbers
