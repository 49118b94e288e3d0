"""Real models' shapes, as their config.json files on the Hugging Face hub give them, and a
random checkpoint of each that ``attnviz bench --shape`` serves: the layout and the sizes of a
real one (a Llama-style folder: safetensors in bfloat16 as the hub ships them, a byte-level BPE
tokenizer), weights drawn with a fixed seed at the scale real ones have. Nothing is downloaded.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger(__name__)

# config.json of each, as on the hub (the keys the loader reads, and what identifies them).
SHAPES: dict[str, dict] = {
    "qwen2.5-0.5b": {  # Qwen/Qwen2.5-0.5B
        "model_type": "qwen2",
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_size": 896,
        "num_hidden_layers": 24,
        "num_attention_heads": 14,
        "num_key_value_heads": 2,
        "intermediate_size": 4864,
        "vocab_size": 151936,
        "tie_word_embeddings": True,
        "rope_theta": 1000000.0,
        "max_position_embeddings": 32768,
        "rms_norm_eps": 1e-6,
        "hidden_act": "silu",
        "use_sliding_window": False,
        "sliding_window": 32768,
        "max_window_layers": 24,
        "bos_token_id": 151643,
        "eos_token_id": 151643,
        "torch_dtype": "bfloat16",
    },
    "smollm2-135m": {  # HuggingFaceTB/SmolLM2-135M
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 576,
        "num_hidden_layers": 30,
        "num_attention_heads": 9,
        "num_key_value_heads": 3,
        "intermediate_size": 1536,
        "vocab_size": 49152,
        "tie_word_embeddings": True,
        "rope_theta": 100000.0,
        "rope_scaling": None,
        "max_position_embeddings": 8192,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 0,
        "eos_token_id": 0,
        "torch_dtype": "bfloat16",
    },
    "llama-3.2-1b": {  # meta-llama/Llama-3.2-1B
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 2048,
        "num_hidden_layers": 16,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "intermediate_size": 8192,
        "vocab_size": 128256,
        "tie_word_embeddings": True,
        "rope_theta": 500000.0,
        "rope_scaling": {
            "rope_type": "llama3",
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
        "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-5,
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "bos_token_id": 128000,
        "eos_token_id": 128001,
        "torch_dtype": "bfloat16",
    },
}


class ShapeError(ValueError):
    """A shape that cannot be built: unknown, or refused by its family's config reader."""


def shape_config(name: str, layers: int | None = None) -> dict:
    """The config.json of shape ``name``; with ``layers``, only that many layers (a test's)."""
    if name not in SHAPES:
        raise ShapeError(f"--shape: {name!r} is not one of {', '.join(SHAPES)}")
    hf = dict(SHAPES[name])
    if layers is not None:
        hf["num_hidden_layers"] = layers
        if "max_window_layers" in hf:
            hf["max_window_layers"] = layers
    return hf


def checkpoint_tensors(hf: dict, seed: int = 0, dtype=None) -> dict:
    """Random weights of a Llama-style ``hf`` in the hub's names: every matrix normal(0, 0.02),
    norms 1, biases 0 (how transformers initialises them, and the scale trained ones have),
    drawn with ``seed``. The sizes are those the family's own config reader makes of ``hf``: a
    shape it refuses is refused here (ShapeError)."""
    import torch

    from attnviz.pretrained.convert import FAMILIES, ConversionError

    family = FAMILIES.get(hf["model_type"])
    if family is None:
        raise ShapeError(f"model_type {hf['model_type']!r} has no family")
    try:
        cfg = family.config(hf)
    except ConversionError as exc:
        raise ShapeError(f"the {family.name} family refuses this shape: {exc}") from exc
    dtype = dtype or torch.bfloat16
    g = torch.Generator().manual_seed(seed)
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    d_q, d_kv = cfg.n_heads * cfg.d_head, cfg.kv_heads * cfg.d_head

    def normal(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, generator=g) * 0.02).to(dtype)

    out = {
        "model.embed_tokens.weight": normal(V, d),
        "model.norm.weight": torch.ones(d, dtype=dtype),
    }
    if not hf.get("tie_word_embeddings", False):
        out["lm_head.weight"] = normal(V, d)
    for i in range(cfg.n_layers):
        p = f"model.layers.{i}."
        for name, rows in (("q", d_q), ("k", d_kv), ("v", d_kv)):
            out[f"{p}self_attn.{name}_proj.weight"] = normal(rows, d)  # (out, in)
            if cfg.qkv_bias or cfg.bias:
                out[f"{p}self_attn.{name}_proj.bias"] = torch.zeros(rows, dtype=dtype)
        out[f"{p}self_attn.o_proj.weight"] = normal(d, d_q)
        out[f"{p}mlp.gate_proj.weight"] = normal(H, d)
        out[f"{p}mlp.up_proj.weight"] = normal(H, d)
        out[f"{p}mlp.down_proj.weight"] = normal(d, H)
        if cfg.bias:
            out[f"{p}self_attn.o_proj.bias"] = torch.zeros(d, dtype=dtype)
            for name, rows in (("gate", H), ("up", H), ("down", d)):
                out[f"{p}mlp.{name}_proj.bias"] = torch.zeros(rows, dtype=dtype)
        out[f"{p}input_layernorm.weight"] = torch.ones(d, dtype=dtype)
        out[f"{p}post_attention_layernorm.weight"] = torch.ones(d, dtype=dtype)
    return out


def _corpus() -> list[str]:
    """English and Python that Python itself ships (its standard library's sources)."""
    import argparse
    import inspect
    import json as json_module
    import logging as logging_module
    import textwrap

    return [inspect.getsource(m) for m in (argparse, json_module, logging_module, textwrap)]


def make_tokenizer(vocab_size: int):
    """A byte-level BPE tokenizer (GPT-2's kind) of at most ``vocab_size`` tokens, trained here on
    text Python ships; ``<|endoftext|>`` is token 0."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=min(vocab_size, 8192),
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer)
    return tok


def write_folder(
    name: str, folder: Path, seed: int = 0, layers: int | None = None, dtype=None
) -> Path:
    """A model folder of shape ``name`` (``checkpoint_tensors``, safetensors in bfloat16 by
    default, and ``make_tokenizer``'s tokenizer). Its config.json has no end-of-text token, so
    that a generation runs its whole length (a random model may write any id)."""
    from safetensors.torch import save_file

    hf = shape_config(name, layers)
    tensors = checkpoint_tensors(hf, seed, dtype)
    folder.mkdir(parents=True, exist_ok=True)
    for key in ("bos_token_id", "eos_token_id"):
        hf.pop(key, None)
    if dtype is not None:
        hf["torch_dtype"] = str(dtype).removeprefix("torch.")
    (folder / "config.json").write_text(json.dumps(hf, indent=2), encoding="utf-8")
    make_tokenizer(hf["vocab_size"]).save(str(folder / "tokenizer.json"))
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    log.info("wrote a random %s (%d tensors) to %s", name, len(tensors), folder)
    return folder
