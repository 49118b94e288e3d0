"""The engine's pieces for today's checkpoints, each against a closed form or transformers (the
development oracle): RoPE frequencies of every scaling type, sliding windows, soft-caps, heads
wider than d_model / n_heads, partial rotation, the key/value cache, and q/k/v recomputed for
one layer equal to the forward's."""

from __future__ import annotations

import math

import pytest
import torch

from attnviz.capture import capture_trace
from attnviz.capture.fields.entropy import entropy
from attnviz.capture.fields.thumbs import score_range
from attnviz.engine import Transformer, TransformerConfig, act_name, capture
from attnviz.engine.config import window_fields
from attnviz.engine.model import KVCache, attention_pattern, attention_scores
from attnviz.engine.positional import RopeScaling, rope_frequencies

SCALINGS = {
    "linear": ({"factor": 4.0}, RopeScaling("linear", factor=4.0)),
    "dynamic": ({"factor": 2.0}, RopeScaling("dynamic", factor=2.0, original_max_positions=32)),
    "yarn": (
        {"factor": 4.0, "original_max_position_embeddings": 16, "beta_fast": 16, "beta_slow": 2},
        RopeScaling("yarn", factor=4.0, original_max_positions=16, beta_fast=16, beta_slow=2),
    ),
    "yarn-mscale": (
        {"factor": 8.0, "original_max_position_embeddings": 16, "mscale": 0.7,
         "mscale_all_dim": 0.5, "truncate": False},
        RopeScaling("yarn", factor=8.0, original_max_positions=16, mscale=0.7, mscale_all_dim=0.5,
                    truncate=False),
    ),
    "longrope": (
        {"original_max_position_embeddings": 16, "short_factor": [1.0, 1.5, 2.0, 2.5],
         "long_factor": [3.0, 4.0, 5.0, 6.0]},
        RopeScaling("longrope", factor=None, original_max_positions=16, max_positions=32,
                    short_factor=(1.0, 1.5, 2.0, 2.5), long_factor=(3.0, 4.0, 5.0, 6.0)),
    ),
    "llama3": (
        {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
         "original_max_position_embeddings": 16},
        RopeScaling("llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                    original_max_positions=16),
    ),
}  # fmt: skip


@pytest.mark.parametrize("kind", SCALINGS)
@pytest.mark.parametrize("seq_len", [8, 40])
def test_rope_frequencies_are_transformers(kind, seq_len):
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params, ours = SCALINGS[kind]
    rope_type = kind.split("-")[0]
    config = LlamaConfig(hidden_size=32, num_attention_heads=4, max_position_embeddings=32,
                         rope_parameters={"rope_type": rope_type, "rope_theta": 500.0, **params})  # fmt: skip
    want, want_factor = ROPE_INIT_FUNCTIONS[rope_type](config, None, seq_len=seq_len)
    got, factor = rope_frequencies(8, 500.0, ours, seq_len)
    assert got.dtype == torch.float32
    assert torch.equal(got, want.float()), (got, want)
    assert factor == pytest.approx(want_factor, rel=1e-12)


def small(**kw) -> TransformerConfig:
    base = dict(d_model=8, n_layers=2, n_heads=2, causal=True, positional="rope",
                rope_style="halves", residual=True, norm="pre", norm_type="rms", ln_affine=True,
                final_norm=True, ffn=True, gated=True, activation="silu", vocab_size=20,
                unembed=True, n_ctx=64)  # fmt: skip
    return TransformerConfig(**{**base, **kw})


def randomised(cfg: TransformerConfig, seed: int = 0) -> Transformer:
    model = Transformer(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return model.eval()


def test_a_sliding_window_hides_keys_out_of_it():
    cfg = small(sliding_window=3, layer_types=("sliding_attention", "full_attention"))
    q, k = torch.randn(2, 6, 4), torch.randn(2, 6, 4)
    slid = attention_scores(q, k, cfg, layer=0)
    full = attention_scores(q, k, cfg, layer=1)
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    assert torch.equal(torch.isneginf(slid[0]), (j > i) | (i - j >= 3))
    assert torch.equal(torch.isneginf(full[0]), j > i)
    # From a cache: queries at positions 4, 5 against keys 0..5.
    tail = attention_scores(q[:, 4:], k, cfg, layer=0, start=4)
    assert torch.equal(tail, slid[:, 4:])


def test_layers_whose_windows_differ_each_hide_by_their_own():
    """A window per layer (NeoMME's short and long ones, the bridge's description of them):
    each layer's scores hide what its own window hides; ``window_fields`` says a list of windows
    so, and one size as transformers does (the sliding layers named)."""
    cfg = small(n_layers=3, **window_fields([2, None, 4]))
    assert cfg.sliding_window == (2, None, 4) and cfg.layer_types is None
    assert [cfg.window_of(layer) for layer in range(3)] == [2, None, 4]
    q, k = torch.randn(2, 6, 4), torch.randn(2, 6, 4)
    i, j = torch.meshgrid(torch.arange(6), torch.arange(6), indexing="ij")
    for layer, w in enumerate([2, None, 4]):
        hidden = (j > i) | (i - j >= w) if w is not None else j > i
        assert torch.equal(torch.isneginf(attention_scores(q, k, cfg, layer=layer)[0]), hidden)
    same = window_fields([3, None])
    assert same == {"sliding_window": 3, "layer_types": ("sliding_attention", "full_attention")}
    assert window_fields([None, None]) == {}
    for bad, said in (
        ({"sliding_window": (2, None)}, "names 2 layers' windows, the model has 3"),
        ({"sliding_window": (2, None, 0)}, "must be positive"),
        ({"sliding_window": (2, None, 4), "layer_types": ("sliding_attention",) * 3},
         "layer_types must then be unset"),
    ):  # fmt: skip
        with pytest.raises(ValueError, match=said):
            small(n_layers=3, **bad)


def test_the_soft_cap_bends_scores_and_keeps_hidden_keys_hidden():
    cfg = small(attn_softcap=2.0)
    s = torch.tensor([[0.5, float("-inf")], [9.0, -7.0]])
    w = attention_pattern(s, cfg)
    capped = 2.0 * torch.tanh(torch.tensor([9.0, -7.0]) / 2.0)
    assert w[0].tolist() == [1.0, 0.0]
    assert torch.allclose(w[1], torch.softmax(capped, -1))


def test_a_head_wider_than_d_model_over_heads():
    cfg = small(head_dim=6, qk_norm="head")
    model = randomised(cfg)
    assert model.blocks[0].attn.W_Q.shape == (8, 12) and model.blocks[0].attn.W_O.shape == (12, 8)
    with capture(model) as cache:
        model(torch.tensor([[1, 2, 3, 4]]))
    assert cache["blocks.0.attn.hook_rot_q"].shape == (1, 2, 4, 6)


def test_a_partial_rotation_leaves_the_rest_of_each_head():
    cfg = small(head_dim=8, rotary_dim=4)
    model = randomised(cfg)
    with capture(model) as cache:
        model(torch.tensor([[1, 2, 3, 4, 5]]))
    q, rot = cache["blocks.0.attn.hook_q"], cache["blocks.0.attn.hook_rot_q"]
    assert torch.equal(q[..., 4:], rot[..., 4:])
    assert not torch.allclose(q[..., 1:, :4], rot[..., 1:, :4])
    assert torch.equal(q[..., 0, :], rot[..., 0, :])  # position 0 turns by nothing


WIRINGS = {
    "llama": small(),
    "llama3-scaled": small(rope_scaling=SCALINGS["llama3"][1]),
    "yarn": small(rope_scaling=SCALINGS["yarn"][1]),
    "gemma": small(head_dim=6, qk_norm="head", out_norm=True, ln_offset=1.0, embed_scale=8**0.5,
                   attn_scale=0.3, attn_softcap=5.0, final_softcap=3.0, sliding_window=3,
                   layer_types=("sliding_attention", "full_attention"), rope_local_base=100.0,
                   activation="gelu_tanh"),
    "olmo2": small(norm="none", out_norm=True, qk_norm="proj"),
    "neox": small(parallel=True, rotary_dim=2, bias=True, norm_type="layer", gated=False,
                  activation="gelu"),
    "gpt2": small(positional="learned", norm_type="layer", gated=False, bias=True),
    "pairs": small(rope_style="pairs"),
}  # fmt: skip


@pytest.mark.parametrize("wiring", WIRINGS)
def test_the_cache_gives_the_whole_forward(wiring):
    model = randomised(WIRINGS[wiring])
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3]])
    with torch.no_grad():
        whole = model.logits(model(ids))
        cache = KVCache()
        parts = [model.logits(model(ids[:, :4], cache=cache))]
        for t in range(4, ids.shape[1]):
            parts.append(model.logits(model(ids[:, t : t + 1], cache=cache)))
    assert cache.length == ids.shape[1]
    assert (torch.cat(parts, dim=1) - whole).abs().max().item() < 1e-5


