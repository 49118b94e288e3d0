"""How heads compose: Q-, K- and V-composition scores between every pair of heads in different
layers, from the weights alone (Elhage et al. 2021, "A Mathematical Framework for Transformer
Circuits"), computed as TransformerLens's ``all_composition_scores`` computes them.

In the engine's convention (row vectors, ``x @ W``), head h of a layer has W_Q^h, W_K^h, W_V^h
(d, hs) and W_O^h (hs, d); its OV circuit is W_OV = W_V W_O and its QK circuit W_QK = W_Q W_K^T,
both (d, d). For an earlier head A (layer la) and a later head B (layer lb > la):

- Q-composition: ||W_OV^A W_QK^B||_F / (||W_OV^A||_F ||W_QK^B||_F), what A writes read by B's
  queries;
- K-composition: the same with W_QK^B's transpose, W_K W_Q^T (A's output read by B's keys);
- V-composition: the same with W_OV^B (A's output read by B's values).

Each score lies in [0, 1]. Pairs with la >= lb have none: ``Composition.scores`` holds NaN there
(TransformerLens writes 0). A head whose matrix is zero gives NaN too (0 / 0).

Weight processing, as TransformerLens's ``enable_compatibility_mode()`` applies it by default
(``fold_ln``, ``center_writing_weights``), on float32 copies (the model is left as it is):

- pre-norm LayerNorm (GPT-2, GPT-NeoX): the scale of the norm before the attention (ln1,
  ``ln_offset + w``; none without an affine) is folded into the rows of W_Q, W_K and W_V, which
  are then centred (their mean over d_model subtracted, per column: the norm removes the mean of
  what they read); W_O is centred over d_model (what a head writes loses its mean at the next
  LayerNorm).
- pre-norm RMSNorm (Llama, Qwen2/3, Mistral, Phi-3, Gemma): the scale (``ln_offset + w``:
  Gemma's 1 + w) is folded into the rows of W_Q, W_K and W_V; nothing is centred (an RMSNorm
  keeps the mean).
- post-norm (BERT, RoBERTa, DistilBERT): no norm sits right before a head's projections, so
  nothing is folded; with LayerNorm W_O is centred (the norm after the residual sum removes the
  mean), with RMSNorm nothing is.
- no norm before the sublayers (OLMo 2, toy and trained models without norms): the raw weights.
- Not folded, as TransformerLens does not fold them: the norms on a sublayer's output (Gemma 2/3
  and OLMo 2's post-attention norms) and the norms of queries and keys (Qwen3, OLMo 2, Gemma 3),
  each applied after a projection; the biases, the attention scale and RoPE (W_QK ignores
  positions) do not enter.

Grouped-query attention: the key and value projections are expanded to the query heads (query
head h reads key/value head h // (nh / kv_heads)), as TransformerLens's ``_expand_kv_heads``.
An encoder-decoder has two residual streams and no scores (TransformerLens refuses it too).

How: every matrix is a product X Y^T of two (d, hs) factors, and with Y = Q_Y R_Y (reduced QR,
Q_Y's columns orthonormal) ||M X Y^T||_F = ||M X R_Y^T||_F. So head A's left factor is
F^A = R_V^A W_O^A (hs, d), head B's right factor G^B = X^B R_Y^B^T (d, hs) with (X, Y) = (W_Q,
W_K) for Q, (W_K, W_Q) for K, (W_V, W_O^T) for V, and score = ||F^A G^B||_F / (||F^A||_F
||G^B||_F): one (H hs, d) x (d, n hs) product per earlier layer, never a (d, d) matrix.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.engine.model import Block, LayerNorm, Transformer

KINDS = ("q", "k", "v")


@dataclass(frozen=True)
class Composition:
    """``scores``: kind ("q", "k", "v") -> (L, H, L, H) float32, [la, ha, lb, hb] the score of
    earlier head (la, ha) into later head (lb, hb), NaN where la >= lb. ``names``: "L{l}.H{h}",
    layer by layer. ``processing``: the weight processing applied, in words."""

    scores: dict[str, torch.Tensor]
    names: list[str]
    processing: str
    seconds: float

    @property
    def layers(self) -> int:
        return self.scores["q"].shape[0]

    @property
    def heads(self) -> int:
        return self.scores["q"].shape[1]


def _scale(norm: LayerNorm | None) -> torch.Tensor | None:
    """The norm's (d,) scale, ln_offset + w (None for no norm; ones without an affine)."""
    if norm is None:
        return None
    w = norm.w.detach().float() if norm.w is not None else None
    if w is None:
        return None
    return w + norm.offset if norm.offset else w


