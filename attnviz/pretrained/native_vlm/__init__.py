"""A vision-language model whose language model is a native family (Gemma 3's text model,
Qwen2-VL's and Qwen2.5-VL's Qwen2, PaliGemma's Gemma 2, LLaVA's and Idefics3's Llama), served
with its language model in
attnviz's engine and its vision tower and projector through transformers (the optional extra):
``load_native_vlm``."""

from attnviz.pretrained.native_vlm.load import load_native_vlm
from attnviz.pretrained.native_vlm.model import NativeVlm

__all__ = ["NativeVlm", "load_native_vlm"]
