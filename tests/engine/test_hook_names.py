"""Every hook point's name comes from one helper, ``act_name``: the names a model has are exactly
the names the helper makes for its layers, in every wiring the engine builds."""

from __future__ import annotations

import itertools

import pytest

from attnviz.engine import Transformer, TransformerConfig, act_name, hook_points
from attnviz.engine.hooks import ATTENTION_HOOKS, BLOCK_HOOKS, MLP_HOOKS, MODEL_HOOKS, NORMS

WIRINGS = {
    "raw": TransformerConfig(d_model=4),
    "gpt2": TransformerConfig(d_model=8, n_layers=2, n_heads=2, causal=True, positional="learned",
                              residual=True, norm="pre", ln_affine=True, final_norm=True, ffn=True,
                              bias=True, vocab_size=10, unembed=True),
    "gemma": TransformerConfig(d_model=8, n_layers=2, n_heads=2, head_dim=6, causal=True,
                               positional="rope", rope_style="halves", residual=True, norm="pre",
                               norm_type="rms", ln_affine=True, out_norm=True, qk_norm="head",
                               final_norm=True, ffn=True, gated=True, vocab_size=10, unembed=True,
                               sliding_window=3, layer_types=("sliding_attention", "full_attention")),
    "bert": TransformerConfig(d_model=8, n_layers=1, n_heads=2, positional="learned", residual=True,
                              norm="post", ln_affine=True, embed_norm=True, ffn=True, bias=True,
                              vocab_size=10, type_vocab_size=2),
    "encoder-decoder": TransformerConfig(d_model=8, n_layers=1, n_heads=2, causal=True,
                                         positional="rope", residual=True, norm="pre", ffn=True,
                                         vocab_size=10, unembed=True, encoder_layers=1,
                                         final_norm=True, qk_norm="proj"),
}  # fmt: skip


def every_name(cfg: TransformerConfig, prefix: str = "") -> set[str]:
    names = {act_name(n, prefix=prefix) for n in (*MODEL_HOOKS, "ln_final", "ln_embed")}
    for layer, attn in itertools.product(range(cfg.n_layers), ("attn", "cross_attn")):
        for n in (*ATTENTION_HOOKS, *MLP_HOOKS, *BLOCK_HOOKS, *NORMS):
            names.add(act_name(n, layer, attn, prefix))
    return names


@pytest.mark.parametrize("wiring", WIRINGS)
def test_every_hook_point_is_named_by_the_helper(wiring):
    cfg = WIRINGS[wiring]
    model = Transformer(cfg)
    made = every_name(cfg)
    if cfg.encoder_layers:
        made |= every_name(cfg.encoder(), "encoder.")
    have = set(hook_points(model))
    assert have <= made, sorted(have - made)
    assert len(have) > 3


def test_the_helper_names_the_tree():
    assert act_name("pattern", 3) == "blocks.3.attn.hook_pattern"
    assert act_name("pattern", 0, "cross_attn") == "blocks.0.cross_attn.hook_pattern"
    assert act_name("resid_post", 1) == "blocks.1.hook_resid_post"
    assert act_name("pre", 2) == "blocks.2.mlp.hook_pre"
    assert act_name("q_norm", 0) == "blocks.0.attn.q_norm.hook_normalized"
    assert act_name("ln1", 0) == "blocks.0.ln1.hook_normalized"
    assert act_name("embed") == "hook_embed"
    assert act_name("ln_final") == "ln_final.hook_normalized"
    assert act_name("rot_q", 1, prefix="encoder.") == "encoder.blocks.1.attn.hook_rot_q"
    with pytest.raises(ValueError, match="needs a layer"):
        act_name("pattern")
    with pytest.raises(ValueError, match="no hook point"):
        act_name("nothing", 0)
