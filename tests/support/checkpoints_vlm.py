"""Tiny random vision-language folders (issue 30), made here by transformers (the development
oracle) from each family's config classes, never downloaded: config.json, model.safetensors, a
byte-level BPE tokenizer trained on a few lines with the family's image tokens, and the
processor's files, so that ``AutoProcessor.from_pretrained(folder)`` and
``AutoModelForImageTextToText.from_pretrained(folder)`` load them offline.

transformers 5 writes the image processor's settings into processor_config.json (no separate
preprocessor_config.json); ``hub_layout`` rewrites a folder as the hub ships it, the image
processor's settings in preprocessor_config.json. torchvision does not import here, so every
processor is the PIL ("slow") one, e.g. Idefics3ImageProcessorPil.

- Idefics3 (SmolVLM-256M's model_type): SigLIP-like vision, Llama text, pixel shuffle by 2,
  images split into 64 px tiles plus a global view;
- LLaVA: CLIP vision (a class token the projector drops), Llama text, a 64 px centre crop;
- Qwen2-VL, Qwen2.5-VL, Qwen3-VL: 2 x 2 patches merged per token, M-RoPE (folders written by
  hand: their processors cannot be built without torchvision, see ``_save_qwen``);
- Gemma 3 (the 4B-style multimodal model): SigLIP, 8 x 8 patches pooled to 4 x 4 tokens;
- PaliGemma 2: SigLIP, Gemma 2 text, the image and prompt a bidirectional prefix.

SmolVLM's own processor (model_type smolvlm, SmolVLM2) needs the num2words package, which is not
installed, and a video processor that needs torchvision; SmolVLM-256M's folder is model_type
idefics3 with Idefics3Processor, which the Idefics3 maker covers.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.checkpoints import SENTENCES, _perturbed_save

# The Idefics3 tile tags the processor writes before each tile's tokens (a 6 x 6 split at most).
_TILE_TAGS = [f"<row_{r + 1}_col_{c + 1}>" for r in range(6) for c in range(6)]


def make_vlm_tokenizer(
    specials: list[str], bos: str = "<s>", eos: str = "</s>", named: dict[str, str] | None = None
):
    """A byte-level BPE (newlines survive it) trained on a few sentences, with <pad>, ``bos``,
    ``eos``, ``specials`` and ``named``'s values as special tokens, as transformers' fast
    tokenizer; ``named`` ({"image_token": "<image_soft_token>"}) become its attributes
    (tokenizer.image_token, tokenizer.image_token_id), saved in tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<pad>", bos, eos, *specials, *(named or {}).values()],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
    )  # fmt: skip
    tok.train_from_iterator(SENTENCES * 4, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token=bos, eos_token=eos, pad_token="<pad>",
        extra_special_tokens=named or specials,
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


_QWEN_SPECIALS = [
    "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
    "<|video_pad|>",
]  # fmt: skip


def _qwen_text(tokenizer, **extra) -> dict:
    """A 2-layer Qwen text config, d_model 64, 4 heads of 16 (8 rotary frequencies, split 2 / 3 /
    3 over time, height and width: M-RoPE's sections), 2 key/value heads."""
    return {
        "vocab_size": len(tokenizer), "hidden_size": 64, "intermediate_size": 96,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "max_position_embeddings": 1024, "bos_token_id": tokenizer.bos_token_id,
        "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id,
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]},
        **extra,
    }  # fmt: skip


def _qwen_ids(tokenizer) -> dict:
    ids = tokenizer.convert_tokens_to_ids
    return {
        "image_token_id": ids("<|image_pad|>"), "video_token_id": ids("<|video_pad|>"),
        "vision_start_token_id": ids("<|vision_start|>"), "vision_end_token_id": ids("<|vision_end|>"),
    }  # fmt: skip


def _save_qwen(model, tokenizer, images, folder: Path, seed: int, processor_class: str) -> Path:
    """Qwen's folders: the tokenizer's files and a processor_config.json naming
    ``processor_class`` with the image processor's settings, written here because the Qwen
    processors cannot be built on this machine: they require a video processor, and
    transformers' video processors need torchvision (VideoProcessorMixin is a dummy without it).
    So ``AutoProcessor.from_pretrained`` fails on these folders here, while
    ``AutoImageProcessor`` and ``AutoTokenizer`` load them (and attnviz's
    ``bridge.multimodal.load_processor``, which makes the processor without a video one)."""
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(folder)
    settings = {**images.to_dict(), "image_processor_type": "Qwen2VLImageProcessor"}
    config = {"processor_class": processor_class, "image_processor": settings}
    (folder / "processor_config.json").write_text(json.dumps(config, indent=2) + "\n")
    return _perturbed_save(model, folder, seed)


