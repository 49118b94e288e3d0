"""The one frozen configuration that describes a transformer to the engine."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

Norm = Literal["none", "pre", "post"]
NormType = Literal["layer", "rms"]
Positional = Literal["none", "sinusoidal", "learned", "rope"]
RopeStyle = Literal["pairs", "halves"]
Activation = Literal["gelu", "gelu_tanh", "silu", "relu"]


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
    # The most tokens the model reads (its context); a learned position table has this many rows
    n_ctx: int = 64
    rope_base: float = 10000.0
    # Which coordinates RoPE rotates together: "pairs", each adjacent pair (2i, 2i+1), as
    # RoFormer and the toy lab; "halves", coordinate i with i + d_head/2, as Hugging Face's
    # Llama-style models (``rotate_half``). Both turn pair i by pos * base^(-2i/d_head).
    rope_style: RopeStyle = "pairs"
    residual: bool = False
    norm: Norm = "none"  # "pre": x + f(LN(x)); "post": LN(x + f(x))
    norm_type: NormType = "layer"  # "rms": RMSNorm, x / sqrt(mean(x^2) + eps) * w, no shift
    ln_eps: float = 1e-5
    ln_affine: bool = False  # LayerNorms carry a learned scale and shift
    embed_norm: bool = False  # LayerNorm on the input after the positional table (BERT)
    final_norm: bool = False  # LayerNorm after the last block (GPT-2's ln_f)
    ffn: bool = False
    d_ffn: int | None = None  # hidden width of the feed-forward; 4 * d_model when None
    activation: Activation = "gelu"
    # A gated feed-forward (GLU; SwiGLU with silu): act(x @ W_gate) * (x @ W_in), then @ W_out
    gated: bool = False
    bias: bool = False  # linear layers carry biases
    qkv_bias: bool = False  # the query, key and value projections carry biases (Qwen2)
    # Grouped-query attention: this many key/value heads, each shared by n_heads / n_kv_heads
    # query heads (None: one per query head)
    n_kv_heads: int | None = None
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
        if self.n_kv_heads is not None and (self.n_kv_heads < 1 or self.n_heads % self.n_kv_heads):
            raise ValueError(
                f"n_kv_heads {self.n_kv_heads} must divide n_heads {self.n_heads} (grouped-query "
                "attention shares each key/value head among the same number of query heads)"
            )

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
    def kv_heads(self) -> int:
        """Key/value heads: ``n_kv_heads``, or one per query head."""
        return self.n_kv_heads if self.n_kv_heads is not None else self.n_heads

    def kv_head_of(self, head: int) -> int:
        """The key/value head that query head ``head`` reads (grouped-query attention)."""
        return head // (self.n_heads // self.kv_heads)

    @property
    def hidden(self) -> int:
        return self.d_ffn if self.d_ffn is not None else 4 * self.d_model
