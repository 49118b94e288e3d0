"""What each layer's attention of a model is given, read with no weights at hand (an NDIF
model's, on the meta device here): its mask, and so its window, its scaling and its soft-cap,
from one forward on the meta device, as the load's probe of a local model reads them.

The forward's arithmetic on the weights runs on meta tensors (shapes, no numbers); what depends
on the positions alone (their indices, the masks transformers builds of them) is computed for
real on the CPU (``_Positions``), so each layer's attention function is handed the very mask it
would be given with its weights. That function (``PROBE``, registered in transformers'
``AttentionInterface`` with eager attention's masks) keeps what it was given and computes
nothing; each mask is read by the bridge's own rule (``record.as_mask``: the causal rule and a
window when they describe it) and the scalings and soft-caps as the bridge's ``RecordedRule``
says them. A mixture of experts' layers run as transformers' ``batched_mm`` (no shape that
depends on the routing).
"""

from __future__ import annotations

import contextvars
import logging
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves, tree_map

from attnviz.numbers import readable
from attnviz.pretrained.bridge.head import _experts_batched
from attnviz.pretrained.bridge.load import MASK_PAIR_BYTES, probe_lengths
from attnviz.pretrained.bridge.record import Mask, as_mask
from attnviz.pretrained.bridge.rule import LayerRule, RecordedRule

log = logging.getLogger(__name__)

PROBE = "attnviz-probe"
META = torch.device("meta")
CPU = torch.device("cpu")


@dataclass(frozen=True)
class Given:
    """What the probe read of a model's attention: each layer's window (None: it sees every
    key before it, or every key; the list None when they were not read, ``unread`` saying
    why), and the scaling and soft-cap every layer shares (None where the layers' differ, or
    for no soft-cap)."""

    windows: list[int | None] | None
    scaling: float | None
    softcap: float | None
    unread: str | None = None


_calls: contextvars.ContextVar[list[LayerRule | None] | None] = contextvars.ContextVar(
    "attnviz_meta_probe", default=None
)


def _given(
    module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
    attention_mask: torch.Tensor | None, *args: Any, **kwargs: Any,
) -> tuple[torch.Tensor, None]:  # fmt: skip
    """The ``PROBE`` attention function: what it was given kept (None for a mask with no
    numbers), and zeros returned in eager attention's shape (B, T, H, hs)."""
    calls = _calls.get()
    if calls is not None:
        scaling = kwargs.get("scaling", args[0] if args else None)
        softcap = kwargs.get("softcap")
        read = attention_mask is None or not attention_mask.is_meta
        calls.append(
            LayerRule(
                float(scaling) if scaling is not None else query.shape[-1] ** -0.5,
                float(softcap) if softcap else None,
                as_mask(attention_mask.cpu() if attention_mask is not None else None),
            )
            if read
            else None
        )
    B, H, T, _ = query.shape
    return query.new_zeros(B, T, H, value.shape[-1]), None


_registered = False


def register() -> None:
    """Add ``PROBE`` to transformers' attention functions, with eager attention's masks."""
    global _registered
    if _registered:
        return
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(PROBE, _given)
    AttentionMaskInterface.register(PROBE, eager_mask)
    _registered = True


def _numel(out: Any) -> int:
    return sum(t.numel() for t in tree_leaves(out) if isinstance(t, torch.Tensor))


class _Positions(TorchDispatchMode):
    """Each operation on the meta device when one of its tensors is there (the real ones moved
    there: shapes alone, nothing computed); for real otherwise, a new tensor asked for on the
    meta device made on the CPU when it holds at most ``limit`` numbers (positions, masks)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        if any(t.is_meta for t in tensors):

            def meta(a: Any) -> Any:
                return a.to(META) if isinstance(a, torch.Tensor) and not a.is_meta else a

            return func(*tree_map(meta, args), **tree_map(meta, kwargs))
        device = kwargs.get("device")
        if device is not None and torch.device(device).type == "meta":
            shaped = func(*args, **kwargs)  # its size, for free
            if _numel(shaped) <= self.limit:
                return func(*args, **{**kwargs, "device": CPU})
            return shaped
        return func(*args, **kwargs)


def read_attention(hf: Any, n_layers: int, probe_bytes: int) -> Given | str:
    """What each of the ``n_layers`` layers' attention of ``hf`` (a causal language model,
    its weights on the meta device or real) is given on a probe of as many tokens as the
    load's probe of a local model reads (``load.probe_lengths``): its window, scaling and
    soft-cap (``Given``); a window whose probe's masks are over ``probe_bytes`` (as the local
    probe's cap) is not read, the rest read on the short probe; or why nothing could be read,
    in words for the page."""
    text = hf.config.get_text_config() if hasattr(hf.config, "get_text_config") else hf.config
    short, need, named = probe_lengths(text)
    cost = need * need * MASK_PAIR_BYTES
    unread = None
    if named is not None and cost > probe_bytes:
        unread = (
            f"its window of {named[1]:,} tokens is read from masks of {need:,} tokens, "
            f"{readable(cost / 2**20)} MB, more than this server reads when it starts "
            f"({readable(probe_bytes / 2**20)} MB)"
        )
        need = short
    calls = _probe(hf, need)
    if isinstance(calls, str):
        return calls
    if len(calls) != n_layers:
        return (
            f"its attention function was called {len(calls)} times on the probe, not once per "
            f"layer ({n_layers})"
        )
    if any(c is None for c in calls):
        return "its masks could not be computed without its weights"
    rule = RecordedRule(tuple(c for c in calls if c is not None))
    windows = None if unread else [_window(i, r.mask) for i, r in enumerate(rule.layers)]
    return Given(windows, rule.scaling(), rule.softcap(), unread)


def _probe(hf: Any, length: int) -> list[LayerRule | None] | str:
    """What each attention call of a forward of ``hf`` on ``length`` tokens was given (None
    where its mask has no numbers), in call order; or why it could not be run."""
    register()
    before = hf.config._attn_implementation
    try:
        hf.set_attn_implementation(PROBE)
    except Exception as exc:  # transformers' refusal: the model's code picks its attention
        log.warning("its attention implementation could not be set to the probe's: %s", exc)
        return "its attention does not go through transformers' AttentionInterface here"
    calls: list[LayerRule | None] = []
    token = _calls.set(calls)
    try:
        ids = torch.zeros(1, length, dtype=torch.long)  # (1, T): the masks hold no token's id
        with torch.inference_mode(), _experts_batched(hf), _Positions(4 * length * length):
            hf(input_ids=ids, use_cache=False)
    except Exception as exc:  # a model's forward may fail many ways without its numbers
        log.warning("its attention could not be probed on the meta device: %s", exc)
        return "its forward could not be run here without its weights to read its masks"
    finally:
        _calls.reset(token)
        try:
            hf.set_attn_implementation(before)
        except Exception as exc:  # as it was: a refusal here is the transformers version's
            log.warning("its attention implementation could not be set back: %s", exc)
    return calls


def _window(layer: int, mask: Mask) -> int | None:
    """A layer's window, as the load's probe reads it: none where no causal rule or window
    describes the keys its mask hides (chunked attention), and the log says so."""
    if mask.hidden is not None or mask.bias is not None:
        log.warning("layer %d hides keys no causal rule or window describes; its window is not "
                    "shown", layer)  # fmt: skip
    return mask.window
