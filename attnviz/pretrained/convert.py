"""Hugging Face checkpoints -> the engine: one pure function per model family.

Each family has two functions: ``*_config`` reads a ``config.json`` dict into a
``TransformerConfig`` (refusing settings the engine does not reproduce), and ``*_weights`` turns
the checkpoint's tensors into the engine's state dict, asserting every tensor's shape and that
every key of the body was used exactly once. Nothing is changed silently: weights keep their
values and dtype; only layouts change (``nn.Linear``'s (out, in) is transposed to the engine's
(in, out); GPT-2's fused qkv is split).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from attnviz.engine.config import Activation, TransformerConfig


class ConversionError(ValueError):
    """A checkpoint the engine cannot reproduce; the message says what is wrong."""


Tensors = Mapping[str, torch.Tensor]


def _strip(tensors: Tensors, prefix: str, ignore: re.Pattern) -> dict[str, torch.Tensor]:
    """Keys of the model body: ``prefix`` removed when every body key has it; heads (pooler,
    LM head...) and non-parameter buffers matched by ``ignore`` dropped."""
    keys = [k for k in tensors if not ignore.search(k)]
    if keys and all(k.startswith(prefix) for k in keys):
        return {k.removeprefix(prefix): tensors[k] for k in keys}
    return {k: tensors[k] for k in keys}


class _Taker:
    """Hands out checkpoint tensors by name, checking each shape; remembers what was taken."""

    def __init__(self, tensors: dict[str, torch.Tensor]) -> None:
        self.tensors = tensors
        self.used: set[str] = set()

    def __call__(self, key: str, *shape: int) -> torch.Tensor:
        if key not in self.tensors:
            raise ConversionError(f"the checkpoint has no tensor {key!r}")
        t = self.tensors[key]
        if tuple(t.shape) != shape:
            raise ConversionError(f"{key}: expected shape {shape}, got {tuple(t.shape)}")
        self.used.add(key)
        return t

    def check_all_used(self, expected: int) -> None:
        unused = sorted(set(self.tensors) - self.used)
        if unused:
            more = f" and {len(unused) - 3} more" if len(unused) > 3 else ""
            raise ConversionError(f"unexpected tensors {', '.join(unused[:3])}{more}")
        assert len(self.used) == expected, f"used {len(self.used)} tensors, expected {expected}"


def _need(hf: Mapping, key: str) -> int:
    value = hf.get(key)
    if not isinstance(value, int) or value < 1:
        raise ConversionError(f"config.json: {key} must be a positive integer (got {value!r})")
    return value


def _refuse(hf: Mapping, key: str, allowed: tuple, default=None) -> None:
    value = hf.get(key, default)
    if value not in allowed:
        raise ConversionError(
            f"config.json: {key} = {value!r} is not supported (supported: "
            f"{', '.join(repr(a) for a in allowed)})"
        )


# ---------------------------------------------------------------------------------------------
# BERT-style encoders: bidirectional, post-norm, token-type and learned position embeddings.

_BERT_IGNORE = re.compile(r"(^|\.)(pooler|cls)\.|position_ids$|^qa_outputs|^classifier")
_BERT_ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
}


def bert_config(hf: Mapping) -> TransformerConfig:
    _refuse(hf, "position_embedding_type", ("absolute",), "absolute")
    _refuse(hf, "hidden_act", tuple(_BERT_ACTIVATIONS), "gelu")
    return TransformerConfig(
        d_model=_need(hf, "hidden_size"),
        n_layers=_need(hf, "num_hidden_layers"),
        n_heads=_need(hf, "num_attention_heads"),
        positional="learned",
        n_ctx=_need(hf, "max_position_embeddings"),
        residual=True,
        norm="post",
        ln_eps=float(hf.get("layer_norm_eps", 1e-12)),
        ln_affine=True,
        embed_norm=True,
        ffn=True,
        d_ffn=_need(hf, "intermediate_size"),
        activation=_BERT_ACTIVATIONS[hf.get("hidden_act", "gelu")],
        bias=True,
        vocab_size=_need(hf, "vocab_size"),
        type_vocab_size=_need(hf, "type_vocab_size"),
    )


def bert_weights(cfg: TransformerConfig, tensors: Tensors) -> dict[str, torch.Tensor]:
    """Engine state dict from a BertModel checkpoint (``bert.`` prefix and heads allowed)."""
    take = _Taker(_strip(tensors, "bert.", _BERT_IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    sd = {
        "W_E": take("embeddings.word_embeddings.weight", V, d),
        "W_type": take("embeddings.token_type_embeddings.weight", cfg.type_vocab_size, d),
        "W_pos": take("embeddings.position_embeddings.weight", cfg.n_ctx, d),
        "ln_embed.w": take("embeddings.LayerNorm.weight", d),
        "ln_embed.b": take("embeddings.LayerNorm.bias", d),
    }
    for i in range(cfg.n_layers):
        hf, p = f"encoder.layer.{i}.", f"blocks.{i}."
        for ours, theirs in (("Q", "query"), ("K", "key"), ("V", "value")):
            sd[f"{p}attn.W_{ours}"] = take(f"{hf}attention.self.{theirs}.weight", d, d).T
            sd[f"{p}attn.b_{ours}"] = take(f"{hf}attention.self.{theirs}.bias", d)
        sd[f"{p}attn.W_O"] = take(f"{hf}attention.output.dense.weight", d, d).T
        sd[f"{p}attn.b_O"] = take(f"{hf}attention.output.dense.bias", d)
        sd[f"{p}ln1.w"] = take(f"{hf}attention.output.LayerNorm.weight", d)
        sd[f"{p}ln1.b"] = take(f"{hf}attention.output.LayerNorm.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{hf}intermediate.dense.weight", H, d).T
        sd[f"{p}mlp.b_in"] = take(f"{hf}intermediate.dense.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{hf}output.dense.weight", d, H).T
        sd[f"{p}mlp.b_out"] = take(f"{hf}output.dense.bias", d)
        sd[f"{p}ln2.w"] = take(f"{hf}output.LayerNorm.weight", d)
        sd[f"{p}ln2.b"] = take(f"{hf}output.LayerNorm.bias", d)
    take.check_all_used(5 + 16 * cfg.n_layers)
    return {k: v.contiguous() for k, v in sd.items()}


# ---------------------------------------------------------------------------------------------
# GPT-2-style decoders: causal, pre-norm, fused qkv, learned positions, final LayerNorm.

_GPT2_IGNORE = re.compile(r"^lm_head\.|\.attn\.(bias|masked_bias)$")
_GPT2_ACTIVATIONS: dict[str, Activation] = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu": "gelu",
}


def gpt2_config(hf: Mapping) -> TransformerConfig:
    _refuse(hf, "activation_function", tuple(_GPT2_ACTIVATIONS), "gelu_new")
    _refuse(hf, "scale_attn_weights", (True,), True)
    _refuse(hf, "scale_attn_by_inverse_layer_idx", (False,), False)
    d = _need(hf, "n_embd")
    inner = hf.get("n_inner")
    return TransformerConfig(
        d_model=d,
        n_layers=_need(hf, "n_layer"),
        n_heads=_need(hf, "n_head"),
        causal=True,
        positional="learned",
        n_ctx=_need(hf, "n_positions"),
        residual=True,
        norm="pre",
        ln_eps=float(hf.get("layer_norm_epsilon", 1e-5)),
        ln_affine=True,
        final_norm=True,
        ffn=True,
        d_ffn=inner if inner is not None else 4 * d,
        activation=_GPT2_ACTIVATIONS[hf.get("activation_function", "gelu_new")],
        bias=True,
        vocab_size=_need(hf, "vocab_size"),
        unembed=True,  # GPT-2 ties its unembedding to the token table
    )


def gpt2_weights(cfg: TransformerConfig, tensors: Tensors) -> dict[str, torch.Tensor]:
    """Engine state dict from a GPT2Model / GPT2LMHeadModel checkpoint.

    GPT-2's Conv1D weights are already (in, out), the engine's layout; c_attn holds W_Q | W_K |
    W_V side by side and is split into three.
    """
    take = _Taker(_strip(tensors, "transformer.", _GPT2_IGNORE))
    d, H, V = cfg.d_model, cfg.hidden, cfg.vocab_size
    assert V is not None
    sd = {
        "W_E": take("wte.weight", V, d),
        "W_pos": take("wpe.weight", cfg.n_ctx, d),
        "W_U": take("wte.weight", V, d).T,  # tied: the unembedding is the token table
        "ln_final.w": take("ln_f.weight", d),
        "ln_final.b": take("ln_f.bias", d),
    }
    for i in range(cfg.n_layers):
        hf, p = f"h.{i}.", f"blocks.{i}."
        w_qkv = take(f"{hf}attn.c_attn.weight", d, 3 * d)
        b_qkv = take(f"{hf}attn.c_attn.bias", 3 * d)
        for j, n in enumerate("QKV"):
            sd[f"{p}attn.W_{n}"] = w_qkv[:, j * d : (j + 1) * d]  # (d, d)
            sd[f"{p}attn.b_{n}"] = b_qkv[j * d : (j + 1) * d]  # (d,)
        sd[f"{p}attn.W_O"] = take(f"{hf}attn.c_proj.weight", d, d)
        sd[f"{p}attn.b_O"] = take(f"{hf}attn.c_proj.bias", d)
        sd[f"{p}ln1.w"] = take(f"{hf}ln_1.weight", d)
        sd[f"{p}ln1.b"] = take(f"{hf}ln_1.bias", d)
        sd[f"{p}ln2.w"] = take(f"{hf}ln_2.weight", d)
        sd[f"{p}ln2.b"] = take(f"{hf}ln_2.bias", d)
        sd[f"{p}mlp.W_in"] = take(f"{hf}mlp.c_fc.weight", d, H)
        sd[f"{p}mlp.b_in"] = take(f"{hf}mlp.c_fc.bias", H)
        sd[f"{p}mlp.W_out"] = take(f"{hf}mlp.c_proj.weight", H, d)
        sd[f"{p}mlp.b_out"] = take(f"{hf}mlp.c_proj.bias", d)
    take.check_all_used(4 + 12 * cfg.n_layers)
    return {k: v.contiguous() for k, v in sd.items()}


@dataclass(frozen=True)
class Family:
    """How to read one model family: its config, its weights, and what it is called."""

    name: str
    config: Callable[[Mapping], TransformerConfig]
    weights: Callable[[TransformerConfig, Tensors], dict[str, torch.Tensor]]


FAMILIES: dict[str, Family] = {
    "bert": Family("bert", bert_config, bert_weights),
    "gpt2": Family("gpt2", gpt2_config, gpt2_weights),
}

# The other families, each in its own module, and attnviz's own saved runs; imported last, as
# those modules use this one's helpers.
from attnviz.pretrained.families import distilbert, llama, roberta  # noqa: E402
from attnviz.pretrained.native import native_config, native_weights  # noqa: E402

for _type in llama.MODEL_TYPES:
    FAMILIES[_type] = Family(_type, llama.llama_config, llama.llama_weights)
FAMILIES["roberta"] = Family("roberta", roberta.roberta_config, roberta.roberta_weights)
FAMILIES["distilbert"] = Family(
    "distilbert", distilbert.distilbert_config, distilbert.distilbert_weights
)
FAMILIES["attnviz"] = Family("attnviz", native_config, native_weights)
