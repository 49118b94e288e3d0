"""GPT-2 decoders (``model_type`` gpt2): causal, pre-norm LayerNorms, learned positions, a final
LayerNorm, GELU (tanh approximation), and an unembedding tied to the token table (or, where
config.json's ``tie_word_embeddings`` is false, the checkpoint's own ``lm_head.weight``, refused
by name when it lacks one). GPT-2's Conv1D weights are already (in, out), the engine's layout;
its fused ``c_attn`` is split into three."""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import Activation, TransformerConfig
from attnviz.pretrained.checkpoint import (
    Family,
    Taker,
    Tensors,
    need,
    refuse,
    strip,
    ties,
    unembedding,
)

_IGNORE = re.compile(r"^lm_head\.|\.attn\.(bias|masked_bias)$")
_ACTIVATIONS: dict[str, Activation] = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu": "gelu",
}


def gpt2_config(hf: Mapping) -> TransformerConfig:
    refuse(hf, "activation_function", tuple(_ACTIVATIONS), "gelu_new")
    refuse(hf, "scale_attn_weights", (True,), True)
    refuse(hf, "scale_attn_by_inverse_layer_idx", (False,), False)
    d = need(hf, "n_embd")
    inner = hf.get("n_inner")
    return TransformerConfig(
        d_model=d,
        n_layers=need(hf, "n_layer"),
        n_heads=need(hf, "n_head"),
        causal=True,
        positional="learned",
        n_ctx=need(hf, "n_positions"),
        residual=True,
        norm="pre",
        ln_eps=float(hf.get("layer_norm_epsilon", 1e-5)),
        ln_affine=True,
        final_norm=True,
        ffn=True,
        d_ffn=inner if inner is not None else 4 * d,
        activation=_ACTIVATIONS[hf.get("activation_function", "gelu_new")],
        bias=True,
        vocab_size=need(hf, "vocab_size"),
        unembed=True,  # the token table, unless tie_word_embeddings is false (gpt2_weights)
    )


def gpt2_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a GPT2Model / GPT2LMHeadModel checkpoint: c_attn holds W_Q | W_K |
    W_V side by side and is split into three. The unembedding is the checkpoint's
    ``lm_head.weight`` when it has one, else the token table, as config.json's
    ``tie_word_embeddings`` allows (true when absent, GPT2Config's default)."""
    take = Taker(strip(tensors, "transformer.", _IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    sd = {
        "W_E": take("wte.weight", V, d),
        "W_pos": take("wpe.weight", cfg.n_ctx, d),
        "ln_final.w": take("ln_f.weight", d),
        "ln_final.b": take("ln_f.bias", d),
    }
    sd["W_U"] = unembedding(tensors.get("lm_head.weight"), "lm_head.weight", sd["W_E"],
                            ties(hf, True))  # fmt: skip
    for i in range(cfg.n_layers):
        h, p = f"h.{i}.", f"blocks.{i}."
        w_qkv = take(f"{h}attn.c_attn.weight", d, 3 * d)
        b_qkv = take(f"{h}attn.c_attn.bias", 3 * d)
        for j, n in enumerate("QKV"):
            sd[f"{p}attn.W_{n}"] = w_qkv[:, j * d : (j + 1) * d]  # (d, d)
            sd[f"{p}attn.b_{n}"] = b_qkv[j * d : (j + 1) * d]  # (d,)
        sd[f"{p}attn.W_O"] = take(f"{h}attn.c_proj.weight", d, d)
        sd[f"{p}attn.b_O"] = take(f"{h}attn.c_proj.bias", d)
        sd[f"{p}ln1.w"] = take(f"{h}ln_1.weight", d)
        sd[f"{p}ln1.b"] = take(f"{h}ln_1.bias", d)
        sd[f"{p}ln2.w"] = take(f"{h}ln_2.weight", d)
        sd[f"{p}ln2.b"] = take(f"{h}ln_2.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{h}mlp.c_fc.weight", d, H)
        sd[f"{p}mlp.b_in"] = take(f"{h}mlp.c_fc.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{h}mlp.c_proj.weight", H, d)
        sd[f"{p}mlp.b_out"] = take(f"{h}mlp.c_proj.bias", d)
    take.check_all_used(4 + 12 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    name="gpt2",
    config=gpt2_config,
    weights=gpt2_weights,
    description="GPT-2 decoders: pre-norm, learned positions, fused qkv, tied unembedding",
)
