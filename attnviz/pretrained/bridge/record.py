"""What a transformers model's attention was given, layer by layer, recorded through
transformers' own extension point: ``AttentionInterface``.

``register()`` adds an attention function named ``"attnviz"`` (and the same name to
``AttentionMaskInterface``, with transformers' eager mask, so the model builds the mask eager
attention would be given). A model loaded with ``attn_implementation="attnviz"`` calls it in
every layer with the queries and keys as that layer computed them (after its rotary embedding
and any q/k norms), the values, the mask, the scaling and its own options (soft-cap, sliding
window). It calls the model's own ``eager_attention_forward`` and returns what that returns, so
the forward is eager attention's, number for number; while ``recording()`` is active it also
keeps each layer's inputs and weights. Inside ``ablating()``, each forward's
``intervening()`` has it replace knocked-out heads' outputs (``engine.ablate.replace_head``) in
what it returns, before the layer's output projection: the engine's ``hook_z``.

transformers is imported only by ``register()``: this module loads without it.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from attnviz.capture.rules import window_note
from attnviz.capture.vision import TowerCall
from attnviz.engine.ablate import HeadAblation, replace_head
from attnviz.pretrained.bridge.tower_attention import fused, plain

NAME = "attnviz"

# Keyword arguments models pass to the attention function that do not change its numbers here:
# the mask already holds the sliding window and the causal rule; dropout is 0 in eval mode; the
# rest is bookkeeping for other implementations (flash attention's packed sequences, caches).
_INERT = {
    "dropout",
    "sliding_window",
    "is_causal",
    "use_cache",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "position_ids",
    "cache_position",
    "layer_idx",
    "cu_seq_lens_q",
    "cu_seq_lens_k",
    "max_length_q",
    "max_length_k",
    "token_type_ids",
}


@dataclass(frozen=True)
class Mask:
    """Which keys a layer's queries see, as its attention mask said: causal (key j after query i
    hidden), a sliding window (seen only when 0 <= i - j < window, transformers' rule; without
    the causal rule, a window either side: |i - j| < window, ModernBERT's local layers, as the
    engine's ``layout.hidden_keys`` reads one), or, when neither rule describes the mask, the
    mask itself: ``hidden`` (T, S) booleans, or ``bias`` (T, S) added to the logits (-inf where
    hidden). Queries are the last T of S positions."""

    causal: bool = False
    window: int | None = None
    hidden: torch.Tensor | None = None
    bias: torch.Tensor | None = None

    def apply(self, scores: torch.Tensor) -> torch.Tensor:
        """Scores (..., T, S) with the hidden keys at -inf (and the bias added)."""
        if self.bias is not None:
            return scores + self.bias
        if self.hidden is not None:
            return scores.masked_fill(self.hidden, float("-inf"))
        if not self.causal and self.window is None:
            return scores
        T, S = scores.shape[-2:]
        return scores.masked_fill(self.rule_hidden(T, S, scores.device), float("-inf"))

    def rule_hidden(self, T: int, S: int, device: torch.device) -> torch.Tensor:
        """(T, S) True where the causal rule and the window hide a key."""
        i = torch.arange(S - T, S, device=device)[:, None]  # (T, 1) query positions
        j = torch.arange(S, device=device)[None, :]  # (1, S) key positions
        hidden = j > i if self.causal else torch.zeros(T, S, dtype=torch.bool, device=device)
        if self.window is not None:
            far = (i - j) if self.causal else (i - j).abs()
            hidden = hidden | (far >= self.window)
        return hidden

    def nbytes(self) -> int:
        t = self.bias if self.bias is not None else self.hidden
        return 0 if t is None else t.numel() * t.element_size()

    def describe(self) -> str:
        """What the mask does, in words (``capture.rules.window_note`` for a window)."""
        if self.bias is not None:
            return "a bias added to the logits"
        if self.hidden is not None:
            return "a mask of its own"
        if self.window is not None:
            return window_note(self.window, self.causal)
        return "causal" if self.causal else "none"


def as_mask(attention_mask: torch.Tensor | None) -> Mask:
    """(B, 1, T, S) as the model gave it (eager's float mask, 0 or the dtype's min; or booleans,
    True where a key is seen) -> the Mask of the one sequence, as a rule when one fits."""
    if attention_mask is None:
        return Mask()
    m = attention_mask[0, 0]  # (T, S): one sequence, the same for every head
    if m.dtype == torch.bool:
        hidden = ~m
    else:
        hidden = m <= torch.finfo(m.dtype).min / 2  # eager's "minus infinity"
        if not bool(((m == 0) | hidden).all()):
            return Mask(bias=m.float().masked_fill(hidden, float("-inf")))
    return mask_of_hidden(hidden)


def mask_of_hidden(hidden: torch.Tensor) -> Mask:
    """The Mask that hides the keys ``hidden`` (T, S) says (True: hidden; queries the last T of
    S positions): a rule (causal, a window) when one hides exactly those, else ``hidden``."""
    if not bool(hidden.any()):
        return Mask()
    T, S = hidden.shape
    # The last query sees min(S, window) keys: those before it (and, without the causal rule,
    # none after it: it is the last).
    seen_last = int((~hidden[-1]).sum())
    for causal, window in ((True, None), (True, seen_last), (False, None), (False, seen_last)):
        if window is not None and window >= S:
            continue
        rule = Mask(causal=causal, window=window)
        if torch.equal(rule.rule_hidden(T, S, hidden.device), hidden):
            return rule
    return Mask(hidden=hidden.clone())


@dataclass
class LayerRecord:
    """One layer's attention as the model computed it (one sequence: the batch axis dropped):
    ``q`` (H, T, hs), ``k`` and ``v`` (H_kv, S, hs) as the layer gave them, after its rotary
    embedding and q/k norms; ``weights`` (H, T, S) what eager attention returned."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    mask: Mask
    scaling: float
    softcap: float | None
    window: int | None  # the sliding window the model named (the mask holds it)
    extras: tuple[str, ...]  # arguments the rule does not know (checked at load)
    weights: torch.Tensor | None  # None when the recording keeps no weights


@dataclass
class VisionCall:
    """One call of a vision tower's attention (``capture.vision.TowerCall``: its q and k, or its
    weights); ``layer`` the tower's layer, counted in the order the forward first calls each
    attention module."""

    layer: int
    call: TowerCall


# The attribute a vision tower's modules carry (set by ``mark_vision``): their attention calls
# are the tower's, recorded apart from the language model's layers and never knocked out.
VISION_MARK = "attnviz_vision"


def mark_vision(modules: Iterable[Any]) -> None:
    """Mark ``modules`` (a vision tower's, and its projector's) as not the language model's."""
    for module in modules:
        setattr(module, VISION_MARK, True)


class Recording(list[LayerRecord]):
    """The language model's layers' records of one forward, in call order; masks shared by
    layers made once; a vision tower's calls apart, in ``vision``.

    With ``masks_only``, the forward's attention is not computed: each layer's call reads its
    mask alone (into ``masks_read``, in call order) and returns zeros, so that a forward past a
    long window builds no attention weights (the load's probe of the windows)."""

    def __init__(
        self, keep_weights: bool = True, device: torch.device | None = None,
        masks_only: bool = False,
    ) -> None:  # fmt: skip
        super().__init__()
        self.keep_weights = keep_weights
        self.masks_only = masks_only
        self.masks_read: list[Mask] = []
        # Where what is kept goes (a model spread over devices: its first), else where computed.
        self.device = device
        self.vision: list[VisionCall] = []
        self._vision_layers: dict[int, int] = {}  # id(module) -> its layer, in call order
        # The model's mask tensors (kept, so that no other takes an id while this lives) and
        # what each says.
        self.masks: dict[int, tuple[torch.Tensor, Mask]] = {}

    def add_vision(
        self, module: Any, query: torch.Tensor, key: torch.Tensor,
        mask: torch.Tensor | None, scaling: float, weights: torch.Tensor,
    ) -> None:  # fmt: skip
        self.add_tower_call(module, TowerCall.of(query, key, mask, scaling, weights))

    def add_tower_call(self, module: Any, call: TowerCall) -> None:
        layer = self._vision_layers.setdefault(id(module), len(self._vision_layers))
        self.vision.append(VisionCall(layer, call))

    def mask(self, attention_mask: torch.Tensor | None) -> Mask:
        if attention_mask is None:
            return Mask()
        key = id(attention_mask)
        if key not in self.masks:
            here = attention_mask if self.device is None else attention_mask.to(self.device)
            self.masks[key] = (attention_mask, as_mask(here))
        return self.masks[key][1]


def vision_layers(records: Recording) -> list[list[TowerCall]] | None:
    """A forward's vision-tower calls by layer, each layer's calls in the order made (a tower
    that attends over each image apart calls once per image); None when no vision tower ran."""
    if not records.vision:
        return None
    layers: list[list[TowerCall]] = [[] for _ in range(1 + max(c.layer for c in records.vision))]
    for made in records.vision:
        layers[made.layer].append(made.call)
    return layers


_active: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "attnviz_bridge_recording", default=None
)


