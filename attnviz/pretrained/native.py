"""attnviz's own models (``model_type`` "attnviz"), as ``attnviz.training.export.save_run``
writes them: ``config.json`` holds every ``TransformerConfig`` field by its own name and the
weights are the engine's state dict, names and layouts as they are. Read as strictly as the other
families: an unknown or missing field, a value of the wrong kind, a tensor of the wrong shape, a
missing or an extra tensor are each refused with the reason.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping

import torch
from tokenizers import Tokenizer

from attnviz.engine import Transformer, TransformerConfig
from attnviz.pretrained.convert import ConversionError, Tensors, _Taker

# Keys of config.json besides the TransformerConfig fields: what the folder is, not how the model
# computes (they are checked for their kind, and otherwise not used here).
METADATA = {
    "model_type": str,
    "attnviz_version": str,
    "task": str,
    "vocab": str,
    "training": dict,
    "torch_dtype": str,
}
_FIELDS = {f.name: f for f in dataclasses.fields(TransformerConfig)}
_HINTS = typing.get_type_hints(TransformerConfig)
_POSITIVE = {"d_model", "n_layers", "n_heads", "n_ctx", "vocab_size", "d_ffn"}
# Fields renamed since folders were first written: (old name -> new name).
_RENAMED = {"max_positions": "n_ctx"}
# Fields added after folders were first written, with the value an older folder means.
_SINCE = {
    "encoder_layers": 0,
    "norm_type": "layer",
    "rope_style": "pairs",
    "gated": False,
    "qkv_bias": False,
    "n_kv_heads": None,
}


def _kind_ok(value, hint) -> bool:
    """Whether a JSON value is of the field's type: bool is not an int, an int is a float."""
    if typing.get_origin(hint) is typing.Literal:
        return isinstance(value, str) and value in typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return any(_kind_ok(value, h) for h in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    raise TypeError(f"no rule for {hint!r}")  # a new kind of field: teach this function


def _describe(hint) -> str:
    if typing.get_origin(hint) is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(hint))
    return " or ".join(
        "null" if h is type(None) else h.__name__ for h in (typing.get_args(hint) or (hint,))
    )


def native_config(hf: Mapping) -> TransformerConfig:
    """config.json -> TransformerConfig: every field present and of its kind, nothing else but
    ``METADATA``; ``vocab`` holds ``vocab_size`` distinct characters."""
    unknown = sorted(set(hf) - set(_FIELDS) - set(METADATA))
    if unknown:
        raise ConversionError(f"config.json: unknown fields {', '.join(map(repr, unknown))}")
    hf = {_RENAMED.get(k, k): v for k, v in hf.items()}
    hf = {**_SINCE, **hf}
    missing = sorted(set(_FIELDS) - set(hf))
    if missing:
        raise ConversionError(
            f"config.json: missing fields {', '.join(map(repr, missing))} (an attnviz folder "
            "names every field of the model's configuration)"
        )
    for key, kind in METADATA.items():
        if key in hf and not isinstance(hf[key], kind):
            raise ConversionError(f"config.json: {key} must be a {kind.__name__}")
    for name, value in ((n, hf[n]) for n in _FIELDS):
        if not _kind_ok(value, _HINTS[name]):
            raise ConversionError(
                f"config.json: {name} must be {_describe(_HINTS[name])} (got {value!r})"
            )
        if name in _POSITIVE and value is not None and value < 1:
            raise ConversionError(f"config.json: {name} must be positive (got {value!r})")
    for name in ("rope_base", "ln_eps"):
        if not hf[name] > 0:
            raise ConversionError(f"config.json: {name} must be positive (got {hf[name]!r})")
    if hf["encoder_layers"]:
        raise ConversionError(
            "config.json: encoder_layers must be 0: attnviz serves models that read one text, "
            "and an encoder-decoder reads a source and writes"
        )
    if hf["type_vocab_size"] < 0:
        raise ConversionError("config.json: type_vocab_size must not be negative")
    if hf["vocab_size"] is None:
        raise ConversionError("config.json: vocab_size must be set: the model reads token ids")
    vocab = hf.get("vocab")
    if (
        not isinstance(vocab, str)
        or len(vocab) != hf["vocab_size"]
        or len(set(vocab)) != len(vocab)
    ):
        raise ConversionError(
            f"config.json: vocab must be a string of vocab_size ({hf['vocab_size']}) distinct "
            f"characters, one per token id (got {vocab!r})"
        )
    try:
        return TransformerConfig(**{n: hf[n] for n in _FIELDS})
    except ValueError as exc:
        raise ConversionError(f"config.json: {exc}") from exc


def native_weights(cfg: TransformerConfig, tensors: Tensors) -> dict[str, torch.Tensor]:
    """The engine's state dict, as saved: every parameter of ``Transformer(cfg)`` once, of its
    shape and a floating-point type, and nothing else."""
    with torch.device("meta"):  # the names and shapes only; nothing is allocated
        expected = {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}
    take = _Taker(dict(tensors))
    sd = {key: take(key, *shape) for key, shape in expected.items()}
    take.check_all_used(len(expected))
    for key, t in sd.items():
        if not t.is_floating_point():
            raise ConversionError(f"{key}: expected floating-point weights, got {t.dtype}")
    return {k: v.contiguous() for k, v in sd.items()}


def quoted_each(chars: str) -> str:
    """Characters quoted one by one, as a reader tells them apart: ``' ', 'H', 'W'``."""
    return ", ".join(repr(c) for c in chars)


def unknown_characters(tokenizer: Tokenizer, text: str) -> str:
    """For a character tokenizer (every token one character, as ``char_tokenizer`` makes), the
    characters of ``text`` it has no token for, sorted, each once; "" for any other tokenizer.
    Such a tokenizer raises on them; this says which they are."""
    vocab = tokenizer.get_vocab(with_added_tokens=False)
    if not vocab or any(len(t) != 1 for t in vocab):
        return ""
    return "".join(sorted(set(text) - set(vocab)))
