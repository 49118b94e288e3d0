"""Tiny random Llama-style decoders of today's shapes (Llama 3.x, Qwen2/2.5, Qwen3, Mistral,
OLMo 2, Phi-3) the tests make themselves, saved by transformers (the development-only oracle) in
the standard Hugging Face layout, and the rewrite of a saved config.json into the hub's older
style (top-level rope_theta, rope_scaling, partial_rotary_factor; no layer_types).

Every parameter is perturbed, so that no norm is the identity and no bias is zero. The sizes are
chosen so that what each family adds matters under the test texts (50+ tokens): a sliding window
of 8, RoPE scaled past an original context of 16 positions, heads wider than hidden_size /
heads, grouped-query attention.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.checkpoints import make_piece_tokenizer

WINDOW = 8  # the sliding window of the tiny configurations, well under the texts' lengths
ORIGINAL = 16  # the context the scaled rotations were "trained" for, also under them

_SIZES = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_attention_heads": 4,
    "num_hidden_layers": 2,
    "max_position_embeddings": 256,
    "bos_token_id": 1,
    "eos_token_id": 2,
}
_WIDE = {"head_dim": 16}  # not 32 / 4 = 8: as Llama 3.2's, Qwen3's, Mistral NeMo's heads


def _rope(kind: str, **params) -> dict:
    return {"rope_parameters": {"rope_type": kind, "rope_theta": 10000.0, **params}}


# Decoder configurations the tests cover: model_type, then config keyword arguments.
DECODER_STYLES: dict[str, dict] = {
    # Llama 3.x: llama3 frequencies whose three bands (kept, smoothed, divided by the factor)
    # each hold some of the 8 pairs of a 16-wide head; grouped-query attention; tied table.
    "llama3": {
        "model_type": "llama",
        **_WIDE,
        "num_key_value_heads": 2,
        "tie_word_embeddings": True,
        **_rope(
            "llama3",
            factor=8.0,
            low_freq_factor=0.5,
            high_freq_factor=2.0,
            original_max_position_embeddings=ORIGINAL,
        ),
    },  # fmt: skip
    "llama-linear": {"model_type": "llama", **_rope("linear", factor=2.0)},
    # Dynamic NTK grows the base once a text passes max_position_embeddings, here 16.
    "llama-dynamic": {
        "model_type": "llama",
        "max_position_embeddings": ORIGINAL,
        **_rope("dynamic", factor=2.0),
    },
    "llama-yarn": {
        "model_type": "llama",
        **_WIDE,
        "max_position_embeddings": 4 * ORIGINAL,
        **_rope("yarn", factor=4.0, original_max_position_embeddings=ORIGINAL),
    },
    # YaRN as DeepSeek writes it: mscale / mscale_all_dim set the attention factor, no
    # truncation of the correction range, other betas; Qwen2's biases.
    "qwen2-yarn": {
        "model_type": "qwen2",
        "num_key_value_heads": 2,
        **_rope(
            "yarn",
            factor=4.0,
            original_max_position_embeddings=ORIGINAL,
            beta_fast=16.0,
            beta_slow=2.0,
            mscale=1.2,
            mscale_all_dim=0.8,
            truncate=False,
        ),
    },  # fmt: skip
    # LongRoPE (short factors up to 16 positions, long ones past it), its factor left to
    # max / original = 4 and so its attention factor sqrt(1 + ln 4 / ln 16).
    "llama-longrope": {
        "model_type": "llama",
        "max_position_embeddings": 4 * ORIGINAL,
        **_rope(
            "longrope",
            short_factor=[1.0, 1.1, 1.3, 1.7],
            long_factor=[1.0, 2.0, 4.0, 9.0],
            original_max_position_embeddings=ORIGINAL,
        ),
    },  # fmt: skip
    # Llama with biases on every linear (attention_bias and mlp_bias both set).
    "llama-bias": {"model_type": "llama", "attention_bias": True, "mlp_bias": True},
    # Qwen2.5 with its sliding window on the layers from max_window_layers on: full, sliding,
    # sliding.
    "qwen2-window": {
        "model_type": "qwen2",
        "num_hidden_layers": 3,
        "num_key_value_heads": 2,
        "use_sliding_window": True,
        "sliding_window": WINDOW,
        "max_window_layers": 1,
    },
    # Qwen3: wide heads normalised per head, no biases, a window on the last layer, tied.
    "qwen3": {
        "model_type": "qwen3",
        **_WIDE,
        "num_key_value_heads": 2,
        "use_sliding_window": True,
        "sliding_window": WINDOW,
        "max_window_layers": 1,
        "tie_word_embeddings": True,
    },
    "qwen3-yarn": {
        "model_type": "qwen3",
        **_WIDE,
        "num_key_value_heads": 4,
        "max_position_embeddings": 4 * ORIGINAL,
        **_rope("yarn", factor=4.0, original_max_position_embeddings=ORIGINAL),
    },
    # Mistral: every layer slides, one key/value head, wide heads.
    "mistral": {
        "model_type": "mistral",
        **_WIDE,
        "num_key_value_heads": 1,
        "sliding_window": WINDOW,
    },
    # OLMo 2: norms on the sublayers' outputs, q/k normalised over the whole projection.
    "olmo2": {"model_type": "olmo2", "num_key_value_heads": 2, **_rope("default")},
    # Phi-3 128k-style: fused projections, LongRoPE on half of each head (partial rotary),
    # a sliding window, grouped-query attention.
    "phi3": {
        "model_type": "phi3",
        "pad_token_id": 0,
        "num_key_value_heads": 2,
        "max_position_embeddings": 4 * ORIGINAL,
        "original_max_position_embeddings": ORIGINAL,
        "sliding_window": WINDOW,
        "rope_parameters": {
            "rope_type": "longrope",
            "rope_theta": 10000.0,
            "partial_rotary_factor": 0.5,
            "short_factor": [1.0, 1.5],
            "long_factor": [2.0, 5.0],
        },
    },
    # Phi-3 4k-style: plain RoPE over the whole head, no window, its own unembedding.
    "phi3-4k": {"model_type": "phi3", "pad_token_id": 0},
}


def make_decoder(folder: Path, style: str, seed: int = 0) -> Path:
    """A small random decoder of one of ``DECODER_STYLES`` (2-3 layers x 4 heads, d_model 32)
    with a SentencePiece-style tokenizer, every parameter perturbed; saved by transformers in its
    own (version 5) style of config.json."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = {**_SIZES, **DECODER_STYLES[style]}
    model_type = kw.pop("model_type")
    folder.mkdir(parents=True, exist_ok=True)
    tok = make_piece_tokenizer(specials=("<|im_start|>", "<|im_end|>"))
    tok.save(str(folder / "tokenizer.json"))
    config = AutoConfig.for_model(model_type, vocab_size=tok.get_vocab_size(), **kw)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    model.save_pretrained(folder)
    return folder


