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


_POW10 = torch.tensor([10.0**i for i in range(23)], dtype=torch.float64)  # each one exact


def wire(t: torch.Tensor) -> list:
    """A tensor as nested lists for JSON. float64 goes as it is. float32 goes as the float64
    nearest to its value rounded to 9 significant digits: 9 digits always identify a float32
    (``Math.fround`` of the number gives the exact float32 back), and the JSON text is about
    half as long as the 17 digits a widened float32 needs (0.0123456789, not
    0.012345678907585144)."""
    if t.dtype != torch.float32:
        return t.tolist()
    x = t.double()
    p = 8 - torch.floor(torch.log10(x.abs()))  # decimals that leave 9 significant digits
    ok = torch.isfinite(p) & (p >= 0) & (p <= 22)  # else (0, |x| >= 1e9 or < 1e-14): as is
    scale = _POW10[torch.where(ok, p, 0).long()]
    # k / 10^p with k an exact integer is correctly rounded: the nearest double to the decimal.
    return torch.where(ok, torch.round(x * scale) / scale, x).tolist()


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
            mean=wire(pca.mean),
            axes=wire(pca.axes),
            explained_variance_ratio=wire(pca.explained_variance_ratio),
            coords=wire(pca.coords),
        )
    entropy = attention_entropy(pattern)  # (L, nh, T)
    score_list = wire(scores)
    return dict(
        n=x.shape[1],
        d=d,
        layers=L,
        heads=cfg.n_heads,
        head_dim=cfg.d_head,
        device=str(device),
        embeddings=wire(cache["hook_embed"][0].cpu()),
        positional=wire(pos[: x.shape[1]].cpu()) if pos is not None else None,
        attentions=wire(pattern),
        scores=_masked_to_none(score_list) if cfg.causal else score_list,
        queries=wire(q),
        keys=wire(k),
        values=wire(v),
        hidden_states=wire(states),
        distances=wire(pairwise_distances(states)),
        entropy=wire(entropy),
        entropy_mean=wire(entropy.mean(-1)),
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
