"""A random vision-language folder of SmolVLM-256M's shape, for ``attnviz bench --vlm``.

SmolVLM-256M (HuggingFaceTB/SmolVLM-256M-Instruct) is an Idefics3 model: a SigLIP vision tower
(hidden 768, 12 layers of 12 heads, 16 px patches of a 512 px image: 32 x 32 patches), a pixel
shuffle by 4 (4 x 4 patches into one token: 64 tokens a 512 px view) and a linear connector
into a SmolLM2-135M-like text model (hidden 576, 30 layers, 9 heads, 3 key/value heads, a
feed-forward of 1,536, 49,280 rows of embeddings, its unembedding apart). The folder written
here has those numbers (``SMOLVLM_256M``), random weights (transformers' own initialisation,
seeded) saved in bfloat16 as the hub ships them, and a processor written here: a byte-level BPE
tokenizer trained on text Python ships (``shape.make_tokenizer``) with Idefics3's image tokens,
and Idefics3's image processor (Pillow's) at 512 px tiles. Nothing is downloaded.

One difference from the hub's folder, on purpose: its processor resizes a picture's longest
edge to 2,048 px (4 x 512: 16 tiles and a global view, 1,088 image tokens for any picture); the
one here resizes it to 512 (``longest_edge``): a picture of 512 px or less is one view of 64
tokens, as SmolVLM's processor gives with ``size={"longest_edge": 512}``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

# The Idefics3 tile tags the processor writes before each tile's tokens (a 6 x 6 split at most).
TILE_TAGS = [f"<row_{r + 1}_col_{c + 1}>" for r in range(6) for c in range(6)]
IMAGE_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]


@dataclass(frozen=True)
class VlmShape:
    """An Idefics3 model's numbers: the text model's, the vision tower's, the pixel shuffle,
    and the processor's longest edge (px)."""

    name: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    feed_forward: int
    vocab: int
    rope_theta: float
    vision_hidden: int
    vision_layers: int
    vision_heads: int
    vision_feed_forward: int
    patch: int
    image: int  # the vision tower's picture (px): one tile
    scale_factor: int  # patches merged along each side into one token
    longest_edge: int  # the processor resizes a picture's longest edge to this
    tokenizer_vocab: int = 8192  # the tokenizer trained here (the embedding has ``vocab`` rows)

    @property
    def image_seq_len(self) -> int:
        """Image tokens a tile: (image / patch)² patches, scale_factor² of them a token."""
        return (self.image // self.patch) ** 2 // self.scale_factor**2


SMOLVLM_256M = VlmShape(
    name="smolvlm-256m", hidden=576, layers=30, heads=9, kv_heads=3, feed_forward=1536,
    vocab=49280, rope_theta=100000.0, vision_hidden=768, vision_layers=12, vision_heads=12,
    vision_feed_forward=3072, patch=16, image=512, scale_factor=4, longest_edge=512,
)  # fmt: skip

# The same layout, small (a test's): 2 text and 2 vision layers, 64 px tiles of 16 px patches,
# 2 x 2 merged: 4 tokens a tile.
TINY = replace(
    SMOLVLM_256M, name="tiny-idefics3", hidden=64, layers=2, heads=4, kv_heads=2,
    feed_forward=128, vocab=512, vision_hidden=32, vision_layers=2, vision_heads=4,
    vision_feed_forward=64, image=64, scale_factor=2, longest_edge=64, tokenizer_vocab=400,
)  # fmt: skip


def config(shape: VlmShape, tokenizer: Any) -> Any:
    """transformers' Idefics3Config of ``shape``, its special ids ``tokenizer``'s."""
    from transformers import Idefics3Config

    ids = tokenizer.convert_tokens_to_ids
    text = {
        "model_type": "llama", "vocab_size": max(shape.vocab, len(tokenizer)),
        "hidden_size": shape.hidden, "intermediate_size": shape.feed_forward,
        "num_hidden_layers": shape.layers, "num_attention_heads": shape.heads,
        "num_key_value_heads": shape.kv_heads, "rope_theta": shape.rope_theta,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "hidden_act": "silu",
        "tie_word_embeddings": False, "pad_token_id": tokenizer.pad_token_id,
    }  # fmt: skip
    vision = {
        "hidden_size": shape.vision_hidden, "intermediate_size": shape.vision_feed_forward,
        "num_hidden_layers": shape.vision_layers, "num_attention_heads": shape.vision_heads,
        "patch_size": shape.patch, "image_size": shape.image,
    }  # fmt: skip
    return Idefics3Config(
        vision_config=vision, text_config=text, scale_factor=shape.scale_factor,
        image_token_id=ids("<image>"), tie_word_embeddings=False,
    )  # fmt: skip


def processor(shape: VlmShape) -> Any:
    """Idefics3's processor of ``shape``: ``shape.make_tokenizer``'s tokenizer with the image
    tokens and tile tags, and Pillow's Idefics3 image processor (tiles of ``shape.image`` px)."""
    from transformers import Idefics3Processor, PreTrainedTokenizerFast
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    from attnviz.bench.shape import make_tokenizer

    trained = make_tokenizer(shape.tokenizer_vocab)
    specials = ["<pad>", *IMAGE_TOKENS, *TILE_TAGS]
    trained.add_special_tokens(specials)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=trained, bos_token="<|endoftext|>", eos_token="<end_of_utterance>",
        pad_token="<pad>", extra_special_tokens=specials[1:],
    )  # fmt: skip
    images = Idefics3ImageProcessorPil(
        size={"longest_edge": shape.longest_edge}, max_image_size={"longest_edge": shape.image},
        image_mean=[0.5] * 3, image_std=[0.5] * 3,
    )  # fmt: skip
    return Idefics3Processor(images, tok, image_seq_len=shape.image_seq_len)


def write_folder(shape: VlmShape, folder: Path, seed: int = 0) -> Path:
    """A folder of ``shape``: config.json, model.safetensors (random, bfloat16) and the
    processor's files, loaded by ``AutoModelForImageTextToText`` and ``AutoProcessor``
    offline. Its config has no end-of-text token (a generation runs its whole length)."""
    import torch
    from transformers import Idefics3ForConditionalGeneration

    made = processor(shape)
    cfg = config(shape, made.tokenizer)
    torch.manual_seed(seed)
    model: Any = Idefics3ForConditionalGeneration(cfg)
    model = model.to(torch.bfloat16).eval()
    folder.mkdir(parents=True, exist_ok=True)
    made.save_pretrained(folder)
    model.save_pretrained(folder)
    path = folder / "config.json"
    written = json.loads(path.read_text(encoding="utf-8"))
    for part in (written, written.get("text_config", {})):
        part.pop("eos_token_id", None)
        part.pop("bos_token_id", None)
    path.write_text(json.dumps(written, indent=2) + "\n", encoding="utf-8")
    (folder / "generation_config.json").unlink(missing_ok=True)
    count = sum(p.numel() for p in model.parameters())
    log.info("wrote a random %s (%.0fM parameters) to %s", shape.name, count / 1e6, folder)
    return folder
