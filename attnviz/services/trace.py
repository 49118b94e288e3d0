"""Run the toy transformer on a request and turn its captures into the API's trace."""

from __future__ import annotations

import math

import torch

from attnviz.engine import Transformer, TransformerConfig, capture
from attnviz.engine.analysis import attention_entropy, pairwise_distances, trajectory_pca
from attnviz.engine.toy import toy_weights
from attnviz.schemas import LIMITS, Projection, ToyConfig, ToyTraceRequest, TraceResponse


class TraceError(ValueError):
    """A request that validated but cannot be computed; the message names the field."""


def engine_config(config: ToyConfig, d: int) -> TransformerConfig:
    """The engine wiring for a toy configuration with d dimensions."""
    return TransformerConfig(
        d_model=d,
        n_layers=config.layers,
        n_heads=config.heads,
        scale=config.scale,
        causal=config.mask == "causal",
        positional=config.positional,
        max_positions=LIMITS.max_tokens,
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


def _masked_to_none(scores: list) -> list:
    """-inf (a masked logit) has no JSON form: send it as null."""
    return [
        [[[None if v == -math.inf else v for v in row] for row in head] for head in layer]
        for layer in scores
    ]


def captured_trace(
    model: Transformer, x: torch.Tensor, device: torch.device, field: str = "embeddings"
) -> dict:
    """Run ``model`` on one sequence ``x`` ((1, T, C) vectors or (1, T) ids) and collect what
    every trace holds, by the names of ``TraceBase``. Overflow is a TraceError naming ``field``.
    """
    cfg = model.cfg
    L = cfg.n_layers
    rope = cfg.positional == "rope"
    with torch.inference_mode(), capture(model) as cache:
        model(x)

    def stack(name: str) -> torch.Tensor:  # (L, nh, T, ·) for the one sequence
        return torch.stack([cache[f"blocks.{i}.{name}"][0] for i in range(L)]).cpu()

    pattern = stack("attn.hook_pattern")  # (L, nh, T, T)
    scores = stack("attn.hook_scores")  # (L, nh, T, T)
    q = stack("attn.hook_rot_q" if rope else "attn.hook_q")  # (L, nh, T, hs)
    k = stack("attn.hook_rot_k" if rope else "attn.hook_k")  # (L, nh, T, hs)
    v = stack("attn.hook_v")  # (L, nh, T, hs)
    outputs = [cache[f"blocks.{i}.hook_resid_post"][0] for i in range(L)]
    if cfg.final_norm:  # the model's output is the last block's after the final norm
        outputs[-1] = cache["ln_final.hook_normalized"][0]
    states = torch.stack([cache["blocks.0.hook_resid_pre"][0], *outputs]).cpu()  # (L+1, T, C)
    if not (torch.isfinite(states).all() and torch.isfinite(pattern).all()):
        raise TraceError(
            f"{field}: the computation overflowed (values too large for this configuration)"
        )
    pos = cache.get("hook_pos_embed")
    d = cfg.d_model
    projection = None
    if d != 3:
        pca = trajectory_pca(states)
        projection = Projection.model_construct(
            components=pca.axes.shape[0],
            mean=pca.mean.tolist(),
            axes=pca.axes.tolist(),
            explained_variance_ratio=pca.explained_variance_ratio.tolist(),
            coords=pca.coords.tolist(),
        )
    entropy = attention_entropy(pattern)  # (L, nh, T)
    score_list = scores.tolist()
    return dict(
        n=x.shape[1],
        d=d,
        layers=L,
        heads=cfg.n_heads,
        head_dim=cfg.d_head,
        device=str(device),
        embeddings=cache["hook_embed"][0].cpu().tolist(),
        positional=pos[: x.shape[1]].cpu().tolist() if pos is not None else None,
        attentions=pattern.tolist(),
        scores=_masked_to_none(score_list) if cfg.causal else score_list,
        queries=q.tolist(),
        keys=k.tolist(),
        values=v.tolist(),
        hidden_states=states.tolist(),
        distances=pairwise_distances(states).tolist(),
        entropy=entropy.tolist(),
        entropy_mean=entropy.mean(-1).tolist(),
        projection=projection,
    )


def run_toy_trace(req: ToyTraceRequest, device: torch.device) -> TraceResponse:
    """Every layer's attention, scores, q/k/v and hidden states for the request's table."""
    model = build_toy_model(req.config, req.d, device)
    x = torch.tensor(req.embeddings, dtype=torch.float64, device=device)[None]  # (1, T, C)
    fields = captured_trace(model, x, device)
    fields["embeddings"] = req.embeddings  # exactly as sent
    # Built from our own tensors, whose shapes the tests pin: skip re-validating ~1e6 floats.
    return TraceResponse.model_construct(
        mode="toy", tokens=req.tokens, axes=req.axis_names(), config=req.config, **fields
    )
