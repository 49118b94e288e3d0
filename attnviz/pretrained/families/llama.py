"""Llama-style decoders (``model_type`` llama, qwen2, mistral): RMSNorm before each sublayer
and after the last block, rotary positions (Hugging Face's convention: rotate halves), grouped-
query attention, a gated SiLU feed-forward (SwiGLU), and an unembedding tied to the token table
or its own.

Read as transformers reads them: the head size (``head_dim``, Llama 3.2's and Mistral NeMo's
differ from hidden_size / heads); the rotary base and its scaling in either style of config.json
(``rope_theta`` / ``rope_scaling`` or ``rope_parameters``; linear, dynamic, yarn, longrope,
llama3: ``attnviz.pretrained.rope``); Llama's biases when ``attention_bias`` and ``mlp_bias``
are both set (then every linear layer has one); Qwen2's biases on the query, key and value;
Qwen2's sliding window on the layers ``layer_types`` names (transformers derives them from
``use_sliding_window`` and ``max_window_layers``); Mistral's sliding window on every layer, the
context staying max_position_embeddings. The text models of Qwen2-VL and Qwen2.5-VL
(``qwen2_vl_text``, ``qwen2_5_vl_text``) are Qwen2 with multimodal rotary positions (M-RoPE:
``mrope_section`` of the rotary object, in frequency pairs, read by ``read_mrope``; the run's
positions then come in a ``Layout``).

Refused, by name and with the reason: an activation other than SiLU; Llama's attention_bias
without mlp_bias or the reverse (the output projection's bias would go with the query's, not the
feed-forward's); a partial_rotary_factor (these families turn the whole head); a scaling kind the
engine does not compute; rotary parameters that differ between layer types.

An unembedding of its own (``tie_word_embeddings`` false, or absent: the default of these
families) that the checkpoint lacks is refused by name, never replaced by the token table.

The pieces (``read_heads``, ``read_window``, ``qwen_windows``, ``llama_style``,
``attention_weights``, ``mlp_weights``, ``ends``, ``read_llama``) are shared with the modules
that build on this layout (qwen3.py, olmo2.py, phi3.py, and llava.py, qwen_vl.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

import torch

from attnviz.engine.config import LayerType, TransformerConfig
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
from attnviz.pretrained.rope import Rope, read_rope, whole_head

IGNORE = re.compile(r"rotary_emb\.inv_freq$|^lm_head\.")
# The model_types read as Qwen2 (biases on q, k, v; its sliding window); the VL ones rotate with
# M-RoPE in consecutive chunks, with transformers' default sections when config.json has none.
QWEN2 = ("qwen2", "qwen2_vl_text", "qwen2_5_vl_text")
MROPE_CHUNKED = {"qwen2_vl_text": (16, 24, 24), "qwen2_5_vl_text": (16, 24, 24)}
# Old Qwen2-VL configs name the plain rotation "mrope"; transformers reads it as the default.
MROPE_ALIASES = {"mrope": "default"}


def read_heads(
    hf: Mapping, *, kv_default: int | None = None, head_dim_default: int | None = None
) -> tuple[int, int, int, int]:
    """(hidden_size, query heads, key/value heads, head size) from config.json. A key absent
    takes the config class's default: ``kv_default`` (None: one key/value head per query head)
    and ``head_dim_default`` (None: hidden_size / heads)."""
    d = need(hf, "hidden_size")
    heads = need(hf, "num_attention_heads")
    kv = hf.get("num_key_value_heads")
    kv = (kv_default or heads) if kv is None else kv
    if not isinstance(kv, int) or isinstance(kv, bool) or kv < 1 or heads % kv:
        raise ConversionError(
            f"config.json: num_key_value_heads = {kv!r} must divide num_attention_heads {heads}"
        )
    if hf.get("head_dim") is not None:
        head_dim = need(hf, "head_dim")
    elif head_dim_default is not None:
        head_dim = head_dim_default
    elif d % heads:
        raise ConversionError(
            f"config.json: {heads} heads do not divide hidden_size {d} (and no head_dim)"
        )
    else:
        head_dim = d // heads
    return d, heads, kv, head_dim


def read_window(hf: Mapping, default: int | None) -> int | None:
    """config.json's ``sliding_window`` (``default`` when absent): a size, or null for none."""
    window = hf.get("sliding_window", default)
    if window is not None and (
        not isinstance(window, int) or isinstance(window, bool) or window < 1
    ):
        raise ConversionError(
            f"config.json: sliding_window = {window!r} must be a positive integer or null"
        )
    return window


