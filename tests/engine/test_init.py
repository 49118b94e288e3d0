"""Standard starting weights and the unembedding, for models that are trained."""

from __future__ import annotations

import pytest
import torch

from attnviz.engine import Transformer, TransformerConfig, capture
from attnviz.engine.init import standard_weights, trainable

CFG = TransformerConfig(
    d_model=64, n_layers=2, n_heads=4, causal=True, positional="learned", n_ctx=16,
    residual=True, norm="pre", ln_affine=True, final_norm=True, vocab_size=26, unembed=True,
)  # fmt: skip


def test_every_parameter_is_set_by_name_and_seed():
    sd = standard_weights(CFG, seed=3)
    assert set(sd) == set(Transformer(CFG).state_dict())
    again = standard_weights(CFG, seed=3)
    assert all(torch.equal(sd[k], again[k]) for k in sd)
    other = standard_weights(CFG, seed=4)
    assert not torch.equal(sd["blocks.0.attn.W_Q"], other["blocks.0.attn.W_Q"])
    assert torch.equal(sd["blocks.0.ln1.w"], torch.ones(64))
    assert torch.equal(sd["ln_final.b"], torch.zeros(64))
    # N(0, 1/d_in) for a matrix, N(0, 0.02^2) for the tables: the sample spread says so.
    assert sd["blocks.1.attn.W_O"].std().item() == pytest.approx(64**-0.5, rel=0.1)
    assert sd["W_U"].std().item() == pytest.approx(64**-0.5, rel=0.1)
    assert sd["W_E"].std().item() == pytest.approx(0.02, rel=0.15)


def test_switching_a_part_on_leaves_the_other_weights_as_they_were():
    with_ffn = standard_weights(TransformerConfig(**{**CFG.__dict__, "ffn": True}), seed=0)
    without = standard_weights(CFG, seed=0)
    assert "blocks.0.mlp.W_in" in with_ffn
    assert all(torch.equal(without[k], with_ffn[k]) for k in without)


def test_logits_are_the_output_times_w_u_and_have_a_hook():
    model = Transformer(CFG)
    model.load_state_dict(standard_weights(CFG))
    ids = torch.tensor([[1, 2, 3, 4]])
    with capture(model) as cache:
        logits = model.logits(model(ids))
    assert logits.shape == (1, 4, 26)
    assert torch.equal(logits, cache["ln_final.hook_normalized"] @ model.W_U)
    assert torch.equal(cache["hook_logits"], logits)


def test_unembed_needs_a_vocabulary():
    with pytest.raises(ValueError, match="unembed needs a vocab_size"):
        TransformerConfig(d_model=4, unembed=True)


def test_trainable_turns_gradients_on():
    model = trainable(Transformer(CFG))
    assert all(p.requires_grad for p in model.parameters())
