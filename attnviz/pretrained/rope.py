"""Reading a checkpoint's rotary embedding from config.json, in either style it is written in.

The hub's checkpoints (transformers 4) write ``rope_theta`` (and Phi's ``partial_rotary_factor``)
at the top level and the scaling, if any, as ``rope_scaling`` ({"rope_type" or "type": ...,
"factor": ...}); transformers 5 writes one ``rope_parameters`` object holding all of it
(``rope_theta`` included), or one such object per layer type. ``read_rope`` reads both as
transformers' ``RotaryEmbeddingConfigMixin`` standardises them (``rope_scaling`` wins over
``rope_parameters``, a value inside the object over the top-level one) into the engine's base
and ``RopeScaling``; the engine then computes the frequencies as transformers' rope init
functions do. A kind it does not compute, a missing or malformed parameter, is a
``ConversionError`` naming the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from attnviz.engine.positional import RopeScaling
from attnviz.pretrained.checkpoint import ConversionError

KINDS = ("default", "linear", "dynamic", "yarn", "longrope", "llama3")
_LAYER_TYPES = ("full_attention", "sliding_attention")


@dataclass(frozen=True)
class Rope:
    """A checkpoint's rotary embedding: ``base`` (rope_theta), ``scaling`` (None: plain RoPE),
    the head coordinates it turns (``rotary_dim``, of ``head_dim``) and, for the scalings that
    stretch the context, the context that results (``context``)."""

    base: float
    scaling: RopeScaling | None
    rotary_dim: int  # int(head_dim * partial_rotary_factor)
    head_dim: int
    partial: float  # partial_rotary_factor as config.json gives it (1.0: the whole head)
    context: int  # max_position_embeddings, or more where the scaling says so (see read_rope)
    field: str  # where it was read: "rope_scaling" or "rope_parameters", for messages


def _object(hf: Mapping, key: str) -> Mapping | None:
    value = hf.get(key)
    if value is not None and not isinstance(value, Mapping):
        raise ConversionError(f"config.json: {key} must be an object (got {value!r})")
    return value


def _number(
    field: str, d: Mapping, key: str, *, required: bool, zero: bool = False
) -> float | None:
    """``d[key]``, a positive number (or zero, where ``zero``: transformers then takes its
    default); None when absent (or null) and not ``required``."""
    value = d.get(key)
    if value is None:
        if required:
            kind = d.get("rope_type", d.get("type"))
            raise ConversionError(f"config.json: {field} of type {kind!r} needs {key}")
        return None
    if (
        not isinstance(value, (int, float))
        or isinstance(value, bool)
        or not (value > 0 or (zero and value == 0))
    ):
        rule = "a number, zero or more" if zero else "a positive number"
        raise ConversionError(f"config.json: {field}.{key} must be {rule} (got {value!r})")
    return float(value)


def _factors(field: str, d: Mapping, key: str, pairs: int) -> tuple[float, ...]:
    value = d.get(key)
    if not isinstance(value, list) or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in value
    ):
        raise ConversionError(
            f"config.json: {field}.{key} must be a list of positive numbers (got {value!r})"
        )
    if len(value) != pairs:
        raise ConversionError(
            f"config.json: {field}.{key} has {len(value)} numbers; the rotated part of a head "
            f"has {pairs} pairs of coordinates"
        )
    return tuple(float(x) for x in value)


def _one_object(hf: Mapping, field: str, d: Mapping) -> Mapping:
    """transformers 5 writes one object per layer type when the layers rotate differently; the
    families read here rotate every layer alike, so the objects must be one."""
    layer_types = hf.get("layer_types") or ()
    nested = [k for k in d if k in layer_types or k in _LAYER_TYPES]
    if not nested:
        return d
    objects = [d[k] for k in nested if d[k] is not None]
    if not objects or any(o != objects[0] for o in objects) or len(nested) != len(d):
        raise ConversionError(
            f"config.json: {field} differs between layer types ({', '.join(nested)}): this "
            "family rotates every layer alike"
        )
    if not isinstance(objects[0], Mapping):
        raise ConversionError(f"config.json: {field}.{nested[0]} must be an object")
    return objects[0]


def read_rope(
    hf: Mapping,
    head_dim: int,
    *,
    aliases: Mapping[str, str] | None = None,
    original_max_positions: int | None = None,
) -> Rope:
    """The rotary embedding config.json ``hf`` describes, for heads ``head_dim`` wide.

    ``aliases`` renames kinds as a family's config class does (Phi-3's "su" and "yarn" are
    LongRoPE). ``original_max_positions``: a family whose config class keeps
    ``original_max_position_embeddings`` at the top level (Phi-3) passes it; it then wins over
    the one inside the scaling, as transformers' ``standardize_rope_params`` has it.

    The context (``Rope.context``): max_position_embeddings, but at least factor x the original
    context with YaRN (Qwen2.5's configs keep max_position_embeddings at 32,768 and add YaRN x4
    for 131,072; transformers takes factor to be that ratio), and factor x
    max_position_embeddings with dynamic NTK, which grows its base past that length. Llama 3's
    factor is not a ratio of contexts (32 over 8,192 for 131,072 positions): max_position_embeddings
    is its context, as LongRoPE's.
    """
    max_positions = _max_positions(hf)
    scaling, params = _object(hf, "rope_scaling"), _object(hf, "rope_parameters")
    field, d = ("rope_scaling", scaling) if scaling else ("rope_parameters", params or {})
    d = _one_object(hf, field, d)
    theta, partial, rotary_dim = _rotation(hf, d, head_dim)
    kind = d.get("rope_type", d.get("type", "default"))
    kind = (aliases or {}).get(kind, kind)
    if kind not in KINDS:
        raise ConversionError(
            f"config.json: {field} of type {kind!r} is not supported (the engine computes "
            f"{', '.join(repr(k) for k in KINDS)})"
        )

    def rope(scaling: RopeScaling | None, context: int = max_positions) -> Rope:
        return Rope(float(theta), scaling, rotary_dim, head_dim, float(partial), context, field)

    if kind == "default":
        return rope(None)
    factor = _number(field, d, "factor", required=kind in ("linear", "dynamic", "llama3"))
    if kind == "linear":
        return rope(RopeScaling("linear", factor=factor))
    if kind == "dynamic":
        assert factor is not None
        scaled = RopeScaling("dynamic", factor=factor, original_max_positions=max_positions)
        return rope(scaled, max(max_positions, int(factor * max_positions)))
    original = original_max_positions
    if original is None:
        original = _original(field, d, max_positions)
    if kind == "llama3":
        assert factor is not None
        low = _number(field, d, "low_freq_factor", required=True)
        high = _number(field, d, "high_freq_factor", required=True)
        scaled = RopeScaling("llama3", factor=factor, original_max_positions=original,
                             low_freq_factor=low, high_freq_factor=high)  # fmt: skip
        return rope(scaled)
    if factor is None:  # transformers' default: the context over the original one
        factor = max_positions / original
    if kind == "longrope":
        return rope(_longrope(field, d, factor, original, rotary_dim, max_positions))
    return rope(_yarn(field, d, factor, original, max_positions),
                max(max_positions, int(factor * original)))  # fmt: skip


def _max_positions(hf: Mapping) -> int:
    max_positions = hf.get("max_position_embeddings")
    if not isinstance(max_positions, int) or isinstance(max_positions, bool) or max_positions < 1:
        raise ConversionError(
            f"config.json: max_position_embeddings must be a positive integer (got "
            f"{max_positions!r})"
        )
    return max_positions


def _rotation(hf: Mapping, d: Mapping, head_dim: int) -> tuple[float, float, int]:
    """The base, the share of a head's coordinates that turn, and how many they are."""
    theta = d.get("rope_theta", hf.get("rope_theta", 10000.0))
    if not isinstance(theta, (int, float)) or isinstance(theta, bool) or not theta > 0:
        raise ConversionError(f"config.json: rope_theta must be a positive number (got {theta!r})")
    partial = d.get("partial_rotary_factor", hf.get("partial_rotary_factor", 1.0))
    if partial is None:
        partial = 1.0
    if not isinstance(partial, (int, float)) or isinstance(partial, bool) or not 0 < partial <= 1:
        raise ConversionError(
            f"config.json: partial_rotary_factor must be a number in (0, 1] (got {partial!r})"
        )
    rotary_dim = int(head_dim * partial)
    if rotary_dim < 2 or rotary_dim % 2:
        raise ConversionError(
            f"config.json: partial_rotary_factor = {partial} turns {rotary_dim} of a head's "
            f"{head_dim} coordinates; RoPE needs an even number of them"
        )
    return theta, partial, rotary_dim


