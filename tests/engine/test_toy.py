import pytest
import torch

from attnviz.engine import TransformerConfig
from attnviz.engine.toy import toy_weights


def test_identity_is_raw_self_attention():
    sd = toy_weights(TransformerConfig(d_model=3, n_layers=2))
    assert sorted(sd) == sorted(f"blocks.{i}.attn.W_{n}" for i in range(2) for n in "QKVO")
    assert all(torch.equal(t, torch.eye(3, dtype=torch.float64)) for t in sd.values())


def test_random_is_seeded_and_parts_are_independent():
    cfg = TransformerConfig(d_model=4, n_layers=2)
    a, b = toy_weights(cfg, "random", seed=5), toy_weights(cfg, "random", seed=5)
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = toy_weights(cfg, "random", seed=6)
    assert not torch.equal(a["blocks.0.attn.W_Q"], c["blocks.0.attn.W_Q"])
    assert not torch.equal(a["blocks.0.attn.W_Q"], a["blocks.1.attn.W_Q"])
    assert not torch.equal(a["blocks.0.attn.W_Q"], a["blocks.0.attn.W_K"])
    # Turning the FFN and a learned position table on leaves the attention weights as they were.
    more = toy_weights(
        TransformerConfig(d_model=4, n_layers=2, ffn=True, positional="learned"), "random", seed=5
    )
    assert all(torch.equal(a[k], more[k]) for k in a)
    assert more["blocks.1.mlp.W_in"].shape == (4, 16) and more["W_pos"].shape == (64, 4)


def test_random_scale_keeps_vectors_about_the_same_length():
    w = toy_weights(TransformerConfig(d_model=64), "random", seed=0)["blocks.0.attn.W_Q"]
    assert w.std().item() == pytest.approx(64**-0.5, rel=0.05)


def test_custom_is_shared_by_every_layer_and_o_defaults_to_identity():
    q = [[1.0, 2.0], [3.0, 4.0]]
    sd = toy_weights(
        TransformerConfig(d_model=2, n_layers=3), "custom", {"q": q, "k": q, "v": q, "o": None}
    )
    for i in range(3):
        assert sd[f"blocks.{i}.attn.W_Q"].tolist() == q
        assert torch.equal(sd[f"blocks.{i}.attn.W_O"], torch.eye(2, dtype=torch.float64))


def test_custom_shape_is_asserted():
    with pytest.raises(AssertionError, match="expected \\(2, 2\\)"):
        toy_weights(
            TransformerConfig(d_model=2), "custom", {"q": [[1.0]], "k": [[1.0]], "v": [[1.0]]}
        )
