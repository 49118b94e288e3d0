"""The long path against eager attention, at lengths eager fits: the model's output, every row's
log-sum-exp, entropy, sink and local mass, the block map, any window, a query's row and its top
keys, for each rule a native family uses, across tile boundaries, fused and tiled."""

from __future__ import annotations

import contextlib
from dataclasses import replace

import pytest
import torch

from attnviz.engine import TransformerConfig
from attnviz.engine.hooks import act_name, capture
from attnviz.engine.init import standard_weights
from attnviz.engine.layout import Layout
from attnviz.engine.model import Transformer, attention_pattern, attention_scores, soft_cap
from attnviz.engine.positional import RopeScaling
from attnviz.long import LongAttend, LongTrace, Plan, fixed_blocks, run_long, store
from attnviz.long import attend as long_attend
from attnviz.long.run import attending

BASE = TransformerConfig(
    d_model=32, n_layers=2, n_heads=4, causal=True, positional="rope", rope_style="halves",
    residual=True, norm="pre", norm_type="rms", ln_affine=True, ffn=True, gated=True,
    activation="silu", vocab_size=97, n_ctx=4096,
)  # fmt: skip
RULES = {
    "causal": BASE,
    "gqa": replace(BASE, n_kv_heads=2),
    "rope scaling": replace(BASE, rope_scaling=RopeScaling("linear", factor=4.0)),
    "window": replace(BASE, sliding_window=37, layer_types=("sliding_attention", "full_attention")),
    "softcap": replace(BASE, attn_softcap=5.0, attn_scale=0.3),
    "bidirectional window": replace(BASE, causal=False, sliding_window=41),
    "qk norm": replace(BASE, qk_norm="head", n_kv_heads=1),
    "mrope": replace(BASE, rope_sections=(2, 1, 1)),
}
T = 300  # past the tiles of rows (256 for the local mass; more for the sums) and 64 blocks


def model_of(cfg: TransformerConfig) -> Transformer:
    model = Transformer(cfg)
    weights = standard_weights(cfg, seed=3)
    model.load_state_dict({k: v * (2 if "W_Q" in k or "W_K" in k else 1)  # sharper rows
                           for k, v in weights.items()})  # fmt: skip
    return model.eval()


def forward(model: Transformer, ids: torch.Tensor, layout: Layout | None, plan: Plan | None):
    """The model's output, eager, or the long path's (``plan``) with what it records dropped."""
    ctx = attending(model, LongAttend(plan, lambda *_: None)) if plan else contextlib.nullcontext()
    with torch.inference_mode(), ctx:
        return model(ids[None], layout=layout) if layout else model(ids[None])


