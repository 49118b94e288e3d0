"""What a transformers model's attention was given, layer by layer, recorded through
transformers' own extension point: ``AttentionInterface``.

``register()`` adds an attention function named ``"attnviz"`` (and the same name to
``AttentionMaskInterface``, with transformers' eager mask, so the model builds the mask eager
attention would be given). A model loaded with ``attn_implementation="attnviz"`` calls it in
every layer with the queries and keys as that layer computed them (after its rotary embedding
and any q/k norms), the values, the mask, the scaling and its own options (soft-cap, sliding
window). It calls the model's own ``eager_attention_forward`` and returns what that returns, so
the forward is eager attention's, number for number; while ``recording()`` is active it also
keeps each layer's inputs and weights.

transformers is imported only by ``register()``: this module loads without it.
"""

from __future__ import annotations

import contextvars
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

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
    hidden), a sliding window (seen only when 0 <= i - j < window, transformers' rule), or, when
    neither rule describes the mask, the mask itself: ``hidden`` (T, S) booleans, or ``bias`` (T,
    S) added to the logits (-inf where hidden). Queries are the last T of S positions."""

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
            hidden = hidden | ((i - j) >= self.window)
        return hidden

    def nbytes(self) -> int:
        t = self.bias if self.bias is not None else self.hidden
        return 0 if t is None else t.numel() * t.element_size()

    def describe(self) -> str:
        if self.bias is not None:
            return "a bias added to the logits"
        if self.hidden is not None:
            return "a mask of its own"
        if self.window is not None:
            return f"causal, sliding window {self.window}" if self.causal else "sliding window"
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
    if not bool(hidden.any()):
        return Mask()
    T, S = hidden.shape
    seen_last = int((~hidden[-1]).sum())  # the last query sees min(S, window) keys
    for causal, window in ((True, None), (True, seen_last), (False, None)):
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


class Recording(list[LayerRecord]):
    """The layers' records of one forward, in call order; masks shared by layers made once."""

    def __init__(self, keep_weights: bool = True) -> None:
        super().__init__()
        self.keep_weights = keep_weights
        # The model's mask tensors (kept, so that no other takes an id while this lives) and
        # what each says.
        self.masks: dict[int, tuple[torch.Tensor, Mask]] = {}

    def mask(self, attention_mask: torch.Tensor | None) -> Mask:
        if attention_mask is None:
            return Mask()
        key = id(attention_mask)
        if key not in self.masks:
            self.masks[key] = (attention_mask, as_mask(attention_mask))
        return self.masks[key][1]


_active: contextvars.ContextVar[Recording | None] = contextvars.ContextVar(
    "attnviz_bridge_recording", default=None
)


@contextmanager
def recording(keep_weights: bool = True) -> Iterator[Recording]:
    """Keep every attention call of the forwards run inside, in call order (layer order), with
    the weights eager attention returned when ``keep_weights``."""
    records = Recording(keep_weights)
    token = _active.set(records)
    try:
        yield records
    finally:
        _active.reset(token)


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
    """The ``"attnviz"`` attention function: the model's eager attention, recorded."""
    out, weights = _eager_of(module)(module, query, key, value, attention_mask, *args, **kwargs)
    records = _active.get()
    if records is not None and weights is not None:
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
        records.append(
            LayerRecord(
                q=query[0].detach(),
                k=key[0].detach(),
                v=value[0].detach(),
                mask=records.mask(attention_mask),
                scaling=float(scaling) if scaling is not None else query.shape[-1] ** -0.5,
                softcap=float(softcap) if softcap else None,
                window=int(window) if isinstance(window, int) and window > 0 else None,
                extras=extras,
                weights=weights[0].detach() if records.keep_weights else None,
            )
        )
    return out, weights


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
