"""Standard starting weights for a model that is trained, from one pure function of the config
and a seed (as the toy lab's ``toy_weights``): nothing is initialised silently in the modules.

Every (d_in, d_out) matrix is drawn from N(0, 1/d_in), so that a unit-variance input gives a
unit-variance output; the token and position tables from N(0, 0.02^2), as GPT-2; LayerNorm
scales are 1 and every shift and bias 0. Each tensor has a generator of its own, keyed by the
seed and its name, so that switching a part on or off (a feed-forward, a position table, a
norm) leaves every other weight as it was, and ablations compare like with like.
"""

from __future__ import annotations

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.engine.model import Transformer
from attnviz.engine.toy import seeded_randn

TABLE_STD = 0.02  # W_E, W_pos, W_type


def standard_weights(
    cfg: TransformerConfig, seed: int = 0, dtype: torch.dtype = torch.float32
) -> dict[str, torch.Tensor]:
    """A state dict for ``Transformer(cfg)``: every parameter, named as the module names it."""
    out: dict[str, torch.Tensor] = {}
    for name, param in Transformer(cfg).state_dict().items():
        leaf = name.rsplit(".", 1)[-1]
        shape = tuple(param.shape)
        if leaf == "w":  # a norm's scale: (ln_offset + w) = 1
            value = torch.full(shape, 1.0 - cfg.ln_offset, dtype=torch.float64)
        elif leaf == "b" or leaf.startswith("b_"):  # a LayerNorm's shift, a bias
            value = torch.zeros(shape, dtype=torch.float64)
        elif leaf in ("W_E", "W_pos", "W_type"):
            value = seeded_randn(seed, name, shape, TABLE_STD)
        else:  # a (d_in, d_out) matrix
            value = seeded_randn(seed, name, shape, shape[0] ** -0.5)
        out[name] = value.to(dtype)
    return out


def trainable(model: Transformer) -> Transformer:
    """The model with every parameter taking gradients (the engine starts them frozen)."""
    for p in model.parameters():
        p.requires_grad_(True)
    return model