def describe(cfg: TransformerConfig) -> str:
    """The weight processing ``layer_weights`` applies to a model of ``cfg``, in words."""
    unfolded = []
    if cfg.out_norm:
        unfolded.append("the norms on each sublayer's output")
    if cfg.qk_norm != "none":
        unfolded.append("the norms of queries and keys")
    tail = (
        f" Not folded (as TransformerLens): {' and '.join(unfolded)}." if unfolded else ""
    ) + " Biases, the attention scale and positions do not enter."
    if cfg.kv_heads != cfg.n_heads:
        tail += f" Grouped-query: {cfg.kv_heads} key/value heads expanded to {cfg.n_heads}."
    offset = f"{cfg.ln_offset:g} + w" if cfg.ln_offset else "w"
    if cfg.norm == "pre" and cfg.norm_type == "layer":
        return (
            f"LayerNorm before each attention: its scale ({offset}) folded into W_Q, W_K and "
            "W_V, which are then centred over d_model; W_O centred over d_model "
            "(TransformerLens's fold_ln and center_writing_weights)." + tail
        )
    if cfg.norm == "pre":
        return (
            f"RMSNorm before each attention: its scale ({offset}) folded into W_Q, W_K and W_V; "
            "nothing centred (an RMSNorm keeps the mean; TransformerLens's fold_ln for RMS)." + tail
        )
    if cfg.norm == "post" and cfg.norm_type == "layer":
        return (
            "LayerNorm after each residual sum (post-norm): nothing folded (no norm right "
            "before the projections); W_O centred over d_model (TransformerLens's "
            "center_writing_weights)." + tail
        )
    return "No norm before the attention's projections: the raw weights." + tail


