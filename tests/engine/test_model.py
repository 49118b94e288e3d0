"""The engine against the plain-Python reference, and the properties the article states."""

import itertools
import math

import pytest
import torch

from attnviz.engine import capture, hook_points
from attnviz.engine.model import hidden_keys
from tests.support import reference
from tests.support.models import make_model

D = 4
X = torch.tensor(
    [[0.3, -1.2, 0.5, 0.8], [1.0, 0.4, -0.7, 0.1], [-0.5, 0.9, 0.2, -1.1], [0.6, 0.6, 1.3, -0.2],
     [-0.9, -0.3, 0.4, 0.7]],
    dtype=torch.float64,
)  # fmt: skip


def run(x: torch.Tensor, **kw):
    model = make_model(d_model=x.shape[-1], **kw)
    with torch.inference_mode(), capture(model) as cache:
        out = model(x[None])[0]
    return model, out, cache


def as_lists(model) -> dict:
    return {k: v.tolist() for k, v in model.state_dict().items()}


MODES = [
    dict(projections=p, n_heads=h, norm=norm, residual=res, ffn=ffn, causal=causal, positional=pos)
    for p, h, norm, res, ffn, causal, pos in [
        ("identity", 1, "none", False, False, False, "none"),
        ("random", 1, "none", False, False, False, "none"),
        ("random", 2, "none", False, False, False, "none"),
        ("random", 4, "none", True, False, False, "none"),
        ("random", 2, "pre", True, False, False, "none"),
        ("random", 2, "post", True, False, False, "none"),
        ("random", 2, "pre", False, True, False, "none"),
        ("random", 2, "post", True, True, False, "none"),
        ("random", 2, "pre", True, True, True, "none"),
        ("identity", 1, "none", False, False, True, "none"),
        ("random", 2, "none", True, False, False, "sinusoidal"),
        ("random", 2, "none", True, False, False, "learned"),
        ("random", 2, "pre", True, True, True, "rope"),
        ("identity", 1, "none", False, False, False, "rope"),
    ]
]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: "-".join(str(v) for v in m.values()))
@pytest.mark.parametrize("scale", [True, False])
def test_engine_matches_reference(mode, scale):
    mode = dict(mode)
    projections = mode.pop("projections")
    heads = mode.pop("n_heads")
    model, out, cache = run(
        X, projections=projections, n_layers=2, n_heads=heads, scale=scale, seed=7, **mode
    )
    ref = reference.forward(X.tolist(), as_lists(model), layers=2, heads=heads, scale=scale, **mode)
    hidden = [cache["blocks.0.hook_resid_pre"][0]] + [
        cache[f"blocks.{i}.hook_resid_post"][0] for i in range(2)
    ]
    for got, want in zip(hidden, ref["hidden"], strict=True):
        assert torch.allclose(got, torch.tensor(want, dtype=torch.float64), atol=1e-12)
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0]
        scores = cache[f"blocks.{layer}.attn.hook_scores"][0]
        assert torch.allclose(
            pattern, torch.tensor(ref["pattern"][layer], dtype=torch.float64), atol=1e-12
        )
        assert torch.equal(torch.isinf(scores), torch.isinf(torch.tensor(ref["scores"][layer])))
        finite = torch.isfinite(scores)
        want = torch.tensor(ref["scores"][layer], dtype=torch.float64)
        assert torch.allclose(scores[finite], want[finite], atol=1e-12)
    assert torch.equal(out, hidden[-1])


