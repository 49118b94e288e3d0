"""The encoder-decoder against PyTorch's own nn.TransformerEncoderLayer and
nn.TransformerDecoderLayer (pre-norm, GELU, biases, no dropout): an independent implementation
of the original arrangement, with the weights mapped across; and the cross-attention's hooks."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from attnviz.engine import Transformer, TransformerConfig, capture, hook_points
from attnviz.engine.init import standard_weights

D, H, FF = 8, 2, 16


def cfg(**kw) -> TransformerConfig:
    base = dict(d_model=D, n_layers=2, n_heads=H, causal=True, residual=True, norm="pre",
                ln_affine=True, final_norm=True, ffn=True, d_ffn=FF, bias=True,
                encoder_layers=2)  # fmt: skip
    return TransformerConfig(**{**base, **kw})


def model_of(c: TransformerConfig, seed: int = 3) -> Transformer:
    m = Transformer(c).to(torch.float64)
    weights = standard_weights(c, seed, torch.float64)
    # Non-zero biases and LayerNorm shifts, so that a wrongly mapped one shows.
    g = torch.Generator().manual_seed(seed + 1)
    for name, w in weights.items():
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "b" or leaf.startswith("b_") or leaf == "w":
            w += 0.1 * torch.randn(w.shape, generator=g, dtype=torch.float64)
    m.load_state_dict(weights)
    return m.eval()


def _attention(ours, theirs: nn.MultiheadAttention) -> None:
    # Ours: y = x @ W (d_in, d_out); theirs: y = x @ weight.T, Q, K, V stacked in in_proj.
    theirs.in_proj_weight.copy_(torch.cat([ours.W_Q.T, ours.W_K.T, ours.W_V.T]))
    theirs.in_proj_bias.copy_(torch.cat([ours.b_Q, ours.b_K, ours.b_V]))
    theirs.out_proj.weight.copy_(ours.W_O.T)
    theirs.out_proj.bias.copy_(ours.b_O)


def _norm(ours, theirs: nn.LayerNorm) -> None:
    theirs.weight.copy_(ours.w)
    theirs.bias.copy_(ours.b)


def _mlp(block, theirs) -> None:
    theirs.linear1.weight.copy_(block.mlp.W_in.T)
    theirs.linear1.bias.copy_(block.mlp.b_in)
    theirs.linear2.weight.copy_(block.mlp.W_out.T)
    theirs.linear2.bias.copy_(block.mlp.b_out)


@torch.no_grad()
def torch_reference(m: Transformer):
    """PyTorch's encoder and decoder stacks with our weights."""
    kw = dict(d_model=D, nhead=H, dim_feedforward=FF, dropout=0.0, activation="gelu",
              batch_first=True, norm_first=True, dtype=torch.float64)  # fmt: skip
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(**kw), m.cfg.encoder_layers,
                                norm=nn.LayerNorm(D, dtype=torch.float64),
                                enable_nested_tensor=False)  # fmt: skip
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(**kw), m.cfg.n_layers,
                                norm=nn.LayerNorm(D, dtype=torch.float64))  # fmt: skip
    for ours, theirs in zip(m.encoder.blocks, enc.layers, strict=True):
        _attention(ours.attn, theirs.self_attn)
        _norm(ours.ln1, theirs.norm1)
        _norm(ours.ln2, theirs.norm2)
        _mlp(ours, theirs)
    _norm(m.encoder.ln_final, enc.norm)
    for ours, theirs in zip(m.blocks, dec.layers, strict=True):
        _attention(ours.attn, theirs.self_attn)
        _attention(ours.cross_attn, theirs.multihead_attn)
        _norm(ours.ln1, theirs.norm1)
        _norm(ours.ln_cross, theirs.norm2)
        _norm(ours.ln2, theirs.norm3)
        _mlp(ours, theirs)
    _norm(m.ln_final, dec.norm)
    return enc.eval(), dec.eval()