@pytest.mark.parametrize("wiring", WIRINGS)
def test_qkv_recomputed_for_one_layer_are_the_forwards(wiring):
    model = randomised(WIRINGS[wiring])
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    kept = capture_trace(model, ids)
    lazy = capture_trace(model, ids, keep_qkv_bytes=0)
    assert lazy.q is None and kept.q is not None
    for layer in range(model.cfg.n_layers):
        for a, b in zip(kept.qkv(layer), lazy.qkv(layer), strict=True):
            assert torch.equal(a, b)
        assert torch.equal(kept.pattern(layer), lazy.pattern(layer))
        # The weights recomputed from q and k are the forward's own.
        kept.release()
        assert (kept.pattern(layer) - lazy.forward_pattern[layer]).abs().max() < 1e-6


def test_half_precision_weighs_in_float32():
    cfg = small()
    model = randomised(cfg).to(torch.bfloat16)
    with capture(model, ["blocks.0.attn.hook_scores", "blocks.0.attn.hook_pattern"]) as cache:
        model(torch.tensor([[1, 2, 3, 4, 5]]))
    s, p = cache["blocks.0.attn.hook_scores"], cache["blocks.0.attn.hook_pattern"]
    assert s.dtype == torch.bfloat16 and p.dtype == torch.bfloat16
    want = torch.softmax(s.float(), dim=-1).to(torch.bfloat16)
    assert torch.equal(p, want)


