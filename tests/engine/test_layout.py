"""Where a run's tokens sit (engine/layout.py): multimodal rotary positions (M-RoPE) and
bidirectional spans in a causal model, against transformers' own pieces (the rotary embeddings
of Qwen2-VL and Qwen3-VL, the mask functions of masking_utils as Gemma 3 and PaliGemma compose
them); no layout keeps today's numbers bit for bit; a KV-cached step at explicit positions is
the uncached forward's last row; every capture path that recomputes attention (traces, the
rule, attributions, knock-outs, generation) gives the forward's own numbers with a layout.
Checked on the transformers checkpoints in tests/pretrained/test_native_layout.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from attnviz.capture import capture_trace, layer_qkv, qk_names
from attnviz.capture.attribution import qk_attribution
from attnviz.capture.decompose import clean_run
from attnviz.engine import Layout, Transformer, TransformerConfig, act_name, capture
from attnviz.engine.ablate import head_outputs
from attnviz.engine.generate import continue_ids, next_logits
from attnviz.engine.init import standard_weights
from attnviz.engine.layout import continued, mrope_cos_sin
from attnviz.engine.model import KVCache, hidden_keys
from attnviz.engine.positional import rope_frequencies
from attnviz.errors import TraceError

CPU = torch.device("cpu")
T = 14
SPANS = ((2, 8), (10, 12))  # two pictures' tokens


def grid_positions() -> torch.Tensor:
    """(3, 14) M-RoPE positions as Qwen2-VL's get_rope_index lays them: 2 text tokens, a
    1 x 2 x 3 grid of picture tokens (time 2, height 2 + row, width 2 + column), then text
    from the grid's largest index + 1, all three sections alike."""
    rows, cols = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
    grid = torch.stack([torch.full((6,), 2), 2 + rows.flatten(), 2 + cols.flatten()])  # (3, 6)
    text = torch.arange(6, 12)  # (6,) after the grid's largest position, 4
    return torch.cat([torch.arange(2).expand(3, 2), grid, text.expand(3, 6)], dim=1)  # (3, 14)


def make(interleaved: bool = False, **changes) -> Transformer:
    """A 2-layer causal decoder of every piece a layout meets: M-RoPE over heads of 8 (4
    frequency pairs: 1 / 1 / 2), per-head q/k norms, grouped-query attention, a sliding layer
    (window 3, shorter than the text) and a full one."""
    fields: dict = dict(
        d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, causal=True, positional="rope",
        rope_style="halves", rope_sections=(1, 1, 2), rope_interleaved=interleaved,
        norm="pre", norm_type="rms", ffn=True, d_ffn=48, gated=True, activation="silu",
        final_norm=True, vocab_size=40, unembed=True, qk_norm="head", sliding_window=3,
        layer_types=("sliding_attention", "full_attention"), n_ctx=64,
    )  # fmt: skip
    cfg = TransformerConfig(**{**fields, **changes})
    model = Transformer(cfg)
    weights = standard_weights(cfg, seed=3)
    # Non-trivial norms: their scales away from 1, so that frozen scales matter.
    weights = {k: v * (1 + 0.3 * torch.rand_like(v)) for k, v in weights.items()}
    model.load_state_dict(weights)
    return model.eval()


def ids() -> torch.Tensor:
    return torch.randint(0, 40, (1, T), generator=torch.Generator().manual_seed(1))


def patterns(model: Transformer, x: torch.Tensor, layout: Layout | None) -> list[torch.Tensor]:
    names = [act_name("pattern", i) for i in range(model.cfg.n_layers)]
    with torch.no_grad(), capture(model, names) as cache:
        model(x) if layout is None else model(x, layout=layout)
    return [cache[n][0] for n in names]


# --- no layout: today's numbers -------------------------------------------------------------