@contextmanager
def recording(
    keep_weights: bool = True, device: torch.device | None = None, masks_only: bool = False
) -> Iterator[Recording]:
    """Keep every attention call of the forwards run inside, in call order (layer order), with
    the weights eager attention returned when ``keep_weights``; on ``device`` when given (a
    model whose layers a device map spread). ``masks_only``: each call's mask alone, no
    attention computed (``Recording``)."""
    records = Recording(keep_weights, device, masks_only)
    token = _active.set(records)
    try:
        yield records
    finally:
        _active.reset(token)


@dataclass
class Plan:
    """What the forwards of an ``ablating()`` block do to the heads' outputs: ``ablations`` in
    place, and the heads' outputs of the ``keep`` layers kept in ``outputs``, (H, T, hs) each,
    after that layer's ablations (the last forward's)."""

    ablations: tuple[HeadAblation, ...] = ()
    keep: frozenset[int] = frozenset()
    outputs: dict[int, torch.Tensor] = field(default_factory=dict)


_plan: contextvars.ContextVar[Plan | None] = contextvars.ContextVar(
    "attnviz_bridge_plan", default=None
)


@contextmanager
def ablating(
    ablations: Sequence[HeadAblation], keep: Collection[int] = ()
) -> Iterator[dict[int, torch.Tensor]]:
    """Run the enclosed forwards (each in an ``intervening()``) with ``ablations`` in place,
    keeping the heads' outputs of the ``keep`` layers: the dict yielded, layer -> (H, T, hs)."""
    plan = Plan(tuple(ablations), frozenset(keep))
    token = _plan.set(plan)
    try:
        yield plan.outputs
    finally:
        _plan.reset(token)


