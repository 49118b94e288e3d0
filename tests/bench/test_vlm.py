"""``attnviz bench --vlm`` runs end to end at a tiny shape (figures only: nothing about them is
asserted but that they were taken), and its folder of SmolVLM-256M's shape has that model's
size (transformers' count of the config, on the meta device)."""

from __future__ import annotations

import json

import pytest

from attnviz.bench import vlm as bench
from attnviz.bench.vlm_shape import SMOLVLM_256M, TINY, config, processor

# What transformers counts of those sizes: the 256M of the model's name (untied unembedding).
SMOLVLM_256M_PARAMETERS = 256_484_928


def test_the_shape_is_smolvlm_256m():
    import torch
    from transformers import Idefics3ForConditionalGeneration

    made = processor(TINY)  # the tokenizer's ids only: the sizes are the shape's
    with torch.device("meta"):
        model = Idefics3ForConditionalGeneration(config(SMOLVLM_256M, made.tokenizer))
    assert model.num_parameters() == SMOLVLM_256M_PARAMETERS
    assert SMOLVLM_256M.image_seq_len == 64  # 32 x 32 patches, 4 x 4 a token


@pytest.mark.slow
def test_the_bench_runs_end_to_end_and_prints_its_figures(tmp_path):
    report = bench.run([8], shape=TINY, image=48, folder=tmp_path / TINY.name)
    assert report.error is None, report.error
    assert report.first_request_ms is not None and report.first_request_ms > 0
    assert len(report.hf_forward_ms) == 2 and report.ratio is not None
    assert report.image_tokens == TINY.image_seq_len  # one 64 px view of 2 x 2 merged tokens
    assert report.peak_rss_bytes >= report.loaded_rss_bytes > 0
    table = bench.table(report)
    assert "| the page's first request with the picture |" in table
    assert f"| its peak (VmHWM) | {report.peak_rss_bytes / 1e9:.2f} GB |" in table
    assert json.loads(bench.as_json(report))["image_tokens"] == TINY.image_seq_len
