"""OLMo 2 decoders (``model_type`` olmo2): Llama's layout (llama.py) with the norms moved. No
norm before a sublayer; an RMSNorm on each sublayer's output before the residual adds it
(``post_attention_layernorm``, ``post_feedforward_layernorm``: engine norm="none",
out_norm=True); an RMSNorm of the queries and of the keys over the whole projection, before
they are split into heads and rotated (engine qk_norm="proj", weights (heads * head_dim,) and
(kv_heads * head_dim,)); the final norm as Llama's. RoPE as Llama's, scalings included.

Refused, by name: ``attention_bias`` (it biases the output projection too, which the engine
pairs only with feed-forward biases), an activation other than SiLU, a partial_rotary_factor, a
scaling kind the engine does not compute.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import (
    Family,
    Taker,
    Tensors,
    positive_float,
    refuse,
    strip,
    ties,
)
from attnviz.pretrained.families.llama import (
    IGNORE,
    attention_weights,
    ends,
    llama_style,
    mlp_weights,
    read_heads,
)
from attnviz.pretrained.rope import read_rope, whole_head


def olmo2_config(hf: Mapping) -> TransformerConfig:
    refuse(hf, "attention_bias", (False,), False)
    heads = read_heads(hf)
    return llama_style(
        hf,
        heads,
        whole_head(read_rope(hf, heads[3]), "olmo2"),
        norm="none",
        out_norm=True,
        qk_norm="proj",
        ln_eps=positive_float(hf, "rms_norm_eps", 1e-5),
    )


def olmo2_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from an Olmo2Model / Olmo2ForCausalLM checkpoint: Llama's attention and
    feed-forward, ``self_attn.q_norm`` / ``k_norm`` over the whole projections, and the norms of
    the sublayers' outputs as ``ln1_out`` / ``ln2_out``."""
    take = Taker(strip(tensors, "model.", IGNORE))
    d, d_q, d_kv = cfg.d_model, cfg.d_attn, cfg.kv_heads * cfg.d_head
    sd = ends(take, cfg, tensors.get("lm_head.weight"), ties(hf, False))
    for i in range(cfg.n_layers):
        h, p = f"layers.{i}.", f"blocks.{i}."
        sd.update(attention_weights(take, cfg, h, p))
        sd[f"{p}attn.q_norm.w"] = take(f"{h}self_attn.q_norm.weight", d_q)
        sd[f"{p}attn.k_norm.w"] = take(f"{h}self_attn.k_norm.weight", d_kv)
        sd[f"{p}ln1_out.w"] = take(f"{h}post_attention_layernorm.weight", d)
        sd[f"{p}ln2_out.w"] = take(f"{h}post_feedforward_layernorm.weight", d)
        sd.update(mlp_weights(take, cfg, h, p))
    take.check_all_used(2 + 11 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    name="olmo2",
    config=olmo2_config,
    weights=olmo2_weights,
    description="OLMo 2 decoders: RMSNorm on each sublayer's output and over the whole query "
    "and key projections, rotary positions, SwiGLU",
)
