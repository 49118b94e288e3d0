"""Qwen3 decoders (``model_type`` qwen3): Llama's layout (llama.py) with an RMSNorm on each
query and key head before RoPE, one weight (head_dim,) shared by all heads (engine
``qk_norm="head"``), heads of their own size (``head_dim``, 128 when config.json has none, as
Qwen3Config's default), no biases, and Qwen2's sliding window on the layers ``layer_types`` names
(from ``use_sliding_window`` and ``max_window_layers``). Qwen3-VL's text model
(``qwen3_vl_text``) is Qwen3 with multimodal rotary positions whose sections interleave
(M-RoPE: ``mrope_section``, see llama.read_mrope).

Refused, by name: ``attention_bias`` (it biases the output projection too, which the engine
pairs only with feed-forward biases), an activation other than SiLU, a partial_rotary_factor, a
scaling kind the engine does not compute.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import Family, Taker, Tensors, need, refuse, strip, ties
from attnviz.pretrained.families.llama import (
    IGNORE,
    attention_weights,
    ends,
    llama_style,
    mlp_weights,
    qwen_windows,
    read_heads,
    read_mrope,
)
from attnviz.pretrained.rope import read_rope, whole_head


def qwen3_config(hf: Mapping) -> TransformerConfig:
    refuse(hf, "attention_bias", (False,), False)
    heads = read_heads(hf, kv_default=32, head_dim_default=128)
    window, layer_types = qwen_windows(hf, need(hf, "num_hidden_layers"))
    rope = whole_head(read_rope(hf, heads[3]), "qwen3")
    mrope = {}
    if hf.get("model_type") == "qwen3_vl_text":  # the family table's: interleaved M-RoPE
        mrope = read_mrope(hf, rope, (24, 20, 20), True)
    return llama_style(
        hf,
        heads,
        rope,
        qk_norm="head",
        sliding_window=window,
        layer_types=layer_types,
        **mrope,
    )


def qwen3_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a Qwen3Model / Qwen3ForCausalLM checkpoint: Llama's tensors plus
    ``self_attn.q_norm`` and ``self_attn.k_norm``, each (head_dim,)."""
    take = Taker(strip(tensors, "model.", IGNORE))
    d, hs = cfg.d_model, cfg.d_head
    sd = ends(take, cfg, tensors.get("lm_head.weight"), ties(hf, False))
    for i in range(cfg.n_layers):
        h, p = f"layers.{i}.", f"blocks.{i}."
        sd.update(attention_weights(take, cfg, h, p))
        sd[f"{p}attn.q_norm.w"] = take(f"{h}self_attn.q_norm.weight", hs)
        sd[f"{p}attn.k_norm.w"] = take(f"{h}self_attn.k_norm.weight", hs)
        sd[f"{p}ln1.w"] = take(f"{h}input_layernorm.weight", d)
        sd[f"{p}ln2.w"] = take(f"{h}post_attention_layernorm.weight", d)
        sd.update(mlp_weights(take, cfg, h, p))
    take.check_all_used(2 + 11 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILIES = (
    Family(
        name="qwen3",
        config=qwen3_config,
        weights=qwen3_weights,
        description="Qwen3 decoders: Llama's wiring with per-head RMSNorm on queries and keys and "
        "a sliding window on the layers layer_types names",
    ),
    Family(
        name="qwen3_vl_text",
        config=qwen3_config,
        weights=qwen3_weights,
        description="Qwen3-VL's text model: Qwen3 with interleaved multimodal rotary positions",
    ),
)
