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


def engine_captures(model: Transformer, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """What the engine's forward computed, straight from its hook points, stacked over layers:
    the reference the service's traces are checked against."""
    from attnviz.engine import capture

    L = model.cfg.n_layers
    rope = model.cfg.positional == "rope"
    with torch.inference_mode(), capture(model) as cache:
        model(x)

    def stack(name: str) -> torch.Tensor:
        return torch.stack([cache[f"blocks.{i}.{name}"][0] for i in range(L)])

    outputs = [cache[f"blocks.{i}.hook_resid_post"][0] for i in range(L)]
    if model.cfg.final_norm:
        outputs[-1] = cache["ln_final.hook_normalized"][0]
    return {
        "attentions": stack("attn.hook_pattern"),
        "scores": stack("attn.hook_scores"),
        "queries": stack("attn.hook_rot_q" if rope else "attn.hook_q"),
        "keys": stack("attn.hook_rot_k" if rope else "attn.hook_k"),
        "values": stack("attn.hook_v"),
        "hidden_states": torch.stack([cache["blocks.0.hook_resid_pre"][0], *outputs]),
        "embeddings": cache["hook_embed"][0],
    }


def recomputed(tensors) -> dict[str, torch.Tensor]:
    """A trace's per-head arrays as the service serves them once cached: scores and weights
    recomputed from q and k (the forward's own weights released first)."""
    tensors.release()
    L = tensors.layers
    return {
        "attentions": torch.stack([tensors.pattern(i) for i in range(L)]),
        "scores": torch.stack([tensors.scores(i) for i in range(L)]),
        "queries": torch.stack(tensors.q),
        "keys": torch.stack(tensors.k),
        "values": torch.stack(tensors.v),
        "hidden_states": tensors.states,
        "embeddings": tensors.embeddings,
    }