def test_custom_projections_hand_computed():
    """One head, W_Q = 2I, W_K = I, W_V = swap of the two axes, W_O = I: scores = 2 x x^T / sqrt 2."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    custom = {"q": [[2, 0], [0, 2]], "k": [[1, 0], [0, 1]], "v": [[0, 1], [1, 0]], "o": None}
    _, out, cache = run(x, projections="custom", custom=custom)
    scores = cache["blocks.0.attn.hook_scores"][0, 0]
    assert torch.allclose(scores, 2 * x @ x.T / math.sqrt(2), atol=1e-15)
    weights = torch.softmax(2 * x @ x.T / math.sqrt(2), dim=-1)
    assert torch.allclose(out, weights @ x.flip(1), atol=1e-15)


def test_heads_are_independent_column_slices():
    """Two identity heads = raw attention run separately on columns [0, 2) and [2, 4)."""
    _, out, cache = run(X, n_heads=2)
    for h, cols in enumerate((slice(0, 2), slice(2, 4))):
        xs = X[:, cols]
        w = torch.softmax(xs @ xs.T / math.sqrt(2), dim=-1)
        assert torch.allclose(cache["blocks.0.attn.hook_pattern"][0, h], w, atol=1e-15)
        assert torch.allclose(out[:, cols], w @ xs, atol=1e-15)


def test_scale_divides_logits_by_sqrt_head_dim():
    _, _, on = run(X, n_heads=2)
    _, _, off = run(X, n_heads=2, scale=False)
    s_on, s_off = on["blocks.0.attn.hook_scores"], off["blocks.0.attn.hook_scores"]
    assert torch.allclose(s_off, s_on * math.sqrt(2), atol=1e-14)


def test_residual_and_post_norm_closed_form():
    _, out, _ = run(X, residual=True, norm="post")
    a = torch.softmax(X @ X.T / 2, dim=-1) @ X
    h = X + a
    want = (h - h.mean(-1, keepdim=True)) / torch.sqrt(
        h.var(-1, unbiased=False, keepdim=True) + 1e-5
    )
    assert torch.allclose(out, want, atol=1e-14)
    assert torch.allclose(out.mean(-1), torch.zeros(5, dtype=torch.float64), atol=1e-14)


def test_pre_norm_keeps_the_raw_residual_stream():
    _, out, cache = run(X, residual=True, norm="pre")
    xn = cache["blocks.0.ln1.hook_normalized"][0]
    assert torch.allclose(out, X + torch.softmax(xn @ xn.T / 2, dim=-1) @ xn, atol=1e-14)


def permutations(n: int, k: int = 6):
    return itertools.islice(itertools.permutations(range(n)), 1, 1 + k)


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {
            "projections": "random",
            "n_heads": 2,
            "ffn": True,
            "norm": "pre",
            "residual": True,
            "n_layers": 3,
        },
        {"projections": "random", "norm": "post", "residual": True},
    ],
)
def test_permutation_equivariance_without_positions(kw):
    _, out, cache = run(X, **kw)
    for perm in permutations(5):
        p = torch.tensor(perm)
        _, out_p, cache_p = run(X[p], **kw)
        assert torch.allclose(out_p, out[p], atol=1e-12)
        pat, pat_p = (
            cache["blocks.0.attn.hook_pattern"][0],
            cache_p["blocks.0.attn.hook_pattern"][0],
        )
        assert torch.allclose(pat_p, pat[:, p][:, :, p], atol=1e-12)


@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rope"])
def test_positions_break_permutation_equivariance(positional):
    _, out, _ = run(X, positional=positional, projections="random")
    p = torch.tensor([4, 3, 2, 1, 0])
    _, out_p, _ = run(X[p], positional=positional, projections="random")
    assert not torch.allclose(out_p, out[p], atol=1e-3)


def test_identical_tokens_get_identical_outputs_only_without_positions():
    x = torch.tensor(
        [[1.0, 0.0, 0.5, 0.2], [0.0, 1.0, 0.1, 0.3], [1.0, 0.0, 0.5, 0.2]], dtype=torch.float64
    )
    _, out, _ = run(x)
    assert torch.equal(out[0], out[2])
    _, out, _ = run(x, positional="sinusoidal")
    assert (out[0] - out[2]).norm() > 0.05


def test_causal_mask_hides_the_future():
    model, out, cache = run(
        X, causal=True, projections="random", n_heads=2, n_layers=2, ffn=True, residual=True
    )
    for layer in range(2):
        pattern = cache[f"blocks.{layer}.attn.hook_pattern"][0]
        scores = cache[f"blocks.{layer}.attn.hook_scores"][0]
        future = torch.ones(5, 5, dtype=torch.bool).triu(1)
        assert (pattern[:, future] == 0).all()
        assert torch.isneginf(scores[:, future]).all() and torch.isfinite(scores[:, ~future]).all()
        assert (pattern[:, 0, 0] == 1).all()
        assert torch.allclose(pattern.sum(-1), torch.ones(2, 5, dtype=torch.float64), atol=1e-15)
    # Editing the last token changes no earlier output.
    x2 = X.clone()
    x2[4] = torch.tensor([5.0, -5.0, 5.0, -5.0])
    with torch.inference_mode():
        out2 = model(x2[None])[0]
    assert torch.equal(out2[:4], out[:4])
    assert not torch.allclose(out2[4], out[4])


def test_hook_names_are_pinned():
    model = make_model(
        d_model=4, n_layers=1, n_heads=2, norm="pre", residual=True, ffn=True, positional="rope"
    )
    assert list(hook_points(model)) == [
        "hook_embed",
        "blocks.0.hook_resid_pre",
        "blocks.0.ln1.hook_normalized",
        "blocks.0.attn.hook_q",
        "blocks.0.attn.hook_k",
        "blocks.0.attn.hook_v",
        "blocks.0.attn.hook_rot_q",
        "blocks.0.attn.hook_rot_k",
        "blocks.0.attn.hook_scores",
        "blocks.0.attn.hook_pattern",
        "blocks.0.attn.hook_z",
        "blocks.0.hook_attn_out",
        "blocks.0.hook_resid_mid",
        "blocks.0.ln2.hook_normalized",
        "blocks.0.mlp.hook_pre",
        "blocks.0.mlp.hook_post",
        "blocks.0.hook_mlp_out",
        "blocks.0.hook_resid_post",
    ]
    model = make_model(d_model=4, positional="sinusoidal")
    assert "hook_pos_embed" in hook_points(model)


def test_every_hook_fires_with_its_declared_shape():
    model = make_model(
        d_model=4, n_layers=2, n_heads=2, norm="pre", residual=True, ffn=True, positional="rope"
    )
    sizes = {"B": 1, "T": 5, "C": 4, "nh": 2, "hs": 2, "H": 16}
    with torch.inference_mode(), capture(model) as cache:
        model(X[None])
    points = hook_points(model)
    assert set(cache) == set(points)
    for name, point in points.items():
        assert tuple(cache[name].shape) == tuple(sizes[a] for a in point.shape.split()), name


def test_capture_rejects_unknown_names():
    model = make_model(d_model=4)
    with pytest.raises(KeyError, match="blocks.9"), capture(model, ["blocks.9.attn.hook_pattern"]):
        pass


def test_attention_entries_are_explicit_even_with_many_tokens():
    x = torch.randn(64, 8, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    _, _, cache = run(x, n_heads=4, projections="random")
    pattern = cache["blocks.0.attn.hook_pattern"][0]
    assert pattern.shape == (4, 64, 64)
    assert torch.allclose(pattern.sum(-1), torch.ones(4, 64, dtype=torch.float64), atol=1e-13)


def test_biases_affine_norms_and_final_norm():
    """The pieces real checkpoints need (biases, LayerNorm scale/shift, embedding and final norms)
    against the same formulas written out with torch.nn.functional."""
    import torch.nn.functional as F

    from attnviz.engine import Transformer, TransformerConfig

    cfg = TransformerConfig(
        d_model=4, n_heads=2, norm="post", residual=True, ffn=True, bias=True, ln_affine=True,
        embed_norm=True, final_norm=True, ln_eps=1e-12, activation="gelu_tanh",
    )  # fmt: skip
    model = Transformer(cfg).to(torch.float64)
    g = torch.Generator().manual_seed(5)
    sd = {
        k: torch.randn(v.shape, generator=g, dtype=torch.float64)
        for k, v in model.state_dict().items()
    }
    model.load_state_dict(sd)
    with torch.inference_mode():
        out = model(X[None])[0]

    def ln(x, name):
        return F.layer_norm(x, (4,), sd[f"{name}.w"], sd[f"{name}.b"], 1e-12)

    def lin(x, name):
        return x @ sd[f"blocks.0.{name}"] + sd[f"blocks.0.{name.replace('W_', 'b_')}"]

    x = ln(X, "ln_embed")
    q, k, v = (lin(x, f"attn.W_{n}").view(5, 2, 2).transpose(0, 1) for n in "QKV")
    z = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(2), -1) @ v  # (2, 5, 2)
    x = ln(x + lin(z.transpose(0, 1).reshape(5, 4), "attn.W_O"), "blocks.0.ln1")
    h = F.gelu(lin(x, "mlp.W_in"), approximate="tanh")
    x = ln(x + h @ sd["blocks.0.mlp.W_out"] + sd["blocks.0.mlp.b_out"], "blocks.0.ln2")
    assert torch.allclose(out, ln(x, "ln_final"), atol=1e-12)


@pytest.mark.parametrize("window", [None, 3])
def test_a_mask_kept_from_a_trace_serves_a_training_step_of_the_same_shape(window):
    """The causal (and windowed) mask is kept across forwards of one length; one first made by
    a trace (under inference mode) must still serve a training step's backward, as when a
    server traces a text and then trains a model on strings of the same length."""
    hidden_keys.cache_clear()
    model = make_model(
        "random", d_model=4, causal=True, n_heads=2, n_layers=2, ffn=True, sliding_window=window
    )
    x = X[None].clone()
    with torch.inference_mode():
        model(x)  # the mask of 5 queries and 5 keys, kept
    model.train()
    x.requires_grad_(True)
    model(x).sum().backward()
    assert x.grad is not None and torch.isfinite(x.grad).all()
