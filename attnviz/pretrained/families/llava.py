"""LLaVA and Idefics3 / SmolVLM (``model_type`` llava, idefics3): their language model, read as
llama.py reads its ``text_config`` (a Llama-style decoder: its own ``model_type``, llama, qwen2
or mistral). Its tensors are those under the language model's prefix as saved
(``language_model.model.``, LLaVA's; ``model.text_model.``, Idefics3's) or as transformers 5
names them (``model.language_model.``), and the LM head; the vision tower and projector (or
connector) are not read here: a folder with images runs them through transformers
(``attnviz.pretrained.native_vlm``). A text model whose config lists too few keys (the hub's
LLaVA-1.5 leaves its sizes to LlamaConfig's defaults) is refused by name, and so is a checkpoint
without its LM head unless config.json ties it to the token table: ``tie_word_embeddings`` at
the top (false when absent), or, for LLaVA, in ``text_config`` (where older files wrote it), as
transformers reads them.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import ConversionError, Family, Tensors, ties
from attnviz.pretrained.families.llama import llama_config, read_llama

# The language model's prefixes, and its LM head's names.
_TEXT = ("language_model.model.", "model.language_model.", "model.text_model.")
_HEAD = ("language_model.lm_head.weight", "lm_head.weight")
_TYPES = ("llama", "qwen2", "mistral")


def text_config(hf: Mapping) -> Mapping:
    text = hf.get("text_config")
    if not isinstance(text, Mapping):
        raise ConversionError("config.json: text_config must be an object")
    if text.get("model_type") not in _TYPES:
        raise ConversionError(
            f"config.json: text_config.model_type {text.get('model_type')!r} is not supported "
            f"(read as one of {', '.join(_TYPES)})"
        )
    return text


def vlm_llama_config(hf: Mapping) -> TransformerConfig:
    return llama_config(text_config(hf))


def vlm_llama_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    """Engine state dict of the language model (llama.py's reading of a ForCausalLM's
    tensors), every other tensor left to the vision tower's loader."""
    tied = ties(hf, False)
    if hf.get("model_type") == "llava":  # LlavaConfig takes text_config's too (older files)
        tied = tied or ties(text_config(hf), False)
    text: dict[str, torch.Tensor] = {}
    for key, t in tensors.items():
        prefix = next((p for p in _TEXT if key.startswith(p)), None)
        if prefix is not None:
            text["model." + key.removeprefix(prefix)] = t
        elif key in _HEAD:
            text["lm_head.weight"] = t
    return read_llama(cfg, text, tied)


FAMILIES = tuple(
    Family(name, vlm_llama_config, vlm_llama_weights, description)
    for name, description in (
        ("llava", "LLaVA: its language model (a Llama-style text_config); the vision tower and "
         "projector through transformers"),
        ("idefics3", "Idefics3 / SmolVLM: its language model (a Llama-style text_config); the "
         "vision tower and connector through transformers"),
    )
)  # fmt: skip
