"""A fused attention that also says each row's log-sum-exp: the one place that calls PyTorch's
private flash kernel, so that a change of its signature is met here alone (a test checks it
against eager attention on every release we pin).

With a row's log-sum-exp L = log sum_j exp(s_j), any weight of that row is exp(s_j - L): the
long path keeps L beside the queries and keys and recomputes any window of weights exactly,
O(window), without the row's other scores."""

from __future__ import annotations

import torch

# (q, k, v, dropout_p, is_causal, *, attn_mask=None, scale=None) -> (out, logsumexp):
# PyTorch's CPU flash attention, which F.scaled_dot_product_attention calls for 4-D float
# inputs without a mask, and which returns the log-sum-exp that function drops.
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
FUSED_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def fusable(q: torch.Tensor) -> bool:
    """Whether ``flash_with_lse`` runs for queries like ``q``: on a CPU, in a float dtype the
    kernel takes. Elsewhere the long path weighs rows in tiles (``attnviz.long.attend``)."""
    return _FLASH_CPU is not None and q.device.type == "cpu" and q.dtype in FUSED_DTYPES


def flash_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(scale q k^T, a key after its query hidden when ``causal``) @ v, and each row's
    log-sum-exp of those scores, never forming the (T, S) matrix. q, k, v (B, H, T or S, D) with
    one D (pad q and k with zeros to give v more columns: their products are unchanged).
    -> out (B, H, T, D), lse (B, H, T) float32."""
    if _FLASH_CPU is None:
        raise RuntimeError("this PyTorch has no CPU flash attention")
    out, lse = _FLASH_CPU(q, k, v, 0.0, causal, scale=scale)
    return out, lse.float()