def test_the_embedding_scale_and_the_offset_norm():
    cfg = small(embed_scale=math.sqrt(8), ln_offset=1.0)
    model = randomised(cfg)
    with capture(
        model, ["hook_embed", "ln_final.hook_normalized", "blocks.1.hook_resid_post"]
    ) as c:
        model(torch.tensor([[1, 2]]))
    assert torch.allclose(c["hook_embed"][0], model.W_E[[1, 2]] * math.sqrt(8))
    x = c["blocks.1.hook_resid_post"]
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.ln_eps) * (1 + model.ln_final.w)
    assert torch.allclose(c["ln_final.hook_normalized"], want, atol=1e-6)


@pytest.mark.parametrize("wiring", ["gemma", "neox", "llama3-scaled"])
def test_heads_computed_a_few_at_a_time_give_the_whole_forward(wiring, monkeypatch):
    """A long text's attention, computed a head at a time when no hook asks for the whole
    scores, is the same forward; a trace of it reads every head's weights the same."""
    import attnviz.capture.tensors as tensors_module
    import attnviz.engine.model as engine_model

    model = randomised(WIRINGS[wiring])
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]])
    with torch.no_grad():
        whole = model.logits(model(ids))
    kept = capture_trace(model, ids)
    monkeypatch.setattr(engine_model, "CHUNK_BYTES", 1)  # one head at a time
    monkeypatch.setattr(tensors_module, "CHUNK_BYTES", 1)
    monkeypatch.setattr(tensors_module, "KEEP_FORWARD_BYTES", 0)
    with torch.no_grad():
        chunked = model.logits(model(ids))
    assert torch.equal(chunked, whole)
    lazy = capture_trace(model, ids)
    assert lazy.forward_pattern is None
    chunks = list(lazy.head_chunks(0))
    assert [h for h, _ in chunks] == [[h] for h in range(model.cfg.n_heads)]
    assert torch.equal(torch.cat([p for _, p in chunks]), kept.pattern(0))
    kept.release()
    assert torch.allclose(entropy(lazy), entropy(kept))
    assert torch.equal(score_range(lazy), score_range(kept))


def test_a_hook_on_the_weights_makes_every_head_whole_until_it_is_removed(monkeypatch):
    """A hook point counts the hooks on it through their handles: while one watches the scores
    or weights, a layer makes them for every head at once (the hook sees them whole, even where
    the heads would be taken a few at a time); removed, twice or in a capture, none is left."""
    import attnviz.engine.model as engine_model

    model = randomised(WIRINGS["neox"])
    ids = torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])
    point = model.blocks[0].attn.hook_pattern
    monkeypatch.setattr(engine_model, "CHUNK_BYTES", 1)  # one head at a time, unwatched
    seen: list[tuple[int, ...]] = []
    first = point.register_forward_hook(lambda _m, _i, out: seen.append(tuple(out.shape)))
    second = point.register_forward_hook(lambda *_: None)
    assert point.watched and point.watchers == 2
    with torch.no_grad():
        model(ids)
    assert seen == [(1, model.cfg.n_heads, 8, 8)]  # once, every head
    first.remove()
    first.remove()  # a second removal changes nothing
    assert point.watched and point.watchers == 1
    with second:  # a handle is a context manager too
        pass
    assert not point.watched and point.watchers == 0
    with capture(model, [act_name("pattern", 0)]) as cache:
        assert point.watched
        with torch.no_grad():
            model(ids)
    assert not point.watched and cache[act_name("pattern", 0)].shape[1] == model.cfg.n_heads
