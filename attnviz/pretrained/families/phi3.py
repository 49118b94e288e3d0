"""Phi-3 decoders (``model_type`` phi3; Phi-3, Phi-3.5 mini, Phi-4 mini): Llama's wiring
(llama.py) with the query, key and value projections fused into ``qkv_proj`` (rows: the queries,
then the keys, then the values) and the feed-forward's gate and up projections into
``gate_up_proj`` (rows: the gate, then the up projection, as Phi3MLP's ``chunk(2)`` reads them),
both split here; RoPE on the first ``partial_rotary_factor`` of each head (engine rotary_dim),
plain or LongRoPE (the 128k variants; "su" and "yarn" are LongRoPE too, as Phi3Config renames
them), with the original context at the top level (``original_max_position_embeddings``, 4,096
when absent); the sliding window on every layer when ``sliding_window`` is set.

Refused, by name: a scaling other than LongRoPE (Phi3Config refuses it too), an activation other
than SiLU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import (
    ConversionError,
    Family,
    Taker,
    Tensors,
    positive_float,
    strip,
    ties,
)
from attnviz.pretrained.families.llama import ends, llama_style, read_heads, read_window
from attnviz.pretrained.rope import read_rope

_IGNORE = re.compile(r"rotary_emb\.(inv_freq|long_inv_freq|original_inv_freq)$|^lm_head\.")


def phi3_config(hf: Mapping) -> TransformerConfig:
    heads = read_heads(hf)
    original = hf.get("original_max_position_embeddings", 4096)
    if not isinstance(original, int) or isinstance(original, bool) or original < 1:
        raise ConversionError(
            f"config.json: original_max_position_embeddings must be a positive integer (got "
            f"{original!r})"
        )
    aliases = {"su": "longrope", "yarn": "longrope"}  # as Phi3Config renames them
    rope = read_rope(hf, heads[3], aliases=aliases, original_max_positions=original)
    if rope.scaling is not None and rope.scaling.kind != "longrope":
        raise ConversionError(
            f"config.json: {rope.field} of type {rope.scaling.kind!r} is not supported (Phi-3 "
            "rotates plainly or by LongRoPE; transformers' Phi3Config refuses the others too)"
        )
    return llama_style(
        hf,
        heads,
        rope,
        sliding_window=read_window(hf, None),  # every layer slides (Phi3Model's one mask)
        ln_eps=positive_float(hf, "rms_norm_eps", 1e-5),
    )


def phi3_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a Phi3Model / Phi3ForCausalLM checkpoint: the fused projections
    split by rows (``nn.Linear``'s output axis), each part then transposed to (in, out)."""
    take = Taker(strip(tensors, "model.", _IGNORE))
    d, H = cfg.d_model, cfg.hidden
    d_q, d_kv = cfg.d_attn, cfg.kv_heads * cfg.d_head
    sd = ends(take, cfg, tensors.get("lm_head.weight"), ties(hf, False))
    for i in range(cfg.n_layers):
        h, p = f"layers.{i}.", f"blocks.{i}."
        qkv = take(f"{h}self_attn.qkv_proj.weight", d_q + 2 * d_kv, d)
        sd[f"{p}attn.W_Q"] = qkv[:d_q].T  # rows [0, d_q): (d_q, d) -> (d, d_q)
        sd[f"{p}attn.W_K"] = qkv[d_q : d_q + d_kv].T  # (d_kv, d) -> (d, d_kv)
        sd[f"{p}attn.W_V"] = qkv[d_q + d_kv :].T  # (d_kv, d) -> (d, d_kv)
        sd[f"{p}attn.W_O"] = take(f"{h}self_attn.o_proj.weight", d, d_q).T
        sd[f"{p}ln1.w"] = take(f"{h}input_layernorm.weight", d)
        sd[f"{p}ln2.w"] = take(f"{h}post_attention_layernorm.weight", d)
        gate_up = take(f"{h}mlp.gate_up_proj.weight", 2 * H, d)
        sd[f"{p}mlp.W_gate"] = gate_up[:H].T  # the gate first: (H, d) -> (d, H)
        sd[f"{p}mlp.W_in"] = gate_up[H:].T  # then the up projection: (H, d) -> (d, H)
        sd[f"{p}mlp.W_out"] = take(f"{h}mlp.down_proj.weight", d, H).T
    take.check_all_used(2 + 6 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    name="phi3",
    config=phi3_config,
    weights=phi3_weights,
    description="Phi-3 decoders: Llama's wiring with fused projections, partial RoPE, LongRoPE "
    "and a sliding window",
)
