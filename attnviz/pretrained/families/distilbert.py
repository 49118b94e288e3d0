"""DistilBERT encoders (``model_type`` distilbert): BERT's post-norm wiring with six layers by
default, learned positions (a sinusoidal table, when ``sinusoidal_pos_embds``, is stored in the
checkpoint like a learned one and read as it is), no token types, and GELU or ReLU."""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import Family, Taker, Tensors, need, refuse, strip

_IGNORE = re.compile(
    r"^vocab_(transform|layer_norm|projector)\.|^(pre_)?classifier\.|^qa_outputs\.|position_ids$"
)


def distilbert_config(hf: Mapping) -> TransformerConfig:
    refuse(hf, "activation", ("gelu", "relu"), "gelu")
    return TransformerConfig(
        d_model=need(hf, "dim"),
        n_layers=need(hf, "n_layers"),
        n_heads=need(hf, "n_heads"),
        positional="learned",
        n_ctx=need(hf, "max_position_embeddings"),
        residual=True,
        norm="post",
        ln_eps=1e-12,
        ln_affine=True,
        embed_norm=True,
        ffn=True,
        d_ffn=need(hf, "hidden_dim"),
        activation=hf.get("activation", "gelu"),
        bias=True,
        vocab_size=need(hf, "vocab_size"),
    )


def distilbert_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    """Engine state dict from a DistilBertModel checkpoint (``distilbert.`` prefix and heads
    allowed; the masked-language-model head is ``attnviz.pretrained.mlm``'s)."""
    take = Taker(strip(tensors, "distilbert.", _IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    sd = {
        "W_E": take("embeddings.word_embeddings.weight", V, d),
        "W_pos": take("embeddings.position_embeddings.weight", cfg.n_ctx, d),
        "ln_embed.w": take("embeddings.LayerNorm.weight", d),
        "ln_embed.b": take("embeddings.LayerNorm.bias", d),
    }
    for i in range(cfg.n_layers):
        h, p = f"transformer.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "q_lin"), ("K", "k_lin"), ("V", "v_lin"), ("O", "out_lin")):
            sd[f"{p}attn.W_{ours}"] = take(f"{h}attention.{theirs}.weight", d, d).T
            sd[f"{p}attn.b_{ours}"] = take(f"{h}attention.{theirs}.bias", d)
        sd[f"{p}ln1.w"] = take(f"{h}sa_layer_norm.weight", d)
        sd[f"{p}ln1.b"] = take(f"{h}sa_layer_norm.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{h}ffn.lin1.weight", H, d).T
        sd[f"{p}mlp.b_in"] = take(f"{h}ffn.lin1.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{h}ffn.lin2.weight", d, H).T
        sd[f"{p}mlp.b_out"] = take(f"{h}ffn.lin2.bias", d)
        sd[f"{p}ln2.w"] = take(f"{h}output_layer_norm.weight", d)
        sd[f"{p}ln2.b"] = take(f"{h}output_layer_norm.bias", d)
    take.check_all_used(4 + 16 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    name="distilbert",
    config=distilbert_config,
    weights=distilbert_weights,
    description="DistilBERT encoders: BERT's wiring without token types, GELU or ReLU",
)
