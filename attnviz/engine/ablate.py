"""Knocking heads out: an intervention on one head's output before the output projection.

Head h of layer l writes ``z[:, h]`` (B, T, hs) at ``blocks.{l}.attn.hook_z``, the pattern times
the values, which the output projection W_O then mixes into the residual stream. As
TransformerLens does, an ablation is a forward hook on that hook point that returns ``z`` with
head h's slice replaced; the weights are never edited:

- ``zero``: the head writes nothing (its slice is 0; the output projection's bias stays).
- ``mean``: at every position, the head's output averaged over the text's positions (of the
  same run, so after any earlier layer's ablation).
- ``patch``: the head's output from another text (``source``), position by position from the
  start: position i gets the source's position i; positions past the source's end keep their
  own output (``patched`` says how many were replaced).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Literal

import torch
from torch import nn

from attnviz.engine import reduce
from attnviz.engine.hooks import act_name, capture, hook_points
from attnviz.engine.layout import Layout

Mode = Literal["zero", "mean", "patch"]


@dataclass(frozen=True)
class HeadAblation:
    """One head knocked out: ``layer``, ``head`` (from 0), ``mode``; for ``patch``, the head's
    output on the source text (T_src, hs)."""

    layer: int
    head: int
    mode: Mode
    source: torch.Tensor | None = None

    def patched(self, T: int) -> int:
        """Positions of a T-token text that take the source's output (patch), else all T."""
        return T if self.source is None else min(T, self.source.shape[0])


def replace_head(z: torch.Tensor, ablation: HeadAblation) -> torch.Tensor:
    """``z`` (B, nh, T, hs) with the ablated head's slice replaced (a new tensor; the rule is
    ``reduce.replace_head``, which a remote trace runs on its deployment too)."""
    return reduce.replace_head(z, ablation.head, ablation.mode, ablation.source)


@contextmanager
def ablating(model: nn.Module, ablations: Sequence[HeadAblation]) -> Iterator[None]:
    """Run the enclosed forwards with ``ablations`` in place: a forward hook per layer on
    ``hook_z`` that replaces its heads' outputs. Registered before any capture in the enclosed
    block, so a capture of ``hook_z`` sees the ablated output."""
    points = hook_points(model)
    by_layer: dict[int, list[HeadAblation]] = {}
    for a in ablations:
        by_layer.setdefault(a.layer, []).append(a)
    handles = []
    for layer, group in by_layer.items():

        def hook(
            _m: nn.Module, _inp: tuple, out: torch.Tensor, group: list = group
        ) -> torch.Tensor:
            for a in group:
                out = replace_head(out, a)
            return out

        handles.append(points[act_name("z", layer)].register_forward_hook(hook))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@torch.inference_mode()
def head_outputs(
    model: nn.Module, x: torch.Tensor, layers: Sequence[int], layout: Layout | None = None
) -> dict[int, torch.Tensor]:
    """Every head's output ``z`` (nh, T, hs) at ``layers`` on one sequence ``x`` (1, T) of a
    clean forward (with ``layout``, where its tokens sit): what ``patch`` copies from its
    source text."""
    names = {layer: act_name("z", layer) for layer in sorted(set(layers))}
    with capture(model, names.values()) as cache:
        if layout is None:
            model(x)
        else:
            model(x, layout=layout)
    return {layer: cache[name][0] for layer, name in names.items()}


@dataclass(frozen=True)
class EngineKnockouts:
    """Knock-outs on an engine model as the trace service asks a served model for them (as the
    transformers bridge's ``BridgedModel`` offers them too): ``head_outputs`` of token ids, and
    ``ablating``."""

    model: nn.Module
    device: torch.device

    def head_outputs(self, ids: Sequence[int], layers: Sequence[int]) -> dict[int, torch.Tensor]:
        x = torch.tensor([list(ids)], dtype=torch.long, device=self.device)  # (1, T)
        return head_outputs(self.model, x, layers)

    def ablating(self, ablations: Sequence[HeadAblation]) -> AbstractContextManager[None]:
        return ablating(self.model, ablations)
