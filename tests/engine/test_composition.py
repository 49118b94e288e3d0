"""Composition scores (engine/composition.py) against TransformerLens 4.3, the development-only
oracle: its TransformerBridge booted from the same Hugging Face model object, with
``enable_compatibility_mode()`` (its default weight processing), then
``all_composition_scores("Q" | "K" | "V")``, equal within 1e-6 (float32: the largest difference
seen is 1.5e-7) on tiny random checkpoints of every norm the engine has (GPT-2 and GPT-NeoX's
pre-norm LayerNorm, Llama, Gemma's 1 + w, Qwen3's q/k norms, Phi-3's RMSNorm, OLMo 2's output
norms, BERT's post-norm), grouped-query ones among them; without that processing the oracle's
numbers differ, so the processing is what makes them agree. Closed forms: hand-set heads whose
scores are known, with a norm's scale folded (RMSNorm w, Gemma's 1 + w)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.composition import KINDS, composition_scores
from attnviz.pretrained.registry import load_model
from tests.support.checkpoints import (
    make_tiny_bert_mlm,
    make_tiny_encoder,
    make_tiny_gpt2,
    make_tiny_llama,
)
from tests.support.checkpoints_decoders import make_decoder
from tests.support.checkpoints_gemma import make_tiny_gemma, make_tiny_neox

CPU = torch.device("cpu")
TOL = 1e-6


# Each family's tiny checkpoint, and the norm it brings.
MAKERS = {
    "gpt2": lambda f: make_tiny_gpt2(f, seed=5),  # pre-norm LayerNorm: folded and centred
    "llama-gqa": lambda f: make_tiny_llama(f, "llama-gqa", seed=6),  # RMSNorm, 2 kv heads
    "gemma2": lambda f: make_tiny_gemma(f, "gemma2", seed=7),  # 1 + w, output norms
    "pythia": lambda f: make_tiny_neox(f, "pythia", seed=8),  # LayerNorm, parallel blocks
    "qwen3": lambda f: make_decoder(f, "qwen3", seed=9),  # q/k norms per head
    "olmo2": lambda f: make_decoder(f, "olmo2", seed=10),  # no norm before the attention
    "phi3": lambda f: make_decoder(f, "phi3-4k", seed=11),
    "bert": lambda f: make_tiny_bert_mlm(f, seed=12),  # post-norm: W_O centred only
}


def bridge(folder: Path, processing: bool = True):
    """TransformerLens's bridge of the folder's transformers model, in compatibility mode."""
    from transformer_lens.model_bridge import TransformerBridge
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForMaskedLM,
        PreTrainedTokenizerFast,
    )

    masked = "Bert" in (folder / "config.json").read_text()
    auto = AutoModelForMaskedLM if masked else AutoModelForCausalLM
    hf = auto.from_pretrained(folder, attn_implementation="eager").eval()
    tok = PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    b = TransformerBridge.boot_transformers(str(folder), hf_model=hf, tokenizer=tok, device="cpu")
    b.enable_compatibility_mode(disable_warnings=True, no_processing=not processing)
    return b


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("composition")
    return {name: make(root / name) for name, make in MAKERS.items()}


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("family", list(MAKERS))
def test_equal_to_transformerlens_all_composition_scores(folders, family):
    m = load_model(folders[family], CPU)
    assert m.backend == "native"
    ours = composition_scores(m.model)
    b = bridge(folders[family])
    L, H = m.cfg.n_layers, m.cfg.n_heads
    assert (ours.layers, ours.heads) == (L, H)
    later = torch.arange(L)[:, None, None, None] < torch.arange(L)[None, None, :, None]
    later = later.expand(L, H, L, H)  # [la, ha, lb, hb]: la < lb
    tl = b.all_composition_scores("Q")
    assert [n.replace(".", "") for n in ours.names] == tl.head_labels
    for kind in KINDS:
        theirs = b.all_composition_scores(kind.upper()).scores.detach()
        got = ours.scores[kind]
        assert got.shape == theirs.shape == (L, H, L, H)
        assert got[~later].isnan().all() and (theirs[~later] == 0).all()
        assert (got[later] - theirs[later]).abs().max() < TOL, kind
        assert ((got[later] > 0) & (got[later] < 1)).all()
    # Without TransformerLens's processing its scores are others: the processing is what agrees
    # (OLMo 2 has no norm before its attention, nothing to process; BERT's centring is small).
    if family in ("gpt2", "llama-gqa", "gemma2", "pythia", "qwen3", "phi3"):
        raw = bridge(folders[family], processing=False)
        theirs = raw.all_composition_scores("Q").scores.detach()
        assert (ours.scores["q"][later] - theirs[later]).abs().max() > 1e-3


def hand_set(norm_w: tuple[float, ...] | None = None, offset: float = 0.0) -> Transformer:
    """Two one-head layers, d_model 4, head size 1, weights set by hand (e_i the axes):
    head A (layer 0) reads e0 and writes e1 (W_V = e0, W_O = e1^T); head B (layer 1) has
    W_Q = (e1 + e3) / sqrt 2, W_K = e2, W_V = cos t e1 + sin t e2, W_O = e0^T. With
    ``norm_w``, an RMSNorm before each attention scaling by (``offset`` + w)."""
    cfg = TransformerConfig(
        d_model=4, n_layers=2, n_heads=1, head_dim=1,
        **({"norm": "pre", "norm_type": "rms", "ln_affine": True, "ln_offset": offset}
           if norm_w is not None else {}),
    )  # fmt: skip
    model = Transformer(cfg)
    e = torch.eye(4)
    t = 0.3
    a, b = model.blocks[0], model.blocks[1]
    with torch.no_grad():
        a.attn.W_V.copy_(e[:, [0]])
        a.attn.W_O.copy_(e[[1]])
        b.attn.W_Q.copy_(((e[:, 1] + e[:, 3]) / math.sqrt(2))[:, None])
        b.attn.W_K.copy_(e[:, [2]])
        b.attn.W_V.copy_((math.cos(t) * e[:, 1] + math.sin(t) * e[:, 2])[:, None])
        b.attn.W_O.copy_(e[[0]])
        if norm_w is not None:
            for block in (a, b):
                block.ln1.w.copy_(torch.tensor(norm_w))
    return model


def test_closed_form_of_two_hand_set_heads():
    """OV^A = e0 e1^T. Q: OV^A W_Q W_K^T = e0 e1^T (e1 + e3) e2^T / sqrt 2, norm 1 / sqrt 2 of
    norms 1 and 1. K: OV^A W_K W_Q^T = e0 (e1 . e2) ... = 0. V: OV^A OV^B = cos t e0 e0^T."""
    c = composition_scores(hand_set())
    assert c.names == ["L0.H0", "L1.H0"]
    q, k, v = (c.scores[kind][0, 0, 1, 0].item() for kind in KINDS)
    assert q == pytest.approx(1 / math.sqrt(2), abs=1e-7)
    assert k == pytest.approx(0.0, abs=1e-7)
    assert v == pytest.approx(math.cos(0.3), abs=1e-7)
    for kind in KINDS:  # no pair of a head with itself or a later one
        s = c.scores[kind]
        assert s[0, 0, 0, 0].isnan() and s[1, 0, 0, 0].isnan() and s[1, 0, 1, 0].isnan()
    assert "raw weights" in c.processing


@pytest.mark.parametrize(
    ("w", "offset"), [((1.0, 2.0, 1.0, 1.0), 0.0), ((0.0, 1.0, 0.0, 0.0), 1.0)]
)
def test_closed_form_with_the_norm_scale_folded(w, offset):
    """An RMSNorm scaling e1 by 2 (w = 2, or Gemma's 1 + w with w = 1) before each attention:
    B's folded W_Q = (2 e1 + e3) / sqrt 2, so Q = 2 / sqrt 5; its W_V = 2 cos t e1 + sin t e2,
    so V = 2 cos t / sqrt(4 cos^2 t + sin^2 t); A's W_V = e0 is untouched; K stays 0."""
    c = composition_scores(hand_set(w, offset))
    q, k, v = (c.scores[kind][0, 0, 1, 0].item() for kind in KINDS)
    t = 0.3
    assert q == pytest.approx(2 / math.sqrt(5), abs=1e-6)
    assert k == pytest.approx(0.0, abs=1e-7)
    assert v == pytest.approx(2 * math.cos(t) / math.sqrt(4 * math.cos(t) ** 2 + math.sin(t) ** 2),
                              abs=1e-6)  # fmt: skip
    assert "RMSNorm" in c.processing and ("1 + w" in c.processing) == bool(offset)


@pytest.mark.parametrize("style", ["gemma", "gemma3"])
def test_gemma_offset_and_grouped_query_heads_run_and_are_finite(tmp_path, style):
    m = load_model(make_tiny_gemma(tmp_path / style, style), CPU)
    assert m.cfg.ln_offset == 1.0 and m.cfg.kv_heads < m.cfg.n_heads
    c = composition_scores(m.model)
    L = m.cfg.n_layers
    for kind in KINDS:
        s = c.scores[kind]
        for la in range(L):
            assert s[la, :, : la + 1].isnan().all()
            assert s[la, :, la + 1 :].isfinite().all()
    assert "1 + w" in c.processing and "Grouped-query" in c.processing


@pytest.mark.parametrize("model_type", ["roberta", "distilbert"])
def test_encoders_run_and_are_finite(tmp_path, model_type):
    m = load_model(make_tiny_encoder(tmp_path / model_type, model_type), CPU)
    c = composition_scores(m.model)
    assert c.scores["v"][0, :, 1].isfinite().all() and "post-norm" in c.processing


def test_an_encoder_decoder_is_refused():
    cfg = TransformerConfig(d_model=8, n_layers=2, n_heads=2, encoder_layers=1, vocab_size=5)
    with pytest.raises(ValueError, match="two"):
        composition_scores(Transformer(cfg))
