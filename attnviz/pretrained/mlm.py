"""An encoder's masked-language-model head, read from its checkpoint when it carries one: BERT's
``cls.predictions``, RoBERTa's ``lm_head``, DistilBERT's ``vocab_transform`` / ``vocab_layer_norm``
/ ``vocab_projector``. Each is the same computation: a dense layer, its activation, a LayerNorm,
then the token table (tied to the input embeddings unless the checkpoint has its own) and a
bias: hidden state (..., d) -> scores over the vocabulary (..., V). A checkpoint saved without
its head (sentence-transformers' MiniLM) has none, and its traces say so; one whose head lacks
its decoder where config.json does not tie it to the token table (``tie_word_embeddings``
false) is refused by name (the token table does not stand in for it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from attnviz.engine.model import activate
from attnviz.pretrained.checkpoint import ties, unembedding

# Each family's names: (dense, LayerNorm, decoder, bias) prefixes, and where its activation is
# in config.json (None: always GELU, as RoBERTa's head).
_NAMES: dict[str, tuple[str, str, str, tuple[str, ...], str | None]] = {
    "bert": ("cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm",
             "cls.predictions.decoder", ("cls.predictions.bias", "cls.predictions.decoder.bias"),
             "hidden_act"),
    "roberta": ("lm_head.dense", "lm_head.layer_norm", "lm_head.decoder",
                ("lm_head.bias", "lm_head.decoder.bias"), None),
    "distilbert": ("vocab_transform", "vocab_layer_norm", "vocab_projector",
                   ("vocab_projector.bias",), "activation"),
}  # fmt: skip
_ACTIVATIONS = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}


@dataclass(frozen=True)
class MlmHead:
    """dense -> activation -> LayerNorm -> decoder + bias, as the family's head computes it."""

    w: torch.Tensor  # (d, d) as nn.Linear keeps it: out x in
    b: torch.Tensor
    activation: str
    ln_w: torch.Tensor
    ln_b: torch.Tensor
    eps: float
    decoder: torch.Tensor  # (V, d)
    bias: torch.Tensor  # (V,)

    @property
    def vocab(self) -> int:
        return self.decoder.shape[0]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        h = activate(F.linear(x, self.w, self.b), self.activation)
        h = F.layer_norm(h, h.shape[-1:], self.ln_w, self.ln_b, self.eps)
        return F.linear(h, self.decoder, self.bias)


def read_mlm_head(
    family: str,
    hf: Mapping,
    raw: Mapping[str, torch.Tensor],
    embeddings: torch.Tensor,
    dtype: torch.dtype,
    device: torch.device,
) -> MlmHead | None:
    """The head of a ``family`` checkpoint (``raw``, its tensors by name, with or without the
    model's prefix), on ``device`` in ``dtype``; its decoder is ``embeddings`` (the engine's
    token table, (V, d)) when the checkpoint has none and config.json ties them (true when
    absent, as the encoders' config classes say); a ``ConversionError`` naming the decoder when
    it is untied and missing. None when the checkpoint has no head."""
    if family not in _NAMES:
        return None
    dense, norm, decoder, biases, act_key = _NAMES[family]

    def get(name: str) -> torch.Tensor | None:
        t = raw.get(name)
        return None if t is None else t.to(device=device, dtype=dtype)

    parts = [get(f"{dense}.weight"), get(f"{dense}.bias"), get(f"{norm}.weight"),
             get(f"{norm}.bias")]  # fmt: skip
    bias = next((t for t in map(get, biases) if t is not None), None)
    if any(t is None for t in parts) or bias is None:
        return None
    w, b, ln_w, ln_b = (t for t in parts if t is not None)
    own, name = get(f"{decoder}.weight"), f"{decoder}.weight"
    table = unembedding(own, name, embeddings.detach(), ties(hf, True)).T  # (V, d)
    act = str(hf.get(act_key, "gelu")) if act_key else "gelu"
    eps = 1e-12 if family == "distilbert" else float(hf.get("layer_norm_eps", 1e-12))
    if act not in _ACTIVATIONS or table.shape[0] != bias.shape[0]:
        return None
    return MlmHead(w, b, _ACTIVATIONS[act], ln_w, ln_b, eps, table, bias)
