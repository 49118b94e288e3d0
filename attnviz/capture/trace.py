"""A trace captured: one forward of a model on one sequence, through the engine's hook points,
keeping what every trace holds (``TraceTensors``), and the trace as the cache keeps it
(``ComputedTrace``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch

# The module itself: ``KEEP_FORWARD_BYTES`` is read from it at each capture, where it is set.
import attnviz.capture.tensors as store
from attnviz.capture.progress import listener
from attnviz.capture.tensors import QKV, TraceTensors
from attnviz.engine import Layout, Transformer, TransformerConfig, act_name, capture
from attnviz.engine.layout import positions_of
from attnviz.engine.model import Block
from attnviz.errors import TraceError


def qk_names(cfg: TransformerConfig, layer: int) -> tuple[str, str]:
    """The hook points of the queries and keys that meet in the scores: after RoPE when on, after
    a per-head q/k norm when there is one (a norm over the projection comes before hook_q)."""
    if cfg.positional == "rope":
        return act_name("rot_q", layer), act_name("rot_k", layer)
    if cfg.qk_norm == "head":
        return act_name("q_norm", layer), act_name("k_norm", layer)
    return act_name("q", layer), act_name("k", layer)


def layer_qkv(model: Transformer, layer: int, x: torch.Tensor, layout: Layout | None = None) -> QKV:
    """q, k, v (nh, T, hs) of block ``layer`` given its input ``x`` (T, C) (hidden state
    ``layer``): that block's projections alone, the numbers of the whole forward (tested),
    rotated at ``layout``'s positions when the forward had one."""
    block = model.blocks[layer]
    assert isinstance(block, Block)
    positions = positions_of(layout, x.shape[0])
    x = x.to(block.attn.W_Q.device)  # the block's own device when the model is placed
    with torch.inference_mode():
        xn = block.ln1(x[None]) if block.ln1 is not None and model.cfg.norm == "pre" else x[None]
        q, k, v = block.attn.project(xn, positions=positions)  # (1, nh, T, hs) each
    return q[0], k[0], v[0]


def _recompute(model: Transformer, states: torch.Tensor, layout: Layout | None, layer: int) -> QKV:
    return layer_qkv(model, layer, states[layer], layout)