def to_hub_style(hf: dict) -> dict:
    """A transformers-5 config.json rewritten as the hub's checkpoints write it: rope_theta (and
    Phi's partial_rotary_factor) at the top level, the scaling (if any) as ``rope_scaling`` with
    the older ``type`` key for the older kinds, no ``rope_parameters``, no ``layer_types``
    (Qwen's derived from use_sliding_window and max_window_layers)."""
    hf = dict(hf)
    params = dict(hf.pop("rope_parameters", None) or {})
    hf["rope_theta"] = params.pop("rope_theta", 10000.0)
    if "partial_rotary_factor" in params:
        hf["partial_rotary_factor"] = params.pop("partial_rotary_factor")
    kind = params.pop("rope_type", params.pop("type", "default"))
    params.pop("type", None)
    if kind == "default":
        hf["rope_scaling"] = None
    else:
        hf["rope_scaling"] = {"type" if kind in ("linear", "dynamic", "longrope") else
                              "rope_type": kind, **params}  # fmt: skip
    if hf.get("model_type") in ("qwen2", "qwen3"):
        hf.pop("layer_types", None)
    return hf


def rewrite_config(folder: Path, copy: Path, change) -> Path:
    """A copy of ``folder`` whose config.json is ``change(config)``."""
    import shutil

    shutil.copytree(folder, copy)
    path = copy / "config.json"
    path.write_text(json.dumps(change(json.loads(path.read_text())), indent=2))
    return copy
