"""A transparent transformer: every internal has a named hook point, attention is explicit.

Weights use the article's convention, ``Q = x @ W_Q``: a (d_in, d_out) matrix multiplies row
vectors from the right. Head i of a (B, T, d_model) projection is columns [i*hs, (i+1)*hs).
Parameters start at zero; a pure function per model family (e.g. ``toy.toy_weights``) builds a
state dict that ``load_state_dict`` puts in, so nothing is ever initialised silently.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attnviz.engine.config import TransformerConfig
from attnviz.engine.hooks import HookPoint
from attnviz.engine.positional import apply_rope, sinusoidal_table


def _param(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape), requires_grad=False)


class LayerNorm(nn.Module):
    """LayerNorm over the last axis; with ``affine`` a learned scale ``w`` and shift ``b``. With
    ``norm_type`` "rms", RMSNorm: x / sqrt(mean(x^2) + eps), times ``w``; no mean, no shift."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.eps = cfg.ln_eps
        self.rms = cfg.norm_type == "rms"
        self.w = _param(cfg.d_model) if cfg.ln_affine else None
        self.b = _param(cfg.d_model) if cfg.ln_affine and not self.rms else None
        self.hook_normalized = HookPoint("B T C")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.rms:
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # (B, T, C)
            return self.hook_normalized(y if self.w is None else y * self.w)
        return self.hook_normalized(F.layer_norm(x, x.shape[-1:], self.w, self.b, self.eps))


def attention_scores(
    q: torch.Tensor, k: torch.Tensor, cfg: TransformerConfig, causal: bool | None = None
) -> torch.Tensor:
    """Logits of queries against keys: q k^T, divided by sqrt(d_head) when scaled, -inf for the
    keys after each query when causal (``cfg.causal`` unless ``causal`` says otherwise: a
    cross-attention never is). (..., T, hs) x (..., S, hs) -> (..., T, S)

    Every head is computed alone by the same matrix product, so a trace can recompute one head's
    scores from its q and k and get the very numbers of the forward (tested)."""
    T = q.shape[-2]
    scores = q @ k.transpose(-2, -1)  # (..., T, S)
    if cfg.scale:
        scores = scores / math.sqrt(cfg.d_head)
    if cfg.causal if causal is None else causal:
        future = torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1)  # (T, T)
        scores = scores.masked_fill(future, float("-inf"))
    return scores


def attention_pattern(scores: torch.Tensor) -> torch.Tensor:
    """Softmax over the keys: each query's row of weights sums to 1. (..., T, T)"""
    return torch.softmax(scores, dim=-1)