@pytest.mark.parametrize(
    "changes",
    [
        dict(rope_sections=None),
        dict(rope_sections=None, rope_style="pairs", qk_norm="none", n_kv_heads=None),
        dict(),
    ],
    ids=["halves", "pairs", "sections"],
)
def test_no_layout_and_the_plain_positions_are_todays_numbers_bit_for_bit(changes):
    model, x = make(**changes), ids()
    with torch.no_grad():
        plain = model(x)
        assert torch.equal(model(x, layout=Layout()), plain)
        assert torch.equal(model(x, layout=Layout(positions=torch.arange(T))), plain)
        if model.cfg.rope_sections is not None:  # every section at 0 .. T-1: text alone
            same = torch.arange(T).expand(3, T)
            assert torch.equal(model(x, layout=Layout(positions=same)), plain)
    assert all(
        torch.equal(a, b)
        for a, b in zip(patterns(model, x, None), patterns(model, x, Layout()), strict=True)
    )


def test_a_layout_changes_what_it_should():
    model, x = make(), ids()
    pos = grid_positions()
    plain = patterns(model, x, None)
    moved = patterns(model, x, Layout(positions=pos))
    spanned = patterns(model, x, Layout(spans=SPANS))
    assert (moved[1] - plain[1]).abs().max() > 1e-3
    assert (spanned[1] - plain[1]).abs().max() > 1e-3
    # A span's first token sees its last although it comes after (causal otherwise).
    assert spanned[1][:, 2, 7].min() > 0 and plain[1][:, 2, 7].max() == 0
    assert spanned[1][:, 8, 9].max() == 0  # outside the spans: causal
    with torch.no_grad():
        other = make(interleaved=True)(x, layout=Layout(positions=pos))
        assert (other - make()(x, layout=Layout(positions=pos))).abs().max() > 1e-4


# --- M-RoPE against transformers' rotary embeddings -----------------------------------------