def _original(field: str, d: Mapping, max_positions: int) -> int:
    value = d.get("original_max_position_embeddings", max_positions)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConversionError(
            f"config.json: {field}.original_max_position_embeddings must be a positive "
            f"integer (got {value!r})"
        )
    return value


def _longrope(
    field: str, d: Mapping, factor: float, original: int, rotary_dim: int, max_positions: int
) -> RopeScaling:
    return RopeScaling(
        "longrope",
        factor=factor,
        original_max_positions=original,
        attention_factor=_number(field, d, "attention_factor", required=False),
        short_factor=_factors(field, d, "short_factor", rotary_dim // 2),
        long_factor=_factors(field, d, "long_factor", rotary_dim // 2),
        max_positions=max_positions,
    )


def _yarn(field: str, d: Mapping, factor: float, original: int, max_positions: int) -> RopeScaling:
    truncate = d.get("truncate")
    if truncate is not None and not isinstance(truncate, bool):
        raise ConversionError(f"config.json: {field}.truncate must be true or false")
    return RopeScaling(
        "yarn",
        factor=factor,
        original_max_positions=original,
        attention_factor=_number(field, d, "attention_factor", required=False),
        beta_fast=_number(field, d, "beta_fast", required=False),
        beta_slow=_number(field, d, "beta_slow", required=False),
        mscale=_number(field, d, "mscale", required=False, zero=True),
        mscale_all_dim=_number(field, d, "mscale_all_dim", required=False, zero=True),
        truncate=truncate,
        max_positions=max_positions,
    )


def whole_head(rope: Rope, family: str) -> Rope:
    """``rope``, refused unless it turns the whole head: the Llama-style families' transformers
    code rotates every coordinate (it ignores partial_rotary_factor unscaled and fails on it
    scaled), so a partial factor is a config this family cannot mean."""
    if rope.rotary_dim != rope.head_dim:
        raise ConversionError(
            f"config.json: partial_rotary_factor = {rope.partial} is not "
            f"supported ({family} turns the whole head)"
        )
    return rope