def capture_trace(
    model: Transformer,
    x: torch.Tensor,
    field: str = "embeddings",
    keep_qkv_bytes: int = -1,
    *,
    layout: Layout | None = None,
) -> TraceTensors:
    """Run ``model`` on one sequence ``x`` ((1, T, C) vectors or (1, T) ids) and keep what every
    trace holds. Overflow is a TraceError naming ``field``. q, k and v are kept when they take
    at most ``keep_qkv_bytes`` (always when negative), else recomputed per layer on demand; the
    forward's weights are kept for the first response up to ``KEEP_FORWARD_BYTES``, a layer's
    weights being dropped as soon as the next layer runs otherwise. ``layout``: where the
    tokens sit (``Layout``), for the forward and every recomputation of q, k and the weights."""
    cfg = model.cfg
    L, T = cfg.n_layers, x.shape[1]
    itemsize = model.param_dtype.itemsize
    qkv_bytes = 3 * L * cfg.n_heads * T * cfg.d_head * itemsize
    keep_qkv = keep_qkv_bytes < 0 or qkv_bytes <= keep_qkv_bytes
    keep_pattern = L * cfg.n_heads * T * T * 4 <= store.KEEP_FORWARD_BYTES
    wanted = _wanted(cfg, keep_qkv)
    finite = [True]
    patterns: list[torch.Tensor] = []

    def look(_m: torch.nn.Module, _inp: tuple, out: torch.Tensor) -> None:
        # A sum is finite only when every term is: no (nh, T, T) mask of booleans.
        finite[0] = finite[0] and bool(torch.isfinite(out.sum()))
        if keep_pattern:
            patterns.append(out.detach()[0])

    # Only when the weights are kept: a hook on them makes each layer compute them whole. An
    # overflow anywhere reaches the states, which are checked below.
    points = [b.attn.hook_pattern for b in model.blocks if isinstance(b, Block)]
    handles = [p.register_forward_hook(look) for p in points] if keep_pattern else []
    handles += _progress_hooks(model)
    # Only the points read here: each captured activation is kept alive, and costs a hook.
    try:
        with torch.inference_mode(), capture(model, wanted) as cache:
            if layout is None:
                model(x)
            else:
                model(x, layout=layout)
    finally:
        for h in handles:
            h.remove()

    outputs = [cache[act_name("resid_post", i)][0] for i in range(L)]
    if cfg.final_norm:  # the model's output is the last block's after the final norm
        outputs[-1] = cache[act_name("ln_final")][0]
    # (L+1, T, C), on the output's device (the head's, where the readout unembeds them): a
    # placed model's states come from several devices, T x C each, never T x T.
    home = outputs[-1].device
    states = torch.stack([t.to(home) for t in (cache[act_name("resid_pre", 0)][0], *outputs)])
    if not (finite[0] and torch.isfinite(states.sum())):
        raise TraceError(
            f"{field}: the computation overflowed (values too large for this configuration)"
        )

    q: list[torch.Tensor] | None = None
    k: list[torch.Tensor] | None = None
    v: list[torch.Tensor] | None = None
    recompute: Callable[[int], QKV] | None = None
    if keep_qkv:  # L x (nh, T, ·) for the one sequence
        q = [cache[qk_names(cfg, i)[0]][0] for i in range(L)]
        k = [cache[qk_names(cfg, i)[1]][0] for i in range(L)]
        v = [cache[act_name("v", i)][0] for i in range(L)]
    else:  # block i reads hidden state i
        recompute = functools.partial(_recompute, model, states, layout)

    pos = cache.get(act_name("pos_embed"))
    w_o = [block_w_o(model, i) for i in range(L)]
    return TraceTensors(
        cfg=cfg,
        q=q,
        k=k,
        v=v,
        states=states,
        embeddings=cache[act_name("embed")][0],
        positional=pos[: x.shape[1]] if pos is not None else None,
        forward_pattern=patterns if keep_pattern else None,
        recompute=recompute,
        w_o=w_o,
        layout=layout,
    )


def _wanted(cfg: TransformerConfig, keep_qkv: bool) -> list[str]:
    """The hook points a capture reads: the input, each block's output, and its q, k and v
    when they are kept."""
    wanted = [act_name("embed"), act_name("resid_pre", 0)]
    wanted += [act_name("pos_embed")] if cfg.positional in ("sinusoidal", "learned") else []
    wanted += [act_name("ln_final")] if cfg.final_norm else []
    for i in range(cfg.n_layers):
        wanted.append(act_name("resid_post", i))
        if keep_qkv:
            wanted += [*qk_names(cfg, i), act_name("v", i)]
    return wanted


def _progress_hooks(model: Transformer) -> list[torch.utils.hooks.RemovableHandle]:
    """When a job follows the forward: each block done is told (and may stop it)."""
    listen = listener()
    if listen is None:
        return []
    handles = []
    for i, block in enumerate(model.blocks):

        def told(*_: object, done: int = i + 1) -> None:
            listen("forward", done, model.cfg.n_layers)

        handles.append(block.register_forward_hook(told))
    return handles


def block_w_o(model: Transformer, layer: int) -> torch.Tensor:
    """(nh, hs, C): block ``layer``'s output projection, one slice of rows per head (a view)."""
    block = model.blocks[layer]
    assert isinstance(block, Block)
    cfg = model.cfg
    return block.attn.W_O.view(cfg.n_heads, cfg.d_head, -1)


@dataclass
class ComputedTrace:
    """A trace as the cache keeps it: the response's other fields and the tensors."""

    meta: dict  # mode, tokens, axes, n, d, layers, heads, head_dim, device, and the mode's own
    tensors: TraceTensors

    def nbytes(self) -> int:
        return self.tensors.nbytes()
