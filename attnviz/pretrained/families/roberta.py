"""RoBERTa encoders (``model_type`` roberta): BERT's wiring, with one difference in the weights.
RoBERTa numbers positions from ``pad_token_id + 1`` (a text's first token has position 2), so
the conversion keeps the position table's rows from there on: row i is then position i of the
text, as the engine reads it. Nothing else changes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.pretrained.checkpoint import ConversionError, Family, Tensors, need, strip
from attnviz.pretrained.families.bert import bert_config, bert_weights

_IGNORE = re.compile(r"^lm_head\.|^classifier\.|(^|\.)pooler\.|position_ids$|token_type_ids$")


def _offset(hf: Mapping) -> int:
    pad = hf.get("pad_token_id", 1)
    if not isinstance(pad, int) or isinstance(pad, bool) or pad < 0:
        raise ConversionError(f"config.json: pad_token_id must be a token id (got {pad!r})")
    return pad + 1


def roberta_config(hf: Mapping) -> TransformerConfig:
    cfg = bert_config(hf)
    table = need(hf, "max_position_embeddings")
    if table <= _offset(hf):
        raise ConversionError(
            f"config.json: max_position_embeddings {table} leaves no positions after "
            f"pad_token_id + 1 = {_offset(hf)}"
        )
    return replace(cfg, n_ctx=table - _offset(hf))


def roberta_weights(
    cfg: TransformerConfig, tensors: Tensors, hf: Mapping
) -> dict[str, torch.Tensor]:
    body = strip(tensors, "roberta.", _IGNORE)
    key = "embeddings.position_embeddings.weight"
    table = body.get(key)
    if table is None:
        raise ConversionError(f"the checkpoint has no tensor {key!r}")
    offset = table.shape[0] - cfg.n_ctx  # pad_token_id + 1, as the config said
    if table.ndim != 2 or offset < 1:
        raise ConversionError(
            f"{key}: expected {cfg.n_ctx} rows and more, got {tuple(table.shape)}"
        )
    return bert_weights(cfg, {**body, key: table[offset:]}, hf)


FAMILY = Family(
    name="roberta",
    config=roberta_config,
    weights=roberta_weights,
    description="RoBERTa encoders: BERT's wiring, positions numbered from pad_token_id + 1",
)
