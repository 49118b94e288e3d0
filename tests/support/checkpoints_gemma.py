"""Tiny random Gemma (1, 2, 3) and GPT-NeoX (Pythia) folders the tests make themselves, saved by
transformers (the development-only oracle) in the standard Hugging Face layout, and the rewrite
of a saved config.json into the hub's older style (top-level rope_theta, rope_scaling, ...).

Every parameter is perturbed, so that no norm is the identity (Gemma's RMSNorm weights start at
zero and scale by 1 + w) and no bias is zero. The configurations are small enough to check by
hand and chosen so that what each family adds matters: a sliding window of 8 under texts of
50+ tokens, attention soft-caps small enough that tanh bends the scores, a head size other than
hidden_size / heads, query_pre_attn_scalar other than the head size, grouped-query attention.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.checkpoints import make_piece_tokenizer, make_tokenizer

# The sliding window of the tiny Gemma 2 / 3 configurations, well under the test texts' lengths.
WINDOW = 8

_SIZES = {
    "hidden_size": 32,
    "intermediate_size": 48,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,  # not 32 / 4: Gemma's heads are wider than hidden_size / heads
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}

# Gemma-style configurations: model_type, then config keyword arguments.
GEMMA_STYLES: dict[str, dict] = {
    "gemma": {"model_type": "gemma", "num_hidden_layers": 2, "rope_theta": 5000.0},
    # Gemma 2: sliding (layers 1, 3) and full (layer 2) as transformers alternates them by
    # default, soft-capped attention and logits, scores scaled by query_pre_attn_scalar^-1/2.
    "gemma2": {
        "model_type": "gemma2",
        "num_hidden_layers": 3,
        "sliding_window": WINDOW,
        "query_pre_attn_scalar": 24,
        "attn_logit_softcapping": 1.5,
        "final_logit_softcapping": 2.0,
    },
    # Gemma 2 with its own unembedding and Hugging Face's own defaults for the caps.
    "gemma2-untied": {
        "model_type": "gemma2",
        "num_hidden_layers": 2,
        "sliding_window": WINDOW,
        "tie_word_embeddings": False,
    },
    # Gemma 3: two sliding layers to one full (the hub's sliding_window_pattern, 6 in the real
    # models), q/k norms, a local rotary base for the sliding layers and a linearly scaled one
    # for the full layers.
    "gemma3": {
        "model_type": "gemma3_text",
        "num_hidden_layers": 3,
        "sliding_window": WINDOW,
        "sliding_window_pattern": 3,
        "query_pre_attn_scalar": 16,
        "final_logit_softcapping": 2.5,
        "rope_parameters": {
            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
            "sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
        },
    },
}

# GPT-NeoX (Pythia) configurations: hidden 64 and 4 heads, so a head is 16 wide.
NEOX_STYLES: dict[str, dict] = {
    # Pythia: parallel residual, a quarter of each head rotated (4 of 16 coordinates).
    "pythia": {"rotary_pct": 0.25, "rotary_emb_base": 10000},
    # The sequential form, half the head rotated, another base, a tied unembedding.
    "neox-sequential": {
        "use_parallel_residual": False,
        "rotary_pct": 0.5,
        "rotary_emb_base": 500,
        "tie_word_embeddings": True,
    },
    # Dynamic NTK scaling past a context of 32 (the test texts reach 56 tokens): the base grows
    # with the length, over the rotated quarter of each head.
    "neox-dynamic": {
        "max_position_embeddings": 32,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0},
    },
}


def _perturb(model, seed: int, scale: float = 0.05) -> None:
    import torch

    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(scale * torch.randn(p.shape, generator=g))


def make_tiny_gemma(folder: Path, style: str = "gemma2", seed: int = 0) -> Path:
    """A small random Gemma-style decoder of one of ``GEMMA_STYLES`` with a SentencePiece-style
    tokenizer, every parameter perturbed; the folder as transformers 5 saves it."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = {**_SIZES, **GEMMA_STYLES[style]}
    model_type = kw.pop("model_type")
    rope_theta = kw.pop("rope_theta", None)
    folder.mkdir(parents=True, exist_ok=True)
    tok = make_piece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    config = AutoConfig.for_model(model_type, vocab_size=tok.get_vocab_size(), **kw)
    if rope_theta is not None:
        config.rope_parameters = {"rope_type": "default", "rope_theta": rope_theta}
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config)
    _perturb(model, seed, scale=0.2)  # the (1 + w) norms are far from the identity
    model.save_pretrained(folder)
    return folder


