"""Tiny random vision-language folders (issue 30), made here by transformers (the development
oracle) from each family's config classes, never downloaded: config.json, model.safetensors, a
byte-level BPE tokenizer trained on a few lines with the family's image tokens, and the
processor's files, so that ``AutoProcessor.from_pretrained(folder)`` and
``AutoModelForImageTextToText.from_pretrained(folder)`` load them offline.

transformers 5 writes the image processor's settings into processor_config.json (no separate
preprocessor_config.json). torchvision does not import here, so every processor is the PIL
("slow") one, e.g. Idefics3ImageProcessorPil.

- Idefics3 (SmolVLM-256M's model_type): SigLIP-like vision, Llama text, pixel shuffle by 2,
  images split into 64 px tiles plus a global view;
- LLaVA: CLIP vision (a class token the projector drops), Llama text, a 64 px centre crop.

SmolVLM's own processor (model_type smolvlm, SmolVLM2) needs the num2words package, which is not
installed, and a video processor that needs torchvision; SmolVLM-256M's folder is model_type
idefics3 with Idefics3Processor, which the Idefics3 maker covers.
"""

from __future__ import annotations

from pathlib import Path

from tests.support.checkpoints import SENTENCES, _perturbed_save

# The Idefics3 tile tags the processor writes before each tile's tokens (a 6 x 6 split at most).
_TILE_TAGS = [f"<row_{r + 1}_col_{c + 1}>" for r in range(6) for c in range(6)]


def make_vlm_tokenizer(specials: list[str], bos: str = "<s>", eos: str = "</s>"):
    """A byte-level BPE (newlines survive it) trained on a few sentences, with <pad>, ``bos``,
    ``eos`` and ``specials`` as special tokens, as transformers' fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", bos, eos, *specials],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    tok.train_from_iterator(SENTENCES * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token="<pad>",
        extra_special_tokens=specials,
    )  # fmt: skip


def _llama(tokenizer, **extra) -> dict:
    """A 2-layer Llama text config (4 heads, 2 key/value heads, d_model 32)."""
    return {
        "model_type": "llama", "vocab_size": len(tokenizer), "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "max_position_embeddings": 1024,
        "bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
        "pad_token_id": tokenizer.pad_token_id, **extra,
    }  # fmt: skip


def _vision(**extra) -> dict:
    """A 2-layer vision tower (4 heads, d_model 32) over 64 px images in 8 px patches."""
    return {
        "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
        "num_attention_heads": 4, "image_size": 64, "patch_size": 8, **extra,
    }  # fmt: skip


def _save(model, processor, folder: Path, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    processor.save_pretrained(folder)
    return _perturbed_save(model, folder, seed)


def make_tiny_idefics3(folder: Path, seed: int = 0) -> Path:
    """Idefics3 as SmolVLM-256M is shaped, tiny: 64 px tiles of 8 x 8 patches, pixel-shuffled by 2
    into 4 x 4 = 16 tokens each (image_seq_len 16); a picture's longest edge is resized to 128 px,
    so a wide one splits into up to 2 x 2 tiles, each tagged <row_i_col_j>, then the whole picture
    at 64 x 64 (after <global-img>)."""
    import torch
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import (
        Idefics3ImageProcessorPil,
    )

    specials = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"]
    tok = make_vlm_tokenizer(specials + _TILE_TAGS, eos="<end_of_utterance>")
    images = Idefics3ImageProcessorPil(
        size={"longest_edge": 128}, max_image_size={"longest_edge": 64}
    )
    processor = Idefics3Processor(images, tok, image_seq_len=16)
    config = Idefics3Config(
        vision_config=_vision(), text_config=_llama(tok), scale_factor=2,
        image_token_id=tok.convert_tokens_to_ids("<image>"),
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(Idefics3ForConditionalGeneration(config), processor, folder, seed)


def make_tiny_llava(folder: Path, seed: int = 0) -> Path:
    """LLaVA-1.5 in small: a CLIP vision tower over a 64 px centre crop (the shorter side resized
    to 64 first) of 8 px patches, its class token dropped ("default" strategy), features from the
    second-last layer; 8 x 8 = 64 image tokens; Llama text."""
    import torch
    from transformers import LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil

    tok = make_vlm_tokenizer(["<image>"])
    images = CLIPImageProcessorPil(
        size={"shortest_edge": 64}, crop_size={"height": 64, "width": 64}
    )
    processor = LlavaProcessor(
        images, tok, patch_size=8, vision_feature_select_strategy="default",
        num_additional_image_tokens=1,
    )  # fmt: skip
    config = LlavaConfig(
        vision_config=_vision(model_type="clip_vision_model", projection_dim=32),
        text_config=_llama(tok), image_token_index=tok.convert_tokens_to_ids("<image>"),
        image_seq_length=64, vision_feature_select_strategy="default", vision_feature_layer=-2,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(LlavaForConditionalGeneration(config), processor, folder, seed)
