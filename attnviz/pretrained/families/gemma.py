"""Gemma decoders (``model_type`` gemma, gemma2, gemma3_text, and gemma3, whose text model is
read): RMSNorms that scale by (1 + w), the token vectors scaled by sqrt(hidden_size), heads of
their own width (``head_dim``), grouped-query attention, rotary positions (rotate halves), a gated
feed-forward with GELU's tanh approximation, the unembedding tied to the token table.

Gemma 2 and 3 add norms around each sublayer (input_layernorm before the attention,
post_attention_layernorm on its output, pre_ and post_feedforward_layernorm around the MLP),
scores scaled by ``query_pre_attn_scalar`` ** -0.5, and a sliding window on some layers
(``layer_types``; Gemma 2 alternates sliding and full, Gemma 3 has ``sliding_window_pattern`` - 1
sliding layers to one full). Gemma 2 soft-caps the attention scores (``attn_logit_softcapping``)
and both soft-cap the logits (``final_logit_softcapping``): c * tanh(x / c). Gemma 3 normalises
each head's query and key (RMSNorm, one weight per coordinate) and rotates its sliding layers with
a base of their own (``rope_local_base_freq``) and no scaling, its full layers with ``rope_theta``
and ``rope_scaling`` (linear, factor 8 in the larger models).

A key config.json leaves out means what transformers' config class says (``DEFAULTS``): the
hub's multimodal Gemma 3 folders list only a few keys of their ``text_config``.

Refused, by name: bidirectional attention (``use_bidirectional_attention``), biases
(``attention_bias``), Gemma 3 attention soft-capping (transformers' Gemma 3 does not apply it) and
a multimodal Gemma 3's logit soft-capping (its Gemma3ForConditionalGeneration does not), a
rope type the engine does not compute, a rotation other than the default on Gemma 3's sliding
layers, an activation the engine does not have, an unembedding of its own
(``tie_word_embeddings`` false) that the checkpoint lacks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import LAYER_TYPES, Activation, LayerType, TransformerConfig
from attnviz.pretrained.checkpoint import (
    ConversionError,
    Family,
    Taker,
    Tensors,
    need,
    positive_float,
    refuse,
    ties,
)
from attnviz.pretrained.families.llama import ends
from attnviz.pretrained.rope import Rope, read_rope, whole_head

# transformers' defaults (GemmaConfig, Gemma2Config, Gemma3TextConfig) for what a config.json
# leaves out; a test checks them against the config classes.
_COMMON = {
    "rms_norm_eps": 1e-6,
    "tie_word_embeddings": True,
    "attention_bias": False,
    "use_bidirectional_attention": None,
    "head_dim": 256,
}
DEFAULTS: dict[str, dict] = {
    "gemma": {
        **_COMMON,
        "vocab_size": 256000,
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "num_hidden_layers": 28,
        "num_attention_heads": 16,
        "num_key_value_heads": 16,
        "hidden_act": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192,
    },
    "gemma2": {
        **_COMMON,
        "vocab_size": 256000,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 8192,
        "query_pre_attn_scalar": 256,
        "sliding_window": 4096,
        "final_logit_softcapping": 30.0,
        "attn_logit_softcapping": 50.0,
    },
    "gemma3_text": {
        **_COMMON,
        "vocab_size": 262208,
        "hidden_size": 2304,
        "intermediate_size": 9216,
        "num_hidden_layers": 26,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "hidden_activation": "gelu_pytorch_tanh",
        "max_position_embeddings": 131072,
        "query_pre_attn_scalar": 256,
        "sliding_window": 4096,
        "final_logit_softcapping": None,
        "attn_logit_softcapping": None,
        "use_bidirectional_attention": False,
    },
}
# The rotary bases transformers' Gemma 3 falls back on: full layers, sliding layers.
_GEMMA3_THETA = {"full_attention": 1_000_000.0, "sliding_attention": 10_000.0}
# Gemma 1 reads hidden_act and, as transformers does, takes a legacy "gelu" for the tanh form;
# Gemma 2 and 3 read hidden_activation as it is.
_ACT_GEMMA: dict[str, Activation] = {
    "gelu": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_new": "gelu_tanh",
    "silu": "silu",
    "relu": "relu",
}
_ACT_LATER: dict[str, Activation] = {**_ACT_GEMMA, "gelu": "gelu"}

_IGNORE = re.compile(
    r"rotary_emb\.|(^|\.)lm_head\.|^(model\.)?(vision_tower|multi_modal_projector)\."
)
# Where the text model's tensors sit: a Gemma3ForConditionalGeneration's as saved (and on the
# hub), as transformers 5 names it in memory, a Gemma*ForCausalLM's. The longest first:
# "model." is also the start of the second.
_PREFIXES = ("language_model.model.", "model.language_model.", "model.")


def text_config(hf: Mapping) -> dict:
    """The config of the text model with transformers' defaults for what it leaves out: a
    multimodal Gemma 3's ``text_config``, else ``hf`` itself."""
    model_type = hf.get("model_type")
    if model_type == "gemma3":
        text = hf.get("text_config")
        if not isinstance(text, Mapping):
            raise ConversionError(
                "config.json: text_config must be an object (a multimodal Gemma 3 is read by "
                "its text model)"
            )
        hf = {**text, "model_type": "gemma3_text"}
    model_type = hf.get("model_type")
    if model_type not in DEFAULTS:
        raise ConversionError(f"config.json: model_type {model_type!r} is not a Gemma")
    return {**DEFAULTS[model_type], **hf}


