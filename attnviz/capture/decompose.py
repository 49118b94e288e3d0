"""The residual stream of one clean run as a sum of components, every norm frozen.

A clean run (``clean_run``) is one forward of the native engine that keeps what the
decomposition needs and no trace keeps: each layer's per-head outputs before the output
projection (``hook_z``), each feed-forward's output, and every norm's per-token scale (1/sigma of
its input: the root mean square for an RMSNorm, the standard deviation for a LayerNorm), read from
the norm's own input.

With the scales frozen every norm is affine per token: y = P(x) * s_t * w + b, where P centres
a LayerNorm's input (x - mean(x), linear: the mean of a sum is the sum of the means) and is the
identity for an RMSNorm. So the stream at any point is a sum of components, each transformed by
the norms it has passed through, and their sum is the clean run's stream (``Stream``):

- ``embed``: the token vectors (W_E[ids], times ``embed_scale``);
- ``pos``: the absolute position table (learned or sinusoidal), for a model that adds one;
- ``type``: BERT's token-type vector (segment A, W_type[0], added to every token): its own
  component, not folded into ``pos``;
- ``L{l}.H{h}``: head h of layer l, z_h @ W_O[h] (through layer l's norm of the attention's
  output, ``out_norm``, when the model has one: Gemma 2/3, OLMo 2);
- ``L{l}.attn_bias``: layer l's b_O (through that norm too), for a model with biases;
- ``L{l}.mlp``: layer l's feed-forward output as the residual adds it (its biases inside);
- ``bias``: every norm's shift (and, read by an attention, the q/k projection's bias), carried
  through the norms after it.

A post-norm block (BERT) and the embedding norm transform every component already in the
stream; a component added later is untouched by the norms before it. A component is kept lazily
(``Group``): alpha_t * (V @ M), with V (n, T, d) what the run recorded, M (n, d, C) the weights
that write it (None: V is already in the stream's basis) and alpha (T,) the product of the frozen
scales it has passed through, so that a norm costs the size of M, not of (n, T, C).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import torch

from attnviz.engine import Layout, Transformer, TransformerConfig, act_name, capture
from attnviz.engine.model import Block, LayerNorm
from attnviz.errors import TraceError


@dataclass(frozen=True)
class Component:
    """One part of the residual stream: ``name`` (``embed``, ``L3.H5``, ...), ``kind`` (embed,
    pos, type, head, attn_bias, mlp, bias; ``rest`` for what ``top`` folds together), and the
    layer and head it comes from (None where it has none)."""

    name: str
    kind: str
    layer: int | None = None
    head: int | None = None

    def as_dict(self) -> dict:
        return {"name": self.name, "kind": self.kind, "layer": self.layer, "head": self.head}


@dataclass
class CleanRun:
    """What one forward of ``model`` on one sequence recorded for the decomposition, in
    ``dtype`` (float64 where the device has it)."""

    model: Transformer
    embed: torch.Tensor  # (T, C) the token vectors, after embed_scale
    pos: torch.Tensor | None  # (T, C) the positional table added, if any
    type_vector: torch.Tensor | None  # (C,) the token-type vector added to every token, if any
    z: list[torch.Tensor]  # L x (nh, T, hs) each head's pattern @ v
    mlp: list[torch.Tensor | None]  # L x (T, C) the feed-forward's output (after its out_norm)
    scales: dict[str, torch.Tensor]  # a norm's module name -> (..., T) its frozen 1/sigma
    output: torch.Tensor | None = field(default=None, repr=False)  # (T, C) after the final norm
    # Where the tokens sat in the forward (rotary positions, bidirectional spans), for the
    # attributions' rotations and masks; None: 0 .. T-1, causal as the model is.
    layout: Layout | None = field(default=None, repr=False)
    _weights: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    @property
    def n(self) -> int:
        return self.embed.shape[0]

    def logits(self, position: int) -> torch.Tensor:
        """(V,) the logits at ``position`` before any soft-cap (a model with an unembedding)."""
        assert self.output is not None
        return self.output[position] @ self.model.W_U

    @property
    def dtype(self) -> torch.dtype:
        return self.embed.dtype

    def weight(self, name: str, w: torch.Tensor) -> torch.Tensor:
        """``w`` (a weight of the model called ``name``) in the run's dtype, cast once."""
        if name not in self._weights:
            # on the run's device: a placed model's layers meet where its output is
            self._weights[name] = w.detach().to(self.embed.device, self.dtype)
        return self._weights[name]

    def at(self, positions: list[int]) -> CleanRun:
        """The run at ``positions`` alone: what a norm, a head's output or a feed-forward is at
        one token does not depend on the others (a head's z already holds what it read). It has
        no layout: nothing read of it rotates or masks."""
        pick = torch.tensor(positions, device=self.embed.device)
        return CleanRun(
            model=self.model,
            embed=self.embed[pick],
            pos=self.pos[pick] if self.pos is not None else None,
            type_vector=self.type_vector,
            z=[z[:, pick] for z in self.z],
            mlp=[m[pick] if m is not None else None for m in self.mlp],
            scales={k: v[..., pick] for k, v in self.scales.items()},
            output=self.output[pick] if self.output is not None else None,
            _weights=self._weights,
        )


