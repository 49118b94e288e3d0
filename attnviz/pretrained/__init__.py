"""Pretrained models from Hugging Face folders, run in attnviz's own engine."""

from attnviz.pretrained.convert import FAMILIES, ConversionError
from attnviz.pretrained.folder import ModelFolderError, PretrainedModel, load_folder
from attnviz.pretrained.registry import ModelRegistry, load_registry
from attnviz.pretrained.tokenize import TextTokenizer, Tokens

__all__ = [
    "FAMILIES",
    "ConversionError",
    "ModelFolderError",
    "ModelRegistry",
    "PretrainedModel",
    "TextTokenizer",
    "Tokens",
    "load_folder",
    "load_registry",
]