def qwen_windows(hf: Mapping, n_layers: int) -> tuple[int | None, tuple[LayerType, ...] | None]:
    """Qwen2's and Qwen3's sliding window and the layers it applies to, as their config classes
    read them: the window only with ``use_sliding_window``; ``layer_types`` as config.json
    gives it, else sliding from layer ``max_window_layers`` on. (None, None): no layer slides."""
    use = hf.get("use_sliding_window", False)
    if not isinstance(use, bool):
        raise ConversionError(
            f"config.json: use_sliding_window must be true or false (got {use!r})"
        )
    window = read_window(hf, 4096) if use else None
    types = hf.get("layer_types")
    if types is None:
        first = hf.get("max_window_layers", 28)
        if not isinstance(first, int) or isinstance(first, bool) or first < 0:
            raise ConversionError(
                f"config.json: max_window_layers must be a whole number (got {first!r})"
            )
        types = [
            "sliding_attention" if window is not None and i >= first else "full_attention"
            for i in range(n_layers)
        ]
    if (
        not isinstance(types, list)
        or len(types) != n_layers
        or any(t not in ("full_attention", "sliding_attention") for t in types)
    ):
        raise ConversionError(
            f"config.json: layer_types must name each of the {n_layers} layers "
            f"'full_attention' or 'sliding_attention' (got {types!r})"
        )
    if "sliding_attention" not in types:
        return None, None
    if window is None:
        raise ConversionError(
            "config.json: layer_types has sliding_attention layers but no window to slide "
            "(use_sliding_window is false or sliding_window null; transformers cannot run it "
            "either)"
        )
    return window, tuple(types)


def read_mrope(hf: Mapping, rope: Rope, default: tuple[int, ...] | None, interleaved: bool) -> dict:
    """The multimodal rotary fields (``rope_sections``, ``rope_interleaved``) of a family whose
    transformers code rotates with M-RoPE: ``mrope_section`` of the rotary object (rope_scaling
    or rope_parameters, as ``read_rope`` picks it; ``default`` when absent, as the config
    class's), frequency pairs summing to the rotated half-head. The layout, chunks or
    interleaved, is the family's (transformers' code ignores ``mrope_interleaved``): a config
    that says otherwise is refused."""
    field = rope.field
    d = hf.get(field) or {}
    sections = d.get("mrope_section", default) if isinstance(d, Mapping) else default
    if (
        not isinstance(sections, (list, tuple))
        or not sections
        or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in sections)
        or sum(sections) != rope.rotary_dim // 2
    ):
        raise ConversionError(
            f"config.json: {field}.mrope_section = {sections!r} must be counts of frequency "
            f"pairs summing to {rope.rotary_dim // 2} (half the rotated head)"
        )
    said = d.get("mrope_interleaved") if isinstance(d, Mapping) else None
    if said is not None and said is not interleaved:
        layout = "interleaved" if interleaved else "in chunks"
        raise ConversionError(
            f"config.json: {field}.mrope_interleaved = {said!r}, but this family's sections "
            f"are {layout} (as transformers rotates them)"
        )
    return {"rope_sections": tuple(sections), "rope_interleaved": interleaved}