class Attention(nn.Module):
    """Multi-head attention with the pattern computed explicitly (no fused kernel).

    Self-attention reads queries, keys and values from x. A cross-attention (``cross``) reads its
    queries from x and its keys and values from a memory (an encoder's output, S tokens): it is
    never causal and never rotated (RoPE relates two positions of one sequence), so its keys
    hold no position but what the memory's vectors carry."""

    def __init__(self, cfg: TransformerConfig, cross: bool = False) -> None:
        super().__init__()
        self.cfg = cfg
        self.cross = cross
        d = cfg.d_model
        d_kv = cfg.kv_heads * cfg.d_head  # fewer than d with grouped-query attention
        qkv_bias = cfg.bias or cfg.qkv_bias
        self.W_Q = _param(d, d)
        self.W_K = _param(d, d_kv)
        self.W_V = _param(d, d_kv)
        self.W_O = _param(d, d)
        self.b_Q = _param(d) if qkv_bias else None
        self.b_K = _param(d_kv) if qkv_bias else None
        self.b_V = _param(d_kv) if qkv_bias else None
        self.b_O = _param(d) if cfg.bias else None
        kv = "S" if cross else "T"
        self.hook_q = HookPoint("B nh T hs")
        self.hook_k = HookPoint(f"B nh {kv} hs")
        self.hook_v = HookPoint(f"B nh {kv} hs")
        self.rotary = cfg.positional == "rope" and not cross
        if self.rotary:
            self.hook_rot_q = HookPoint("B nh T hs")
            self.hook_rot_k = HookPoint("B nh T hs")
        self.hook_scores = HookPoint(f"B nh T {kv}")  # logits after scaling; masked = -inf
        self.hook_pattern = HookPoint(f"B nh T {kv}")  # softmax over keys; rows sum to 1
        self.hook_z = HookPoint("B nh T hs")  # pattern @ v

    def _heads(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
        """x (B, T, C) @ w -> (B, nh, T, hs); a grouped-query key or value projection gives
        kv_heads heads, each then repeated for the query heads that share it."""
        B, T, _ = x.shape
        cfg = self.cfg
        y = x @ w if b is None else x @ w + b  # (B, T, n * hs)
        n = y.shape[-1] // cfg.d_head
        y = y.view(B, T, n, cfg.d_head).transpose(1, 2)  # (B, n, T, hs)
        if n != cfg.n_heads:  # query head h reads key/value head h // (nh / n)
            y = y.repeat_interleave(cfg.n_heads // n, dim=1)  # (B, nh, T, hs)
        return y

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C); a cross-attention takes its keys and values from
        ``memory`` (B, S, C)."""
        if self.cross != (memory is not None):
            raise ValueError("a cross-attention needs a memory; a self-attention takes none")
        B, T, C = x.shape
        cfg = self.cfg
        src = x if memory is None else memory  # (B, S, C); S = T for self-attention
        q = self.hook_q(self._heads(x, self.W_Q, self.b_Q))  # (B, nh, T, hs)
        k = self.hook_k(self._heads(src, self.W_K, self.b_K))  # (B, nh, S, hs)
        v = self.hook_v(self._heads(src, self.W_V, self.b_V))  # (B, nh, S, hs)
        if self.rotary:
            q = self.hook_rot_q(apply_rope(q, cfg.rope_base, cfg.rope_style))
            k = self.hook_rot_k(apply_rope(k, cfg.rope_base, cfg.rope_style))
        causal = False if self.cross else cfg.causal
        scores = self.hook_scores(attention_scores(q, k, cfg, causal))  # (B, nh, T, S)
        pattern = self.hook_pattern(attention_pattern(scores))  # (B, nh, T, S)
        z = self.hook_z(pattern @ v)  # (B, nh, T, hs)
        z = z.transpose(1, 2).reshape(B, T, C)  # (B, T, C): heads side by side
        out = z @ self.W_O if self.b_O is None else z @ self.W_O + self.b_O
        return out  # the block names it: hook_attn_out, hook_cross_out


def activate(h: torch.Tensor, activation: str) -> torch.Tensor:
    if activation == "gelu":
        return F.gelu(h)
    if activation == "gelu_tanh":
        return F.gelu(h, approximate="tanh")
    if activation == "silu":
        return F.silu(h)
    if activation == "relu":
        return F.relu(h)
    raise ValueError(f"activation {activation!r} is not one the engine has")


class FeedForward(nn.Module):
    """Position-wise MLP: act(x @ W_in + b_in) @ W_out + b_out; gated (GLU, SwiGLU with silu):
    (act(x @ W_gate) * (x @ W_in)) @ W_out."""

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.W_in = _param(cfg.d_model, cfg.hidden)
        self.W_gate = _param(cfg.d_model, cfg.hidden) if cfg.gated else None
        self.W_out = _param(cfg.hidden, cfg.d_model)
        self.b_in = _param(cfg.hidden) if cfg.bias else None
        self.b_gate = _param(cfg.hidden) if cfg.bias and cfg.gated else None
        self.b_out = _param(cfg.d_model) if cfg.bias else None
        self.hook_pre = HookPoint("B T H")  # before the activation (the gate's, when gated)
        if cfg.gated:
            self.hook_lin = HookPoint("B T H")  # x @ W_in, which the gate scales
        self.hook_post = HookPoint("B T H")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lin = x @ self.W_in if self.b_in is None else x @ self.W_in + self.b_in  # (B, T, H)
        if self.W_gate is None:
            h = self.hook_post(activate(self.hook_pre(lin), self.cfg.activation))
        else:
            gate = x @ self.W_gate if self.b_gate is None else x @ self.W_gate + self.b_gate
            a = activate(self.hook_pre(gate), self.cfg.activation)  # (B, T, H)
            h = self.hook_post(a * self.hook_lin(lin))
        return h @ self.W_out if self.b_out is None else h @ self.W_out + self.b_out  # (B, T, C)


class Block(nn.Module):
    """One layer: attention sublayer, then (in a decoder) the cross-attention sublayer, then
    (optionally) the feed-forward sublayer.

    Each sublayer f follows the same rules: xn = LN(x) when pre-norm, else x; y = f(xn);
    x = x + y with the residual, else y; x = LN(x) when post-norm. The cross-attention's f
    reads the memory as it is (the encoder's output, normalised by its own final norm).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.hook_resid_pre = HookPoint("B T C")
        self.ln1 = LayerNorm(cfg) if cfg.norm != "none" else None
        self.attn = Attention(cfg)
        self.hook_attn_out = HookPoint("B T C")
        self.hook_resid_mid = HookPoint("B T C")
        if cfg.encoder_layers:
            self.ln_cross = LayerNorm(cfg) if cfg.norm != "none" else None
            self.cross_attn = Attention(cfg, cross=True)
            self.hook_cross_out = HookPoint("B T C")
            self.hook_resid_cross = HookPoint("B T C")
        if cfg.ffn:
            self.ln2 = LayerNorm(cfg) if cfg.norm != "none" else None
            self.mlp = FeedForward(cfg)
            self.hook_mlp_out = HookPoint("B T C")
        self.hook_resid_post = HookPoint("B T C")

    def _sublayer(
        self,
        x: torch.Tensor,
        f: nn.Module,
        ln: LayerNorm | None,
        hook: HookPoint,
        *memory: torch.Tensor,
    ) -> torch.Tensor:
        y = hook(f(ln(x) if ln is not None and self.cfg.norm == "pre" else x, *memory))
        x = x + y if self.cfg.residual else y
        return ln(x) if ln is not None and self.cfg.norm == "post" else x

    def forward(self, x: torch.Tensor, memory: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C); a decoder's block also reads ``memory`` (B, S, C)."""
        if bool(self.cfg.encoder_layers) != (memory is not None):
            raise ValueError("a decoder block needs the encoder's output; other blocks take none")
        x = self.hook_resid_pre(x)
        x = self.hook_resid_mid(self._sublayer(x, self.attn, self.ln1, self.hook_attn_out))
        if memory is not None:
            x = self._sublayer(x, self.cross_attn, self.ln_cross, self.hook_cross_out, memory)
            x = self.hook_resid_cross(x)
        if self.cfg.ffn:
            x = self._sublayer(x, self.mlp, self.ln2, self.hook_mlp_out)
        return self.hook_resid_post(x)


class Transformer(nn.Module):
    """A stack of blocks over token vectors X (B, T, d_model), or over token ids (B, T) when the
    config has a vocabulary: then X = W_E[ids] (+ W_type[0] with a token-type table).

    hidden state 0 is ``blocks.0.hook_resid_pre`` (X after the positional table and any embedding
    norm); hidden state l is ``blocks.{l-1}.hook_resid_post``; with a final norm, the model's
    output is ``ln_final.hook_normalized``. With ``unembed``, ``logits(output)`` maps it to
    scores over the vocabulary (``hook_logits``), for a model that predicts tokens.

    With ``encoder_layers``, the model is an encoder-decoder: ``encoder``, a Transformer of its
    own (``cfg.encoder()``, with its own token table), reads the source ids; this stack is the
    decoder, and each of its blocks attends to the encoder's output (``blocks.{i}.cross_attn``).
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        if cfg.encoder_layers:
            self.encoder = Transformer(cfg.encoder())
        if cfg.vocab_size is not None:
            self.W_E = _param(cfg.vocab_size, cfg.d_model)
        self.hook_embed = HookPoint("B T C")
        if cfg.type_vocab_size:
            self.W_type = _param(cfg.type_vocab_size, cfg.d_model)
            self.hook_type_embed = HookPoint("C")
        if cfg.positional in ("sinusoidal", "learned"):
            if cfg.positional == "learned":
                self.W_pos = _param(cfg.n_ctx, cfg.d_model)
            self.hook_pos_embed = HookPoint("T C")
        self.ln_embed = LayerNorm(cfg) if cfg.embed_norm else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg) if cfg.final_norm else None
        if cfg.unembed:
            assert cfg.vocab_size is not None
            self.W_U = _param(cfg.d_model, cfg.vocab_size)
            self.hook_logits = HookPoint("B T V")

    def positional_table(self, T: int) -> torch.Tensor | None:
        """The (T, C) table added to X; None when positions enter elsewhere (RoPE) or nowhere."""
        if self.cfg.positional == "sinusoidal":
            return sinusoidal_table(
                T, self.cfg.d_model, dtype=self.param_dtype, device=self.param_device
            )
        if self.cfg.positional == "learned":
            if self.cfg.n_ctx < T:
                raise ValueError(f"{T} positions exceed the table's {self.cfg.n_ctx}")
            return self.W_pos[:T]
        return None

    @property
    def param_dtype(self) -> torch.dtype:
        return self._first_weight.dtype

    @property
    def param_device(self) -> torch.device:
        return self._first_weight.device

    @property
    def _first_weight(self) -> torch.Tensor:
        block = self.blocks[0]
        assert isinstance(block, Block)
        return block.attn.W_Q

    def forward(self, x: torch.Tensor, source: torch.Tensor | None = None) -> torch.Tensor:
        """x: (B, T) ids or (B, T, C) vectors -> (B, T, C). An encoder-decoder also takes
        ``source``, what its encoder reads (B, S), and every decoder block attends to the
        encoder's output (B, S, C)."""
        if bool(self.cfg.encoder_layers) != (source is not None):
            raise ValueError("an encoder-decoder needs a source; other models take none")
        memory = self.encoder(source) if source is not None else None  # (B, S, C)
        if self.cfg.vocab_size is not None:
            x = self.W_E[x]  # (B, T) ids -> (B, T, C)
        x = self.hook_embed(x)  # (B, T, C)
        if self.cfg.type_vocab_size:
            x = x + self.hook_type_embed(self.W_type[0])  # (C,): every token is segment 0
        pos = self.positional_table(x.shape[1])
        if pos is not None:
            x = x + self.hook_pos_embed(pos)  # (T, C) broadcasts over B
        if self.ln_embed is not None:
            x = self.ln_embed(x)
        for block in self.blocks:
            x = block(x, memory)
        if self.ln_final is not None:
            x = self.ln_final(x)
        return x

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output (B, T, C) -> scores over the vocabulary (B, T, V)."""
        return self.hook_logits(x @ self.W_U)