def _scale_of(norm: LayerNorm, x: torch.Tensor) -> torch.Tensor:
    """(...,) the frozen 1/sigma of the norm's input ``x`` (..., n), in float64."""
    x = x.to(dtype_for(x.device))
    if norm.rms:
        return torch.rsqrt(x.pow(2).mean(-1) + norm.eps)
    return torch.rsqrt(x.var(-1, unbiased=False) + norm.eps)


@dataclass
class Recording:
    """What a forward of ``model`` recorded for a clean run (``recording``): each norm's input
    (``inputs``, by the norm's module name), and the hook points' outputs (``cache``: the token
    vectors, each head's z, each MLP's output), in the model's dtype until ``run`` builds the
    clean run from them. The norms' scales are computed there, not during the forward: a
    trace's forward records on its way, and the page's first request should not wait for what
    only an attribution reads (MiniLM at 128 tokens: 5 ms more, 29%)."""

    model: Transformer
    cache: dict[str, torch.Tensor]
    inputs: dict[str, torch.Tensor]

    def nbytes(self) -> int:
        kept = [*self.cache.values(), *self.inputs.values()]
        return sum(t.numel() * t.element_size() for t in kept)

    def scales(self) -> dict[str, torch.Tensor]:
        """Each norm's frozen 1/sigma of its recorded input (``_scale_of``), float64."""
        modules = dict(self.model.named_modules())
        out = {}
        for name, x in self.inputs.items():
            norm = modules[name]
            assert isinstance(norm, LayerNorm)
            out[name] = _scale_of(norm, x)
        return out

    def run(self, output: torch.Tensor, layout: Layout | None = None) -> CleanRun:
        """The clean run, ``output`` (T, C) being the forward's (what the unembedding reads);
        ``layout``: the forward's (``Layout``), when it had one."""
        cfg, cache, T = self.model.cfg, self.cache, output.shape[0]
        # Everything on the output's device (a placed model's layers recorded on theirs): the
        # decomposition sums what every layer wrote, (T, C) and (nh, T, hs) pieces.
        home, dtype = output.device, dtype_for(output.device)
        pos, kind = cache.get(act_name("pos_embed")), cache.get(act_name("type_embed"))
        z = [cache[act_name("z", i)][0].to(home, dtype) for i in range(cfg.n_layers)]
        mlp = [cache[act_name("mlp_out", i)][0].to(home, dtype) if cfg.ffn else None
               for i in range(cfg.n_layers)]  # fmt: skip
        return CleanRun(
            model=self.model,
            embed=cache[act_name("embed")][0].to(home, dtype),
            pos=pos[:T].to(home, dtype) if pos is not None else None,
            type_vector=kind.to(home, dtype) if kind is not None else None,
            z=z,
            mlp=mlp,
            scales={k: v.to(home, dtype) for k, v in self.scales().items()},
            output=output,
            layout=layout,
        )


def recording_bytes(cfg: TransformerConfig, T: int, itemsize: int) -> int:
    """About what ``recording`` keeps of a T-token forward: each head's z and each MLP's
    output, the token vectors and positions, and every norm's input."""
    norms = 0 if cfg.norm == "none" else 1 + cfg.ffn  # ln1, ln2 (pre or post) per layer
    norms += 2 * cfg.out_norm  # on each sublayer's output
    per_layer = cfg.d_attn + cfg.d_model + norms * cfg.d_model
    if cfg.qk_norm != "none":  # the queries' and keys' norms read them
        per_layer += cfg.d_attn + cfg.kv_heads * cfg.d_head
    whole = (2 + cfg.embed_norm + cfg.final_norm) * cfg.d_model
    return (cfg.n_layers * per_layer + whole) * T * itemsize


