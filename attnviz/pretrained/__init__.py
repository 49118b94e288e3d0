"""Pretrained models from Hugging Face folders, run in attnviz's own engine.

The names below are imported on first use (PEP 562), so that importing one submodule, e.g.
``attnviz.pretrained.convert`` for the table of families (as ``attnviz.schemas.models`` does),
does not import the loader and the registry, nor whatever they import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attnviz.pretrained.convert import FAMILIES, ConversionError
    from attnviz.pretrained.folder import ModelFolderError, PretrainedModel, load_folder
    from attnviz.pretrained.registry import ModelRegistry, load_registry
    from attnviz.pretrained.tokenize import TextTokenizer, Tokens

_WHERE = {
    "FAMILIES": "convert",
    "ConversionError": "convert",
    "ModelFolderError": "folder",
    "PretrainedModel": "folder",
    "load_folder": "folder",
    "ModelRegistry": "registry",
    "load_registry": "registry",
    "TextTokenizer": "tokenize",
    "Tokens": "tokenize",
}

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


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value
