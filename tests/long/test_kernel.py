"""The fused kernels' one door (``attnviz.long.kernel``): the CPU kernel agrees with eager
attention, and a kernel that disagrees or raises is refused (the long path then weighs rows in
tiles), so that a GPU whose private kernel moved never gives a wrong number."""

from __future__ import annotations

import torch

from attnviz.long import kernel


def test_the_cpu_kernel_agrees_with_eager_attention():
    assert kernel.agrees(kernel._cpu, torch.device("cpu"), torch.float32)
    q = torch.randn(1, 2, 5, 16)
    assert kernel.fusable(q) and not kernel.fusable(q.to(torch.int64))


def test_a_kernel_that_disagrees_or_raises_is_refused():
    def off(q, k, v, scale, causal):
        out, lse = kernel._cpu(q, k, v, scale, causal)
        return out, lse + 1e-3  # every weight off by 0.1 %

    def raises(q, k, v, scale, causal):
        raise RuntimeError("no such kernel on this device")

    def unmasked(q, k, v, scale, causal):
        return kernel._cpu(q, k, v, scale, False)

    cpu = torch.device("cpu")
    assert not kernel.agrees(off, cpu, torch.float32)
    assert not kernel.agrees(raises, cpu, torch.float32)
    assert not kernel.agrees(unmasked, cpu, torch.float32)
