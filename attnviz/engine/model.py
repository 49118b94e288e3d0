"""A transparent transformer: every internal has a named hook point, attention is explicit.

Weights use the article's convention, ``Q = x @ W_Q``: a (d_in, d_out) matrix multiplies row
vectors from the right. Head i of a (B, T, d_model) projection is columns [i*hs, (i+1)*hs).
Parameters start at zero; a pure function per model family (e.g. ``toy.toy_weights``) builds a
state dict that ``load_state_dict`` puts in, so nothing is ever initialised silently.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

import torch
import torch.nn.functional as F
from torch import nn

from attnviz.engine.config import TransformerConfig
from attnviz.engine.hooks import HookPoint
from attnviz.engine.layout import Layout, hidden_keys, positions_of, rotate, spans_of
from attnviz.engine.positional import sinusoidal_table

if TYPE_CHECKING:
    from attnviz.engine.placement import Placement

HALF = (torch.float16, torch.bfloat16)
# A self-attention whose (B, nh, T, S) scores would pass this many bytes, and whose scores and
# weights no hook asks to see whole, is computed a few heads at a time: at 4,096 tokens a
# 14-head layer's scores are 0.9 GB, one head's 64 MB.
CHUNK_BYTES = 64 * 2**20


def _param(*shape: int) -> nn.Parameter:
    return nn.Parameter(torch.zeros(*shape), requires_grad=False)


class LayerNorm(nn.Module):
    """LayerNorm over the last axis; with ``affine`` a learned scale ``w`` and shift ``b``. With
    ``norm_type`` "rms", RMSNorm: x / sqrt(mean(x^2) + eps), times ``w``; no mean, no shift. The
    scale is (ln_offset + w) (Gemma's 1 + w). ``width``: the axis' size (d_model by default; a
    head or a projection for the norms of queries and keys, which are always RMS and affine).
    Half-precision inputs are normalised in float32 and cast back, as transformers does."""

    def __init__(
        self, cfg: TransformerConfig, width: int | None = None, shape: str = "B T C"
    ) -> None:
        super().__init__()
        qk = width is not None
        n = cfg.d_model if width is None else width
        self.eps = cfg.ln_eps
        self.offset = cfg.ln_offset
        self.rms = cfg.norm_type == "rms" or qk
        self.w = _param(n) if cfg.ln_affine or qk else None
        self.b = _param(n) if cfg.ln_affine and not self.rms else None
        self.hook_normalized = HookPoint(shape)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        dtype = x.dtype
        if dtype in HALF:
            x = x.float()
        w: torch.Tensor | None = self.w
        if w is not None and self.offset:
            w = self.offset + w.float()
        if self.rms:
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)  # (..., n)
            y = y if w is None else y * w
        else:
            b: torch.Tensor | None = self.b
            if dtype in HALF:
                w = None if w is None else w.float()
                b = None if b is None else b.float()
            y = F.layer_norm(x, x.shape[-1:], w, b, self.eps)
        return self.hook_normalized(y.to(dtype))


def attention_scores(
    q: torch.Tensor,
    k: torch.Tensor,
    cfg: TransformerConfig,
    causal: bool | None = None,
    *,
    layer: int = 0,
    start: int = 0,
    cross: bool = False,
    spans: tuple[tuple[int, int], ...] = (),
    key_start: int = 0,
) -> torch.Tensor:
    """Logits of queries against keys: q k^T, scaled (1 / sqrt(d_head), or ``cfg.attn_scale``),
    -inf where a key is hidden: after the query when causal (``cfg.causal`` unless ``causal``
    says otherwise) and not in one of the ``spans`` with it (``Layout.spans``), or out of
    ``layer``'s sliding window. The queries sit at positions ``start`` .. ``start`` + T - 1 (a
    generation step's, after S - T cached keys), the keys at ``key_start`` .. (a tile of
    them). A cross-attention (``cross``) is never causal, never windowed. Before any soft-cap.
    (..., T, hs) x (..., S, hs) -> (..., T, S)

    Every head is computed alone by the same matrix product, so a trace can recompute one head's
    scores from its q and k and get the very numbers of the forward (tested)."""
    T, S = q.shape[-2], k.shape[-2]
    # The product is a new tensor: scaled and masked in place, so that a long text's (nh, T, S)
    # is held once, not three times (autograd needs q and k here, not the product).
    scores = q @ k.transpose(-2, -1)  # (..., T, S)
    if cfg.attn_scale is not None:
        scores.mul_(cfg.attn_scale)
    elif cfg.scale:
        scores.div_(math.sqrt(cfg.d_head))
    causal = False if cross else (cfg.causal if causal is None else causal)
    window = None if cross else cfg.window_of(layer)
    if causal or window is not None:
        spans = () if cross else spans
        hidden = hidden_keys(T, S, start, causal, window, q.device, spans, cfg.window_in_spans,
                             key_start)  # fmt: skip
        scores.masked_fill_(hidden, float("-inf"))
    return scores


def soft_cap(scores: torch.Tensor, cfg: TransformerConfig | None) -> torch.Tensor:
    """The scores after ``cfg``'s soft-cap, c * tanh(s / c), a hidden key still -inf; the
    scores themselves when the model has none."""
    cap = cfg.attn_softcap if cfg is not None else None
    if cap is None:
        return scores
    capped = torch.tanh(scores / cap) * cap
    return capped.masked_fill(torch.isneginf(scores), float("-inf"))


def attention_pattern(scores: torch.Tensor, cfg: TransformerConfig | None = None) -> torch.Tensor:
    """Softmax over the keys of the scores after ``cfg``'s soft-cap, c * tanh(s / c) (a hidden
    key stays -inf): each query's row of weights sums to 1. Half precision is weighed in float32
    and cast back, as transformers does. (..., T, S)"""
    scores = soft_cap(scores, cfg)
    if scores.dtype in HALF:
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(scores.dtype)
    return torch.softmax(scores, dim=-1)


class KVCache:
    """The keys and values a causal model has computed so far, per layer, so that a generation
    step runs only the new tokens: ``model(ids, cache=cache)`` reads positions ``length`` ..
    and appends theirs."""

    def __init__(self) -> None:
        self.length = 0
        self.kv: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def extend(self, layer: int, k: torch.Tensor, v: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """The layer's keys and values with ``k``, ``v`` (B, nh, T, hs) appended."""
        if layer in self.kv:
            k0, v0 = self.kv[layer]
            k, v = torch.cat([k0, k], dim=-2), torch.cat([v0, v], dim=-2)  # (B, nh, S, hs)
        self.kv[layer] = (k, v)
        return k, v


