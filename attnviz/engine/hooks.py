"""Named identity hook points, in the style of TransformerLens.

Every internal activation passes through a ``HookPoint``. A hook point does nothing to its input;
it exists so that the activation has a name (its path in the module tree, e.g.
``blocks.0.attn.hook_pattern``) and a declared shape, and can be captured with ordinary PyTorch
forward hooks.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

import torch
from torch import nn


class HookPoint(nn.Module):
    """Identity module that names an activation. ``shape`` documents its axes, e.g. "B nh T T"."""

    def __init__(self, shape: str) -> None:
        super().__init__()
        self.shape = shape

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def extra_repr(self) -> str:
        return f"shape={self.shape!r}"


def hook_points(model: nn.Module) -> dict[str, HookPoint]:
    """Every hook point of ``model`` by its name in the module tree, in forward order."""
    return {name: m for name, m in model.named_modules() if isinstance(m, HookPoint)}


@contextmanager
def capture(
    model: nn.Module, names: Iterable[str] | None = None
) -> Iterator[dict[str, torch.Tensor]]:
    """Record the activations at ``names`` (all hook points if None) during the enclosed forward.

    >>> with capture(model) as cache:
    ...     model(x)
    >>> cache["blocks.0.attn.hook_pattern"]
    """
    points = hook_points(model)
    wanted = points.keys() if names is None else list(names)
    unknown = [n for n in wanted if n not in points]
    if unknown:
        raise KeyError(f"no hook point named {unknown[0]!r}")
    cache: dict[str, torch.Tensor] = {}
    handles = []
    for name in wanted:

        def save(_m: nn.Module, _inp: tuple, out: torch.Tensor, name: str = name) -> None:
            cache[name] = out.detach()

        handles.append(points[name].register_forward_hook(save))
    try:
        yield cache
    finally:
        for h in handles:
            h.remove()