@contextmanager
def recording(model: Transformer) -> Iterator[Recording]:
    """Record what a clean run needs during the forwards run inside: every norm's input (its
    scale, 1/sigma in float64, is computed from it by ``Recording.run``), each head's z, each
    MLP's output and the token vectors. A
    TraceError for a model the decomposition does not read (an encoder-decoder's
    cross-attention)."""
    cfg = model.cfg
    if cfg.encoder_layers:
        raise TraceError("fields: attributions read one stream; this model has a cross-attention")
    inputs: dict[str, torch.Tensor] = {}
    handles = []
    for name, module in model.named_modules():
        if isinstance(module, LayerNorm):

            def keep(_m: torch.nn.Module, inp: tuple, _out: object, name: str = name) -> None:
                inputs[name] = inp[0].detach()[0]  # batch of one dropped; its scale: later

            handles.append(module.register_forward_hook(keep))
    wanted = [act_name("embed")] + [act_name("z", i) for i in range(cfg.n_layers)]
    wanted += [act_name("mlp_out", i) for i in range(cfg.n_layers)] if cfg.ffn else []
    wanted += [act_name("pos_embed")] if cfg.positional in ("sinusoidal", "learned") else []
    wanted += [act_name("type_embed")] if cfg.type_vocab_size else []
    try:
        with capture(model, wanted) as cache:
            yield Recording(model, cache, inputs)
    finally:
        for h in handles:
            h.remove()


def clean_run(model: Transformer, x: torch.Tensor, layout: Layout | None = None) -> CleanRun:
    """One forward of ``model`` on ``x`` ((1, T) ids or (1, T, C) vectors), with ``layout``
    when given, that records what the decomposition needs (``recording``), and the clean run
    built from it."""
    with torch.inference_mode(), recording(model) as rec:
        out = (model(x) if layout is None else model(x, layout=layout))[0]  # (T, C)
    return rec.run(out, layout)


@dataclass
class Group:
    """Components kept lazily: component c at position t is alpha[t] * (v[c, t] @ m[c])."""

    components: list[Component]
    v: torch.Tensor  # (n, T, d)
    m: torch.Tensor | None  # (n, d, C); None: d is C and v is in the stream's basis
    alpha: torch.Tensor  # (T,)

    def project(self, w: torch.Tensor) -> torch.Tensor:
        """(n, T, k): each component's vectors times ``w`` (C, k)."""
        # (n, T, d) @ (n, d, k) when the weights write it
        out = self.v @ w if self.m is None else self.v @ (self.m @ w)  # (n, T, k)
        return out * self.alpha[None, :, None]


@dataclass
class Stream:
    """The residual stream at one point: its components (``groups``) and the biases carried
    (``bias``, (T, C); None while no bias has entered)."""

    groups: list[Group]
    bias: torch.Tensor | None = None

    @property
    def biased(self) -> bool:
        return self.bias is not None

    @property
    def components(self) -> list[Component]:
        out = [c for g in self.groups for c in g.components]
        return out + ([Component("bias", "bias")] if self.biased else [])

    def project(self, w: torch.Tensor, b: torch.Tensor | None = None) -> torch.Tensor:
        """(N, T, k): every component times ``w`` (C, k), the bias row last (with ``b`` (k,)
        added) when the stream or ``b`` has one."""
        rows = [g.project(w) for g in self.groups]
        if self.bias is not None or b is not None:
            T = self.groups[0].alpha.shape[0]
            bias = self.bias @ w if self.bias is not None else w.new_zeros(T, w.shape[1])
            rows.append((bias if b is None else bias + b)[None])  # (1, T, k)
        return torch.cat(rows)


def affine(
    norm: LayerNorm, dtype: torch.dtype, device: torch.device | None = None
) -> tuple[bool, torch.Tensor | None, torch.Tensor | None]:
    """(whether it centres, its scale (offset + w) or None, its shift or None), in ``dtype``
    on ``device`` (the norm's own by default)."""
    w: torch.Tensor | None = None
    if norm.w is not None:
        nw = norm.w.to(device, dtype)
        w = (norm.offset + nw) if norm.offset else nw
    b = norm.b.to(device, dtype) if norm.b is not None else None
    return not norm.rms, w, b


def _centre(x: torch.Tensor) -> torch.Tensor:
    return x - x.mean(-1, keepdim=True)