def layer_weights(
    block: Block, cfg: TransformerConfig
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """One layer's W_Q, W_K, W_V (H, d, hs), K and V expanded to the query heads, and W_O
    (H, hs, d), after the weight processing the module's docstring states (``describe``):
    float32 copies."""
    H, hs, d = cfg.n_heads, cfg.d_head, cfg.d_model
    attn = block.attn
    W_Q, W_K, W_V = (w.detach().float() for w in (attn.W_Q, attn.W_K, attn.W_V))
    W_O = attn.W_O.detach().float()  # (H hs, d)
    scale = _scale(block.ln1) if cfg.norm == "pre" else None
    if scale is not None:  # LN(x) @ W = (x_hat * s) @ W = x_hat @ (s[:, None] * W)
        W_Q, W_K, W_V = (scale[:, None] * w for w in (W_Q, W_K, W_V))
    if cfg.norm == "pre" and cfg.norm_type == "layer":
        W_Q, W_K, W_V = (w - w.mean(0, keepdim=True) for w in (W_Q, W_K, W_V))
    if cfg.norm in ("pre", "post") and cfg.norm_type == "layer":
        W_O = W_O - W_O.mean(1, keepdim=True)
    n_kv = W_K.shape[1] // hs
    W_Q = W_Q.reshape(d, H, hs).transpose(0, 1)  # (H, d, hs)
    W_K = W_K.reshape(d, n_kv, hs).transpose(0, 1).repeat_interleave(H // n_kv, 0)  # (H, d, hs)
    W_V = W_V.reshape(d, n_kv, hs).transpose(0, 1).repeat_interleave(H // n_kv, 0)  # (H, d, hs)
    return W_Q, W_K, W_V, W_O.reshape(H, hs, d)


def _r(y: torch.Tensor) -> torch.Tensor:
    """R of the reduced QR of each (d, hs) factor: (..., d, hs) -> (..., min(d, hs), hs)."""
    return torch.linalg.qr(y, mode="r").R


def factors(
    W_Q: torch.Tensor, W_K: torch.Tensor, W_V: torch.Tensor, W_O: torch.Tensor
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """A layer's left factors F = R_V W_O (H, k, d) and, per kind, its right factors
    G = X R_Y^T (H, d, k): ||W_OV^A M^B||_F = ||F^A G^B||_F for M^B the kind's matrix."""
    left = _r(W_V) @ W_O  # (H, k, d)
    right = {
        "q": W_Q @ _r(W_K).transpose(-2, -1),  # (H, d, k)
        "k": W_K @ _r(W_Q).transpose(-2, -1),
        "v": W_V @ _r(W_O.transpose(-2, -1)).transpose(-2, -1),
    }
    return left, right


def flop(cfg: TransformerConfig) -> float:
    """The floating-point operations of the scores' products: per kind, for each earlier layer,
    (H hs, d) x (d, later heads x hs)."""
    hk = cfg.n_heads * min(cfg.d_head, cfg.d_model)
    pairs = cfg.n_layers * (cfg.n_layers - 1) / 2  # (la, lb) with la < lb
    return 3 * 2 * hk * cfg.d_model * hk * pairs


def composition_scores(model: Transformer) -> Composition:
    """Q-, K- and V-composition scores between every earlier and later head of ``model`` (see
    the module's docstring for the definition and the weight processing)."""
    began = time.perf_counter()
    cfg = model.cfg
    if cfg.encoder_layers:
        raise ValueError(
            "composition scores live in one residual stream; an encoder-decoder has two"
        )
    L, H = cfg.n_layers, cfg.n_heads
    lefts: list[torch.Tensor] = []
    rights: dict[str, list[torch.Tensor]] = {kind: [] for kind in KINDS}
    with torch.no_grad():
        for block in model.blocks:  # one layer's float32 copies at a time
            assert isinstance(block, Block)
            f, gs = factors(*layer_weights(block, cfg))
            lefts.append(f)
            for kind in KINDS:
                rights[kind].append(gs[kind])
        left = torch.stack(lefts)  # (L, H, k, d)
        k = left.shape[-2]
        left_norm = left.flatten(-2).norm(dim=-1)  # (L, H) ||W_OV^A||_F
        scores: dict[str, torch.Tensor] = {}
        for kind in KINDS:
            g = torch.stack(rights[kind])  # (L, H, d, k)
            right_norm = g.flatten(-2).norm(dim=-1)  # (L, H)
            out = torch.full((L, H, L, H), float("nan"), dtype=torch.float32, device=g.device)
            for la in range(L - 1):
                n = L - la - 1  # the later layers
                a = left[la].reshape(H * k, -1)  # (H k, d): layer la's heads stacked
                b = g[la + 1 :].permute(2, 0, 1, 3).reshape(a.shape[1], n * H * k)  # (d, n H k)
                prod = (a @ b).reshape(H, k, n, H, k)  # [ha, i, lb, hb, j]
                norms = prod.pow(2).sum(dim=(1, 4)).sqrt()  # (H, n, H)
                denom = left_norm[la][:, None, None] * right_norm[la + 1 :][None]  # (H, n, H)
                out[la, :, la + 1 :] = norms / denom
            scores[kind] = out.cpu()
            del g
    names = [f"L{layer}.H{head}" for layer in range(L) for head in range(H)]
    return Composition(scores, names, describe(cfg), time.perf_counter() - began)
