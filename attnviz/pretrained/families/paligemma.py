"""PaliGemma and PaliGemma 2 (``model_type`` paligemma): their language model, a Gemma or Gemma 2
decoder (gemma.py's reading of ``text_config``), with the logit soft-cap transformers'
PaliGemmaForConditionalGeneration applies. Its bidirectional prefix (the image and the prompt)
is no setting of the text model: a folder with images places it from the processor's token
types (``attnviz.pretrained.native_vlm``), on every layer whole (a sliding layer's window does
not cut it: ``window_in_spans`` off, as transformers' mask has it); a text alone is causal.
The vision tower and projector are not read here (they run through transformers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import ConversionError, Family
from attnviz.pretrained.families.gemma import gemma_config, gemma_weights


def text_config(hf: Mapping) -> dict:
    """The language model's config, a Gemma's or Gemma 2's; ``use_bidirectional_attention``
    (PaliGemma's prefix, which the token types place) left out."""
    text = hf.get("text_config")
    if not isinstance(text, Mapping):
        raise ConversionError(
            "config.json: text_config must be an object (PaliGemma is read by its text model)"
        )
    if text.get("model_type") not in ("gemma", "gemma2"):
        raise ConversionError(
            f"config.json: text_config.model_type {text.get('model_type')!r} is not supported "
            "(PaliGemma's text model is read as gemma or gemma2)"
        )
    return {k: v for k, v in text.items() if k != "use_bidirectional_attention"}


def paligemma_config(hf: Mapping) -> TransformerConfig:
    return replace(gemma_config(text_config(hf)), window_in_spans=False)


FAMILY = Family(
    name="paligemma",
    config=paligemma_config,
    weights=gemma_weights,
    description="PaliGemma (1 and 2): its language model (Gemma, Gemma 2); the vision tower "
    "through transformers",
)