def llama_style(
    hf: Mapping, heads: tuple[int, int, int, int], rope: Rope, **fields
) -> TransformerConfig:
    """The engine configuration of a Llama-style decoder: ``heads`` as ``read_heads`` gives
    them, ``rope`` as ``read_rope`` does, SiLU SwiGLU, RMSNorm (``rms_norm_eps``) before each
    sublayer and after the last, a vocabulary and an unembedding; ``fields`` sets the rest
    (biases, windows, q/k norms...)."""
    refuse(hf, "hidden_act", ("silu",), "silu")
    d, n_heads, kv, head_dim = heads
    config = TransformerConfig(
        d_model=d,
        n_layers=need(hf, "num_hidden_layers"),
        n_heads=n_heads,
        n_kv_heads=kv if kv != n_heads else None,
        head_dim=None if head_dim * n_heads == d else head_dim,
        causal=True,
        positional="rope",
        rope_base=rope.base,
        rope_style="halves",
        rope_scaling=rope.scaling,
        rotary_dim=None if rope.rotary_dim == head_dim else rope.rotary_dim,
        n_ctx=rope.context,
        residual=True,
        norm="pre",
        norm_type="rms",
        ln_eps=positive_float(hf, "rms_norm_eps", 1e-6),
        ln_affine=True,
        final_norm=True,
        ffn=True,
        gated=True,
        d_ffn=need(hf, "intermediate_size"),
        activation="silu",
        vocab_size=need(hf, "vocab_size"),
        unembed=True,
    )
    return replace(config, **fields)


def llama_config(hf: Mapping) -> TransformerConfig:
    model_type = str(hf.get("model_type"))
    qwen2 = model_type in QWEN2
    heads = read_heads(hf, kv_default=32 if qwen2 else None)
    bias = False
    if model_type == "llama":
        refuse(hf, "attention_bias", (False, True), False)
        refuse(hf, "mlp_bias", (False, True), False)
        attn_bias, mlp_bias = hf.get("attention_bias", False), hf.get("mlp_bias", False)
        if attn_bias != mlp_bias:
            raise ConversionError(
                f"config.json: attention_bias = {attn_bias} with mlp_bias = {mlp_bias} is not "
                "supported (the engine puts biases on every linear layer, or on the query, key "
                "and value only; Llama's attention_bias also biases the output projection)"
            )
        bias = attn_bias
    rope = whole_head(read_rope(hf, heads[3], aliases=MROPE_ALIASES if qwen2 else None), model_type)
    mrope = (
        read_mrope(hf, rope, MROPE_CHUNKED[model_type], False)
        if model_type in MROPE_CHUNKED
        else {}
    )
    window: int | None = None
    layer_types: tuple[LayerType, ...] | None = None
    if qwen2:
        window, layer_types = qwen_windows(hf, need(hf, "num_hidden_layers"))
    elif model_type == "mistral":
        window = read_window(hf, 4096)  # every layer slides (transformers ignores layer_types)
    return llama_style(
        hf,
        heads,
        rope,
        bias=bias,
        qkv_bias=qwen2,
        sliding_window=window,
        layer_types=layer_types,
        **mrope,
    )


def attention_weights(take: Taker, cfg: TransformerConfig, hf: str, p: str) -> dict:
    """Layer ``hf``'s (e.g. "layers.3.") q/k/v/o projections (and biases) as block ``p``'s."""
    d, d_q, d_kv = cfg.d_model, cfg.d_attn, cfg.kv_heads * cfg.d_head
    sd = {
        f"{p}attn.W_Q": take(f"{hf}self_attn.q_proj.weight", d_q, d).T,
        f"{p}attn.W_K": take(f"{hf}self_attn.k_proj.weight", d_kv, d).T,
        f"{p}attn.W_V": take(f"{hf}self_attn.v_proj.weight", d_kv, d).T,
        f"{p}attn.W_O": take(f"{hf}self_attn.o_proj.weight", d, d_q).T,
    }
    if cfg.bias or cfg.qkv_bias:
        sd[f"{p}attn.b_Q"] = take(f"{hf}self_attn.q_proj.bias", d_q)
        sd[f"{p}attn.b_K"] = take(f"{hf}self_attn.k_proj.bias", d_kv)
        sd[f"{p}attn.b_V"] = take(f"{hf}self_attn.v_proj.bias", d_kv)
    if cfg.bias:
        sd[f"{p}attn.b_O"] = take(f"{hf}self_attn.o_proj.bias", d)
    return sd