def test_matches_pytorchs_encoder_decoder():
    m = model_of(cfg())
    enc, dec = torch_reference(m)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 5, D, generator=g, dtype=torch.float64)  # decoder input (B, T, C)
    src = torch.randn(3, 7, D, generator=g, dtype=torch.float64)  # source (B, S, C)
    with torch.no_grad():
        ours = m(x, src)
        memory = enc(src)
        mask = nn.Transformer.generate_square_subsequent_mask(5, dtype=torch.float64)
        theirs = dec(x, memory, tgt_mask=mask, tgt_is_causal=True)
    assert torch.allclose(ours, theirs, atol=1e-12), (ours - theirs).abs().max()
    # The memory the decoder reads is the encoder's output, as PyTorch's.
    with torch.no_grad(), capture(m, ["encoder.ln_final.hook_normalized"]) as cache:
        m(x, src)
    assert torch.allclose(cache["encoder.ln_final.hook_normalized"], memory, atol=1e-12)


def test_cross_attention_reads_the_source_and_is_not_causal():
    c = cfg(positional="rope")
    m = model_of(c)
    g = torch.Generator().manual_seed(1)
    x = torch.randn(1, 4, D, generator=g, dtype=torch.float64)
    src = torch.randn(1, 6, D, generator=g, dtype=torch.float64)
    with torch.no_grad(), capture(m) as cache:
        m(x, src)
    memory = cache["encoder.ln_final.hook_normalized"]
    for i in range(c.n_layers):
        p = f"blocks.{i}.cross_attn."
        pattern = cache[p + "hook_pattern"][0]  # (nh, T, S)
        assert pattern.shape == (H, 4, 6)
        assert torch.allclose(pattern.sum(-1), torch.ones(H, 4, dtype=torch.float64))
        assert (pattern > 0).all()  # every query sees every source token, later ones too
        # Keys from the memory, queries from the normalised residual, no rotation: the closed
        # form of one head.
        blk = m.blocks[i]
        xn = cache[f"blocks.{i}.ln_cross.hook_normalized"][0]  # (T, C)
        hs = D // H
        for h in range(H):
            cols = slice(h * hs, (h + 1) * hs)
            q = xn @ blk.cross_attn.W_Q[:, cols] + blk.cross_attn.b_Q[cols]
            k = memory[0] @ blk.cross_attn.W_K[:, cols] + blk.cross_attn.b_K[cols]
            want = torch.softmax(q @ k.T / hs**0.5, dim=-1)
            assert torch.allclose(pattern[h], want, atol=1e-12)
        assert f"blocks.{i}.cross_attn.hook_rot_q" not in cache  # self-attention has them
        assert f"blocks.{i}.attn.hook_rot_q" in cache


def test_hook_names_of_an_encoder_decoder_are_pinned():
    m = Transformer(cfg(n_layers=1, encoder_layers=1, ffn=False, final_norm=False))
    names = list(hook_points(m))
    encoder = [n for n in names if n.startswith("encoder.")]
    assert names[: len(encoder)] == encoder  # the encoder runs first
    assert names[len(encoder) :] == [
        "hook_embed",
        "blocks.0.hook_resid_pre",
        "blocks.0.ln1.hook_normalized",
        "blocks.0.attn.hook_q",
        "blocks.0.attn.hook_k",
        "blocks.0.attn.hook_v",
        "blocks.0.attn.hook_scores",
        "blocks.0.attn.hook_pattern",
        "blocks.0.attn.hook_z",
        "blocks.0.hook_attn_out",
        "blocks.0.hook_resid_mid",
        "blocks.0.ln_cross.hook_normalized",
        "blocks.0.cross_attn.hook_q",
        "blocks.0.cross_attn.hook_k",
        "blocks.0.cross_attn.hook_v",
        "blocks.0.cross_attn.hook_scores",
        "blocks.0.cross_attn.hook_pattern",
        "blocks.0.cross_attn.hook_z",
        "blocks.0.hook_cross_out",
        "blocks.0.hook_resid_cross",
        "blocks.0.hook_resid_post",
    ]
    assert m.blocks[0].cross_attn.hook_pattern.shape == "B nh T S"
    assert not any("cross" in n for n in encoder)


def test_a_source_is_required_exactly_when_there_is_an_encoder():
    m = model_of(cfg())
    x = torch.zeros(1, 3, D, dtype=torch.float64)
    with pytest.raises(ValueError, match="needs a source"):
        m(x)
    plain = model_of(cfg(encoder_layers=0))
    with pytest.raises(ValueError, match="needs a source"):
        plain(x, x)
    with pytest.raises(ValueError, match="no encoder"):
        cfg(encoder_layers=0).encoder()
    assert cfg().encoder().causal is False and cfg().encoder().unembed is False
