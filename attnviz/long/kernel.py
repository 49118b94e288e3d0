"""A fused attention that also says each row's log-sum-exp: the one place that calls PyTorch's
private attention kernels, so that a change of their signatures is met here alone.

With a row's log-sum-exp L = log sum_j exp(s_j), any weight of that row is exp(s_j - L): the
long path keeps L beside the queries and keys and recomputes any window of weights exactly,
O(window), without the row's other scores.

On a CPU the kernel is the flash attention F.scaled_dot_product_attention itself runs (tested
against eager attention). On a GPU it is the memory-efficient kernel, which takes float32 and
half precision alike; before its first use on a device and dtype it is checked against eager
attention on a small case, and where it is missing or disagrees the long path weighs rows in
tiles instead (exact either way, only slower), so that a PyTorch whose private signature moved
never gives a wrong number."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import torch

Kernel = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, float, bool], tuple[torch.Tensor, ...]]

# (q, k, v, dropout_p, is_causal, *, attn_mask=None, scale=None) -> (out, logsumexp):
# PyTorch's CPU flash attention, which F.scaled_dot_product_attention calls for 4-D float
# inputs without a mask, and which returns the log-sum-exp that function drops.
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
# (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, *, scale=None) -> (out,
# logsumexp (its rows padded), seed, offset): the CUDA memory-efficient attention.
_EFFICIENT = getattr(torch.ops.aten, "_scaled_dot_product_efficient_attention", None)
FUSED_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
CHECK_TOLERANCE = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 5e-2}


def _cpu(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool):
    assert _FLASH_CPU is not None
    out, lse = _FLASH_CPU(q, k, v, 0.0, causal, scale=scale)
    return out, lse


def _cuda(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool):
    assert _EFFICIENT is not None
    out, lse = _EFFICIENT(q, k, v, None, True, 0.0, causal, scale=scale)[:2]
    return out, lse[..., : q.shape[-2]]


def agrees(kernel: Kernel, device: torch.device, dtype: torch.dtype) -> bool:
    """Whether ``kernel`` gives eager attention's output and log-sum-exp on a small causal
    case (67 queries, 2 heads of 16) on ``device`` in ``dtype``; False when it raises."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 67, 16, generator=g) for _ in range(3))
    scale = 1 / math.sqrt(16)
    s = (q @ k.transpose(-2, -1)) * scale
    s = s.masked_fill(torch.ones(67, 67, dtype=torch.bool).triu(1), float("-inf"))
    want_out, want_lse = torch.softmax(s, -1) @ v, torch.logsumexp(s, -1)
    try:
        qd, kd, vd = (t.to(device, dtype) for t in (q, k, v))
        out, lse = kernel(qd, kd, vd, scale, True)
    except Exception:  # a kernel this PyTorch or this device does not have
        return False
    tol = CHECK_TOLERANCE.get(dtype, 1e-4)
    return (out.shape == want_out.shape and lse.shape == want_lse.shape
            and torch.allclose(out.float().cpu(), want_out, atol=tol)
            and torch.allclose(lse.float().cpu(), want_lse, atol=tol))  # fmt: skip


@functools.cache
def _checked(device: torch.device, dtype: torch.dtype) -> bool:
    return _EFFICIENT is not None and agrees(_cuda, device, dtype)


def fusable(q: torch.Tensor) -> bool:
    """Whether ``flash_with_lse`` runs for queries like ``q``: on a CPU, in a float dtype the
    kernel takes; on a GPU, where the kernel agreed with eager attention (``agrees``).
    Elsewhere the long path weighs rows in tiles (``attnviz.long.attend``)."""
    if q.dtype not in FUSED_DTYPES:
        return False
    if q.device.type == "cpu":
        return _FLASH_CPU is not None
    return q.device.type == "cuda" and q.dtype != torch.float64 and _checked(q.device, q.dtype)


def flash_with_lse(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """softmax(scale q k^T, a key after its query hidden when ``causal``) @ v, and each row's
    log-sum-exp of those scores, never forming the (T, S) matrix. q, k, v (B, H, T or S, D) with
    one D (pad q and k with zeros to give v more columns: their products are unchanged).
    -> out (B, H, T, D), lse (B, H, T) float32."""
    if not fusable(q):
        raise RuntimeError(f"no fused attention here ({q.device}, {q.dtype})")
    kernel = _cpu if q.device.type == "cpu" else _cuda
    out, lse = kernel(q, k, v, scale, causal)
    return out, lse.float()