def mlp_weights(take: Taker, cfg: TransformerConfig, hf: str, p: str) -> dict:
    """Layer ``hf``'s gate/up/down projections (and biases) as block ``p``'s SwiGLU."""
    d, H = cfg.d_model, cfg.hidden
    sd = {
        f"{p}mlp.W_gate": take(f"{hf}mlp.gate_proj.weight", H, d).T,
        f"{p}mlp.W_in": take(f"{hf}mlp.up_proj.weight", H, d).T,
        f"{p}mlp.W_out": take(f"{hf}mlp.down_proj.weight", d, H).T,
    }
    if cfg.bias:
        sd[f"{p}mlp.b_gate"] = take(f"{hf}mlp.gate_proj.bias", H)
        sd[f"{p}mlp.b_in"] = take(f"{hf}mlp.up_proj.bias", H)
        sd[f"{p}mlp.b_out"] = take(f"{hf}mlp.down_proj.bias", d)
    return sd


def ends(take: Taker, cfg: TransformerConfig, lm_head: torch.Tensor | None, tied: bool) -> dict:
    """The token table, the final norm and the unembedding: ``lm_head`` (the checkpoint's
    ``lm_head.weight``), or the token table itself when the checkpoint has none and config.json
    ties them (``tied``); an untied head the checkpoint lacks is refused by name."""
    d, V = cfg.d_model, cfg.vocab_size
    assert V is not None
    sd = {"W_E": take("embed_tokens.weight", V, d), "ln_final.w": take("norm.weight", d)}
    sd["W_U"] = unembedding(lm_head, "lm_head.weight", sd["W_E"], tied)
    return sd


def llama_weights(cfg: TransformerConfig, tensors: Tensors, hf: Mapping) -> dict[str, torch.Tensor]:
    """Engine state dict from a LlamaForCausalLM (Qwen2, Mistral) checkpoint: ``read_llama``,
    the unembedding tied to the token table as config.json's ``tie_word_embeddings`` says
    (false when absent, as LlamaConfig's, Qwen2Config's and MistralConfig's default)."""
    return read_llama(cfg, tensors, ties(hf, False))


def read_llama(cfg: TransformerConfig, tensors: Tensors, tied: bool) -> dict[str, torch.Tensor]:
    """Engine state dict from a Llama-style checkpoint's tensors. ``nn.Linear``'s (out, in)
    weights are transposed to the engine's (in, out); the unembedding is ``lm_head.weight``, or
    the token table when the checkpoint has none and ``tied``."""
    take = Taker(strip(tensors, "model.", IGNORE))
    d = cfg.d_model
    sd = ends(take, cfg, tensors.get("lm_head.weight"), tied)
    for i in range(cfg.n_layers):
        hf, p = f"layers.{i}.", f"blocks.{i}."
        sd.update(attention_weights(take, cfg, hf, p))
        sd[f"{p}ln1.w"] = take(f"{hf}input_layernorm.weight", d)
        sd[f"{p}ln2.w"] = take(f"{hf}post_attention_layernorm.weight", d)
        sd.update(mlp_weights(take, cfg, hf, p))
    per_layer = 9 + (7 if cfg.bias else 3 if cfg.qkv_bias else 0)
    take.check_all_used(2 + per_layer * cfg.n_layers)
    return sd  # views of the checkpoint's tensors: the loader converts each once, or none


FAMILIES = (
    Family(
        name="llama",
        config=llama_config,
        weights=llama_weights,
        description="Llama decoders (1-3.x): RMSNorm, rotary positions and their scalings, "
        "grouped-query attention, SwiGLU",
    ),
    Family(
        name="qwen2",
        config=llama_config,
        weights=llama_weights,
        description="Qwen2 / Qwen2.5 decoders: Llama's wiring with biases on the query, key and "
        "value and a sliding window on the layers layer_types names",
    ),
    Family(
        name="qwen2_vl_text",
        config=llama_config,
        weights=llama_weights,
        description="Qwen2-VL's text model: Qwen2 with multimodal rotary positions (M-RoPE)",
    ),
    Family(
        name="qwen2_5_vl_text",
        config=llama_config,
        weights=llama_weights,
        description="Qwen2.5-VL's text model: Qwen2 with multimodal rotary positions (M-RoPE)",
    ),
    Family(
        name="mistral",
        config=llama_config,
        weights=llama_weights,
        description="Mistral decoders: Llama's wiring with a sliding attention window",
    ),
)
