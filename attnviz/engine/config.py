"""The one frozen configuration that describes a transformer to the engine."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from attnviz.engine.positional import RopeScaling

Norm = Literal["none", "pre", "post"]
NormType = Literal["layer", "rms"]
Positional = Literal["none", "sinusoidal", "learned", "rope"]
RopeStyle = Literal["pairs", "halves"]
Activation = Literal["gelu", "gelu_tanh", "silu", "relu"]
QKNorm = Literal["none", "head", "proj"]
LayerType = Literal["full_attention", "sliding_attention"]
LAYER_TYPES: tuple[LayerType, ...] = ("full_attention", "sliding_attention")


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
    # Each head's width; None: d_model / n_heads. Qwen3's and Gemma's heads are wider or
    # narrower than that: the projections are then (d_model, n_heads * d_head).
    head_dim: int | None = None
    # RoPE turns only the first rotary_dim coordinates of each head (GPT-NeoX's rotary_pct,
    # Phi's partial_rotary_factor); None: all of them.
    rotary_dim: int | None = None
    rope_scaling: RopeScaling | None = None  # how the frequencies stretch past the trained context
    # The base of the layers of type "sliding_attention", which then rotate with no scaling
    # (Gemma 3's rope_local_base_freq); None: every layer uses rope_base and rope_scaling.
    rope_local_base: float | None = None
    # Multimodal rotary (M-RoPE, Qwen2-VL's mrope_section): the rotated frequencies, in pairs,
    # split into sections (temporal, height, width) that each turn by their own position
    # (``Layout.positions`` (sections, T)); they sum to rotary_dim / 2. None: one position.
    rope_sections: tuple[int, ...] | None = None
    # The sections' frequencies interleaved (Qwen3-VL: f reads section f mod n) rather than
    # in consecutive chunks (Qwen2-VL, Qwen2.5-VL).
    rope_interleaved: bool = False
    # An RMSNorm of queries and keys before RoPE: "head", one weight (d_head,) for every head
    # (Qwen3, Gemma 3); "proj", over the whole projection before it is split into heads (OLMo 2).
    qk_norm: QKNorm = "none"
    # The parallel residual of GPT-NeoX: x + attn(ln1(x)) + mlp(ln2(x)).
    parallel: bool = False
    # A norm on each sublayer's output before the residual adds it: x + LN_out(f(...)). With
    # norm "pre", Gemma 2/3's norms around each sublayer; with norm "none", OLMo 2's.
    out_norm: bool = False
    ln_offset: float = 0.0  # norms scale by (ln_offset + w): Gemma's (1 + w)
    embed_scale: float = 1.0  # X = W_E[ids] * embed_scale (Gemma: sqrt(d_model))
    # Logits multiplied by this instead of divided by sqrt(d_head) (Gemma's
    # query_pre_attn_scalar ** -0.5); None: 1 / sqrt(d_head) when ``scale``.
    attn_scale: float | None = None
    attn_softcap: float | None = None  # weights = softmax(c * tanh(scores / c)) (Gemma 2)
    final_softcap: float | None = None  # logits = c * tanh(logits / c) (Gemma 2)
    # A sliding layer's query i sees key j only when 0 <= i - j < sliding_window (causal), or
    # |i - j| < sliding_window without the causal rule: sliding_window - 1 keys on each side.
    # A tuple: each layer's own (None: that layer sees every key), where the sizes differ from
    # layer to layer (NeoMME's short and long windows), with no layer_types (``window_fields``).
    sliding_window: int | tuple[int | None, ...] | None = None
    # Each layer's attention, "full_attention" or "sliding_attention" (transformers' names);
    # None: every layer slides when sliding_window is set (Mistral), else none does.
    layer_types: tuple[LayerType, ...] | None = None
    # On a sliding layer, the window still hides a bidirectional span's keys that are as far
    # back as the window or farther (transformers' Gemma 3: AND(window, OR(causal, span)));
    # False: a span sees itself whole on every layer (PaliGemma 2: OR(AND(window, causal), span)).
    window_in_spans: bool = True

    def __post_init__(self) -> None:
        self._check_sizes()
        self._check_windows()
        self._check_layer_types()
        self._check_rope_sections()
        self._check_heads_and_output()

    def _check_sizes(self) -> None:
        if self.d_model < 1 or self.n_layers < 1 or self.n_heads < 1:
            raise ValueError("d_model, n_layers and n_heads must be positive")
        if self.head_dim is not None and self.head_dim < 1:
            raise ValueError(f"head_dim must be positive (got {self.head_dim})")
        if self.head_dim is None and self.d_model % self.n_heads:
            raise ValueError(f"n_heads {self.n_heads} does not divide d_model {self.d_model}")
        if self.rotary_dim is not None and not (
            0 < self.rotary_dim <= self.d_head and self.rotary_dim % 2 == 0
        ):
            raise ValueError(
                f"rotary_dim {self.rotary_dim} must be even and at most the head size {self.d_head}"
            )

    def _check_layer_types(self) -> None:
        if self.layer_types is None:
            return
        if len(self.layer_types) != self.n_layers:
            raise ValueError(
                f"layer_types names {len(self.layer_types)} layers, the model has {self.n_layers}"
            )
        bad = [t for t in self.layer_types if t not in LAYER_TYPES]
        if bad:
            raise ValueError(f"layer_types: {bad[0]!r} is not one of {LAYER_TYPES}")
        if "sliding_attention" in self.layer_types and self.sliding_window is None:
            raise ValueError("layer_types has sliding layers but no sliding_window")

    def _check_rope_sections(self) -> None:
        if self.rope_sections is None:
            return
        half = (self.rotary_dim or self.d_head) // 2
        if (
            self.rope_style != "halves"
            or sum(self.rope_sections) != half
            or min(self.rope_sections) < 0
        ):
            raise ValueError(
                f"rope_sections {self.rope_sections} must be counts of frequency pairs "
                f"summing to the {half} pairs RoPE turns, with rope_style 'halves'"
            )

    def _check_heads_and_output(self) -> None:
        for name in ("attn_softcap", "final_softcap"):
            cap = getattr(self, name)
            if cap is not None and not cap > 0:
                raise ValueError(f"{name} must be positive (got {cap})")
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

    def _check_windows(self) -> None:
        w = self.sliding_window
        if isinstance(w, tuple):
            if len(w) != self.n_layers:
                raise ValueError(
                    f"sliding_window names {len(w)} layers' windows, the model has {self.n_layers}"
                )
            if self.layer_types is not None:
                raise ValueError(
                    "sliding_window names each layer's window: layer_types must then be unset"
                )
        for size in w if isinstance(w, tuple) else (w,):
            if size is not None and size < 1:
                raise ValueError(f"sliding_window must be positive (got {size})")

    def encoder(self) -> TransformerConfig:
        """The encoder's configuration: this wiring with ``encoder_layers`` blocks that see the
        whole source (not causal), no cross-attention and no unembedding."""
        if not self.encoder_layers:
            raise ValueError("this configuration has no encoder (encoder_layers is 0)")
        return replace(self, n_layers=self.encoder_layers, encoder_layers=0, causal=False,
                       unembed=False)  # fmt: skip

    @property
    def d_head(self) -> int:
        return self.head_dim if self.head_dim is not None else self.d_model // self.n_heads

    @property
    def d_attn(self) -> int:
        """The width of all heads side by side: n_heads * d_head (d_model unless head_dim)."""
        return self.n_heads * self.d_head

    @property
    def score_scale(self) -> float:
        """What q . k is multiplied by to make a score: ``attn_scale``, 1 / sqrt(d_head), or 1
        for an unscaled model."""
        if self.attn_scale is not None:
            return self.attn_scale
        return 1 / math.sqrt(self.d_head) if self.scale else 1.0

    def window_of(self, layer: int) -> int | None:
        """The sliding window of ``layer``'s self-attention, or None when it sees every key."""
        if self.sliding_window is None:
            return None
        if isinstance(self.sliding_window, tuple):
            return self.sliding_window[layer]
        if self.layer_types is None or self.layer_types[layer] == "sliding_attention":
            return self.sliding_window
        return None

    def rope_of(self, layer: int) -> tuple[float, RopeScaling | None]:
        """The RoPE base and scaling of ``layer`` (Gemma 3's sliding layers have their own)."""
        if self.rope_local_base is not None and self.window_of(layer) is not None:
            return self.rope_local_base, None
        return self.rope_base, self.rope_scaling

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


def window_fields(windows: Sequence[int | None]) -> dict[str, Any]:
    """The fields (``sliding_window``, ``layer_types``) that give layer i the window
    ``windows[i]`` (None: it sees every key): one size, with the layers that slide named
    (Gemma 2's alternation); sizes that differ from layer to layer, each layer's own."""
    sizes = sorted({w for w in windows if w is not None})
    if not sizes:
        return {}
    if len(sizes) > 1:
        return {"sliding_window": tuple(windows)}
    types = tuple("sliding_attention" if w is not None else "full_attention" for w in windows)
    return {"sliding_window": sizes[0], "layer_types": types}