def _qwen_images(patch: int):
    """Qwen's image processor: the picture resized (aspect kept) to multiples of 2 x ``patch``,
    between 32 x 32 and 128 x 128 pixels in area."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    return Qwen2VLImageProcessorPil(
        size={"shortest_edge": 32 * 32, "longest_edge": 128 * 128}, patch_size=patch,
        temporal_patch_size=2, merge_size=2,
    )  # fmt: skip


def make_tiny_qwen2_vl(folder: Path, seed: int = 0) -> Path:
    """Qwen2-VL in small: a ViT over 8 px patches (2D rotary, 2 frames a patch), 2 x 2 patches
    merged into one token; text with M-RoPE. Write the image as
    ``<|vision_start|><|image_pad|><|vision_end|>``; the processor repeats <|image_pad|>."""
    import torch
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    tok = make_vlm_tokenizer(_QWEN_SPECIALS, bos="<|endoftext|>", eos="<|im_end|>")
    vision = {
        "depth": 2, "embed_dim": 32, "hidden_size": 64, "num_heads": 4, "mlp_ratio": 2,
        "patch_size": 8, "spatial_merge_size": 2, "temporal_patch_size": 2,
    }  # fmt: skip
    config = Qwen2VLConfig(vision_config=vision, text_config=_qwen_text(tok), **_qwen_ids(tok))
    torch.manual_seed(seed)
    model = Qwen2VLForConditionalGeneration(config)
    return _save_qwen(model, tok, _qwen_images(8), folder, seed, "Qwen2VLProcessor")


def make_tiny_qwen2_5_vl(folder: Path, seed: int = 0) -> Path:
    """Qwen2.5-VL in small: as Qwen2-VL, with a SwiGLU vision MLP, RMSNorm and window attention
    (windows of 32 px, 2 x 2 merged tokens) in the first vision layer, full in the second."""
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
    )

    tok = make_vlm_tokenizer(_QWEN_SPECIALS, bos="<|endoftext|>", eos="<|im_end|>")
    vision = {
        "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
        "out_hidden_size": 64, "patch_size": 8, "spatial_merge_size": 2,
        "temporal_patch_size": 2, "window_size": 32, "fullatt_block_indexes": [1],
    }  # fmt: skip
    config = Qwen2_5_VLConfig(vision_config=vision, text_config=_qwen_text(tok), **_qwen_ids(tok))
    torch.manual_seed(seed)
    model = Qwen2_5_VLForConditionalGeneration(config)
    return _save_qwen(model, tok, _qwen_images(8), folder, seed, "Qwen2_5_VLProcessor")


def make_tiny_qwen3_vl(folder: Path, seed: int = 0) -> Path:
    """Qwen3-VL in small: a ViT over 8 px patches with learned positions (an 8 x 8 table,
    interpolated) and 2D rotary, deepstack features from its first layer added to the text's
    first layers; text with q/k norms and interleaved M-RoPE."""
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    tok = make_vlm_tokenizer(_QWEN_SPECIALS, bos="<|endoftext|>", eos="<|im_end|>")
    vision = {
        "depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4,
        "out_hidden_size": 64, "patch_size": 8, "spatial_merge_size": 2,
        "temporal_patch_size": 2, "num_position_embeddings": 64,
        "deepstack_visual_indexes": [0],
    }  # fmt: skip
    text = _qwen_text(tok, head_dim=16)
    text["rope_parameters"] = {**text["rope_parameters"], "mrope_interleaved": True}
    config = Qwen3VLConfig(vision_config=vision, text_config=text, **_qwen_ids(tok))
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config)
    return _save_qwen(model, tok, _qwen_images(8), folder, seed, "Qwen3VLProcessor")


def hub_layout(folder: Path, target: Path) -> Path:
    """A copy of ``folder`` (a transformers 5 folder) at ``target`` laid out as the hub ships
    it, written before transformers had processor_config.json: the image processor's settings
    in preprocessor_config.json, naming the processor (``processor_class``); processor_config.json
    kept only for the processor's own settings, where it has any (SmolVLM's image_seq_len,
    Gemma 3's image_seq_length, LLaVA's patch_size: no file for Qwen's and PaliGemma's). Qwen's
    image processor names its pixel bounds as the hub's files do (min_pixels, max_pixels) and
    its config.json keeps the text model's keys beside vision_config, its rotary as
    ``rope_scaling`` of type "mrope" (Qwen2-VL's and Qwen2.5-VL's files on the hub)."""
    import shutil

    shutil.copytree(folder, target)
    processor = json.loads((target / "processor_config.json").read_text())
    images = processor.pop("image_processor")
    if images.get("image_processor_type") == "Qwen2VLImageProcessor":
        size = images.pop("size")
        images["min_pixels"], images["max_pixels"] = size["shortest_edge"], size["longest_edge"]
    images["processor_class"] = processor["processor_class"]
    (target / "preprocessor_config.json").write_text(json.dumps(images, indent=2) + "\n")
    (target / "processor_config.json").unlink()
    if set(processor) != {"processor_class"}:
        (target / "processor_config.json").write_text(json.dumps(processor, indent=2) + "\n")
    config = json.loads((target / "config.json").read_text())
    if config["model_type"] in ("qwen2_vl", "qwen2_5_vl"):
        text = dict(config.pop("text_config"))
        rope = text.pop("rope_parameters")
        config.update({k: v for k, v in text.items() if k != "model_type"})
        config["rope_scaling"] = {"type": "mrope", "mrope_section": rope["mrope_section"]}
        config["rope_theta"] = rope["rope_theta"]
        (target / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    return target


def qwen_inputs(folder: Path, text: str, images: list) -> dict:
    """What Qwen's processor would return for ``text`` and ``images`` (its <|image_pad|> repeated
    once per merged token: image_grid_thw's product / merge_size², and mm_token_type_ids), made from the folder's image
    processor and tokenizer, since the processor itself cannot be built here (no torchvision)."""
    from transformers import AutoImageProcessor, AutoTokenizer

    pixels = AutoImageProcessor.from_pretrained(folder, local_files_only=True)
    tok = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    out = pixels(images=images, return_tensors="pt")
    counts = (out["image_grid_thw"].prod(-1) // pixels.merge_size**2).tolist()
    pieces = text.split("<|image_pad|>")
    assert len(pieces) == len(counts) + 1, "one <|image_pad|> per image"
    expanded = pieces[0] + "".join(
        "<|image_pad|>" * n + piece for n, piece in zip(counts, pieces[1:], strict=True)
    )
    text_out = tok(expanded, return_tensors="pt")
    image = tok.convert_tokens_to_ids("<|image_pad|>")
    # The processor's modality of each token (0 text, 1 image): M-RoPE's index needs it.
    kinds = (text_out["input_ids"] == image).long()
    return {**text_out, "mm_token_type_ids": kinds, **out}


def make_tiny_gemma3(folder: Path, seed: int = 0) -> Path:
    """Gemma 3 shaped as its 4B and larger models are (the multimodal Gemma3ForConditionalGeneration):
    a SigLIP tower over the picture stretched to 64 x 64 in 8 px patches, its 8 x 8 patches
    average-pooled 2 x 2 into 4 x 4 = 16 tokens (mm_tokens_per_image); Gemma 3 text with a
    sliding layer (window 8) and a full one. Write the image as <start_of_image>; the processor
    writes "\\n\\n<start_of_image>" + 16 x <image_soft_token> + "<end_of_image>\\n\\n"."""
    import torch
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    names = {
        "boi_token": "<start_of_image>", "eoi_token": "<end_of_image>",
        "image_token": "<image_soft_token>",
    }  # fmt: skip
    tok = make_vlm_tokenizer([], bos="<bos>", eos="<eos>", named=names)
    images = Gemma3ImageProcessorPil(
        size={"height": 64, "width": 64}, image_mean=[0.5] * 3, image_std=[0.5] * 3
    )
    processor = Gemma3Processor(images, tok, image_seq_length=16)
    ids = tok.convert_tokens_to_ids
    text = {
        "vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 64,
        "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "head_dim": 16, "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"],
        "query_pre_attn_scalar": 16, "max_position_embeddings": 1024,
        "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
    }  # fmt: skip
    config = Gemma3Config(
        vision_config=_vision(model_type="siglip_vision_model", vision_use_head=False),
        text_config=text, mm_tokens_per_image=16, boi_token_index=ids("<start_of_image>"),
        eoi_token_index=ids("<end_of_image>"), image_token_index=ids("<image_soft_token>"),
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(Gemma3ForConditionalGeneration(config), processor, folder, seed)


def make_tiny_paligemma2(folder: Path, seed: int = 0) -> Path:
    """PaliGemma 2 in small: a SigLIP tower over the picture stretched to 64 x 64 in 8 px patches,
    8 x 8 = 64 image tokens before <bos> and the prompt (the prefix, attended both ways:
    use_bidirectional_attention); Gemma 2 text. The processor puts the image tokens first and
    returns token_type_ids (0 prefix, 1 suffix)."""
    import torch
    from transformers import PaliGemmaConfig, PaliGemmaForConditionalGeneration, PaliGemmaProcessor
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = make_vlm_tokenizer([], bos="<bos>", eos="<eos>")
    images = SiglipImageProcessorPil(
        size={"height": 64, "width": 64}, image_mean=[0.5] * 3, image_std=[0.5] * 3
    )
    images.image_seq_length = 64
    processor = PaliGemmaProcessor(images, tok)  # adds <image> and 1,152 <locNNNN>/<segNNN>
    text = {
        "model_type": "gemma2", "vocab_size": len(tok), "hidden_size": 32,
        "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "sliding_window": 8,
        "query_pre_attn_scalar": 16, "max_position_embeddings": 1024,
        "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
        "pad_token_id": tok.pad_token_id,
    }  # fmt: skip
    config = PaliGemmaConfig(
        vision_config=_vision(model_type="siglip_vision_model", vision_use_head=False),
        text_config=text, projection_dim=32, hidden_size=32, vocab_size=len(tok),
        image_token_index=tok.convert_tokens_to_ids("<image>"),
    )  # fmt: skip
    torch.manual_seed(seed)
    return _save(PaliGemmaForConditionalGeneration(config), processor, folder, seed)


class TinyVlms:
    """Each family's tiny folder under ``root`` and the models attnviz serves of it (``model``:
    through the transformers bridge; ``native``: the native engine's language model with
    transformers' vision tower, what ``--backend auto`` serves of a folder whose text model is
    a native family), made when a test first asks, so that one family that fails does not take
    the others with it; ``oracle`` is transformers' own (eager)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.folders: dict[str, Path] = {}
        self.models: dict = {}
        self.natives: dict = {}
        self.oracles: dict = {}

    def folder(self, name: str) -> Path:
        if name not in self.folders:
            self.folders[name] = globals()[f"make_tiny_{name}"](self.root / name)
        return self.folders[name]

    def model(self, name: str):
        import torch

        from attnviz.pretrained.bridge import BridgedModel
        from attnviz.pretrained.registry import load_model

        if name not in self.models:
            model = load_model(self.folder(name), torch.device("cpu"), backend="transformers")
            assert isinstance(model, BridgedModel) and model.reads_images
            self.models[name] = model
        return self.models[name]

    def native(self, name: str):
        import torch

        from attnviz.pretrained.native_vlm import NativeVlm
        from attnviz.pretrained.registry import load_model

        if name not in self.natives:
            model = load_model(self.folder(name), torch.device("cpu"))
            assert isinstance(model, NativeVlm) and model.reads_images
            self.natives[name] = model
        return self.natives[name]

    def oracle(self, name: str):
        from transformers import AutoModelForImageTextToText

        if name not in self.oracles:
            hf = AutoModelForImageTextToText.from_pretrained(
                self.folder(name), attn_implementation="eager"
            )
            self.oracles[name] = hf.eval()
        return self.oracles[name]