def through(stream: Stream, norm: LayerNorm, s: torch.Tensor) -> Stream:
    """The stream after ``norm`` with its scale frozen at ``s`` (T,): each component centred (a
    LayerNorm), scaled and weighted; the norm's shift joins ``bias``."""
    dtype = s.dtype
    centre, w, b = affine(norm, dtype, s.device)
    groups = []
    for g in stream.groups:
        if g.m is None:
            v = _centre(g.v) if centre else g.v
            groups.append(Group(g.components, v if w is None else v * w, None, g.alpha * s))
        else:
            m = _centre(g.m) if centre else g.m
            groups.append(Group(g.components, g.v, m if w is None else m * w, g.alpha * s))
    bias = stream.bias
    if bias is not None:
        bias = (_centre(bias) if centre else bias) * s[:, None]
        bias = bias if w is None else bias * w
    if b is not None:
        bias = b.expand(s.shape[0], -1) if bias is None else bias + b
    return Stream(groups, bias)


def dtype_for(device: torch.device) -> torch.dtype:
    """float64 where the device has it (not Apple's MPS)."""
    return torch.float32 if device.type == "mps" else torch.float64


def _attention_written(run: CleanRun, layer: int) -> Stream:
    """What layer ``layer``'s attention adds to the stream: each head and b_O (through its
    out_norm)."""
    model, cfg = run.model, run.model.cfg
    block = model.blocks[layer]
    assert isinstance(block, Block)
    T, nh, hs, dtype = run.n, cfg.n_heads, cfg.d_head, run.dtype
    z = run.z[layer]  # (nh, T, hs)
    w_o = run.weight(f"{layer}.W_O", block.attn.W_O).view(nh, hs, -1)  # (nh, hs, C)
    ones = torch.ones(T, dtype=dtype, device=z.device)
    heads = [Component(f"L{layer}.H{h}", "head", layer, h) for h in range(nh)]
    groups = [Group(heads, z, w_o, ones)]
    b_o = block.attn.b_O
    if b_o is not None:
        bias_part = Component(f"L{layer}.attn_bias", "attn_bias", layer)
        v = torch.ones(1, T, 1, dtype=dtype, device=z.device)
        groups.append(Group([bias_part], v, run.weight(f"{layer}.b_O", b_o).view(1, 1, -1), ones))
    written = Stream(groups)
    if block.ln1_out is not None:
        written = through(written, block.ln1_out, run.scales[f"blocks.{layer}.ln1_out"])
    return written


def _mlp_written(run: CleanRun, layer: int) -> Group:
    out = run.mlp[layer]
    assert out is not None
    ones = torch.ones(run.n, dtype=out.dtype, device=out.device)
    return Group([Component(f"L{layer}.mlp", "mlp", layer)], out[None], None, ones)


def _add(stream: Stream, written: Stream | Group, residual: bool) -> Stream:
    if isinstance(written, Group):
        written = Stream([written])
    if not residual:  # the sublayer's output replaces the stream
        return written
    if stream.bias is None or written.bias is None:
        bias = stream.bias if written.bias is None else written.bias
    else:
        bias = stream.bias + written.bias
    return Stream(stream.groups + written.groups, bias)


def stream_at(run: CleanRun, layer: int) -> Stream:
    """The stream block ``layer`` reads (its hidden state; ``layer`` = n_layers: the last block's
    output, before the final norm), decomposed."""
    model, cfg = run.model, run.model.cfg
    T, device, dtype = run.n, run.embed.device, run.dtype
    ones = torch.ones(T, dtype=dtype, device=device)
    groups = [Group([Component("embed", "embed")], run.embed[None], None, ones)]
    if run.type_vector is not None:
        v = run.type_vector.expand(T, -1)[None]  # (1, T, C)
        groups.append(Group([Component("type", "type")], v, None, ones))
    if run.pos is not None:
        groups.append(Group([Component("pos", "pos")], run.pos[None], None, ones))
    stream = Stream(groups)
    if model.ln_embed is not None:
        stream = through(stream, model.ln_embed, run.scales["ln_embed"])
    post = cfg.norm == "post"
    for i in range(layer):
        block = model.blocks[i]
        assert isinstance(block, Block)
        attn = _attention_written(run, i)
        if cfg.parallel:  # both read the block's input; the residual adds both
            stream = _add(_add(stream, attn, True), _mlp_written(run, i), True)
            continue
        stream = _add(stream, attn, cfg.residual)
        if post and block.ln1 is not None:
            stream = through(stream, block.ln1, run.scales[f"blocks.{i}.ln1"])
        if cfg.ffn:
            stream = _add(stream, _mlp_written(run, i), cfg.residual)
            if post and block.ln2 is not None:
                stream = through(stream, block.ln2, run.scales[f"blocks.{i}.ln2"])
    return stream
