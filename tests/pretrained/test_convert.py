"""Weight conversion: pure functions that check every shape and account for every key."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from attnviz.pretrained.checkpoint import ConversionError
from attnviz.pretrained.families.bert import bert_config, bert_weights
from attnviz.pretrained.families.gpt2 import gpt2_config, gpt2_weights

BERT_CFG = {
    "model_type": "bert",
    "hidden_size": 8,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 16,
    "max_position_embeddings": 12,
    "type_vocab_size": 2,
    "vocab_size": 20,
    "hidden_act": "gelu",
    "layer_norm_eps": 1e-12,
}


def _bert_tensors(cfg: dict, prefix: str = "") -> dict[str, torch.Tensor]:
    """A BertModel-shaped checkpoint with distinct random values (seeded)."""
    g = torch.Generator().manual_seed(0)
    d, H = cfg["hidden_size"], cfg["intermediate_size"]
    shapes = {
        "embeddings.word_embeddings.weight": (cfg["vocab_size"], d),
        "embeddings.position_embeddings.weight": (cfg["max_position_embeddings"], d),
        "embeddings.token_type_embeddings.weight": (cfg["type_vocab_size"], d),
        "embeddings.LayerNorm.weight": (d,),
        "embeddings.LayerNorm.bias": (d,),
    }
    for i in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{i}."
        for n in ("query", "key", "value"):
            shapes[f"{p}attention.self.{n}.weight"] = (d, d)
            shapes[f"{p}attention.self.{n}.bias"] = (d,)
        shapes[f"{p}attention.output.dense.weight"] = (d, d)
        shapes[f"{p}attention.output.dense.bias"] = (d,)
        shapes[f"{p}attention.output.LayerNorm.weight"] = (d,)
        shapes[f"{p}attention.output.LayerNorm.bias"] = (d,)
        shapes[f"{p}intermediate.dense.weight"] = (H, d)
        shapes[f"{p}intermediate.dense.bias"] = (H,)
        shapes[f"{p}output.dense.weight"] = (d, H)
        shapes[f"{p}output.dense.bias"] = (d,)
        shapes[f"{p}output.LayerNorm.weight"] = (d,)
        shapes[f"{p}output.LayerNorm.bias"] = (d,)
    return {prefix + k: torch.randn(*s, generator=g) for k, s in shapes.items()}


def test_bert_linear_weights_are_transposed_to_x_at_w():
    cfg = bert_config(BERT_CFG)
    t = _bert_tensors(BERT_CFG)
    sd = bert_weights(cfg, t, BERT_CFG)
    assert len(sd) == 5 + 16 * 2
    q = t["encoder.layer.1.attention.self.query.weight"]
    assert torch.equal(sd["blocks.1.attn.W_Q"], q.T)  # nn.Linear is (out, in)
    x = torch.randn(3, 8)
    assert torch.allclose(x @ sd["blocks.1.attn.W_Q"], torch.nn.functional.linear(x, q))
    assert torch.equal(sd["blocks.0.mlp.W_in"], t["encoder.layer.0.intermediate.dense.weight"].T)
    assert torch.equal(sd["W_type"], t["embeddings.token_type_embeddings.weight"])
    # Nothing copied: every tensor is a view of the checkpoint's (the loader converts once).
    storages = {v.untyped_storage().data_ptr() for v in t.values()}
    assert all(v.untyped_storage().data_ptr() in storages for v in sd.values())


def test_bert_prefix_heads_and_buffers_are_accepted():
    t = _bert_tensors(BERT_CFG, prefix="bert.")
    t["bert.embeddings.position_ids"] = torch.arange(12)[None]
    t["bert.pooler.dense.weight"] = torch.zeros(8, 8)
    t["cls.predictions.bias"] = torch.zeros(20)
    sd = bert_weights(bert_config(BERT_CFG), t, BERT_CFG)
    assert torch.equal(sd["W_E"], t["bert.embeddings.word_embeddings.weight"])


def test_a_wrong_shape_names_the_tensor_and_both_shapes():
    t = _bert_tensors(BERT_CFG)
    t["encoder.layer.1.attention.self.key.weight"] = torch.zeros(8, 7)
    with pytest.raises(
        ConversionError,
        match=r"layer\.1\.attention\.self\.key\.weight: "
        r"expected shape \(8, 8\), got \(8, 7\)",
    ):
        bert_weights(bert_config(BERT_CFG), t, BERT_CFG)


def test_a_missing_tensor_is_named():
    t = _bert_tensors(BERT_CFG)
    del t["encoder.layer.0.output.LayerNorm.bias"]
    with pytest.raises(ConversionError, match="no tensor 'encoder.layer.0.output.LayerNorm.bias'"):
        bert_weights(bert_config(BERT_CFG), t, BERT_CFG)


def test_an_unexpected_tensor_is_refused_not_ignored():
    t = _bert_tensors(BERT_CFG)
    t["encoder.layer.2.attention.self.query.weight"] = torch.zeros(8, 8)  # a third layer
    with pytest.raises(ConversionError, match="unexpected tensors encoder.layer.2"):
        bert_weights(bert_config(BERT_CFG), t, BERT_CFG)


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("position_embedding_type", "relative_key", "position_embedding_type = 'relative_key'"),
        ("hidden_act", "relu", "hidden_act = 'relu' is not supported"),
        ("hidden_size", None, "hidden_size must be a positive integer"),
        ("num_attention_heads", 3, "n_heads 3 does not divide d_model 8"),
    ],
)
def test_bert_configs_the_engine_cannot_reproduce_are_refused(key, value, message):
    with pytest.raises(ValueError, match=message):
        bert_config({**BERT_CFG, key: value})


def test_bert_config_wiring():
    cfg = bert_config(BERT_CFG)
    assert (cfg.norm, cfg.residual, cfg.embed_norm, cfg.final_norm) == ("post", True, True, False)
    assert (cfg.causal, cfg.positional, cfg.activation, cfg.ln_eps) == (
        False,
        "learned",
        "gelu",
        1e-12,
    )
    assert (cfg.vocab_size, cfg.type_vocab_size, cfg.n_ctx, cfg.hidden) == (20, 2, 12, 16)


def test_gpt2_fused_qkv_is_split_by_columns(tiny_gpt2_dir):
    import json

    hf = json.loads((tiny_gpt2_dir / "config.json").read_text())
    cfg = gpt2_config(hf)
    assert (cfg.norm, cfg.causal, cfg.final_norm, cfg.activation) == (
        "pre",
        True,
        True,
        "gelu_tanh",
    )
    t = load_file(tiny_gpt2_dir / "model.safetensors")
    sd = gpt2_weights(cfg, t, hf)
    assert len(sd) == 5 + 16 * cfg.n_layers  # 12 tensors a layer; c_attn's 2 become 6; W_U tied
    assert torch.equal(sd["W_U"], sd["W_E"].T)
    w = t["transformer.h.1.attn.c_attn.weight"]  # (d, 3d): x @ w = [q | k | v]
    d = cfg.d_model
    x = torch.randn(5, d)
    q, k, v = (x @ w).split(d, dim=-1)
    assert torch.equal(x @ sd["blocks.1.attn.W_Q"], q)
    assert torch.equal(x @ sd["blocks.1.attn.W_K"], k)
    assert torch.equal(x @ sd["blocks.1.attn.W_V"], v)
    b = t["transformer.h.1.attn.c_attn.bias"]
    assert torch.equal(torch.cat([sd[f"blocks.1.attn.b_{n}"] for n in "QKV"]), b)


def test_gpt2_reads_its_lm_head_but_refuses_other_extras(tiny_gpt2_dir):
    import json

    hf = json.loads((tiny_gpt2_dir / "config.json").read_text())
    cfg = gpt2_config(hf)
    t = dict(load_file(tiny_gpt2_dir / "model.safetensors"))
    t["lm_head.weight"] = t["transformer.wte.weight"] * 2  # a head of its own (as saved untied)
    t["transformer.h.0.attn.bias"] = torch.ones(1, 1, 4, 4)  # an old checkpoint's mask buffer
    assert torch.equal(gpt2_weights(cfg, t, hf)["W_U"], t["lm_head.weight"].T)
    t["transformer.h.0.attn.rotary.weight"] = torch.zeros(2)
    with pytest.raises(ConversionError, match="unexpected tensors h.0.attn.rotary.weight"):
        gpt2_weights(cfg, t, hf)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("activation_function", "relu"),
        ("scale_attn_by_inverse_layer_idx", True),
        ("scale_attn_weights", False),
    ],
)
def test_gpt2_configs_the_engine_cannot_reproduce_are_refused(tiny_gpt2_dir, key, value):
    import json

    hf = json.loads((tiny_gpt2_dir / "config.json").read_text())
    with pytest.raises(ConversionError, match=f"{key} = {value!r} is not supported"):
        gpt2_config({**hf, key: value})
