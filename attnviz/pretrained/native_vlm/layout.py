"""Where a vision-language model's tokens sit (the engine's ``Layout``), from the model's own
rules in transformers, never its name: the multimodal rotary's position indices from its
``get_rope_index`` (Qwen's M-RoPE: temporal, height, width; ``bridge.towers.rope_index``), the
index its forward gives its language model's first token (``first_position``: PaliGemma counts
from 1), and
the spans its mask makes bidirectional from the mask transformers' own
``create_masks_for_generate`` builds of the processor's token types (Gemma 3: each image's
tokens see each other; PaliGemma: the image and prompt, its prefix).

A mask that is not the causal rule with such spans (and, on the sliding layers, the engine's
rule of the window with them: ``TransformerConfig.window_in_spans``) is refused, naming what
differs: the engine would not compute it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnviz.engine.config import TransformerConfig
from attnviz.engine.layout import Layout, hidden_keys
from attnviz.pretrained.bridge.towers import rope_index


def spans_of(seen: torch.Tensor) -> tuple[tuple[int, int], ...]:
    """The [start, stop) spans whose tokens see each other both ways in ``seen`` (T, T) (True
    where query i sees key j), read from the keys after each query it sees; a ValueError when
    ``seen`` is not the causal rule with those spans unmasked."""
    T = seen.shape[0]
    later = torch.triu(seen, diagonal=1)  # (T, T) keys after the query it sees
    spans: list[tuple[int, int]] = []
    i = 0
    while i < T:
        found = later[i].nonzero()
        if found.numel() == 0:
            i += 1
            continue
        stop = int(found.max()) + 1
        spans.append((i, stop))
        i = stop
    rule = torch.ones(T, T, dtype=torch.bool).tril()  # (T, T) causal
    for a, b in spans:
        rule[a:b, a:b] = True
    if not torch.equal(rule, seen):
        i, j = (rule != seen).nonzero()[0].tolist()
        raise ValueError(
            f"its mask is not causal with bidirectional spans (query {i}, key {j}: "
            f"{'seen' if bool(seen[i, j]) else 'hidden'})"
        )
    return tuple(spans)


def _seen(mask: Any) -> torch.Tensor | None:
    """(T, T) True where a query sees a key, of the full-attention layers' mask (a layer-type
    mapping's or the one mask); None when the model made none (nothing hidden)."""
    if isinstance(mask, Mapping):
        mask = mask.get("full_attention", next(iter(mask.values()), None))
    if mask is None:
        return None
    m = mask[0, 0]  # (T, T): one sequence, every head
    if m.dtype == torch.bool:
        return m.cpu()
    return (m > torch.finfo(m.dtype).min / 2).cpu()  # eager's "minus infinity" hidden


def mask_spans(hf: Any, inputs: Mapping[str, torch.Tensor], T: int,
               cfg: TransformerConfig) -> tuple[tuple[int, int], ...]:  # fmt: skip
    """The bidirectional spans of a sequence of ``T`` tokens whose processor's ``inputs`` carry
    token types (``token_type_ids``), from the masks the model's ``create_masks_for_generate``
    makes of them, checked on the sliding layers against the engine's rule (``cfg``'s window);
    () for a model that makes none of token types."""
    make = getattr(type(hf), "create_masks_for_generate", None)
    types = inputs.get("token_type_ids")
    if make is None or types is None:
        return ()
    if "token_type_ids" not in inspect.signature(make).parameters:
        return ()
    embeds = torch.zeros(1, T, 1)  # (1, T, 1): the mask reads the shape and dtype alone
    with torch.inference_mode():
        masks = make(
            config=hf.config,
            inputs_embeds=embeds,
            attention_mask=torch.ones(1, T, dtype=torch.long),
            cache=None,
            position_ids=torch.arange(T)[None],  # (1, T)
            token_type_ids=types.cpu(),
        )
    seen = _seen(masks)
    if seen is None:
        return ()
    spans = spans_of(seen)
    sliding = masks.get("sliding_attention") if isinstance(masks, Mapping) else None
    if sliding is not None and isinstance(cfg.sliding_window, int):  # one size (Gemma 3's)
        window = hidden_keys(T, T, 0, True, cfg.sliding_window, torch.device("cpu"), spans,
                             cfg.window_in_spans)  # fmt: skip
        theirs = _seen(sliding)
        if theirs is not None and not torch.equal(theirs, ~window):
            i, j = (theirs == window).nonzero()[0].tolist()
            raise ValueError(
                f"its sliding layers' mask is not the engine's window with bidirectional spans "
                f"(query {i}, key {j}: {'seen' if bool(theirs[i, j]) else 'hidden'})"
            )
    return spans


class _Given(Exception):
    """What the model's forward gave its language model (``first_position``'s probe)."""

    def __init__(self, positions: torch.Tensor | None) -> None:
        super().__init__("the language model was reached")
        self.positions = positions


def first_position(hf: Any) -> int:
    """The rotary index the model's own forward gives a text's first token: its forward run on
    a few token vectors until it calls its language model (on the meta device, never run),
    whose ``position_ids`` are read; 0 when it gives none (the language model counts from 0)."""
    decoder = hf.get_decoder()

    def given(_m: torch.nn.Module, _args: tuple, kwargs: dict) -> None:
        raise _Given(kwargs.get("position_ids"))

    width = hf.config.get_text_config().hidden_size
    handle = decoder.register_forward_pre_hook(given, with_kwargs=True)
    try:
        with torch.inference_mode():
            hf(inputs_embeds=torch.zeros(1, 4, width), use_cache=False)  # (1, 4, C)
    except _Given as seen:
        return 0 if seen.positions is None else int(seen.positions.reshape(-1)[0])
    finally:
        handle.remove()
    raise ValueError("its forward never called its language model")


def vlm_layout(hf: Any, ids: Sequence[int], inputs: Mapping[str, torch.Tensor],
               cfg: TransformerConfig, first: int = 0) -> Layout:  # fmt: skip
    """The Layout of ``ids`` with the processor's ``inputs`` (grown to ``ids``: ``grown_inputs``)
    as the model's own rules place them, for the engine's ``cfg``; ``first`` the index of a
    text's first token (``first_position``)."""
    spans = mask_spans(hf, inputs, len(ids), cfg)
    positions = rope_index(hf, ids, inputs)
    if positions is None and first:
        positions = torch.arange(first, first + len(ids))  # (T,)
    return Layout(positions=positions, spans=spans)