def eager_with_towers(folder: Path, inputs: dict):
    """transformers' own model of ``folder`` (eager attention) on the processor's ``inputs``:
    its output, and the weights each vision-tower attention call of its eager attention gave,
    in call order, with the module that made it (every modeling file's own
    ``eager_attention_forward``, wrapped for the forward: some vision towers return no weights)."""
    import sys

    import torch
    from transformers import AutoModelForImageTextToText

    hf = AutoModelForImageTextToText.from_pretrained(folder, attn_implementation="eager").eval()
    text = {id(m) for m in hf.get_decoder().modules()}
    calls: list[tuple[int, torch.Tensor]] = []
    files = {sys.modules[type(m).__module__] for m in hf.modules()}
    files = {f for f in files if hasattr(f, "eager_attention_forward")}
    saved = {f: f.eager_attention_forward for f in files}

    def wrap(eager):
        def recorded(module, *args, **kwargs):
            out, weights = eager(module, *args, **kwargs)
            if id(module) not in text:
                calls.append((id(module), weights.detach()))
            return out, weights

        return recorded

    for f in files:
        f.eager_attention_forward = wrap(saved[f])
    try:
        with torch.no_grad():
            out = hf(**inputs, output_attentions=True, output_hidden_states=True, use_cache=False)
    finally:
        for f, eager in saved.items():
            f.eager_attention_forward = eager
    return out, calls
