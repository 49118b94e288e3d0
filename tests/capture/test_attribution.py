"""Exact attributions (capture/attribution.py) against the engine's own trace: on a tiny random
checkpoint of every native family, at a text longer than any sliding window of theirs (8),
each QK matrix sums to the trace's score within 1e-4 (and every visible key's split to its
score), ``top`` keeps the sum, zeroing one query-side component in a forward with the same
frozen scales changes the score by exactly that component's row, and the direct logit
attributions sum to the logit (and to a difference of two); engine configurations no family
reads yet (post-norm with sinusoidal positions, no residual, LayerNorm out_norm, parallel
blocks) likewise."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

from attnviz.capture import capture_trace, qk_names
from attnviz.capture.attribution import logit_attribution, qk_attribution
from attnviz.capture.decompose import Component, clean_run
from attnviz.engine import Transformer, TransformerConfig, act_name, capture, hook_points
from attnviz.engine.ablate import HeadAblation
from attnviz.engine.model import LayerNorm, hidden_keys
from attnviz.errors import TraceError
from attnviz.pretrained.registry import ModelRegistry, load_model
from attnviz.schemas.trace import TextTraceRequest
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import SENTENCES, make_tiny_encoder, make_tiny_gpt2, make_tiny_llama
from tests.support.checkpoints_decoders import make_decoder
from tests.support.checkpoints_gemma import make_tiny_gemma, make_tiny_neox

TOL = 1e-4
CPU = torch.device("cpu")
TEXT = " ".join(SENTENCES[:3])  # 40+ tokens: past every window (8) and scaled context (16, 32)

MAKERS = {
    "gpt2": lambda f: make_tiny_gpt2(f, seed=3),
    "llama-gqa": lambda f: make_tiny_llama(f, "llama-gqa"),
    "qwen2": lambda f: make_tiny_llama(f, "qwen2"),
    **{s: (lambda f, s=s: make_decoder(f, s)) for s in (
        "llama3", "llama-dynamic", "llama-yarn", "llama-longrope", "llama-bias",
        "qwen2-window", "qwen3", "mistral", "olmo2", "phi3")},
    **{s: (lambda f, s=s: make_tiny_gemma(f, s)) for s in ("gemma", "gemma2", "gemma3")},
    **{s: (lambda f, s=s: make_tiny_neox(f, s)) for s in ("pythia", "neox-sequential",
                                                          "neox-dynamic")},
    "roberta": lambda f: make_tiny_encoder(f, "roberta"),
    "distilbert": lambda f: make_tiny_encoder(f, "distilbert"),
    "bert": None,  # the built-in MiniLM
}  # fmt: skip
# Pre-norm, no out_norm: a head's part of the stream is z @ W_O, which the test computes alone.
LINEAR = ("gpt2", "llama-gqa", "qwen3", "llama-bias", "pythia", "phi3")


ENCODERS = ("roberta", "distilbert", "bert")  # a query sees every key


def _family(style: str, tmp_path_factory, minilm_dir):
    """(style, model, the trace of TEXT, its clean run, its token ids)."""
    maker = MAKERS[style]
    folder = minilm_dir if maker is None else maker(tmp_path_factory.mktemp(style))
    m = load_model(Path(folder), CPU)
    assert m.backend == "native"
    text = TEXT if m.cfg.n_ctx > 48 else " ".join(SENTENCES[:2])  # llama-dynamic reads 32
    trace = run_text_trace(TextTraceRequest(model=m.name, text=text), ModelRegistry([m]), None)
    ids = trace.meta["token_ids"]
    assert len(ids) > 16 and len(ids) > 2 * (m.cfg.sliding_window or 0)
    return style, m.model, trace.tensors, clean_run(m.model, torch.tensor([ids])), ids


@pytest.fixture(scope="module", params=list(MAKERS))
def family(request, tmp_path_factory, minilm_dir):
    return _family(request.param, tmp_path_factory, minilm_dir)


@pytest.fixture(scope="module", params=[s for s in MAKERS if s not in ENCODERS])
def causal_family(request, tmp_path_factory, minilm_dir):
    """``family``, of the causal models (a query that cannot see every key)."""
    return _family(request.param, tmp_path_factory, minilm_dir)


@pytest.fixture(scope="module", params=LINEAR)
def linear_family(request, tmp_path_factory, minilm_dir):
    """``family``, of the pre-norm blocks without out_norm (``LINEAR``)."""
    return _family(request.param, tmp_path_factory, minilm_dir)


def _pairs(cfg: TransformerConfig, layer: int, T: int) -> list[tuple[int, int]]:
    """(query, key) pairs the layer's query sees: near, the farthest visible, a middle one."""
    hidden = hidden_keys(T, T, 0, cfg.causal, cfg.window_of(layer), CPU)
    out = [(T - 1, T - 4)]
    out.append((T - 1, int((~hidden[T - 1]).nonzero()[0])))
    out.append((T // 2, T - 1 if not cfg.causal else T // 2))
    return out


def test_the_qk_matrix_sums_to_the_trace_score(family):
    style, model, tensors, run, _ = family
    cfg, T = model.cfg, tensors.n
    worst = 0.0
    for layer in range(cfg.n_layers):
        scores = tensors.scores(layer)  # (nh, T, T) the trace's, before any soft-cap
        for head in sorted({0, cfg.n_heads - 1}):
            for query, key in _pairs(cfg, layer, T):
                a = qk_attribution(run, layer, head, query, key)
                want = float(scores[head, query, key])
                assert math.isfinite(want)
                worst = max(worst, abs(a.score - want), abs(float(a.matrix.sum()) - want))
                # The key view: every key the query sees, split both ways, sums to its score.
                seen = scores[head, query, a.keys].double()
                assert torch.isfinite(seen).all() and len(a.keys) == int(
                    torch.isfinite(scores[head, query]).sum()
                )
                for split in (a.by_key, a.by_query):
                    assert (split.sum(1) - seen).abs().max() < TOL
                assert (a.key_scores - seen).abs().max() < TOL
    assert worst < TOL, (style, worst)
    names = [c.name for c in a.components]
    earlier = cfg.n_layers - 1  # the last layer reads every earlier layer's heads and MLP
    assert names[0] == "embed" and f"L{earlier - 1}.H0" in names
    assert f"L{earlier}.H0" not in names and ("mlp" in names[-2] or "mlp" in names[-1])
    if cfg.positional in ("learned", "sinusoidal"):
        assert "pos" in names
    assert ("type" in names) == bool(cfg.type_vocab_size)


def test_top_keeps_the_sum_and_folds_the_rest(family):
    _, model, tensors, run, _ = family
    layer, T = model.cfg.n_layers - 1, tensors.n
    full = qk_attribution(run, layer, 0, T - 1, T - 2)
    a = qk_attribution(run, layer, 0, T - 1, T - 2, top=3)
    assert [c.name for c in a.components][-1] == "rest" and len(a.components) == 4
    assert a.matrix.shape == (4, 4) and abs(a.score - full.score) < 1e-9
    importance = full.matrix.abs().sum(0) + full.matrix.abs().sum(1)
    kept = {full.components[i].name for i in importance.topk(3).indices.tolist()}
    assert {c.name for c in a.components[:-1]} == kept
    for split, whole in ((a.by_key, full.by_key), (a.by_query, full.by_query)):
        assert split.shape == (len(full.keys), 4)
        assert (split.sum(1) - whole.sum(1)).abs().max() < 1e-9
    many = qk_attribution(run, layer, 0, T - 1, T - 2, top=10_000)
    assert [c.name for c in many.components] == [c.name for c in full.components]
    with pytest.raises(TraceError, match="top"):
        qk_attribution(run, layer, 0, T - 1, T - 2, top=0)


def test_a_hidden_key_is_refused(causal_family):
    _, model, tensors, run, _ = causal_family
    assert model.cfg.causal
    T = tensors.n
    with pytest.raises(TraceError, match="does not see key"):
        qk_attribution(run, 0, 0, 3, T - 1)


def _frozen(norm, clean: torch.Tensor):
    """``norm`` as an affine map with its scale frozen at ``clean``'s (the input of the clean
    run), written here from the norm's definition."""
    c = clean.double()
    s = torch.rsqrt((c.pow(2).mean(-1) if norm.rms else c.var(-1, unbiased=False)) + norm.eps)
    w = None if norm.w is None else (norm.offset + norm.w.double() if norm.offset
                                     else norm.w.double())  # fmt: skip

    def apply(x: torch.Tensor) -> torch.Tensor:
        x = x.double()
        y = (x if norm.rms else x - x.mean(-1, keepdim=True)) * s[..., None]
        y = y if w is None else y * w
        y = (y if norm.b is None else y + norm.b.double()).to(clean.dtype)
        return norm.hook_normalized(y)

    return apply


def test_zeroing_a_query_component_changes_the_score_by_its_row(linear_family, monkeypatch):
    """Linearity, against a forward of the engine's own projections and rotation: the layer's
    input with one component taken away, every norm frozen at the clean run's scale."""
    style, model, tensors, run, _ = linear_family
    cfg, T = model.cfg, tensors.n
    layer, head, query, key = cfg.n_layers - 1, 1, T - 1, T - 3
    block = model.blocks[layer]
    a = qk_attribution(run, layer, head, query, key)
    names = [c.name for c in a.components]
    x = tensors.states[layer]  # (T, C) the clean input of the layer
    k = tensors.qkv(layer)[1][head, key]  # (hs,) the clean key
    scale = cfg.attn_scale or (1 / math.sqrt(cfg.d_head))
    heads = [i for i, c in enumerate(a.components) if c.kind == "head"]
    pick = max(heads, key=lambda i: abs(float(a.matrix[i].sum())))
    src = a.components[pick]
    assert src.layer is not None and src.head is not None
    z = tensors.pattern(src.layer)[src.head] @ tensors.qkv(src.layer)[2][src.head]  # (T, hs)
    w_o = model.blocks[src.layer].attn.W_O.view(cfg.n_heads, cfg.d_head, -1)[src.head]
    for index, part in ((pick, z @ w_o), (names.index("embed"), tensors.embeddings)):
        ln1 = _frozen(block.ln1, x)
        if cfg.qk_norm != "none":
            seen: list[torch.Tensor] = []

            def keep(_m, inp, _out, seen=seen):
                seen.append(inp[0])

            hook = block.attn.q_norm.register_forward_hook(keep)
            with torch.inference_mode():
                block.attn.project(block.ln1(x[None]))
            hook.remove()
            monkeypatch.setattr(block.attn.q_norm, "forward", _frozen(block.attn.q_norm,
                                                                      seen[0]))  # fmt: skip
        with torch.inference_mode():
            q = block.attn.project(ln1(x - part)[None])[0][0, head, query]  # (hs,)
        monkeypatch.undo()
        changed = float(q.double() @ k.double()) * scale
        want = a.score - float(a.matrix[index].sum())
        assert abs(changed - want) < TOL, (style, names[index], changed, want)
        assert abs(float(a.matrix[index].sum())) > 1e-3  # the test moves the score


def _frozen_forward(model, ids: list[int], layer: int, drop: Component) -> torch.Tensor:
    """(nh, T, hs) the queries of ``layer`` as the scores meet them, in a forward of the engine
    whose every norm is frozen at the clean run's scale (``_frozen``), every head's output and
    MLP's output patched to the clean run's (the attributions' components are these), and
    ``drop`` taken away where it enters the stream. Read through hooks set here, apart from
    the decomposition's."""
    cfg, x = model.cfg, torch.tensor([ids])
    norms = {n: m for n, m in model.named_modules() if isinstance(m, LayerNorm)}
    inputs: dict[str, torch.Tensor] = {}
    handles = [m.register_forward_hook(lambda m, i, o, n=n: inputs.__setitem__(n, i[0]))
               for n, m in norms.items()]  # fmt: skip
    outs = [act_name("z", i) for i in range(cfg.n_layers)]
    outs += [act_name("mlp_out", i) for i in range(cfg.n_layers)] if cfg.ffn else []
    with torch.inference_mode(), capture(model, outs) as clean:
        model(x)
    for h in handles:
        h.remove()
    zero = {"embed": "embed", "pos": "pos_embed", "type": "type_embed"}
    dropped = act_name(zero[drop.kind]) if drop.kind in zero else None
    if drop.kind == "mlp":
        dropped = act_name("mlp_out", drop.layer)

    def patch(name: str, head: int | None = None):
        def hook(_m, _i, out):
            if name in clean:
                out = clean[name].clone()
            if name == dropped:
                return torch.zeros_like(out)
            if head is not None:
                out[:, head] = 0
            return out

        return hook

    points = hook_points(model)
    handles = [points[n].register_forward_hook(patch(n)) for n in outs]
    for kind, name in zero.items():
        if kind == drop.kind:
            handles.append(points[act_name(name)].register_forward_hook(patch(act_name(name))))
    if drop.kind == "head":
        name = act_name("z", drop.layer)
        handles[drop.layer].remove()  # that layer's z, with the head zeroed
        handles.append(points[name].register_forward_hook(patch(name, drop.head)))
    saved = {n: m.forward for n, m in norms.items()}
    for n, m in norms.items():
        m.forward = _frozen(m, inputs[n])  # the instance's own forward, put back below
    try:
        want = qk_names(cfg, layer)[0]
        with torch.inference_mode(), capture(model, [want]) as got:
            model(x)
    finally:
        for n, m in norms.items():
            m.forward = saved[n]
        for h in handles:
            h.remove()
    return got[want][0]


def test_a_frozen_forward_without_one_component_moves_the_score_by_its_row(family):
    """Linearity on every family: the token vectors, the positions, the token type, the
    strongest earlier head and the last earlier MLP, each taken away in a forward with every
    norm frozen (and every head's and MLP's output the clean run's), change the query's score
    of the clean key by exactly that component's row."""
    style, model, tensors, run, ids = family
    cfg, T = model.cfg, tensors.n
    layer, head, query, key = cfg.n_layers - 1, cfg.n_heads - 1, T - 1, T - 3
    a = qk_attribution(run, layer, head, query, key)
    k = tensors.qkv(layer)[1][head, key].double()  # (hs,) the clean key
    scale = cfg.attn_scale or (1 / math.sqrt(cfg.d_head) if cfg.scale else 1.0)
    heads = [c for c in a.components if c.kind == "head"]
    rows = {c.name: float(a.matrix[i].sum()) for i, c in enumerate(a.components)}
    strongest = max(heads, key=lambda c: abs(rows[c.name]))
    picks = [c for c in a.components if c.kind in ("embed", "pos", "type")] + [strongest]
    picks += [c for c in a.components if c.name == f"L{layer - 1}.mlp"]
    assert len(picks) >= 3 and max(abs(rows[c.name]) for c in picks) > 1e-3  # they matter
    for drop in picks:
        q = _frozen_forward(model, ids, layer, drop)[head, query].double()
        changed = float(q @ k) * scale
        want = a.score - rows[drop.name]
        assert abs(changed - want) < TOL, (style, drop.name, changed, want)


def test_logit_attribution_sums_to_the_logit(family):
    style, model, tensors, run, _ = family
    cfg, T = model.cfg, tensors.n
    if not cfg.unembed:
        with pytest.raises(TraceError, match="unembedding"):
            logit_attribution(run, 0)
        return
    logits = (tensors.states[-1] @ model.W_U).double()  # (T, V) the trace's, before any cap
    for position in (0, T // 2, T - 1):
        d = logit_attribution(run, position)
        assert d.token == int(logits[position].argmax()) and d.versus is None
        assert abs(d.logit - float(logits[position, d.token])) < TOL, style
        assert abs(float(d.values.sum()) - d.logit) < 1e-9
        other = int(logits[position].argsort()[-2])
        v = logit_attribution(run, position, d.token, versus=other)
        want = float(logits[position, d.token] - logits[position, other])
        assert v.versus == other and abs(v.logit - want) < TOL
    names = [c.name for c in d.components]
    assert f"L{cfg.n_layers - 1}.H{cfg.n_heads - 1}" in names
    assert f"L{cfg.n_layers - 1}.mlp" in names
    assert len(set(names)) == len(names)


ENGINE_CONFIGS = {
    # BERT-like but sinusoidal and causal: every norm after its sublayer, an embedding norm.
    "post-sinusoidal": dict(norm="post", positional="sinusoidal", embed_norm=True,
                            type_vocab_size=2),
    # No residual: each sublayer's output replaces the stream.
    "no-residual": dict(norm="pre", residual=False, positional="learned"),
    # LayerNorms (centring, with shifts) on each sublayer's output, and a final norm.
    "out-norm-layer": dict(norm="pre", out_norm=True, positional="rope", rope_style="halves",
                           qk_norm="proj"),
    "parallel-out-norm": dict(norm="pre", parallel=True, out_norm=True, positional="rope",
                              rope_style="halves", rotary_dim=4, qk_norm="head",
                              attn_softcap=3.0, final_softcap=5.0, ln_offset=1.0),
    "pairs-rope-window": dict(norm="pre", positional="rope", rope_style="pairs",
                              sliding_window=5, n_kv_heads=1, attn_scale=0.3),
}  # fmt: skip


@pytest.mark.parametrize("name", list(ENGINE_CONFIGS))
def test_engine_configurations_sum_too(name):
    kw = {"residual": True, **ENGINE_CONFIGS[name]}
    cfg = TransformerConfig(d_model=16, n_layers=3, n_heads=2, causal=True, ln_affine=True,
                            ffn=True, bias=True, vocab_size=50, unembed=True, final_norm=True,
                            n_ctx=64, **kw)  # fmt: skip
    model = Transformer(cfg).eval()
    g = torch.Generator().manual_seed(7)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            base = 1.0 if pname.endswith(".w") or pname == "ln_final.w" else 0.0
            p.copy_(base + 0.4 * torch.randn(p.shape, generator=g))
    ids = torch.randint(0, 50, (1, 30), generator=g)
    tensors = capture_trace(model, ids)
    run = clean_run(model, ids)
    T = 30
    for layer in range(cfg.n_layers):
        scores = tensors.scores(layer)
        for query, key in _pairs(cfg, layer, T):
            a = qk_attribution(run, layer, 1, query, key)
            assert abs(a.score - float(scores[1, query, key])) < TOL, (name, layer)
    logits = (tensors.states[-1] @ model.W_U).double()
    d = logit_attribution(run, T - 1, 3, versus=4)
    assert abs(d.logit - float(logits[T - 1, 3] - logits[T - 1, 4])) < TOL, name


def test_the_clean_run_of_the_trace_asked_last_is_kept_alone():
    """A trace runs its clean run once for any number of attributions; another trace's replaces
    it (one at a time, outside the trace cache's count); a knocked-out trace refuses."""
    cfg = TransformerConfig(d_model=8, n_layers=1, n_heads=2, causal=True, vocab_size=20,
                            unembed=True)  # fmt: skip
    model = Transformer(cfg).eval()
    ids = torch.tensor([[1, 2, 3, 4]])
    runs: list[object] = []

    def counted():
        runs.append(clean_run(model, ids))
        return runs[-1]

    a, b = capture_trace(model, ids), capture_trace(model, ids)
    a.attribution = b.attribution = counted
    assert a.clean_run() is a.clean_run() and len(runs) == 1
    assert b.clean_run() is runs[1] and a.clean_run() is runs[2] and len(runs) == 3
    with pytest.raises(TraceError, match="no clean run"):
        capture_trace(model, ids).clean_run()
    a.ablations = [HeadAblation(0, 1, "zero")]
    with pytest.raises(TraceError, match="knocks heads out"):
        a.clean_run()


def test_the_served_trace_records_the_same_clean_run(family):
    """The served trace's clean run, recorded during its own forward, gives the attributions of
    a fresh clean run (tests/api/test_attribution_api.py: past RECORD_BYTES, by a forward of
    its own)."""
    style, model, tensors, run, _ = family
    assert tensors.attribution_bytes > 0  # a short text: recorded on the trace's way
    layer, T = model.cfg.n_layers - 1, tensors.n
    want = qk_attribution(run, layer, 0, T - 1, T - 2).matrix
    got = qk_attribution(tensors.clean_run(), layer, 0, T - 1, T - 2).matrix
    assert (got - want).abs().max() < 1e-6, style
    if model.cfg.unembed:
        d, e = logit_attribution(run, T - 1), logit_attribution(tensors.clean_run(), T - 1)
        assert d.token == e.token and (d.values - e.values).abs().max() < 1e-6
