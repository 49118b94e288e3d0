"""Model folders of families attnviz's engine has no conversion for, which the transformers
bridge serves: made here by transformers (a development dependency, the oracle), tiny and
random, never downloaded.

- BLOOM: ALiBi, computed in BLOOM's own attention, which does not go through transformers'
  AttentionInterface (weights and hidden states only);
- StarCoder2: RoPE, grouped-query attention, a sliding window of 8, LayerNorm with biases; its
  attention goes through AttentionInterface (q, k, v recorded);
- ELECTRA: an encoder (``AutoModel``), through AttentionInterface;
- Gemma 2 (a family the engine has too) to compare through the bridge: soft-capped attention
  logits, alternate sliding layers;
- StableLM and Falcon: their classes say they do not support attention backends
  (``is_backend_compatible``), yet their attention goes through AttentionInterface;
- OPT: its final norm on ``model.decoder``, not on the base model;
- Cohere: its logits its head's times a logit scale; Granite: divided by one
  (``logits_scaling``);
- Cohere 2: sliding layers (one window) between full ones, and Cohere's logit scale;
- GPT-Neo: attention classes of its own, chosen by name (no "attnviz" among them), so it loads
  with eager attention, which does not go through AttentionInterface;
- ModernBERT: an encoder whose layers 1 and 2 (of 0, 1, 2) see only keys within a window either
  side (``local_attention``), layer 0 every key;
- NeoMME: an encoder whose layers' windows differ (``per_layer_config``: 3 and 6 keys either
  side, and a global layer).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from tests.support.checkpoints import _perturbed_save, make_tokenizer, make_wordpiece_tokenizer

WINDOW = 8  # StarCoder2's and Gemma 2's sliding window here: texts run well past it


def _causal(folder: Path, model_type: str, seed: int, **config) -> Path:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    cfg = AutoConfig.for_model(
        model_type, vocab_size=tok.get_vocab_size(), bos_token_id=0, eos_token_id=0,
        pad_token_id=0, **config,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _perturbed_save(AutoModelForCausalLM.from_config(cfg), folder, seed)


def make_tiny_bloom(folder: Path, seed: int = 0) -> Path:
    """BLOOM, 2 layers x 4 heads, d_model 32 (ALiBi: no position table)."""
    return _causal(folder, "bloom", seed, hidden_size=32, n_layer=2, n_head=4)


def make_tiny_starcoder2(folder: Path, seed: int = 0) -> Path:
    """StarCoder2, 2 layers x 4 heads (2 key/value heads), d_model 32, sliding window 8."""
    return _causal(
        folder, "starcoder2", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, sliding_window=WINDOW,
        max_position_embeddings=256,
    )  # fmt: skip


def make_tiny_gemma2(folder: Path, seed: int = 0) -> Path:
    """Gemma 2, 2 layers x 4 heads (2 key/value heads) of 8, d_model 32: the first layer slides
    (window 8), attention logits scaled by 1 (query_pre_attn_scalar 1) and soft-capped at 0.2, so that the
    cap changes the weights."""
    return _causal(
        folder, "gemma2", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=WINDOW,
        max_position_embeddings=256, attn_logit_softcapping=0.2, final_logit_softcapping=10.0,
        query_pre_attn_scalar=1,
    )  # fmt: skip


def make_tiny_stablelm(folder: Path, seed: int = 0) -> Path:
    """StableLM, 2 layers x 4 heads (2 key/value heads), d_model 32, a quarter of each head
    rotated (partial_rotary_factor 0.25), LayerNorms with biases."""
    return _causal(
        folder, "stablelm", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
    )  # fmt: skip


def make_tiny_falcon(folder: Path, seed: int = 0) -> Path:
    """Falcon (RoPE, one key/value head: multi-query), 2 layers x 4 heads, d_model 32."""
    return _causal(
        folder, "falcon", seed, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        max_position_embeddings=256,
    )  # fmt: skip


def make_tiny_opt(folder: Path, seed: int = 0) -> Path:
    """OPT (learned positions, a final LayerNorm on ``model.decoder``), 2 layers x 4 heads,
    d_model 32."""
    return _causal(
        folder, "opt", seed, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
        num_attention_heads=4, word_embed_proj_dim=32, max_position_embeddings=256,
    )  # fmt: skip


def make_tiny_gpt_neo(folder: Path, seed: int = 0) -> Path:
    """GPT-Neo, 2 layers x 4 heads, d_model 32: a global layer, then a local one (window 8)."""
    return _causal(
        folder, "gpt_neo", seed, hidden_size=32, num_layers=2, num_heads=4,
        attention_types=[[["global", "local"], 1]], window_size=WINDOW,
        max_position_embeddings=256,
    )  # fmt: skip


def make_tiny_cohere(folder: Path, seed: int = 0) -> Path:
    """Cohere, 2 layers x 4 heads (2 key/value heads), d_model 32, logits scaled by 1/16."""
    return _causal(
        folder, "cohere", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        logit_scale=0.0625,
    )  # fmt: skip


def make_tiny_granite(folder: Path, seed: int = 0) -> Path:
    """Granite, 2 layers x 4 heads (2 key/value heads), d_model 32, logits divided by 8
    (``logits_scaling``), with its embedding, attention and residual multipliers."""
    return _causal(
        folder, "granite", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        logits_scaling=8.0, embedding_multiplier=2.0, attention_multiplier=0.3,
        residual_multiplier=0.5,
    )  # fmt: skip


def make_tiny_cohere2(folder: Path, seed: int = 0) -> Path:
    """Cohere 2, 4 layers x 4 heads (2 key/value heads), d_model 32: layers 0 and 2 slide
    (window 8, ``sliding_window_pattern`` 2), logits scaled by 1/16."""
    return _causal(
        folder, "cohere2", seed, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
        sliding_window=WINDOW, sliding_window_pattern=2, logit_scale=0.0625,
    )  # fmt: skip


# NeoMME's windows, layer by layer: the keys at most this far from the query (either side);
# None: every key (its config's half-widths, ``per_layer_config``).
NEOMME_HALF_WINDOWS = (3, 6, None, 3)


def neomme_config(vocab_size: int):
    """NeoMME's config, 4 layers x 4 heads (2 key/value heads) of 16, d_model 32, whose layers'
    windows differ (``NEOMME_HALF_WINDOWS``, transformers' ``per_layer_config``)."""
    from transformers import AutoConfig

    return AutoConfig.for_model(
        "neomme", vocab_size=vocab_size, embedding_rank=16, hidden_size=32,
        intermediate_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
        head_dim=16, max_position_embeddings=128, sliding_window=NEOMME_HALF_WINDOWS[0],
        layer_types=["full_attention" if w is None else "sliding_attention"
                     for w in NEOMME_HALF_WINDOWS],
        per_layer_config={i: {"sliding_window": w} for i, w in enumerate(NEOMME_HALF_WINDOWS)},
        pad_token_id=0, document_token_id=1, image_token_id=2,
    )  # fmt: skip


def make_tiny_neomme(folder: Path, seed: int = 0) -> Path:
    """NeoMME's body (``neomme_config``), with a WordPiece tokenizer."""
    import torch
    from transformers import AutoModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_wordpiece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    torch.manual_seed(seed)
    return _perturbed_save(AutoModel.from_config(neomme_config(tok.get_vocab_size())), folder, seed)


MODERNBERT_WINDOW = 8  # keys further than this from the query (either side) are hidden


def make_tiny_modernbert(folder: Path, seed: int = 0) -> Path:
    """ModernBERT's body, 3 layers x 4 heads, d_model 32: layer 0 global, layers 1 and 2 local
    (global_attn_every_n_layers 3), each query seeing the keys at most MODERNBERT_WINDOW
    positions away (local_attention 2 x 8), with a WordPiece tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_wordpiece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    ids = {k: 0 for k in ("pad_token_id", "bos_token_id", "eos_token_id", "cls_token_id",
                          "sep_token_id")}  # fmt: skip
    cfg = AutoConfig.for_model(
        "modernbert", vocab_size=tok.get_vocab_size(), hidden_size=32, intermediate_size=64,
        num_hidden_layers=3, num_attention_heads=4, global_attn_every_n_layers=3,
        local_attention=2 * MODERNBERT_WINDOW, max_position_embeddings=128, **ids,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _perturbed_save(AutoModel.from_config(cfg), folder, seed)


def make_tiny_electra(folder: Path, seed: int = 0) -> Path:
    """ELECTRA's discriminator body, 2 layers x 4 heads, d_model 32, with a WordPiece
    tokenizer."""
    import torch
    from transformers import AutoConfig, AutoModel

    folder.mkdir(parents=True, exist_ok=True)
    tok = make_wordpiece_tokenizer()
    tok.save(str(folder / "tokenizer.json"))
    cfg = AutoConfig.for_model(
        "electra", vocab_size=tok.get_vocab_size(), embedding_size=32, hidden_size=32,
        num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
        max_position_embeddings=128, pad_token_id=0,
    )  # fmt: skip
    torch.manual_seed(seed)
    return _perturbed_save(AutoModel.from_config(cfg), folder, seed)


def make_unknown(folder: Path, source: Path) -> Path:
    """``source``'s files with a model_type neither backend knows."""
    folder.mkdir(parents=True, exist_ok=True)
    for f in source.iterdir():
        if f.is_file():
            (folder / f.name).write_bytes(f.read_bytes())
    config = json.loads((folder / "config.json").read_text())
    config["model_type"] = "no-such-model"
    config["architectures"] = ["NoSuchModelForCausalLM"]
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@functools.cache
def hf_model(folder: Path):
    """transformers' own model of ``folder``, eager attention (the oracle), loaded once."""
    from transformers import AutoModel, AutoModelForCausalLM

    encoder = any(name in folder.name for name in ("electra", "modernbert", "neomme"))
    cls = AutoModel if encoder else AutoModelForCausalLM
    return cls.from_pretrained(folder, attn_implementation="eager").eval()


def hf_forward(folder: Path, ids: list[int]):
    """transformers' forward of ``ids``: every weight and hidden state."""
    import torch

    with torch.no_grad():
        return hf_model(folder)(
            torch.tensor([ids]), output_attentions=True, output_hidden_states=True
        )


def hf_greedy(folder: Path, ids: list[int], steps: int) -> list[int]:
    """transformers' greedy ``generate``, stopping at the end-of-text token (config.json's)."""
    import torch

    with torch.no_grad():
        out = hf_model(folder).generate(
            torch.tensor([ids]), max_new_tokens=steps, do_sample=False, pad_token_id=0
        )
    return out[0, len(ids) :].tolist()
