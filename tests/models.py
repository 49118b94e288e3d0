"""Small toy models for engine tests."""

from __future__ import annotations

import torch

from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.toy import toy_weights


def make_model(projections: str = "identity", custom=None, seed: int = 0, **cfg) -> Transformer:
    """A float64 toy model on the CPU, wired by TransformerConfig keyword arguments."""
    config = TransformerConfig(**cfg)
    model = Transformer(config).to(torch.float64)
    model.load_state_dict(toy_weights(config, projections, custom, seed))
    return model.eval()
