"""Llama-style decoders (``model_type`` llama, qwen2, mistral): RMSNorm before each sublayer
and after the last block, rotary positions (Hugging Face's convention: rotate halves, with the
checkpoint's theta), grouped-query attention, a gated SiLU feed-forward (SwiGLU), no biases but
Qwen2's on the query, key and value projections, and an unembedding tied to the token table or
its own.

Refused, by name: rope scaling of any kind (linear, dynamic, yarn, llama3...), a head size other
than hidden_size / heads, Llama's attention and MLP biases, Qwen2's sliding window. Mistral's
sliding window never applies: the context is capped at the window.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.convert import ConversionError, Tensors, _need, _refuse, _strip, _Taker

MODEL_TYPES: tuple[str, ...] = ("llama", "qwen2", "mistral")
_IGNORE = re.compile(r"rotary_emb\.inv_freq$|^lm_head\.")


def _rope_theta(hf: Mapping) -> float:
    """The rotation base: ``rope_theta`` (older configs) or ``rope_parameters.rope_theta``, with
    no scaling."""
    params = hf.get("rope_parameters")
    scaling = hf.get("rope_scaling")
    if params is not None and not isinstance(params, dict):
        raise ConversionError("config.json: rope_parameters must be an object")
    kinds = {
        (params or {}).get("rope_type", "default"),
        *(
            [scaling.get("rope_type", scaling.get("type", "default"))]
            if isinstance(scaling, dict)
            else ([] if scaling is None else ["?"])
        ),
    }
    unknown = sorted(k for k in kinds if k != "default")
    if unknown:
        raise ConversionError(
            f"config.json: rope scaling {unknown[0]!r} is not supported (the engine rotates by "
            "pos * theta^(-2i/d) only: rope_type 'default')"
        )
    theta = (params or {}).get("rope_theta", hf.get("rope_theta", 10000.0))
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not theta > 0:
        raise ConversionError(f"config.json: rope_theta must be a positive number (got {theta!r})")
    return float(theta)


def llama_config(hf: Mapping) -> TransformerConfig:
    model_type = hf.get("model_type")
    _refuse(hf, "hidden_act", ("silu",), "silu")
    d = _need(hf, "hidden_size")
    heads = _need(hf, "num_attention_heads")
    kv = hf.get("num_key_value_heads") or heads
    if not isinstance(kv, int) or kv < 1 or heads % kv:
        raise ConversionError(
            f"config.json: num_key_value_heads = {kv!r} must divide num_attention_heads {heads}"
        )
    if d % heads:
        raise ConversionError(f"config.json: {heads} heads do not divide hidden_size {d}")
    head_dim = hf.get("head_dim")
    if head_dim is not None and head_dim != d // heads:
        raise ConversionError(
            f"config.json: head_dim = {head_dim} is not supported (the engine's heads are "
            f"hidden_size / heads = {d // heads} wide)"
        )
    if model_type == "llama":
        _refuse(hf, "attention_bias", (False,), False)
        _refuse(hf, "mlp_bias", (False,), False)
    if model_type == "qwen2":
        _refuse(hf, "use_sliding_window", (False,), False)
    n_ctx = _need(hf, "max_position_embeddings")
    window = hf.get("sliding_window") if model_type == "mistral" else None
    if window is not None:
        if not isinstance(window, int) or window < 1:
            raise ConversionError(f"config.json: sliding_window = {window!r} is not a size")
        n_ctx = min(n_ctx, window)  # within the window, sliding attention is full attention
    return TransformerConfig(
        d_model=d,
        n_layers=_need(hf, "num_hidden_layers"),
        n_heads=heads,
        n_kv_heads=kv if kv != heads else None,
        causal=True,
        positional="rope",
        rope_base=_rope_theta(hf),
        rope_style="halves",
        n_ctx=n_ctx,
        residual=True,
        norm="pre",
        norm_type="rms",
        ln_eps=float(hf.get("rms_norm_eps", 1e-6)),
        ln_affine=True,
        final_norm=True,
        ffn=True,
        gated=True,
        d_ffn=_need(hf, "intermediate_size"),
        activation="silu",
        qkv_bias=model_type == "qwen2",
        vocab_size=_need(hf, "vocab_size"),
        unembed=True,
    )


def llama_weights(cfg: TransformerConfig, tensors: Tensors) -> dict[str, torch.Tensor]:
    """Engine state dict from a LlamaModel / LlamaForCausalLM (Qwen2, Mistral) checkpoint.
    ``nn.Linear``'s (out, in) weights are transposed to the engine's (in, out); a missing
    ``lm_head.weight`` means the unembedding is the token table (tied)."""
    lm_head = tensors.get("lm_head.weight")
    take = _Taker(_strip(tensors, "model.", _IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    d_kv = cfg.kv_heads * cfg.d_head
    sd = {
        "W_E": take("embed_tokens.weight", V, d),
        "ln_final.w": take("norm.weight", d),
    }
    if lm_head is None:
        sd["W_U"] = sd["W_E"].T  # tied: the unembedding is the token table
    elif tuple(lm_head.shape) != (V, d):
        raise ConversionError(
            f"lm_head.weight: expected shape {(V, d)}, got {tuple(lm_head.shape)}"
        )
    else:
        sd["W_U"] = lm_head.T
    for i in range(cfg.n_layers):
        hf, p = f"layers.{i}.", f"blocks.{i}."
        sd[f"{p}attn.W_Q"] = take(f"{hf}self_attn.q_proj.weight", d, d).T
        sd[f"{p}attn.W_K"] = take(f"{hf}self_attn.k_proj.weight", d_kv, d).T
        sd[f"{p}attn.W_V"] = take(f"{hf}self_attn.v_proj.weight", d_kv, d).T
        sd[f"{p}attn.W_O"] = take(f"{hf}self_attn.o_proj.weight", d, d).T
        if cfg.qkv_bias:
            sd[f"{p}attn.b_Q"] = take(f"{hf}self_attn.q_proj.bias", d)
            sd[f"{p}attn.b_K"] = take(f"{hf}self_attn.k_proj.bias", d_kv)
            sd[f"{p}attn.b_V"] = take(f"{hf}self_attn.v_proj.bias", d_kv)
        sd[f"{p}ln1.w"] = take(f"{hf}input_layernorm.weight", d)
        sd[f"{p}ln2.w"] = take(f"{hf}post_attention_layernorm.weight", d)
        sd[f"{p}mlp.W_gate"] = take(f"{hf}mlp.gate_proj.weight", H, d).T
        sd[f"{p}mlp.W_in"] = take(f"{hf}mlp.up_proj.weight", H, d).T
        sd[f"{p}mlp.W_out"] = take(f"{hf}mlp.down_proj.weight", d, H).T
    per_layer = 9 + (3 if cfg.qkv_bias else 0)
    take.check_all_used(2 + per_layer * cfg.n_layers)
    return {k: v.contiguous() for k, v in sd.items()}
