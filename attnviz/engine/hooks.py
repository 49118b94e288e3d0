"""Named identity hook points, in the style of TransformerLens.

Every internal activation passes through a ``HookPoint``. A hook point does nothing to its input;
it exists so that the activation has a name (its path in the module tree, e.g.
``blocks.0.attn.hook_pattern``) and a declared shape, and can be captured with ordinary PyTorch
forward hooks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle


class HookPoint(nn.Module):
    """Identity module that names an activation. ``shape`` documents its axes, e.g. "B nh T T".
    ``watched``: whether a forward hook is on it now (the attention then makes its scores and
    weights whole, not a few heads at a time), counted by its own handles, not read from
    torch's private hook tables."""

    def __init__(self, shape: str) -> None:
        super().__init__()
        self.shape = shape
        self.watchers = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x

    def register_forward_hook(  # type: ignore[override]
        self, hook: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> RemovableHandle:
        handle = super().register_forward_hook(hook, *args, **kwargs)
        self.watchers += 1
        return _Watch(handle, self)

    @property
    def watched(self) -> bool:
        return self.watchers > 0

    def extra_repr(self) -> str:
        return f"shape={self.shape!r}"


class _Watch(RemovableHandle):
    """A hook point's handle: removing its hook (once) also stops counting it."""

    def __init__(self, handle: RemovableHandle, point: HookPoint) -> None:
        self.__dict__.update(handle.__dict__)  # the same hook: its table and id
        self._point: HookPoint | None = point

    def remove(self) -> None:
        super().remove()
        if self._point is not None:
            self._point.watchers -= 1
            self._point = None


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


# The hook points' names, made by one helper (TransformerLens's get_act_name): a name's own part
# says where in the module tree it sits.
ATTENTION_HOOKS = ("q", "k", "v", "rot_q", "rot_k", "scores", "pattern", "z")
MLP_HOOKS = ("pre", "lin", "post")
BLOCK_HOOKS = ("resid_pre", "attn_out", "resid_mid", "cross_out", "resid_cross", "mlp_out",
               "resid_post")  # fmt: skip
MODEL_HOOKS = ("embed", "type_embed", "pos_embed", "logits")
NORMS = ("ln1", "ln1_out", "ln_cross", "ln2", "ln2_out", "q_norm", "k_norm")


def act_name(name: str, layer: int | None = None, attn: str = "attn", prefix: str = "") -> str:
    """The hook point's name in the module tree: ``act_name("pattern", 3)`` is
    ``"blocks.3.attn.hook_pattern"``; ``attn="cross_attn"`` names a decoder's cross-attention;
    ``act_name("resid_post", 0)``, ``act_name("pre", 1)`` (the feed-forward's),
    ``act_name("embed")``, ``act_name("ln_final")`` and ``act_name("q_norm", 2)`` (a norm's
    output) likewise; ``prefix="encoder."`` an encoder-decoder's encoder."""
    if name in MODEL_HOOKS or name == "ln_final" or name == "ln_embed":
        if layer is not None:
            raise ValueError(f"{name!r} is the model's, not a layer's")
        return (
            f"{prefix}{name}.hook_normalized" if name.startswith("ln_") else f"{prefix}hook_{name}"
        )
    if layer is None:
        raise ValueError(f"{name!r} needs a layer")
    block = f"{prefix}blocks.{layer}."
    if name in ATTENTION_HOOKS:
        return f"{block}{attn}.hook_{name}"
    if name in MLP_HOOKS:
        return f"{block}mlp.hook_{name}"
    if name in BLOCK_HOOKS:
        return f"{block}hook_{name}"
    if name in ("q_norm", "k_norm"):
        return f"{block}{attn}.{name}.hook_normalized"
    if name in NORMS:
        return f"{block}{name}.hook_normalized"
    raise ValueError(f"no hook point is called {name!r}")