@pytest.mark.parametrize("kind", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_multimodal_cos_and_sin_equal_transformers_rotary_embedding(kind):
    import transformers.models.qwen2_5_vl.modeling_qwen2_5_vl as q25
    import transformers.models.qwen2_vl.modeling_qwen2_vl as q2
    import transformers.models.qwen3_vl.modeling_qwen3_vl as q3
    from transformers import Qwen2_5_VLTextConfig, Qwen2VLTextConfig
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig

    config_class, rotary_class = {
        "qwen2_vl": (Qwen2VLTextConfig, q2.Qwen2VLRotaryEmbedding),
        "qwen2_5_vl": (Qwen2_5_VLTextConfig, q25.Qwen2_5_VLRotaryEmbedding),
        "qwen3_vl": (Qwen3VLTextConfig, q3.Qwen3VLTextRotaryEmbedding),
    }[kind]
    sections = (4, 6, 6)  # heads of 32: 16 pairs
    config = config_class(
        hidden_size=128, num_attention_heads=4, head_dim=32, vocab_size=10,
        rope_parameters={"rope_type": "default", "rope_theta": 5000.0,
                         "mrope_section": list(sections)},
    )  # fmt: skip
    rotary = rotary_class(config)
    pos = torch.randint(0, 300, (3, 1, 20), generator=torch.Generator().manual_seed(0))
    cos, sin = rotary(torch.zeros(1, dtype=torch.float32), pos)  # (1, 20, 32) each
    inv_freq, factor = rope_frequencies(32, 5000.0)
    ours = mrope_cos_sin(inv_freq, factor, pos[:, 0], sections, kind == "qwen3_vl", torch.float32)
    assert torch.equal(ours[0], cos[0]) and torch.equal(ours[1], sin[0])


# --- spans against transformers' mask functions ---------------------------------------------


def reference_visible(
    T: int, S: int, start: int, window: int | None, spans, inside: bool
) -> torch.Tensor:
    """(T, S) transformers' masks, evaluated by index: Gemma 3's sliding layers
    AND(window, OR(causal, blockwise)) (``inside``), PaliGemma 2's OR(AND(window, causal),
    blockwise); full layers OR(causal, blockwise). Block ids: one group per span, -1 else."""
    from transformers.masking_utils import (
        and_masks,
        blockwise_overlay,
        causal_mask_function,
        or_masks,
        sliding_window_overlay,
    )

    groups = torch.full((1, S), -1)
    for g, (a, b) in enumerate(spans):
        groups[0, a:b] = g
    block = blockwise_overlay(groups)
    if window is None:
        fn = or_masks(causal_mask_function, block)
    elif inside:
        fn = and_masks(or_masks(causal_mask_function, block), sliding_window_overlay(window))
    else:
        fn = or_masks(and_masks(sliding_window_overlay(window), causal_mask_function), block)
    q = torch.arange(start, start + T)[:, None]  # (T, 1)
    kv = torch.arange(S)[None, :]  # (1, S)
    return fn(torch.tensor(0), torch.tensor(0), q, kv).expand(T, S)


@pytest.mark.parametrize("window", [None, 3, 5])
@pytest.mark.parametrize("inside", [True, False])
@pytest.mark.parametrize("start", [0, 9])
def test_the_hidden_keys_are_transformers_blockwise_masks(window, inside, start):
    spans = ((0, 7), (9, 12))  # a block longer than every window, and a short one
    S = 14
    Tq = S - start
    hidden = hidden_keys(Tq, S, start, True, window, CPU, spans, inside)
    want = reference_visible(Tq, S, start, window, spans, inside)
    assert torch.equal(~hidden, want)
    if window == 3 and start == 0:  # the two compositions differ inside a long block
        other = hidden_keys(Tq, S, start, True, window, CPU, spans, not inside)
        assert not torch.equal(hidden, other)


def test_hidden_keys_keep_their_cache_with_spans():
    hidden_keys.cache_clear()
    a = hidden_keys(6, 6, 0, True, None, CPU, ((1, 3),))
    b = hidden_keys(6, 6, 0, True, None, CPU, Layout(spans=[(1, 3)]).spans)
    assert a is b and hidden_keys.cache_info().hits == 1
    assert hidden_keys(6, 6, 0, True, None, CPU) is not a


# --- what is refused --------------------------------------------------------------------------


def test_a_bad_layout_or_section_is_refused_by_name():
    with pytest.raises(ValueError, match="span"):
        Layout(spans=((3, 3),))
    with pytest.raises(ValueError, match="integers"):
        Layout(positions=torch.zeros(4))
    model, x = make(), ids()
    with pytest.raises(ValueError, match="cover 5 tokens"):
        model(x, layout=Layout(positions=torch.arange(5)))
    with pytest.raises(ValueError, match="sections"):
        model(x, layout=Layout(positions=torch.arange(T).expand(2, T)))
    with pytest.raises(ValueError, match="rope_sections"):
        replace(model.cfg, rope_sections=(1, 1, 1))  # 3 pairs; the heads turn 4
    with pytest.raises(ValueError, match="rope_sections"):
        replace(model.cfg, rope_style="pairs")
    with pytest.raises(ValueError, match="window"):
        continue_ids(model, x[0].tolist(), 2, window=4, layout=Layout(spans=SPANS))
    no_rope = Transformer(TransformerConfig(d_model=8, causal=True, vocab_size=5))
    with pytest.raises(ValueError, match="rotary"):
        no_rope(torch.zeros(1, 3, dtype=torch.long), layout=Layout(positions=torch.arange(3)))


# --- generation: a cached step at explicit positions ---------------------------------------


def test_a_cached_step_at_explicit_positions_is_the_uncached_last_row():
    model, x = make(), ids()
    pos = grid_positions()
    with torch.no_grad():
        whole = model(x, layout=Layout(positions=pos, spans=SPANS))  # (1, T, C)
        cache = KVCache()
        model(x[:, :-2], cache=cache, layout=Layout(positions=pos[:, :-2], spans=SPANS))
        step = model(x[:, -2:-1], cache=cache, layout=Layout(positions=pos[:, -2:-1], spans=SPANS))
        last = model(x[:, -1:], cache=cache, layout=Layout(positions=pos[:, -1:], spans=SPANS))
    assert (step[0, 0] - whole[0, -2]).abs().max() < 1e-5
    assert (last[0, 0] - whole[0, -1]).abs().max() < 1e-5


def test_written_tokens_continue_after_the_prompts_positions():
    pos = grid_positions()[:, :10]  # a prompt of 10 whose largest position is 7
    later = continued(Layout(positions=pos, spans=SPANS), 10, 8, 4)
    assert later is not None and later.spans == SPANS and later.positions is not None
    assert torch.equal(later.positions, torch.tensor([[6, 7, 8, 9]] * 3))
    model, x = make(), ids()
    prompt = x[0, :10].tolist()
    with pytest.raises(ValueError, match="past the prompt"):
        next_logits(model, prompt, 1, layout=Layout(positions=pos, spans=SPANS))
    layout = Layout(positions=pos, spans=SPANS[:1])  # the picture in the prompt
    cached = next_logits(model, prompt, 4, layout=layout)
    uncached = next_logits(model, prompt, 4, layout=layout, use_cache=False)
    assert cached[0] == uncached[0]
    assert (cached[1] - uncached[1]).abs().max() < 1e-5
    written = continue_ids(model, prompt, 4, layout=layout)
    assert written == cached[0]
    # The last step's logits are those of a forward of the whole text at the continued layout.
    seq = prompt + cached[0][:3]
    full = continued(layout, 10, 0, len(seq))
    with torch.no_grad():
        out = model.logits(model(torch.tensor([seq]), layout=full))[0, -1]
    assert (out - cached[1][-1]).abs().max() < 1e-5


# --- every capture path with a layout --------------------------------------------------------


@pytest.mark.parametrize("keep", [-1, 0], ids=["kept", "recomputed"])
def test_a_trace_with_a_layout_recomputes_the_forwards_weights(keep):
    model, x = make(), ids()
    layout = Layout(positions=grid_positions(), spans=SPANS)
    names = []
    for i in range(2):
        names += [act_name("pattern", i), act_name("scores", i), *qk_names(model.cfg, i)]
    with torch.no_grad(), capture(model, names) as hooks:
        model(x, layout=layout)
    tensors = capture_trace(model, x, keep_qkv_bytes=keep, layout=layout)
    tensors.release()  # the weights from q and k from now on, not the forward's
    for i in range(2):
        q, k, _ = tensors.qkv(i)
        assert torch.equal(q, hooks[qk_names(model.cfg, i)[0]][0])
        assert torch.equal(k, hooks[qk_names(model.cfg, i)[1]][0])
        assert torch.equal(tensors.scores(i), hooks[act_name("scores", i)][0])
        assert (tensors.pattern(i) - hooks[act_name("pattern", i)][0]).abs().max() < 1e-6
        rq, rk, _ = layer_qkv(model, i, tensors.states[i], layout)
        assert torch.equal(rq, q) and torch.equal(rk, k)


def test_attributions_with_a_layout_sum_to_the_forwards_scores():
    model, x = make(), ids()
    layout = Layout(positions=grid_positions(), spans=SPANS)
    with torch.no_grad(), capture(model, [act_name("scores", 1)]) as hooks:
        model(x, layout=layout)
    scores = hooks[act_name("scores", 1)][0]  # (nh, T, T)
    run = clean_run(model, x, layout)
    a = qk_attribution(run, 1, 2, 3, 6)  # a picture token and one after it, in its span
    assert abs(float(a.matrix.sum()) - float(scores[2, 3, 6])) < 1e-4
    assert abs(a.score - float(scores[2, 3, 6])) < 1e-4
    assert a.keys == [k for k in range(T) if torch.isfinite(scores[2, 3, k])]
    with pytest.raises(TraceError, match="does not see"):
        qk_attribution(run, 1, 2, 8, 9)  # after the query, outside every span
    with pytest.raises(TraceError, match="does not see"):
        qk_attribution(clean_run(model, x), 1, 2, 3, 6)  # no layout: causal


def test_knockout_sources_read_the_forward_with_its_layout():
    model, x = make(), ids()
    layout = Layout(positions=grid_positions(), spans=SPANS)
    with torch.no_grad(), capture(model, [act_name("z", 1)]) as hooks:
        model(x, layout=layout)
    got = head_outputs(model, x, [1], layout)
    assert torch.equal(got[1], hooks[act_name("z", 1)][0])
    assert not torch.equal(head_outputs(model, x, [1])[1], got[1])
