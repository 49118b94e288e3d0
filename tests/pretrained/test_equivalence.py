"""Our engine with converted weights equals Hugging Face transformers, the reference.

For MiniLM (a real BERT checkpoint) on varied sentences, and for a small random GPT-2 the tests
make themselves: attentions and hidden states within 1e-4, the same token ids as Hugging Face's
tokenizer, and scores that are q . k / sqrt(d_head).
"""

from __future__ import annotations

import math

import pytest
import torch

from attnviz.capture import capture_trace
from tests.support.models import recomputed

TOL = 1e-4
SENTENCES = [
    "I sat on the river bank",
    "I went to the investment bank",
    "The animal didn't cross the street because it was too tired",
    "Unbelievably, the naïve café's crème brûlée cost €4.50 — 3x more!",
    "a",
    "Attention is all you need. " * 12,  # ~60 tokens: positions well past the first few
]
# 512 tokens, MiniLM's every position: [CLS] + 510 + [SEP].
LONG = " ".join(f"{w}" for w in ("river bank money tide loan " * 102).split())


def _ours(model, ids: list[int]) -> dict:
    """The trace as attnviz serves it once cached: weights recomputed from q and k."""
    return recomputed(capture_trace(model.model, torch.tensor([ids]), field="text"))


def _theirs(hf, ids: list[int]):
    with torch.no_grad():
        return hf(torch.tensor([ids]), output_attentions=True, output_hidden_states=True)


def _compare(ours: dict, theirs) -> None:
    att = ours["attentions"]  # (L, nh, T, T)
    ref_att = torch.stack([a[0] for a in theirs.attentions])
    assert att.shape == ref_att.shape
    assert (att - ref_att).abs().max().item() < TOL
    hid = ours["hidden_states"]  # (L+1, T, C)
    ref_hid = torch.stack([h[0] for h in theirs.hidden_states])
    assert hid.shape == ref_hid.shape
    assert (hid - ref_hid).abs().max().item() < TOL


@pytest.mark.parametrize("text", SENTENCES)
def test_minilm_equals_transformers(minilm, hf_bert, minilm_dir, text):
    from transformers import AutoTokenizer

    toks = minilm.tokenizer(text)
    assert toks.ids == AutoTokenizer.from_pretrained(minilm_dir)(text)["input_ids"]
    _compare(_ours(minilm, toks.ids), _theirs(hf_bert, toks.ids))


@pytest.mark.slow
def test_minilm_equals_transformers_at_512_tokens(minilm, hf_bert):
    ids = minilm.tokenizer(LONG).ids
    assert len(ids) == 512 == minilm.cfg.n_ctx
    _compare(_ours(minilm, ids), _theirs(hf_bert, ids))


@pytest.mark.parametrize("text", SENTENCES)
def test_tiny_gpt2_equals_transformers(tiny_gpt2, hf_gpt2, text):
    toks = tiny_gpt2.tokenizer(text)
    _compare(_ours(tiny_gpt2, toks.ids), _theirs(hf_gpt2, toks.ids))


def test_minilm_last_hidden_state_is_what_sentence_transformers_pools(minilm, hf_bert):
    """The model's output itself (not only per-layer states) matches: last_hidden_state."""
    ids = minilm.tokenizer(SENTENCES[2]).ids
    ours = _ours(minilm, ids)["hidden_states"][-1]
    assert (ours - _theirs(hf_bert, ids).last_hidden_state[0]).abs().max().item() < TOL


@pytest.mark.parametrize("which", ["minilm", "tiny_gpt2"])
def test_scores_are_scaled_dot_products_and_softmax_gives_the_pattern(request, which):
    model = request.getfixturevalue(which)
    trace = _ours(model, model.tokenizer(SENTENCES[2]).ids)
    q, k = trace["queries"], trace["keys"]  # (L, nh, T, hs)
    hs = q.shape[-1]
    expected = q @ k.transpose(-2, -1) / math.sqrt(hs)  # (L, nh, T, T)
    scores = trace["scores"]
    T = scores.shape[-1]
    if model.cfg.causal:
        future = torch.ones(T, T, dtype=torch.bool).triu(1)
        assert scores[..., future].isneginf().all()  # masked: -inf (null in the JSON trace)
        assert torch.isfinite(scores[..., ~future]).all()
        expected = expected.masked_fill(future, -math.inf)
    visible = torch.isfinite(expected)
    assert (scores[visible] - expected[visible]).abs().max().item() < TOL
    assert (torch.softmax(scores, -1) - trace["attentions"]).abs().max().item() < 1e-6


def test_bert_and_gpt2_hook_names_are_pinned(minilm, tiny_gpt2):
    from attnviz.engine import hook_points

    bert = [n for n in hook_points(minilm.model) if not n.startswith("blocks.")]
    assert bert == ["hook_embed", "hook_type_embed", "hook_pos_embed", "ln_embed.hook_normalized"]
    gpt2 = [n for n in hook_points(tiny_gpt2.model) if not n.startswith("blocks.")]
    assert gpt2 == ["hook_embed", "hook_pos_embed", "ln_final.hook_normalized", "hook_logits"]
    block = [
        n.removeprefix("blocks.0.") for n in hook_points(minilm.model) if n.startswith("blocks.0.")
    ]
    assert block == [
        "hook_resid_pre",
        "ln1.hook_normalized",
        "attn.hook_q",
        "attn.hook_k",
        "attn.hook_v",
        "attn.hook_scores",
        "attn.hook_pattern",
        "attn.hook_z",
        "hook_attn_out",
        "hook_resid_mid",
        "ln2.hook_normalized",
        "mlp.hook_pre",
        "mlp.hook_post",
        "hook_mlp_out",
        "hook_resid_post",
    ]


@pytest.mark.parametrize("which", ["minilm", "tiny_gpt2"])
def test_every_hook_fires_with_its_declared_shape(request, which):
    from attnviz.engine import capture, hook_points

    m = request.getfixturevalue(which)
    ids = m.tokenizer(SENTENCES[0]).ids
    cfg = m.cfg
    sizes = {
        "B": 1,
        "T": len(ids),
        "C": cfg.d_model,
        "nh": cfg.n_heads,
        "hs": cfg.d_head,
        "H": cfg.hidden,
        "V": cfg.vocab_size,
    }
    with torch.inference_mode(), capture(m.model) as cache:
        out = m.model(torch.tensor([ids]))
        if cfg.unembed:
            m.model.logits(out)
    for name, point in hook_points(m.model).items():
        assert tuple(cache[name].shape) == tuple(sizes[a] for a in point.shape.split()), name