@dataclass
class Intervention:
    """What one forward does to its heads' outputs, layer by layer (the attention's calls in
    order: call l is layer l, as ``Recording`` counts them), as its ``Plan`` says."""

    ablations: dict[int, list[HeadAblation]]
    plan: Plan
    calls: int = 0
    # Why an output could not be read as the heads' outputs side by side, if one could not.
    error: str | None = None

    def apply(self, query: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
        """``out`` (B, T, H, hs), eager attention's output before the output projection (the
        heads' outputs side by side, as transformers' eager transposes them), with this layer's
        knocked-out heads replaced; ``query`` (B, H, T, hs) says the shapes to expect."""
        layer = self.calls
        self.calls += 1
        group = self.ablations.get(layer)
        if not group and layer not in self.plan.keep:
            return out
        B, H, T, _ = query.shape
        if out.dim() != 4 or tuple(out.shape[:3]) != (B, T, H):
            self.error = (
                f"layer {layer}'s attention returned {tuple(out.shape)}, not the heads' outputs "
                f"(batch, {T} positions, {H} heads, head size) that eager attention gives"
            )
            return out
        if group:
            z = out.transpose(1, 2)  # (B, H, T, hs): the engine's hook_z
            for a in group:
                z = replace_head(z, a)
            out = z.transpose(1, 2).contiguous()  # (B, T, H, hs)
        if layer in self.plan.keep:
            self.plan.outputs[layer] = out[0].transpose(0, 1).detach().clone()  # (H, T, hs)
        return out

    def missed(self) -> list[int]:
        """The layers asked for (ablated or kept) that this forward's attention never reached."""
        asked = set(self.ablations) | set(self.plan.keep)
        return sorted(layer for layer in asked if layer >= self.calls)


_intervention: contextvars.ContextVar[Intervention | None] = contextvars.ContextVar(
    "attnviz_bridge_intervention", default=None
)


@contextmanager
def intervening() -> Iterator[Intervention | None]:
    """One forward's intervention, as the enclosing ``ablating()`` plans it (its calls counted
    from this forward's first layer); None (nothing done) outside one, or with nothing to do."""
    plan = _plan.get()
    if plan is None or not (plan.ablations or plan.keep):
        yield None
        return
    by_layer: dict[int, list[HeadAblation]] = {}
    for a in plan.ablations:
        by_layer.setdefault(a.layer, []).append(a)
    edit = Intervention(by_layer, plan)
    token = _intervention.set(edit)
    try:
        yield edit
    finally:
        _intervention.reset(token)


def _eager_of(module: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    """The model's own eager attention (each modeling file has one, with its own soft-cap,
    sinks or dropout), else Llama's."""
    own = getattr(sys.modules.get(type(module).__module__), "eager_attention_forward", None)
    if own is not None:
        return own
    from transformers.models.llama.modeling_llama import eager_attention_forward

    return eager_attention_forward


def attention(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    *args: Any,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``"attnviz"`` attention function: the model's eager attention, recorded (and its
    heads' outputs knocked out, while ``ablating()``)."""
    records = _active.get()
    vision = getattr(module, VISION_MARK, False)
    if (
        vision
        and records is not None
        and not args
        and plain(module, query, key, attention_mask, kwargs, _INERT)
    ):
        # A traced tower call: its weights made again from q and k when asked, never here.
        scaling = kwargs.get("scaling")
        scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
        out, call = fused(module, _eager_of(module), query, key, value, attention_mask, scale,
                          kwargs)  # fmt: skip
        records.add_tower_call(module, call)
        return out, None  # type: ignore[return-value]
    if records is not None and records.masks_only and not vision:
        # The mask read, the attention not computed: (B, T, H, hs) zeros, as eager's shape.
        records.masks_read.append(records.mask(attention_mask))
        B, H, T, _ = query.shape
        return query.new_zeros(B, T, H, value.shape[-1]), None  # type: ignore[return-value]
    out, weights = _eager_of(module)(module, query, key, value, attention_mask, *args, **kwargs)
    if vision:  # a vision tower's layer: kept apart, never edited
        if records is not None and weights is not None:
            scaling = kwargs.get("scaling", args[0] if args else None)
            scale = float(scaling) if scaling is not None else query.shape[-1] ** -0.5
            records.add_vision(module, query, key, attention_mask, scale, weights)
        return out, weights
    edit = _intervention.get()
    if edit is not None:
        out = edit.apply(query, out)
    if records is not None and weights is not None:
        records.append(_layer_record(records, query, key, value, attention_mask, weights,
                                     args, kwargs))  # fmt: skip
    return out, weights


def _layer_record(
    records: Recording,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    weights: torch.Tensor,
    args: tuple,
    kwargs: dict[str, Any],
) -> LayerRecord:
    """What one language-model layer's eager attention was given and made, as recorded."""
    scaling = kwargs.get("scaling", args[0] if args else None)
    softcap = kwargs.get("softcap")
    window = kwargs.get("sliding_window")
    extras = tuple(
        sorted(
            k
            for k, v in kwargs.items()
            if v is not None and k not in _INERT | {"scaling", "softcap"}
        )
    )
    to = records.device or query.device
    return LayerRecord(
        q=query[0].detach().to(to),
        k=key[0].detach().to(to),
        v=value[0].detach().to(to),
        mask=records.mask(attention_mask),
        scaling=float(scaling) if scaling is not None else query.shape[-1] ** -0.5,
        softcap=float(softcap) if softcap else None,
        window=int(window) if isinstance(window, int) and window > 0 else None,
        extras=extras,
        weights=weights[0].detach().to(to) if records.keep_weights else None,
    )


_registered = False


def register() -> None:
    """Add ``"attnviz"`` to transformers' attention functions and masks (once)."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(NAME, attention)
    AttentionMaskInterface.register(NAME, eager_mask)
    _registered = True
