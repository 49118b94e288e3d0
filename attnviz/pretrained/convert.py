"""Hugging Face checkpoints -> the engine: the table of model families, by ``model_type``.

Each family lives in a module of its own under ``attnviz.pretrained.families`` (one pure
conversion each, its shared helpers in ``attnviz.pretrained.checkpoint``) and exports ``FAMILY``
(or ``FAMILIES``, for a module that reads several model_types). Adding a family is a new module
and one line below.
"""

from __future__ import annotations

from attnviz.pretrained.checkpoint import ConversionError, Family
from attnviz.pretrained.families import attnviz as attnviz_runs
from attnviz.pretrained.families import (
    bert,
    distilbert,
    gemma,
    gpt2,
    gpt_neox,
    llama,
    llava,
    olmo2,
    paligemma,
    phi3,
    qwen3,
    qwen_vl,
    roberta,
)


def _table(*families: Family) -> dict[str, Family]:
    table: dict[str, Family] = {}
    for family in families:
        if family.name in table:
            raise ValueError(f"two families read model_type {family.name!r}")
        table[family.name] = family
    return table


FAMILIES: dict[str, Family] = _table(
    bert.FAMILY,
    gpt2.FAMILY,
    *llama.FAMILIES,
    roberta.FAMILY,
    distilbert.FAMILY,
    attnviz_runs.FAMILY,
    *gemma.FAMILIES,
    gpt_neox.FAMILY,
    *qwen3.FAMILIES,
    olmo2.FAMILY,
    phi3.FAMILY,
    *qwen_vl.FAMILIES,
    paligemma.FAMILY,
    *llava.FAMILIES,
)

__all__ = ["FAMILIES", "ConversionError", "Family"]
