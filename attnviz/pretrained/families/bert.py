"""BERT encoders (``model_type`` bert): bidirectional, post-norm LayerNorms, learned positions,
token types (segment A is added to every token), an embedding LayerNorm, GELU."""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import Activation, TransformerConfig
from attnviz.pretrained.checkpoint import Family, Taker, Tensors, need, refuse, strip

_IGNORE = re.compile(r"(^|\.)(pooler|cls)\.|position_ids$|^qa_outputs|^classifier")
_ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
}


def bert_config(hf: Mapping) -> TransformerConfig:
    refuse(hf, "position_embedding_type", ("absolute",), "absolute")
    refuse(hf, "hidden_act", tuple(_ACTIVATIONS), "gelu")
    return TransformerConfig(
        d_model=need(hf, "hidden_size"),
        n_layers=need(hf, "num_hidden_layers"),
        n_heads=need(hf, "num_attention_heads"),
        positional="learned",
        n_ctx=need(hf, "max_position_embeddings"),
        residual=True,
        norm="post",
        ln_eps=float(hf.get("layer_norm_eps", 1e-12)),
        ln_affine=True,
        embed_norm=True,
        ffn=True,
        d_ffn=need(hf, "intermediate_size"),
        activation=_ACTIVATIONS[hf.get("hidden_act", "gelu")],
        bias=True,
        vocab_size=need(hf, "vocab_size"),
        type_vocab_size=need(hf, "type_vocab_size"),
    )


def bert_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a BertModel checkpoint (``bert.`` prefix and heads allowed; the
    masked-language-model head, with its tie to the token table, is read by
    ``attnviz.pretrained.mlm``)."""
    take = Taker(strip(tensors, "bert.", _IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    sd = {
        "W_E": take("embeddings.word_embeddings.weight", V, d),
        "W_type": take("embeddings.token_type_embeddings.weight", cfg.type_vocab_size, d),
        "W_pos": take("embeddings.position_embeddings.weight", cfg.n_ctx, d),
        "ln_embed.w": take("embeddings.LayerNorm.weight", d),
        "ln_embed.b": take("embeddings.LayerNorm.bias", d),
    }
    for i in range(cfg.n_layers):
        h, p = f"encoder.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "query"), ("K", "key"), ("V", "value")):
            sd[f"{p}attn.W_{ours}"] = take(f"{h}attention.self.{theirs}.weight", d, d).T
            sd[f"{p}attn.b_{ours}"] = take(f"{h}attention.self.{theirs}.bias", d)
        sd[f"{p}attn.W_O"] = take(f"{h}attention.output.dense.weight", d, d).T
        sd[f"{p}attn.b_O"] = take(f"{h}attention.output.dense.bias", d)
        sd[f"{p}ln1.w"] = take(f"{h}attention.output.LayerNorm.weight", d)
        sd[f"{p}ln1.b"] = take(f"{h}attention.output.LayerNorm.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{h}intermediate.dense.weight", H, d).T
        sd[f"{p}mlp.b_in"] = take(f"{h}intermediate.dense.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{h}output.dense.weight", d, H).T
        sd[f"{p}mlp.b_out"] = take(f"{h}output.dense.bias", d)
        sd[f"{p}ln2.w"] = take(f"{h}output.LayerNorm.weight", d)
        sd[f"{p}ln2.b"] = take(f"{h}output.LayerNorm.bias", d)
    take.check_all_used(5 + 16 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    name="bert",
    config=bert_config,
    weights=bert_weights,
    description="BERT encoders: post-norm, learned positions and token types, GELU",
)