class Attend(Protocol):
    """Another way for a self-attention to weigh its values: (B, nh, T, hs) q, k (each query
    head's keys), v -> z = weights @ v (B, nh, T, hs), with the weights ``attention_scores`` and
    ``attention_pattern`` give, never forming them whole (``attnviz.long``: a fused kernel, or
    tiles of rows). ``spans``: the run's bidirectional spans."""

    def __call__(
        self,
        attn: Attention,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        spans: tuple[tuple[int, int], ...],
    ) -> torch.Tensor: ...


class Attention(nn.Module):
    """Multi-head attention with the pattern computed explicitly (no fused kernel).

    Self-attention reads queries, keys and values from x. A cross-attention (``cross``) reads its
    queries from x and its keys and values from a memory (an encoder's output, S tokens): it is
    never causal and never rotated (RoPE relates two positions of one sequence), so its keys
    hold no position but what the memory's vectors carry. ``layer``: the block's index, which
    picks its sliding window and RoPE base (``cfg.window_of``, ``cfg.rope_of``). With
    ``attend`` set (``Attend``), a self-attention over a whole text (no cache) whose scores and
    weights no hook watches weighs its values that way."""

    def __init__(self, cfg: TransformerConfig, cross: bool = False, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        self.cross = cross
        self.layer = layer
        self.attend: Attend | None = None
        d = cfg.d_model
        d_q = cfg.d_attn  # n_heads * d_head: d unless head_dim says otherwise
        d_kv = cfg.kv_heads * cfg.d_head  # fewer with grouped-query attention
        qkv_bias = cfg.bias or cfg.qkv_bias
        self.W_Q = _param(d, d_q)
        self.W_K = _param(d, d_kv)
        self.W_V = _param(d, d_kv)
        self.W_O = _param(d_q, d)
        self.b_Q = _param(d_q) if qkv_bias else None
        self.b_K = _param(d_kv) if qkv_bias else None
        self.b_V = _param(d_kv) if qkv_bias else None
        self.b_O = _param(d) if cfg.bias else None
        kv = "S" if cross else "T"
        if cfg.qk_norm == "proj":  # over the projection, before the heads are split (OLMo 2)
            self.q_norm = LayerNorm(cfg, d_q, "B T D")
            self.k_norm = LayerNorm(cfg, d_kv, f"B {kv} Dkv")
        elif cfg.qk_norm == "head":  # over each head's vector, one weight for all (Qwen3)
            self.q_norm = LayerNorm(cfg, cfg.d_head, "B nh T hs")
            self.k_norm = LayerNorm(cfg, cfg.d_head, f"B nh {kv} hs")
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

    def _heads(
        self,
        x: torch.Tensor,
        w: torch.Tensor,
        b: torch.Tensor | None,
        norm: LayerNorm | None = None,
        repeat: bool = True,
    ) -> torch.Tensor:
        """x (B, T, C) @ w -> (B, nh, T, hs); a grouped-query key or value projection gives
        kv_heads heads, each then repeated for the query heads that share it (unless not
        ``repeat``). ``norm``: the projection's own norm (qk_norm "proj")."""
        B, T, _ = x.shape
        cfg = self.cfg
        y = x @ w if b is None else x @ w + b  # (B, T, n * hs)
        if norm is not None:
            y = norm(y)
        n = y.shape[-1] // cfg.d_head
        y = y.view(B, T, n, cfg.d_head).transpose(1, 2)  # (B, n, T, hs)
        if repeat and n != cfg.n_heads:  # query head h reads key/value head h // (nh / n)
            y = y.repeat_interleave(cfg.n_heads // n, dim=1)  # (B, nh, T, hs)
        return y

    def _rotate(
        self, x: torch.Tensor, start: int, positions: torch.Tensor | None = None
    ) -> torch.Tensor:
        """RoPE on (B, nh, T, hs) at positions start .. start + T - 1, or at ``positions``
        ((T,), or (sections, T) with ``cfg.rope_sections``: M-RoPE), with this layer's base."""
        return rotate(x, self.cfg, self.layer, start, positions)

    def project(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        start: int = 0,
        positions: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The queries, keys and values that meet in the scores, each (B, nh, T or S, hs):
        projected, normalised (qk_norm) and rotated (RoPE, at positions start .., or at
        ``positions``: ``Layout.positions``), through their hook points. x (B, T, C); a
        cross-attention's keys and values read ``memory``."""
        cfg = self.cfg
        src = x if memory is None else memory  # (B, S, C); S = T for self-attention
        proj = cfg.qk_norm == "proj"
        q_norm = self.q_norm if proj else None
        k_norm = self.k_norm if proj else None
        q = self.hook_q(self._heads(x, self.W_Q, self.b_Q, q_norm))  # (B, nh, T, hs)
        k = self.hook_k(self._heads(src, self.W_K, self.b_K, k_norm))  # (B, nh, S, hs)
        v = self.hook_v(self._heads(src, self.W_V, self.b_V))  # (B, nh, S, hs)
        if cfg.qk_norm == "head":
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rotary:
            q = self.hook_rot_q(self._rotate(q, start, positions))
            k = self.hook_rot_k(self._rotate(k, start, positions))
        return q, k, v

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        cache: KVCache | None = None,
        layout: Layout | None = None,
    ) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C); a cross-attention takes its keys and values from
        ``memory`` (B, S, C). With ``cache`` (self-attention), x holds the tokens after the
        cached ones, whose keys and values are read from it and theirs appended. ``layout``
        (self-attention): the tokens' rotary positions and bidirectional spans."""
        if self.cross != (memory is not None):
            raise ValueError("a cross-attention needs a memory; a self-attention takes none")
        B, T, _ = x.shape
        cfg = self.cfg
        start = cache.length if cache is not None and not self.cross else 0
        positions = None if self.cross else positions_of(layout, T)
        spans = () if self.cross else spans_of(layout)
        q, k, v = self.project(x, memory, start, positions)
        if cache is not None and not self.cross:
            k, v = cache.extend(self.layer, k, v)  # (B, nh, start + T, hs)
        S = k.shape[-2]
        per_head = B * T * S * 4  # bytes of one head's float32 scores
        seen = self.hook_scores.watched or self.hook_pattern.watched
        if self.attend is not None and cache is None and not self.cross and not seen:
            z = self.hook_z(self.attend(self, q, k, v, spans))  # (B, nh, T, hs)
            return self._out(z)
        step = cfg.n_heads if seen else max(1, CHUNK_BYTES // per_head)
        zs = []
        for h in range(0, cfg.n_heads, step):  # one pass, unless the heads are chunked
            qh, kh, vh = q[:, h : h + step], k[:, h : h + step], v[:, h : h + step]
            scores = attention_scores(qh, kh, cfg, layer=self.layer, start=start,
                                      cross=self.cross, spans=spans)  # fmt: skip
            scores = self.hook_scores(scores)  # (B, nh, T, S)
            pattern = self.hook_pattern(attention_pattern(scores, cfg))  # (B, nh, T, S)
            zs.append(pattern.to(vh.dtype) @ vh)  # (B, step, T, hs)
            del scores, pattern
        z = self.hook_z(zs[0] if len(zs) == 1 else torch.cat(zs, dim=1))  # (B, nh, T, hs)
        return self._out(z)

    def _out(self, z: torch.Tensor) -> torch.Tensor:
        """The heads' outputs (B, nh, T, hs) -> the sublayer's (B, T, C)."""
        B, _, T, _ = z.shape
        z = z.transpose(1, 2).reshape(B, T, self.cfg.d_attn)  # (B, T, nh * hs): side by side
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
    """One layer (the ``layer``-th): attention sublayer, then (in a decoder) the cross-attention
    sublayer, then (optionally) the feed-forward sublayer.

    Each sublayer f follows the same rules: xn = LN(x) when pre-norm, else x; y = f(xn), then
    LN_out(y) with ``out_norm``; x = x + y with the residual, else y; x = LN(x) when post-norm.
    The cross-attention's f reads the memory as it is (the encoder's output, normalised by its
    own final norm). With ``parallel`` (GPT-NeoX), attention and feed-forward both read the
    block's input: x + attn(LN1(x)) + mlp(LN2(x)).
    """

    def __init__(self, cfg: TransformerConfig, layer: int = 0) -> None:
        super().__init__()
        self.cfg = cfg
        norm = cfg.norm != "none"
        self.hook_resid_pre = HookPoint("B T C")
        self.ln1 = LayerNorm(cfg) if norm else None
        self.attn = Attention(cfg, layer=layer)
        self.ln1_out = LayerNorm(cfg) if cfg.out_norm else None
        self.hook_attn_out = HookPoint("B T C")
        self.hook_resid_mid = HookPoint("B T C")
        if cfg.encoder_layers:
            self.ln_cross = LayerNorm(cfg) if norm else None
            self.cross_attn = Attention(cfg, cross=True, layer=layer)
            self.hook_cross_out = HookPoint("B T C")
            self.hook_resid_cross = HookPoint("B T C")
        if cfg.ffn:
            self.ln2 = LayerNorm(cfg) if norm else None
            self.mlp = FeedForward(cfg)
            self.ln2_out = LayerNorm(cfg) if cfg.out_norm else None
            self.hook_mlp_out = HookPoint("B T C")
        self.hook_resid_post = HookPoint("B T C")

    def _sublayer(
        self,
        x: torch.Tensor,
        f: nn.Module,
        ln: LayerNorm | None,
        hook: HookPoint,
        *memory: torch.Tensor,
        ln_out: LayerNorm | None = None,
        **attend: KVCache | Layout,
    ) -> torch.Tensor:
        xn = ln(x) if ln is not None and self.cfg.norm == "pre" else x
        y = f(xn, *memory, **attend)
        y = hook(y if ln_out is None else ln_out(y))
        x = x + y if self.cfg.residual else y
        return ln(x) if ln is not None and self.cfg.norm == "post" else x

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        cache: KVCache | None = None,
        layout: Layout | None = None,
    ) -> torch.Tensor:
        """x (B, T, C) -> (B, T, C); a decoder's block also reads ``memory`` (B, S, C). With
        ``cache``, x holds the tokens after the cached ones (see ``KVCache``); ``layout``,
        where the tokens sit (``Layout``), reaches the self-attention."""
        if bool(self.cfg.encoder_layers) != (memory is not None):
            raise ValueError("a decoder block needs the encoder's output; other blocks take none")
        cfg = self.cfg
        attend: dict[str, KVCache | Layout] = {}  # only what is given: hooks see today's calls
        if cache is not None:
            attend["cache"] = cache
        if layout is not None:
            attend["layout"] = layout
        x = self.hook_resid_pre(x)
        if cfg.parallel:
            if not (cfg.ffn and cfg.residual and cfg.norm == "pre" and memory is None):
                raise ValueError("a parallel block is pre-norm, residual, with a feed-forward")
            xn = self.ln1(x) if self.ln1 is not None else x
            a = self.attn(xn, **attend)
            a = self.hook_attn_out(a if self.ln1_out is None else self.ln1_out(a))
            self.hook_resid_mid(x + a)
            m = self.mlp(self.ln2(x) if self.ln2 is not None else x)
            m = self.hook_mlp_out(m if self.ln2_out is None else self.ln2_out(m))
            return self.hook_resid_post(m + a + x)  # transformers' order of the sum
        x = self._sublayer(x, self.attn, self.ln1, self.hook_attn_out, ln_out=self.ln1_out,
                           **attend)  # fmt: skip
        x = self.hook_resid_mid(x)
        if memory is not None:
            x = self._sublayer(x, self.cross_attn, self.ln_cross, self.hook_cross_out, memory)
            x = self.hook_resid_cross(x)
        if cfg.ffn:
            x = self._sublayer(x, self.mlp, self.ln2, self.hook_mlp_out, ln_out=self.ln2_out)
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
        self.blocks = nn.ModuleList(Block(cfg, i) for i in range(cfg.n_layers))
        self.ln_final = LayerNorm(cfg) if cfg.final_norm else None
        if cfg.unembed:
            assert cfg.vocab_size is not None
            self.W_U = _param(cfg.d_model, cfg.vocab_size)
            self.hook_logits = HookPoint("B T V")
        # Where the parts are when spread over devices (``engine.placement.place_model``).
        self.placement: Placement | None = None

    def positional_table(self, T: int, start: int = 0) -> torch.Tensor | None:
        """The (T, C) table added to X at positions start .. start + T - 1; None when positions
        enter elsewhere (RoPE) or nowhere."""
        if self.cfg.positional == "sinusoidal":
            table = sinusoidal_table(
                start + T, self.cfg.d_model, dtype=self.param_dtype, device=self.embed_device
            )
            return table[start:]
        if self.cfg.positional == "learned":
            if self.cfg.n_ctx < start + T:
                raise ValueError(f"{start + T} positions exceed the table's {self.cfg.n_ctx}")
            return self.W_pos[start : start + T]
        return None

    @property
    def param_dtype(self) -> torch.dtype:
        return self._first_weight.dtype

    @property
    def param_device(self) -> torch.device:
        return self._first_weight.device

    @property
    def embed_device(self) -> torch.device:
        """Where the token table is (the blocks' device unless the model is placed)."""
        return self.W_E.device if self.cfg.vocab_size is not None else self.param_device

    @property
    def _first_weight(self) -> torch.Tensor:
        block = self.blocks[0]
        assert isinstance(block, Block)
        return block.attn.W_Q

    def forward(
        self,
        x: torch.Tensor,
        source: torch.Tensor | None = None,
        cache: KVCache | None = None,
        *,
        layout: Layout | None = None,
    ) -> torch.Tensor:
        """x: (B, T) ids or (B, T, C) vectors -> (B, T, C). An encoder-decoder also takes
        ``source``, what its encoder reads (B, S), and every decoder block attends to the
        encoder's output (B, S, C). With ``cache`` (a causal model writing), x holds the tokens
        after the cached ones, at positions ``cache.length`` ..; their keys and values join it.
        ``layout``: where the tokens sit when not at 0 .. T-1 of one causal line (``Layout``:
        rotary positions, of the new tokens only with a cache; absolute bidirectional spans)."""
        cfg = self.cfg
        if bool(cfg.encoder_layers) != (source is not None):
            raise ValueError("an encoder-decoder needs a source; other models take none")
        if cache is not None and not cfg.causal:
            raise ValueError("a cache of keys and values is for causal models")
        if layout is not None and layout.positions is not None and cfg.positional != "rope":
            raise ValueError("layout positions are rotary positions; this model has no RoPE")
        start = cache.length if cache is not None else 0
        memory = self.encoder(source) if source is not None else None  # (B, S, C)
        if cfg.vocab_size is not None:
            x = self.W_E[x.to(self.W_E.device)]  # (B, T) ids -> (B, T, C)
            if cfg.embed_scale != 1.0:  # the factor in the table's dtype, as Gemma's
                x = x * torch.tensor(cfg.embed_scale, dtype=x.dtype)
        x = self.hook_embed(x)  # (B, T, C)
        if cfg.type_vocab_size:
            x = x + self.hook_type_embed(self.W_type[0])  # (C,): every token is segment 0
        pos = self.positional_table(x.shape[1], start)
        if pos is not None:
            x = x + self.hook_pos_embed(pos)  # (T, C) broadcasts over B
        if self.ln_embed is not None:
            x = self.ln_embed(x)
        for block in self.blocks:
            if layout is not None:
                x = block(x, memory, cache, layout)
            else:
                x = block(x, memory, cache) if cache is not None else block(x, memory)
        if cache is not None:
            cache.length = start + x.shape[1]
        if self.ln_final is not None:
            x = self.ln_final(x)
        return x

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        """The model's output (B, T, C) -> scores over the vocabulary (B, T, V), soft-capped
        by ``final_softcap`` when set: c * tanh(logits / c)."""
        logits = x.to(self.W_U.device) @ self.W_U  # (B, T, V)
        cap = self.cfg.final_softcap
        if cap is not None:
            logits = torch.tanh(logits / cap) * cap
        return self.hook_logits(logits)
