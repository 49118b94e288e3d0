"""A tiny long-context model (few dimensions, 32k positions) at 32,768 tokens: the long path
finishes within CI's minute, its memory stays far below one (T, T) matrix's 4 GB, and what it
keeps is exact where a row can be checked whole (one query's row is only T numbers)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attnviz.engine import TransformerConfig
from attnviz.engine.init import standard_weights
from attnviz.engine.model import Transformer, attention_scores
from attnviz.long import Plan, fixed_blocks, run_long

T = 32_768
CFG = TransformerConfig(
    d_model=32, n_layers=2, n_heads=2, n_kv_heads=1, causal=True, positional="rope",
    rope_style="halves", residual=True, norm="pre", norm_type="rms", ln_affine=True, ffn=True,
    gated=True, activation="silu", vocab_size=101, n_ctx=T,
)  # fmt: skip


def peak_rss() -> int:
    """This process's peak resident set (bytes) since ``forget_peak``."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def forget_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


@pytest.mark.slow
def test_32k_tokens_run_in_bounded_memory_and_read_exactly() -> None:
    model = Transformer(CFG)
    model.load_state_dict(standard_weights(CFG, seed=1))
    ids = torch.randint(0, 101, (T,), generator=torch.Generator().manual_seed(0))
    plan = Plan(fixed_blocks(T, 64), sinks=(0,), local=64)
    forget_peak()
    before = peak_rss()
    trace = run_long(model.eval(), ids, plan)
    grew = peak_rss() - before
    assert grew < 400 * 2**20, f"the run took {grew / 2**20:.0f} MB more"  # (T, T): 4 GB
    for layer in range(CFG.n_layers):
        rec = trace.layers[layer]
        assert rec.fused
        k = rec.k.repeat_interleave(2, dim=0)  # (nh, T, hs)
        for query in (0, 1, 4_095, 20_000, T - 1):
            s = attention_scores(
                rec.q[:, query : query + 1], k[:, : query + 1], CFG, layer=layer, start=query
            )[:, 0]  # fmt: skip  (nh, query + 1)
            p = torch.softmax(s, -1)
            assert torch.allclose(trace.row(layer, query)[:, : query + 1], p, atol=1e-6)
            entropy = -(p * torch.log_softmax(s, -1)).sum(-1)
            assert torch.allclose(trace.entropy(layer)[:, query], entropy, atol=1e-4)
            assert torch.allclose(rec.sink[:, query], p[:, 0], atol=1e-6)
            near = torch.zeros(query + 1, dtype=torch.bool)
            near[max(1, query - 63) :] = True
            assert torch.allclose(rec.local[:, query], (p * near).sum(-1), atol=1e-5)
            w = trace.window(
                layer, 1, range(query, query + 1), range(max(0, query - 511), query + 1)
            )
            assert torch.allclose(w[0], p[1, max(0, query - 511) :], atol=1e-6)
    maps = trace.block_map(1, [0, 1])
    sizes = torch.tensor(plan.bounds).diff().float()
    assert torch.allclose(maps.sum(-1), sizes.expand(2, -1), rtol=1e-4)
    assert torch.allclose(maps.triu(1), torch.zeros(()))  # causal: no later block
