"""GPT-NeoX decoders (``model_type`` gpt_neox: Pythia, GPT-NeoX-20B): LayerNorms with a shift,
biases on every linear layer, rotary positions on the first ``rotary_pct`` of each head's
coordinates (rotate halves, base ``rotary_emb_base``), a plain GELU feed-forward, a final
LayerNorm and an unembedding of its own (``embed_out``).

Each layer adds its attention and its MLP to the residual in parallel (``use_parallel_residual``,
the default): x + attn(ln1(x)) + mlp(ln2(x)); or one after the other when it is false. The query,
key and value projections are one fused ``query_key_value`` whose output is laid out per head:
head h's query, key and value are its rows h*3*hs .. (h+1)*3*hs, in that order.

Refused, by name: attention without biases (``attention_bias`` false: the engine's biases go on
every linear layer or on q/k/v only), a rotated part that is not an even number of coordinates
(``rotary_pct``), a rope type the engine does not compute, an activation it does not have, a
checkpoint without ``embed_out`` unless config.json ties the unembedding to the token table
(``tie_word_embeddings``, false by default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import Activation, TransformerConfig
from attnviz.pretrained.checkpoint import (
    ConversionError,
    Family,
    Taker,
    Tensors,
    need,
    positive_float,
    refuse,
    strip,
    ties,
    unembedding,
)
from attnviz.pretrained.rope import Rope, read_rope

# transformers' defaults (GPTNeoXConfig) for what a config.json leaves out.
DEFAULTS = {
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-5,
    "tie_word_embeddings": False,
    "use_parallel_residual": True,
    "attention_bias": True,
    "rotary_pct": 0.25,
    "rotary_emb_base": 10000.0,
}
_ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
    "silu": "silu",
}
_IGNORE = re.compile(
    r"^(embed_out|lm_head)\.|\.attention\.(bias|masked_bias)$|rotary_emb\.inv_freq$"
)


def _rope(hf: Mapping, head_size: int) -> Rope:
    """The rotation, as GPTNeoXConfig merges it: ``rope_scaling`` (the hub's files) or
    ``rope_parameters`` (transformers 5), with GPT-NeoX's own ``rotary_emb_base`` and
    ``rotary_pct`` for the rope_theta and partial_rotary_factor the object lacks."""
    pct = hf.get("rotary_pct", DEFAULTS["rotary_pct"])
    params = hf.get("rope_scaling") or hf.get("rope_parameters")
    if not (isinstance(params, Mapping) and "partial_rotary_factor" in params):
        # The fraction is rotary_pct's: a refusal names it (read_rope's would name the other).
        if not isinstance(pct, (int, float)) or isinstance(pct, bool) or not 0 < pct <= 1:
            raise ConversionError(f"config.json: rotary_pct must be in (0, 1] (got {pct!r})")
        rotary = int(head_size * pct)  # transformers' rotary_ndims
        if rotary < 2 or rotary % 2:
            raise ConversionError(
                f"config.json: rotary_pct = {pct} rotates {rotary} of each head's {head_size} "
                "coordinates; RoPE needs an even number of them"
            )
    own = {
        "rope_theta": hf.get("rotary_emb_base", DEFAULTS["rotary_emb_base"]),
        "partial_rotary_factor": pct,
    }
    return read_rope({**hf, **own}, head_size)


def gpt_neox_config(hf: Mapping) -> TransformerConfig:
    hf = {**DEFAULTS, **hf}
    refuse(hf, "hidden_act", tuple(_ACTIVATIONS))
    refuse(hf, "attention_bias", (True,))
    parallel = hf["use_parallel_residual"]
    if not isinstance(parallel, bool):
        raise ConversionError(
            f"config.json: use_parallel_residual must be true or false (got {parallel!r})"
        )
    d = need(hf, "hidden_size")
    heads = need(hf, "num_attention_heads")
    if d % heads:
        raise ConversionError(f"config.json: {heads} heads do not divide hidden_size {d}")
    hs = d // heads
    rope = _rope(hf, hs)
    return TransformerConfig(
        d_model=d,
        n_layers=need(hf, "num_hidden_layers"),
        n_heads=heads,
        causal=True,
        positional="rope",
        rope_base=rope.base,
        rope_style="halves",
        rotary_dim=rope.rotary_dim if rope.rotary_dim != hs else None,  # rotary_ndims
        rope_scaling=rope.scaling,
        n_ctx=rope.context,
        residual=True,
        norm="pre",
        parallel=parallel,
        norm_type="layer",
        ln_eps=positive_float(hf, "layer_norm_eps", 1e-5),
        ln_affine=True,
        final_norm=True,
        ffn=True,
        d_ffn=need(hf, "intermediate_size"),
        activation=_ACTIVATIONS[hf["hidden_act"]],
        bias=True,
        vocab_size=need(hf, "vocab_size"),
        unembed=True,
    )


def gpt_neox_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    """Engine state dict from a GPTNeoXModel / GPTNeoXForCausalLM checkpoint.

    ``nn.Linear``'s (out, in) weights are transposed to the engine's (in, out). The fused
    ``query_key_value`` (3d, d) is, per head, [q; k; v]: viewed as (heads, 3, hs, d), its [:, j]
    slice is the query (j = 0), key (1) or value (2) projection of every head, head-major as the
    engine's columns are. A missing ``embed_out`` means the unembedding is the token table when
    config.json ties them (``tie_word_embeddings``, false when absent); else it is refused."""
    head = tensors.get("embed_out.weight", tensors.get("lm_head.weight"))
    take = Taker(strip(tensors, "gpt_neox.", _IGNORE))
    d, H, V, nh, hs = cfg.d_model, cfg.hidden, cfg.vocab_size, cfg.n_heads, cfg.d_head
    assert V is not None
    sd = {
        "W_E": take("embed_in.weight", V, d),
        "ln_final.w": take("final_layer_norm.weight", d),
        "ln_final.b": take("final_layer_norm.bias", d),
    }
    tied = ties(hf, False)  # GPTNeoXConfig's default (DEFAULTS)
    sd["W_U"] = unembedding(head, "embed_out.weight", sd["W_E"], tied)
    for i in range(cfg.n_layers):
        h, p = f"layers.{i}.", f"blocks.{i}."
        w = take(f"{h}attention.query_key_value.weight", 3 * d, d).view(nh, 3, hs, d)
        b = take(f"{h}attention.query_key_value.bias", 3 * d).view(nh, 3, hs)
        for j, n in enumerate("QKV"):
            sd[f"{p}attn.W_{n}"] = w[:, j].reshape(d, d).T  # (nh*hs, d) head-major -> (d, d)
            sd[f"{p}attn.b_{n}"] = b[:, j].reshape(d)  # (nh*hs,)
        sd[f"{p}attn.W_O"] = take(f"{h}attention.dense.weight", d, d).T
        sd[f"{p}attn.b_O"] = take(f"{h}attention.dense.bias", d)
        sd[f"{p}ln1.w"] = take(f"{h}input_layernorm.weight", d)
        sd[f"{p}ln1.b"] = take(f"{h}input_layernorm.bias", d)
        sd[f"{p}ln2.w"] = take(f"{h}post_attention_layernorm.weight", d)
        sd[f"{p}ln2.b"] = take(f"{h}post_attention_layernorm.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{h}mlp.dense_h_to_4h.weight", H, d).T
        sd[f"{p}mlp.b_in"] = take(f"{h}mlp.dense_h_to_4h.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{h}mlp.dense_4h_to_h.weight", d, H).T
        sd[f"{p}mlp.b_out"] = take(f"{h}mlp.dense_4h_to_h.bias", d)
    take.check_all_used(3 + 12 * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILY = Family(
    "gpt_neox",
    gpt_neox_config,
    gpt_neox_weights,
    "GPT-NeoX / Pythia: parallel residual, fused per-head qkv, partial rotary, LayerNorm, biases",
)