def _number(value: object, where: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ConversionError(f"config.json: {where} must be a positive number (got {value!r})")
    return float(value)


def _layer_rope(n_ctx: int, layer_type: str, params: Mapping, head_dim: int) -> Rope:
    """One of Gemma 3's per-layer-type rotations, read as ``read_rope`` reads a flat one; its
    refusals name the layer type."""
    try:
        return whole_head(
            read_rope({"max_position_embeddings": n_ctx, "rope_parameters": params}, head_dim),
            "Gemma 3",
        )
    except ConversionError as exc:
        field = f"config.json: rope_parameters.{layer_type}"
        raise ConversionError(str(exc).replace("config.json: rope_parameters", field, 1)) from exc


def _gemma3_rope(hf: Mapping, head_dim: int) -> tuple[Rope, float]:
    """Gemma 3: the full layers' rotation and the sliding layers' base, merged as
    Gemma3TextConfig does: transformers 5 writes ``rope_parameters`` keyed by layer type; the
    hub's files ``rope_theta`` and ``rope_scaling`` (for the full layers) and
    ``rope_local_base_freq`` (for the sliding ones)."""
    given = hf.get("rope_parameters")
    if given is not None and not isinstance(given, Mapping):
        raise ConversionError("config.json: rope_parameters must be an object")
    given = given or {}
    other = sorted(set(given) - set(LAYER_TYPES))
    if other:
        raise ConversionError(
            "config.json: rope_parameters: Gemma 3 keys it by layer type "
            f"({', '.join(LAYER_TYPES)}), not {other[0]!r}"
        )
    objects = {}
    for layer_type, legacy in (("full_attention", "rope_theta"),
                               ("sliding_attention", "rope_local_base_freq")):  # fmt: skip
        params = given.get(layer_type) or {"rope_type": "default"}
        if not isinstance(params, Mapping):
            raise ConversionError(f"config.json: rope_parameters.{layer_type} must be an object")
        objects[layer_type] = {"rope_theta": hf.get(legacy, _GEMMA3_THETA[layer_type]), **params}
    scaling = hf.get("rope_scaling")
    if scaling is not None:
        if not isinstance(scaling, Mapping):
            raise ConversionError("config.json: rope_scaling must be an object")
        objects["full_attention"].update(scaling)
    n_ctx = need(hf, "max_position_embeddings")
    full = _layer_rope(n_ctx, "full_attention", objects["full_attention"], head_dim)
    local = _layer_rope(n_ctx, "sliding_attention", objects["sliding_attention"], head_dim)
    if local.scaling is not None:
        raise ConversionError(
            f"config.json: rope_parameters.sliding_attention rope_type {local.scaling.kind!r} is "
            "not supported (Gemma 3's sliding layers rotate with their own base and no scaling)"
        )
    return full, local.base


def _layer_types(hf: Mapping, model_type: str, n_layers: int) -> tuple[LayerType, ...] | None:
    """Each layer's attention: ``layer_types`` when given, else transformers' default pattern
    (Gemma 2: sliding, full, sliding...; Gemma 3: sliding_window_pattern - 1 sliding, one full)."""
    if model_type == "gemma":
        return None
    given = hf.get("layer_types")
    if given is not None:
        if (
            not isinstance(given, list)
            or len(given) != n_layers
            or any(t not in LAYER_TYPES for t in given)
        ):
            raise ConversionError(
                f"config.json: layer_types must list {n_layers} layers, each one of "
                f"{', '.join(LAYER_TYPES)} (got {given!r})"
            )
        return tuple(given)
    period = 2 if model_type == "gemma2" else hf.get("sliding_window_pattern", 6)
    if not isinstance(period, int) or isinstance(period, bool) or period < 1:
        raise ConversionError(
            f"config.json: sliding_window_pattern must be a positive integer (got {period!r})"
        )
    return tuple(
        "sliding_attention" if (i + 1) % period else "full_attention" for i in range(n_layers)
    )


def _softcap(hf: Mapping, key: str) -> float | None:
    value = hf.get(key)
    return None if value is None else _number(value, key)


def gemma_config(hf: Mapping) -> TransformerConfig:
    multimodal = hf.get("model_type") == "gemma3"
    hf = text_config(hf)
    model_type = hf["model_type"]
    if multimodal:  # transformers' Gemma3ForConditionalGeneration does not soft-cap its logits
        refuse(hf, "final_logit_softcapping", (None,))
    later = model_type != "gemma"  # Gemma 2 and 3
    refuse(hf, "use_bidirectional_attention", (None, False))
    refuse(hf, "attention_bias", (False,))
    act_key, acts = ("hidden_activation", _ACT_LATER) if later else ("hidden_act", _ACT_GEMMA)
    refuse(hf, act_key, tuple(acts))
    d = need(hf, "hidden_size")
    n_layers = need(hf, "num_hidden_layers")
    heads = need(hf, "num_attention_heads")
    kv = need(hf, "num_key_value_heads")
    if heads % kv:
        raise ConversionError(
            f"config.json: num_key_value_heads = {kv} must divide num_attention_heads {heads}"
        )
    head_dim = need(hf, "head_dim")
    local_base = None
    if model_type == "gemma3_text":
        rope, local_base = _gemma3_rope(hf, head_dim)
        refuse(hf, "attn_logit_softcapping", (None,))  # transformers' Gemma 3 ignores it
    else:  # one rotation for every layer, as read_rope reads the Llama-style families'
        rope = whole_head(read_rope(hf, head_dim), model_type)
    layer_types = _layer_types(hf, model_type, n_layers)
    window = None
    if layer_types is not None and "sliding_attention" in layer_types:
        window = need(hf, "sliding_window")
    return TransformerConfig(
        d_model=d,
        n_layers=n_layers,
        n_heads=heads,
        n_kv_heads=kv if kv != heads else None,
        head_dim=head_dim,
        causal=True,
        positional="rope",
        rope_base=rope.base,
        rope_style="halves",
        rope_scaling=rope.scaling,
        rope_local_base=local_base,
        n_ctx=rope.context,
        residual=True,
        norm="pre",
        norm_type="rms",
        ln_eps=positive_float(hf, "rms_norm_eps", 1e-6),
        ln_affine=True,
        ln_offset=1.0,  # Gemma's RMSNorm: x / rms(x) * (1 + w)
        out_norm=later,
        qk_norm="head" if model_type == "gemma3_text" else "none",
        final_norm=True,
        ffn=True,
        gated=True,
        d_ffn=need(hf, "intermediate_size"),
        activation=acts[hf[act_key]],
        embed_scale=d**0.5,
        attn_scale=positive_float(hf, "query_pre_attn_scalar", 256) ** -0.5 if later else None,
        attn_softcap=_softcap(hf, "attn_logit_softcapping") if model_type == "gemma2" else None,
        final_softcap=_softcap(hf, "final_logit_softcapping") if later else None,
        sliding_window=window,
        layer_types=layer_types if window is not None else None,
        vocab_size=need(hf, "vocab_size"),
        unembed=True,
    )


def _body(tensors: Tensors) -> dict[str, torch.Tensor]:
    """The text model's tensors with their prefix removed; the LM head, the rotary buffers and a
    multimodal Gemma 3's vision tower and projector left out."""
    body = {k: v for k, v in tensors.items() if not _IGNORE.search(k)}
    for prefix in _PREFIXES:
        if body and all(k.startswith(prefix) for k in body):
            return {k.removeprefix(prefix): v for k, v in body.items()}
    return body


def gemma_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a Gemma / Gemma 2 / Gemma 3 checkpoint (ForCausalLM, the bare
    model, or a multimodal Gemma 3's or PaliGemma's language model). ``nn.Linear``'s (out, in)
    weights are transposed to the engine's (in, out); norm weights are kept as they are (the
    engine scales by 1 + w); a missing LM head means the unembedding is the token table, as
    config.json's ``tie_word_embeddings`` says (true when absent, as every Gemma config class's
    default, the multimodal ones' read at the top as transformers reads it); an untied head the
    checkpoint lacks is refused by name."""
    lm_head = tensors.get("lm_head.weight", tensors.get("language_model.lm_head.weight"))
    take = Taker(_body(tensors))
    d, H, V, hs = cfg.d_model, cfg.hidden, cfg.vocab_size, cfg.d_head
    assert V is not None
    d_q, d_kv = cfg.n_heads * hs, cfg.kv_heads * hs
    sd = ends(take, cfg, lm_head, ties(hf, True))  # the token table, the final norm, W_U
    # Gemma 1: input_layernorm before the attention, post_attention_layernorm before the MLP.
    # Gemma 2 / 3: post_attention_layernorm on the attention's output, the MLP between
    # pre_feedforward_layernorm and post_feedforward_layernorm.
    norms = {
        "ln1": "input_layernorm",
        **(
            {
                "ln1_out": "post_attention_layernorm",
                "ln2": "pre_feedforward_layernorm",
                "ln2_out": "post_feedforward_layernorm",
            }
            if cfg.out_norm
            else {"ln2": "post_attention_layernorm"}
        ),
    }
    for i in range(cfg.n_layers):
        h, p = f"layers.{i}.", f"blocks.{i}."
        sd[f"{p}attn.W_Q"] = take(f"{h}self_attn.q_proj.weight", d_q, d).T
        sd[f"{p}attn.W_K"] = take(f"{h}self_attn.k_proj.weight", d_kv, d).T
        sd[f"{p}attn.W_V"] = take(f"{h}self_attn.v_proj.weight", d_kv, d).T
        sd[f"{p}attn.W_O"] = take(f"{h}self_attn.o_proj.weight", d, d_q).T
        if cfg.qk_norm == "head":
            sd[f"{p}attn.q_norm.w"] = take(f"{h}self_attn.q_norm.weight", hs)
            sd[f"{p}attn.k_norm.w"] = take(f"{h}self_attn.k_norm.weight", hs)
        for ours, theirs in norms.items():
            sd[f"{p}{ours}.w"] = take(f"{h}{theirs}.weight", d)
        sd[f"{p}mlp.W_gate"] = take(f"{h}mlp.gate_proj.weight", H, d).T
        sd[f"{p}mlp.W_in"] = take(f"{h}mlp.up_proj.weight", H, d).T
        sd[f"{p}mlp.W_out"] = take(f"{h}mlp.down_proj.weight", d, H).T
    per_layer = 7 + len(norms) + (2 if cfg.qk_norm == "head" else 0)
    take.check_all_used(2 + per_layer * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


_DESCRIPTIONS = {
    "gemma": "Gemma: RMSNorm (1 + w), scaled token vectors, wide heads, GeGLU, tied unembedding",
    "gemma2": "Gemma 2: Gemma with norms around each sublayer, soft-capped scores and logits, "
    "sliding and full layers alternating",
    "gemma3_text": "Gemma 3 (text): Gemma 2 with q/k norms, a local rotary base on the sliding "
    "layers (5 to each full one), scaled rotation on the full layers",
    "gemma3": "Gemma 3 with a vision tower: its text model (images through transformers' tower)",
}
FAMILIES: tuple[Family, ...] = tuple(
    Family(name, gemma_config, gemma_weights, description)
    for name, description in _DESCRIPTIONS.items()
)
