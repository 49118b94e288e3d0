"""attnviz's own models (``model_type`` attnviz), as ``attnviz.training.export.save_run`` writes
them: ``config.json`` holds every ``TransformerConfig`` field by its own name (a nested
configuration such as ``rope_scaling`` as an object of its fields, a tuple as a list) and the
weights are the engine's state dict, names and layouts as they are.

Read as strictly as the other families: an unknown or missing field, a value of the wrong kind, a
tensor of the wrong shape, a missing or an extra tensor are each refused with the reason. A field
added to the engine after folders were first written is listed in ``_SINCE`` with the value an
older folder means; a renamed one in ``_RENAMED``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping

import torch

from attnviz.engine import Transformer, TransformerConfig
from attnviz.pretrained.checkpoint import ConversionError, Family, Taker, Tensors

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
    "head_dim": None,
    "rotary_dim": None,
    "rope_scaling": None,
    "rope_local_base": None,
    "qk_norm": "none",
    "parallel": False,
    "out_norm": False,
    "ln_offset": 0.0,
    "embed_scale": 1.0,
    "attn_scale": None,
    "attn_softcap": None,
    "final_softcap": None,
    "sliding_window": None,
    "layer_types": None,
    "rope_sections": None,
    "rope_interleaved": False,
    "window_in_spans": True,
}


def _describe(hint) -> str:
    """A field's type, as a message says it: ``int or null``, ``one of 'a', 'b'``."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is typing.Literal:
        return "one of " + ", ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(h) for h in args)
    if origin is tuple:
        return f"a list of ({_describe(args[0])})"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return f"an object ({hint.__name__}: {', '.join(f.name for f in dataclasses.fields(hint))})"
    return "null" if hint is type(None) else getattr(hint, "__name__", str(hint))


def _container(hint) -> type | tuple[()]:
    """The JSON kind that holds a nested type's items (an object, a list); () for a scalar."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return dict
    return list if typing.get_origin(hint) is tuple else ()


# A JSON value that is not of the type asked for (``_read`` refuses it, naming the field).
_WRONG = object()


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# Each scalar type: whether a JSON value is one, and the Python value it is read as.
_SCALARS = {
    type(None): (lambda v: v is None, lambda v: v),
    bool: (lambda v: isinstance(v, bool), lambda v: v),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), lambda v: v),
    float: (_number, float),
    str: (lambda v: isinstance(v, str), lambda v: v),
}


def _read(value, hint, where: str):
    """A JSON value as the Python value of type ``hint``: bool is not an int, an int is a float
    (read as one), a list is a tuple, an object is a dataclass of its fields. Anything else is
    refused, naming the field (``where``, dotted for a nested one) and its type."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        got = _read_union(value, args, where)
    elif origin is typing.Literal:
        got = value if isinstance(value, str) and value in args else _WRONG
    elif origin is tuple:
        if len(args) != 2 or args[1] is not Ellipsis:
            raise TypeError(f"no rule for {hint!r}")  # a fixed-length tuple: teach this function
        got = _WRONG
        if isinstance(value, list):
            got = tuple(_read(v, args[0], f"{where}[{i}]") for i, v in enumerate(value))
    elif isinstance(hint, type) and dataclasses.is_dataclass(hint):
        got = _read_object(value, hint, where) if isinstance(value, dict) else _WRONG
    elif hint in _SCALARS:
        fits, make = _SCALARS[hint]
        got = make(value) if fits(value) else _WRONG
    else:
        raise TypeError(f"no rule for {hint!r}")  # a new kind of field: teach this function
    if got is _WRONG:
        raise ConversionError(f"config.json: {where} must be {_describe(hint)} (got {value!r})")
    return got


def _read_union(value, args: tuple, where: str):
    """One of a union's types (None first), or ``_WRONG``."""
    if value is None and type(None) in args:
        return None
    options = [h for h in args if h is not type(None)]
    if len(options) == 1 and isinstance(value, _container(options[0])):
        return _read(value, options[0], where)  # with its own message, naming the item
    for h in options:
        try:
            return _read(value, h, where)
        except ConversionError:
            pass
    return _WRONG


def _read_object(value: dict, cls: type, where: str):
    """A nested configuration (e.g. ``rope_scaling``): its fields by name, none unknown; one
    left out has its default."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    hints = typing.get_type_hints(cls)
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise ConversionError(
            f"config.json: {where}: unknown fields {', '.join(map(repr, unknown))} (fields: "
            f"{', '.join(fields)})"
        )
    missing = [
        n
        for n, f in fields.items()
        if n not in value
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ConversionError(f"config.json: {where}: missing fields {', '.join(missing)}")
    kwargs = {n: _read(v, hints[n], f"{where}.{n}") for n, v in value.items()}
    try:
        return cls(**kwargs)
    except (ValueError, TypeError) as exc:
        raise ConversionError(f"config.json: {where}: {exc}") from exc


def native_config(hf: Mapping) -> TransformerConfig:
    """config.json -> TransformerConfig: every field present (or listed in ``_SINCE``) and of
    its kind, nothing else but ``METADATA``; ``vocab`` holds ``vocab_size`` distinct
    characters."""
    unknown = sorted(set(hf) - set(_FIELDS) - set(METADATA) - set(_RENAMED))
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
    values = {name: _read(hf[name], _HINTS[name], name) for name in _FIELDS}
    for name in _POSITIVE:
        if values[name] is not None and values[name] < 1:
            raise ConversionError(f"config.json: {name} must be positive (got {values[name]!r})")
    for name in ("rope_base", "ln_eps", "rope_local_base"):
        if values[name] is not None and not values[name] > 0:
            raise ConversionError(f"config.json: {name} must be positive (got {values[name]!r})")
    if values["encoder_layers"]:
        raise ConversionError(
            "config.json: encoder_layers must be 0: attnviz serves models that read one text, "
            "and an encoder-decoder reads a source and writes"
        )
    if values["type_vocab_size"] < 0:
        raise ConversionError("config.json: type_vocab_size must not be negative")
    if values["vocab_size"] is None:
        raise ConversionError("config.json: vocab_size must be set: the model reads token ids")
    vocab = hf.get("vocab")
    if (
        not isinstance(vocab, str)
        or len(vocab) != values["vocab_size"]
        or len(set(vocab)) != len(vocab)
    ):
        raise ConversionError(
            f"config.json: vocab must be a string of vocab_size ({values['vocab_size']}) "
            f"distinct characters, one per token id (got {vocab!r})"
        )
    try:
        return TransformerConfig(**values)
    except ValueError as exc:
        raise ConversionError(f"config.json: {exc}") from exc


def native_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    """The engine's state dict, as saved: every parameter of ``Transformer(cfg)`` once (its
    unembedding ``W_U`` too: never filled in from the token table), of its shape and a
    floating-point type, and nothing else; config.json (``hf``) adds nothing to the tensors."""
    with torch.device("meta"):  # the names and shapes only; nothing is allocated
        expected = {k: tuple(v.shape) for k, v in Transformer(cfg).state_dict().items()}
    take = Taker(dict(tensors))
    sd = {key: take(key, *shape) for key, shape in expected.items()}
    take.check_all_used(len(expected))
    for key, t in sd.items():
        if not t.is_floating_point():
            raise ConversionError(f"{key}: expected floating-point weights, got {t.dtype}")
    return {k: v.contiguous() for k, v in sd.items()}


FAMILY = Family(
    name="attnviz",
    config=native_config,
    weights=native_weights,
    description="attnviz's own trained runs: every engine setting by name, its state dict as is",
)
