"""What every model family's conversion shares: reading ``config.json`` strictly, handing out
checkpoint tensors by name and shape, and the ``Family`` record the table in ``convert.py`` holds.

A family module (``attnviz.pretrained.families.*``) imports from here, never from
``convert.py``: the table imports the families, not the other way round.

Reading ``config.json``: ``need`` (a positive integer), ``positive_float``, ``optional_int``,
``refuse`` (a setting the engine does not reproduce), ``ties`` (whether the unembedding is the
token table). Reading tensors: ``strip`` (the body's keys, a common prefix and the heads
removed), ``Taker`` (each tensor by name and shape, once; ``check_all_used`` then refuses any
tensor left over) and ``unembedding`` (the output head: the checkpoint's own, or the token table
where config.json ties them, never the table in place of a head the checkpoint lacks). Every
refusal is a ``ConversionError`` whose message names the field or tensor and the rule.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from attnviz.engine.config import TransformerConfig


class ConversionError(ValueError):
    """A checkpoint the engine cannot reproduce; the message says what is wrong."""


Tensors = Mapping[str, torch.Tensor]
ConfigReader = Callable[[Mapping], TransformerConfig]
# (the engine's configuration, the checkpoint's tensors, config.json) -> the engine's state dict;
# config.json says what the tensors alone cannot: whether the unembedding is the token table.
WeightConverter = Callable[[TransformerConfig, Tensors, Mapping], dict[str, torch.Tensor]]


@dataclass(frozen=True)
class Family:
    """How to read one ``model_type``: its config, its weights, and what it is.

    ``config`` reads a ``config.json`` dict into a ``TransformerConfig``, refusing (with a
    ``ConversionError``) settings the engine does not reproduce; ``weights`` turns the
    checkpoint's tensors into the engine's state dict (with config.json, for what the tensors
    alone do not say), every tensor checked and used once, no value changed (only layouts), a
    tensor config.json needs and the checkpoint lacks refused by name. ``description`` is one
    line for docs and error messages.
    """

    name: str  # the config.json model_type this reads
    config: ConfigReader
    weights: WeightConverter
    description: str

    def __post_init__(self) -> None:
        if not self.name or not self.description or "\n" in self.description:
            raise ValueError(f"family {self.name!r}: needs a name and a one-line description")


# ---------------------------------------------------------------------------------------------
# config.json


def need(hf: Mapping, key: str) -> int:
    """``hf[key]``, which must be a positive integer (a size: never a bool, never absent)."""
    value = hf.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConversionError(f"config.json: {key} must be a positive integer (got {value!r})")
    return value


def optional_int(hf: Mapping, key: str) -> int | None:
    """``hf[key]`` when set: a positive integer; ``None`` when absent or null."""
    return None if hf.get(key) is None else need(hf, key)


def positive_float(hf: Mapping, key: str, default: float) -> float:
    """``hf[key]`` (``default`` when absent) as a float, which must be a positive number."""
    value = hf.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise ConversionError(f"config.json: {key} must be a positive number (got {value!r})")
    return float(value)


def refuse(hf: Mapping, key: str, allowed: tuple, default=None) -> None:
    """Refuse ``hf[key]`` (``default`` when absent) unless it is one of ``allowed``: the engine
    reproduces those settings only."""
    value = hf.get(key, default)
    if value not in allowed:
        raise ConversionError(
            f"config.json: {key} = {value!r} is not supported (supported: "
            f"{', '.join(repr(a) for a in allowed)})"
        )


def ties(hf: Mapping, default: bool) -> bool:
    """config.json's ``tie_word_embeddings`` (``default``, the config class's, when absent):
    whether the unembedding is the token table rather than a weight of its own."""
    value = hf.get("tie_word_embeddings", default)
    if not isinstance(value, bool):
        raise ConversionError(
            f"config.json: tie_word_embeddings must be true or false (got {value!r})"
        )
    return value


# ---------------------------------------------------------------------------------------------
# Tensors


def strip(tensors: Tensors, prefix: str, ignore: re.Pattern) -> dict[str, torch.Tensor]:
    """Keys of the model body: ``prefix`` removed when every body key has it; heads (pooler,
    LM head...) and non-parameter buffers matched by ``ignore`` dropped."""
    keys = [k for k in tensors if not ignore.search(k)]
    if keys and all(k.startswith(prefix) for k in keys):
        return {k.removeprefix(prefix): tensors[k] for k in keys}
    return {k: tensors[k] for k in keys}


class Taker:
    """Hands out checkpoint tensors by name, checking each shape; remembers what was taken.

    ``take(key, *shape)`` returns the tensor (a key may be taken twice, e.g. a tied table);
    ``take.check_all_used(n)`` then refuses any tensor never taken, and asserts that the
    conversion took the ``n`` distinct tensors it meant to.
    """

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self.tensors = tensors
        self.used: set[str] = set()

    def __call__(self, key: str, *shape: int) -> torch.Tensor:
        if key not in self.tensors:
            raise ConversionError(f"the checkpoint has no tensor {key!r}")
        t = self.tensors[key]
        if tuple(t.shape) != shape:
            raise ConversionError(f"{key}: expected shape {shape}, got {tuple(t.shape)}")
        self.used.add(key)
        return t

    def check_all_used(self, expected: int) -> None:
        unused = sorted(set(self.tensors) - self.used)
        if unused:
            more = f" and {len(unused) - 3} more" if len(unused) > 3 else ""
            raise ConversionError(f"unexpected tensors {', '.join(unused[:3])}{more}")
        assert len(self.used) == expected, f"used {len(self.used)} tensors, expected {expected}"


def unembedding(
    head: torch.Tensor | None, name: str, table: torch.Tensor, tied: bool
) -> torch.Tensor:
    """The unembedding W_U (d, V) from the checkpoint's output head ``head`` (V, d), tensor
    ``name``, or from the token table ``table`` (V, d) when the checkpoint has no head and
    config.json ties them (``tied``, from ``ties``). A head config.json says is its own (not
    tied) that the checkpoint lacks is refused by name: the token table never stands in for it
    silently (the predictions, the logit lens and generation all read it)."""
    if head is None:
        if not tied:
            raise ConversionError(
                f"the checkpoint has no tensor {name!r}, the output head: config.json does not "
                "tie it to the token table (tie_word_embeddings is false, or absent and false "
                "by default for this model_type), and the token table does not stand in for it"
            )
        return table.T  # tied: the unembedding is the token table
    if tuple(head.shape) != tuple(table.shape):
        raise ConversionError(
            f"{name}: expected shape {tuple(table.shape)}, got {tuple(head.shape)}"
        )
    return head.T
