"""The one frozen configuration that describes a transformer to the engine."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Norm = Literal["none", "pre", "post"]
Positional = Literal["none", "sinusoidal", "learned", "rope"]
Activation = Literal["gelu", "gelu_tanh"]


@dataclass(frozen=True)
class TransformerConfig:
    """Wiring of a stack of attention blocks that reads token vectors X (B, T, d_model).

    The defaults are the article's raw self-attention: no projections beyond what the weights say,
    no norm, no residual, no feed-forward, logits scaled by sqrt(d_head).
    """

    d_model: int
    n_layers: int = 1
    n_heads: int = 1
    scale: bool = True  # divide logits by sqrt(d_head)
    causal: bool = False  # hide keys after the query
    positional: Positional = "none"
    max_positions: int = 64  # rows of the learned position table
    rope_base: float = 10000.0
    residual: bool = False
    norm: Norm = "none"  # "pre": x + f(LN(x)); "post": LN(x + f(x))
    ln_eps: float = 1e-5
    ln_affine: bool = False  # LayerNorms carry a learned scale and shift
    embed_norm: bool = False  # LayerNorm on the input after the positional table (BERT)
    final_norm: bool = False  # LayerNorm after the last block (GPT-2's ln_f)
    ffn: bool = False
    d_ffn: int | None = None  # hidden width of the feed-forward; 4 * d_model when None
    activation: Activation = "gelu"
    bias: bool = False  # linear layers carry biases
    vocab_size: int | None = None  # a token table W_E (vocab, C): forward then takes token ids
    unembed: bool = False  # a table W_U (C, vocab) from the output to logits over the vocabulary
    type_vocab_size: int = 0  # a token-type table W_type added to every token (BERT's segment A)
    # An encoder-decoder: an encoder of this many blocks (``encoder()``: the same wiring, not
    # causal, no unembedding) reads a source, and every block of this stack, the decoder,
    # attends to its output with a cross-attention sublayer after its self-attention.
    encoder_layers: int = 0

    def __post_init__(self) -> None:
        if self.d_model < 1 or self.n_layers < 1 or self.n_heads < 1:
            raise ValueError("d_model, n_layers and n_heads must be positive")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} does not divide d_model {self.d_model}")
        if self.vocab_size is not None and self.vocab_size < 1:
            raise ValueError("vocab_size must be positive")
        if self.unembed and self.vocab_size is None:
            raise ValueError("unembed needs a vocab_size")
        if self.encoder_layers < 0:
            raise ValueError("encoder_layers must not be negative")

    def encoder(self) -> TransformerConfig:
        """The encoder's configuration: this wiring with ``encoder_layers`` blocks that see the
        whole source (not causal), no cross-attention and no unembedding."""
        if not self.encoder_layers:
            raise ValueError("this configuration has no encoder (encoder_layers is 0)")
        return replace(self, n_layers=self.encoder_layers, encoder_layers=0, causal=False,
                       unembed=False)  # fmt: skip

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    @property
    def hidden(self) -> int:
        return self.d_ffn if self.d_ffn is not None else 4 * self.d_model
