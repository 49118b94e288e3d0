"""A vision tower's attention, computed without its whole weights.

A trace keeps a tower call as its queries and keys (``capture.vision.TowerCall``) and makes a
layer's weights again only when a part asks for them. So the forward itself need not make them:
eager attention writes every head's P x P weights (a SigLIP tile of 1,024 patches: 50 MB a
layer, page-faulted afresh each time), and a quarter of a SmolVLM-shaped first request went to
them. Here the call's output is PyTorch's fused ``scaled_dot_product_attention`` on the same
queries, keys, values, mask and scaling, and the model's own eager attention runs on the two
heads the record checks (the first and the last of the first and last piece): the record keeps
q and k only where they give those weights back, as before.

Only a plain call takes this path: eval mode, the same number of query and key heads, an
additive (floating) mask or none, and nothing in the keywords that eager would read but the
fused kernel would not (a soft-cap, sinks); any other call is eager's, whole.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

import torch
import torch.nn.functional as F

from attnviz.capture.vision import TowerCall

Eager = Callable[..., tuple[torch.Tensor, torch.Tensor]]


def plain(
    module: Any, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
    kwargs: dict[str, Any], inert: Collection[str],
) -> bool:  # fmt: skip
    """Whether the fused kernel computes exactly what eager attention would for this call."""
    if getattr(module, "training", False) or getattr(module, "num_key_value_groups", 1) != 1:
        return False
    if query.dim() != 4 or key.shape[:2] != query.shape[:2]:
        return False
    if mask is not None and (mask.dtype == torch.bool or not mask.is_floating_point()):
        return False
    if kwargs.get("is_causal"):
        return False
    return all(v is None or k in inert or k == "scaling" for k, v in kwargs.items())


def _piece(t: torch.Tensor | None, b: int, h: int) -> torch.Tensor | None:
    """Piece ``b``'s head ``h`` of a (B or 1, H or 1, ...) tensor, keeping its four axes."""
    if t is None:
        return None
    t = t[b : b + 1] if t.shape[0] > 1 else t
    return t[:, h : h + 1] if t.dim() == 4 and t.shape[1] > 1 else t


def fused(
    module: Any, eager: Eager, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    mask: torch.Tensor | None, scaling: float, kwargs: dict[str, Any],
) -> tuple[torch.Tensor, TowerCall]:  # fmt: skip
    """The call's output (B, P, H, hs), as eager returns it, and its record: q and k checked
    against eager's own weights on two heads (else those calls' weights in full, from eager)."""
    B, H, P, _ = query.shape
    S = key.shape[-2]
    bias = None if mask is None else mask[..., :S]  # eager's slice to the keys
    out = F.scaled_dot_product_attention(query, key, value, attn_mask=bias, scale=scaling)
    out = out.transpose(1, 2).contiguous()  # (B, H, P, hs) -> (B, P, H, hs)
    checks = {}
    given = {k: v for k, v in kwargs.items() if k != "scaling"}
    for b, h in {(0, 0), (B - 1, H - 1)}:
        q, k, v = _piece(query, b, h), _piece(key, b, h), _piece(value, b, h)
        _, w = eager(module, q, k, v, _piece(bias, b, h), scaling=scaling, **given)
        checks[(b, h)] = w[0, 0]  # (P, S)
    call = TowerCall.checked(query, key, mask, scaling, (B, H, P, S), checks)
    if call.kept is None:
        return out, call
    # q and k do not give eager's weights back: eager's whole call, its weights kept.
    out, weights = eager(module, query, key, value, mask, scaling=scaling, **given)
    return out, TowerCall(call.shape, kept=weights.detach().float())
