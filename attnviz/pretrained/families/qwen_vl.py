"""Qwen2-VL and Qwen2.5-VL (``model_type`` qwen2_vl, qwen2_5_vl): their language model, read as
llama.py reads its text model type (``qwen2_vl_text``, ``qwen2_5_vl_text``: a Qwen2 decoder
whose rotary is multimodal, M-RoPE, ``mrope_section`` of it). The vision tower and its merger
are not read here: a folder with images runs its tower through transformers
(``attnviz.pretrained.native_vlm``), its language model here.

The text model's config is ``text_config`` (transformers 5's files), or, in the hub's older
files, the keys beside ``vision_config``, whose text model type is then the folder's with
``_text`` (transformers' name of the sub-config). Its LM head is its own unless
``tie_word_embeddings`` (at the top, or in ``text_config`` where older files wrote it, as
Qwen2VLConfig reads them) ties it to the token table; a checkpoint without the head it needs is
refused by name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import ConversionError, Family, Tensors, ties
from attnviz.pretrained.families.llama import llama_config, read_llama

# The vision tower's and merger's tensors, as saved (``visual.``) or as transformers 5 names them.
_VISION = re.compile(r"^(model\.)?visual\.")
# The language model's, as transformers 5 names them in memory; saved, they start "model.".
_TEXT = "model.language_model."


def text_config(hf: Mapping) -> dict:
    """The language model's config: ``text_config``, or the keys beside ``vision_config``."""
    text = hf.get("text_config")
    if text is None:  # the hub's older files: the text model's keys at the top
        text = {k: v for k, v in hf.items() if k not in ("vision_config", "model_type")}
    if not isinstance(text, Mapping):
        raise ConversionError("config.json: text_config must be an object")
    return {"model_type": f"{hf.get('model_type')}_text", **text}


def qwen_vl_config(hf: Mapping) -> TransformerConfig:
    return llama_config(text_config(hf))


def qwen_vl_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    """Engine state dict of the language model (llama.py's reading), the vision tower's and
    merger's tensors left out."""
    text = {
        ("model." + k.removeprefix(_TEXT) if k.startswith(_TEXT) else k): v
        for k, v in tensors.items()
        if not _VISION.search(k)
    }
    return read_llama(cfg, text, ties(hf, False) or ties(text_config(hf), False))


FAMILIES = tuple(
    Family(name, qwen_vl_config, qwen_vl_weights, description)
    for name, description in (
        ("qwen2_vl", "Qwen2-VL: its language model (qwen2_vl_text), the vision tower through "
         "transformers"),
        ("qwen2_5_vl", "Qwen2.5-VL: its language model (qwen2_5_vl_text), the vision tower "
         "through transformers"),
    )
)  # fmt: skip