def eager_weights(trace: LongTrace, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's scores after any soft-cap and weights (nh, T, T), eager, from the queries
    and keys the long run kept."""
    cfg, rec = trace.cfg, trace.layers[layer]
    k = rec.k.repeat_interleave(cfg.n_heads // cfg.kv_heads, dim=0)
    scores = attention_scores(rec.q, k, cfg, layer=layer, spans=trace.spans)
    return soft_cap(scores, cfg), attention_pattern(scores, cfg)


def layout_of(name: str) -> Layout | None:
    if name == "mrope":
        pos = torch.stack([torch.arange(T) // 4, torch.arange(T) % 7, torch.arange(T) % 5])
        return Layout(positions=pos)
    if name == "causal":
        return Layout(spans=((10, 40), (200, 260)))  # prefix-like bidirectional spans
    return None


@pytest.mark.parametrize("name", list(RULES))
def test_the_long_path_equals_eager_attention(name: str, monkeypatch) -> None:
    cfg = RULES[name]
    monkeypatch.setattr(long_attend, "TILE_BYTES", 16 * cfg.n_heads * T * 40)  # rows of 40
    monkeypatch.setattr(long_attend, "LOCAL_ROWS", 37)
    model = model_of(cfg)
    ids = torch.randint(0, 97, (T,), generator=torch.Generator().manual_seed(1))
    layout = layout_of(name)
    plan = Plan(fixed_blocks(T, 64), sinks=(0, 5), local=16)
    done: list[int] = []
    heard: list[int] = []  # a hook on the model itself: the long run goes on a twin
    with capture(model, [act_name("z", 0)]) as seen:
        trace = run_long(model, ids, plan, layout, on_layer=done.append)
        heard.extend(seen)
    assert done == list(range(cfg.n_layers)) and heard == []
    eager = forward(model, ids, layout, None)
    assert torch.equal(model(ids[None], layout=layout) if layout else model(ids[None]), eager)
    # the fused kernel sums in another order: its output is near, not equal, to eager's
    assert torch.allclose(forward(model, ids, layout, plan), eager, atol=1e-4)
    with torch.inference_mode(), capture(model, [act_name("q", 0)]) as cache:
        forward(model, ids, layout, None)
    if cfg.positional != "rope" and cfg.qk_norm == "none":
        assert torch.equal(trace.layers[0].q, cache[act_name("q", 0)][0])
    block = plan.block_of(torch.device("cpu"))
    i, j = torch.arange(T)[:, None], torch.arange(T)[None, :]
    near = ((i - j).abs() < 16) & (j != 0) & (j != 5)
    for layer in range(cfg.n_layers):
        rec = trace.layers[layer]
        capped, p = eager_weights(trace, layer)
        lse = torch.logsumexp(capped, -1)
        assert torch.allclose(rec.lse, lse, atol=1e-5)
        log_p = torch.where(p > 0, capped - lse[..., None], 0.0)
        assert (rec.entropy is None) == rec.fused
        assert torch.allclose(trace.entropy(layer), -(p * log_p).sum(-1), atol=1e-5)
        assert torch.allclose(rec.sink, p[:, :, 0] + p[:, :, 5], atol=1e-5)
        assert torch.allclose(rec.local, (p * near).sum(-1), atol=1e-5)
        sums = torch.zeros(cfg.n_heads, plan.n_blocks, plan.n_blocks)
        sums.index_add_(1, block, p @ torch.nn.functional.one_hot(block).float())
        maps = trace.block_map(layer, list(range(cfg.n_heads)))
        assert torch.allclose(maps, sums, atol=1e-5)
        assert torch.equal(trace.block_map(layer, [2, 0]), maps[[2, 0]])
        for head in range(cfg.n_heads):
            w = trace.window(layer, head, range(250, 300), range(200, 290))
            assert torch.allclose(w, p[head, 250:300, 200:290], atol=1e-5)
        assert torch.allclose(trace.row(layer, 131), p[:, 131], atol=1e-5)
        weights, keys = trace.top_k(layer, 131, 16)
        assert torch.allclose(weights, torch.topk(p[:, 131], 16).values, atol=1e-5)
        assert torch.allclose(p[:, 131].gather(1, keys), weights, atol=1e-5)
        assert torch.allclose(
            trace.block_row(layer, 131),
            p[:, 131] @ torch.nn.functional.one_hot(block).float(),
            atol=1e-5,
        )


def test_a_saved_trace_reopens_mapped_and_reads_the_same(tmp_path) -> None:
    cfg = RULES["gqa"]
    model = model_of(cfg)
    ids = torch.randint(0, 97, (T,), generator=torch.Generator().manual_seed(2))
    plan = Plan(fixed_blocks(T, 16), sinks=(0,), local=8, keep=torch.float16)
    memory = run_long(model, ids, plan)
    saved = run_long(model, ids, plan, folder=tmp_path / "t")
    again = store.load(tmp_path / "t", cfg)
    assert again.T == T and again.plan == plan and again.spans == ()
    for layer in range(cfg.n_layers):
        for name in store.ARRAYS:
            a, b, c = (getattr(t.layers[layer], name) for t in (memory, saved, again))
            assert a.dtype == c.dtype and torch.equal(a, b) and torch.equal(a, c)
        assert again.layers[layer].entropy is None  # fused: made when asked
        assert torch.equal(memory.window(layer, 3, range(0, 9), range(0, 9)),
                           again.window(layer, 3, range(0, 9), range(0, 9)))  # fmt: skip
    assert memory.layers[0].q.dtype == torch.float16
    with pytest.raises(store.StoreError, match="another model"):
        store.load(tmp_path / "t", RULES["causal"])
    meta = tmp_path / "t" / "meta.json"
    meta.write_text(meta.read_text().replace('"schema": 1', '"schema": 99'))
    with pytest.raises(store.StoreError, match="schema 99"):
        store.load(tmp_path / "t", cfg)
