"""Run the toy transformer on a table."""

from __future__ import annotations

import torch

from attnviz.capture import ComputedTrace, capture_trace
from attnviz.engine import Transformer, TransformerConfig
from attnviz.engine.toy import toy_weights
from attnviz.limits import LIMITS
from attnviz.schemas.common import ToyConfig
from attnviz.schemas.trace import ToyTraceRequest


def engine_config(config: ToyConfig, d: int) -> TransformerConfig:
    """The engine wiring for a toy configuration with d dimensions."""
    return TransformerConfig(
        d_model=d,
        n_layers=config.layers,
        n_heads=config.heads,
        scale=config.scale,
        causal=config.mask == "causal",
        positional=config.positional,
        n_ctx=LIMITS.max_tokens,
        residual=config.residual,
        norm=config.norm,
        ffn=config.ffn,
    )


def build_toy_model(config: ToyConfig, d: int, device: torch.device) -> Transformer:
    cfg = engine_config(config, d)
    custom = config.weights.model_dump() if config.weights is not None else None
    model = Transformer(cfg).to(device=device, dtype=torch.float64)
    model.load_state_dict(toy_weights(cfg, config.projections, custom, config.seed), strict=True)
    return model.eval()


def run_toy_trace(req: ToyTraceRequest, device: torch.device) -> ComputedTrace:
    """Every layer's attention, scores, q/k/v and hidden states for the request's table."""
    model = build_toy_model(req.config, req.d, device)
    x = torch.tensor(req.embeddings, dtype=torch.float64, device=device)[None]  # (1, T, C)
    tensors = capture_trace(model, x)
    cfg = model.cfg
    meta = {
        "mode": "toy",
        "tokens": req.tokens,
        "axes": req.axis_names(),
        "n": x.shape[1],
        "d": cfg.d_model,
        "layers": cfg.n_layers,
        "heads": cfg.n_heads,
        "head_dim": cfg.d_head,
        "device": str(device),
        "config": req.config.model_dump(),
    }
    return ComputedTrace(meta, tensors)
