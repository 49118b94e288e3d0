"""``attnviz.long_text``: a long text read from Python without a tokens x tokens matrix, whose
windows, rows and top keys are the trace's attentions (today's path) where both run, for a
fused model (Llama, GQA) and a tiled one (Mistral's sliding window); refusals name the field."""

from __future__ import annotations

import numpy as np
import pytest

import attnviz
from tests.support.checkpoints import make_tiny_llama

pytestmark = pytest.mark.slow  # a model folder written, then loaded
WORDS = "the cat sat on a mat and then it ran off to see the dog who was asleep by the door "


@pytest.fixture(scope="module", params=["llama-gqa", "mistral"])
def folder(request, tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("long") / f"long-{request.param}",
                           request.param, n_ctx=4096)  # fmt: skip


def test_a_long_text_reads_what_the_trace_reads(folder):
    text = WORDS * 6
    doc = attnviz.long_text(text, model=str(folder), blocks=8, local=4)
    trace = attnviz.trace(model=str(folder), text=text, fields="attentions")
    att = trace["attentions"]  # (layers, heads, n, n)
    n = att.shape[-1]
    assert len(doc.tokens) == n and doc.layers == att.shape[0] and doc.heads == att.shape[1]
    assert doc.tokens == trace.tokens
    for layer in range(doc.layers):
        for head in range(doc.heads):
            w = doc.window(layer, head, (n - 40, n), (0, n))
            np.testing.assert_allclose(w, att[layer, head, n - 40 :], atol=1e-5)
        np.testing.assert_allclose(doc.row(layer, n - 1), att[layer, :, n - 1], atol=1e-5)
        weights, keys = doc.top_k(layer, n - 1, 16)
        want = -np.sort(-att[layer, :, n - 1], axis=-1)[:, :16]
        np.testing.assert_allclose(weights, want, atol=1e-5)
        p = att[layer].astype(np.float64)
        entropy = -(p * np.log(np.where(p > 0, p, 1))).sum(-1)
        np.testing.assert_allclose(doc.entropy(layer), entropy, atol=1e-4)
        np.testing.assert_allclose(doc.sink(layer), att[layer, :, :, 0], atol=1e-5)
        sums = np.zeros((len(doc.blocks), len(doc.blocks)))
        for i, (a, b) in enumerate(doc.blocks):
            for j, (c, d) in enumerate(doc.blocks):
                sums[i, j] = att[layer, 1, a:b, c:d].sum()
        np.testing.assert_allclose(doc.block_map(layer, 1), sums, atol=1e-4)
    scores = doc.head_scores()
    assert scores["sink"].shape == scores["far"].shape == (doc.layers, doc.heads)


def test_a_text_past_eager_reach_and_the_refusals(folder):
    doc = attnviz.long_text(WORDS * 60, model=str(folder), keep="float16")
    n = len(doc.tokens)
    assert n > 2000 and doc.blocks[0] == (0, doc.blocks[0][1]) and doc.blocks[-1][1] == n
    row = doc.row(1, n - 1)
    np.testing.assert_allclose(row.sum(-1), 1, atol=1e-3)  # float16 q, k: near, not exact
    with pytest.raises(attnviz.TraceError, match="layer: 5 is not one of 0 to 1"):
        doc.row(5, 0)
    with pytest.raises(attnviz.TraceError, match=rf"range \(0, {n + 1}\) is not within"):
        doc.window(0, 0, (0, n + 1), (0, 4))
    with pytest.raises(attnviz.TraceError, match="head: 9 is not one of 0 to 3"):
        doc.block_map(0, 9)
    with pytest.raises(attnviz.TraceError, match="keep: 'int8' is not one of float32, float16"):
        attnviz.long_text("a cat", model=str(folder), keep="int8")
    with pytest.raises(attnviz.TraceError, match="exceed model long-.*'s 4,096 positions"):
        attnviz.long_text(WORDS * 300, model=str(folder))
    with pytest.raises(attnviz.TraceError, match="model: all-MiniLM-L6-v2 is not a decoder"):
        attnviz.long_text("a cat", model="all-MiniLM-L6-v2")