def make_tiny_gemma3_multimodal(folder: Path, seed: int = 0) -> Path:
    """A small random Gemma 3 with a vision tower (model_type gemma3,
    Gemma3ForConditionalGeneration): its text model is the gemma3 style's."""
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    # Gemma3ForConditionalGeneration does not soft-cap its logits (the hub's models set none).
    text = {**_SIZES, **GEMMA_STYLES["gemma3"], "final_logit_softcapping": None}
    text.pop("model_type")
    folder.mkdir(parents=True, exist_ok=True)
    tok = make_piece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    vocab = tok.get_vocab_size() + 3  # the image tokens come after the text's
    config = Gemma3Config(
        text_config={**text, "vocab_size": vocab},
        vision_config={
            "model_type": "siglip_vision_model", "hidden_size": 16, "intermediate_size": 32,
            "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 28, "patch_size": 14,
        },
        mm_tokens_per_image=1, boi_token_index=vocab - 3, eoi_token_index=vocab - 2,
        image_token_index=vocab - 1,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = Gemma3ForConditionalGeneration(config)
    _perturb(model, seed, scale=0.2)
    model.save_pretrained(folder)
    return folder


def make_tiny_neox(folder: Path, style: str = "pythia", seed: int = 0) -> Path:
    """A small random GPT-NeoX (Pythia) of one of ``NEOX_STYLES`` with a byte-level BPE tokenizer
    like Pythia's, every parameter perturbed; the folder as transformers 5 saves it."""
    import torch
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    kw = {"max_position_embeddings": 256, **NEOX_STYLES[style]}
    config = GPTNeoXConfig(
        vocab_size=tok.get_vocab_size(), hidden_size=64, num_hidden_layers=2,
        num_attention_heads=4, intermediate_size=96, bos_token_id=0, eos_token_id=0, **kw,
    )  # fmt: skip
    torch.manual_seed(seed)
    model = GPTNeoXForCausalLM(config)
    _perturb(model, seed)
    model.save_pretrained(folder)
    return folder


def _hub_rope(params: dict) -> tuple[float, dict | None]:
    """rope_theta and the hub's rope_scaling (None for the default rotation) of one flat
    rope_parameters."""
    scaling = {k: v for k, v in params.items() if k != "rope_theta"}
    if scaling.get("rope_type", "default") == "default":
        return params["rope_theta"], None
    return params["rope_theta"], scaling


def hub_style(config: dict) -> dict:
    """``config`` (a config.json transformers 5 wrote) in the style of the hub's older files:
    rope_theta / rope_scaling at the top level (Gemma 3: rope_local_base_freq for the sliding
    layers), GPT-NeoX's rotary_pct and rotary_emb_base, Gemma 2 / 3 without layer_types (Gemma 3
    with sliding_window_pattern). Raises when the layer types are not the ones the old style
    implies, so a test cannot silently compare two different models."""
    out = dict(config)
    if out.get("model_type") == "gemma3":
        out["text_config"] = hub_style(out["text_config"])
        return out
    params = out.pop("rope_parameters")
    model_type = out["model_type"]
    if model_type == "gemma3_text":
        out["rope_theta"], out["rope_scaling"] = _hub_rope(params["full_attention"])
        local = params["sliding_attention"]
        assert local.get("rope_type", "default") == "default"
        out["rope_local_base_freq"] = local["rope_theta"]
        pattern = out.pop("_sliding_window_pattern", None) or out["sliding_window_pattern"]
        out["sliding_window_pattern"] = pattern
    elif model_type == "gpt_neox":
        out["rotary_emb_base"], out["rope_scaling"] = _hub_rope(
            {k: v for k, v in params.items() if k != "partial_rotary_factor"}
        )
        out["rotary_pct"] = params["partial_rotary_factor"]
    else:
        out["rope_theta"], out["rope_scaling"] = _hub_rope(params)
    if model_type in ("gemma2", "gemma3_text"):
        n = out["num_hidden_layers"]
        period = 2 if model_type == "gemma2" else out["sliding_window_pattern"]
        implied = ["sliding_attention" if (i + 1) % period else "full_attention" for i in range(n)]
        assert out.pop("layer_types") == implied, "these layer types have no hub-style form"
    return out


def rewrite_config(folder: Path, target: Path, change) -> Path:
    """A copy of ``folder`` at ``target`` whose config.json is ``change(config)``."""
    import shutil

    shutil.copytree(folder, target)
    path = target / "config.json"
    path.write_text(json.dumps(change(json.loads(path.read_text()))))
    return target
