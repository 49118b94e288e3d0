"""A bridged model's way from its last block to its logits, found by running it: the modules it
applies to the last block's output (its final norm, wherever the model keeps it: OPT's is on
``model.decoder``; a projection before the head), then its output embedding, soft-cap and
logit scale, each checked on the load's probe against the model's own last hidden state and
logits. Nothing here names a family: the blocks are the decoder's list of as many modules as
the model has layers, and what follows them is what the forward calls after the last one.

The probe's forward runs inside ``watching``; ``head_path`` then says how the model makes its
logits (``capture.lens.HeadPath``), or why that could not be read, and ``mark`` keeps it on
the model for ``capture.lens.bridged_readout``. ``find_after_blocks`` finds the same modules
(``after_blocks``) with no weights at hand, the forward run on fake tensors: how an NDIF
model's plan names its final norm.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import torch

from attnviz.capture.lens import HEAD_MARK, HeadPath
from attnviz.engine.reduce import logit_scale

# What is recomputed (the same modules on the same numbers) must equal the forward's within
# this, relative to the forward's largest magnitude.
HEAD_TOLERANCE = 1e-4


def blocks(hf: Any) -> torch.nn.ModuleList | None:
    """The language model's blocks: the module list in its decoder that holds the most
    parameters (``head_path`` checks it has one module per layer); None when it has none."""
    decoder = hf.get_decoder() if hasattr(hf, "get_decoder") else hf
    lists = [m for m in decoder.modules() if isinstance(m, torch.nn.ModuleList) and len(m)]
    if not lists:
        return None
    return max(lists, key=lambda m: sum(p.numel() for p in m.parameters()))


@dataclass
class Watch:
    """What a forward did after its last block: that block's output, and the modules of the
    decoder (outside the blocks) it called afterwards, in call order; ``n`` blocks."""

    n: int = 0
    last: torch.Tensor | None = None
    after: list[Any] = field(default_factory=list)


@contextmanager
def watching(hf: Any) -> Iterator[Watch]:
    """Record, for the forwards run inside, the last block's output and what the decoder calls
    after it (``Watch``); nothing when the blocks cannot be found."""
    watch = Watch()
    layers = blocks(hf)
    if layers is None:
        yield watch
        return
    watch.n = len(layers)
    decoder = hf.get_decoder() if hasattr(hf, "get_decoder") else hf
    inside = {id(m) for m in layers.modules()}
    names = {id(m): n for n, m in decoder.named_modules()}
    where = names[id(layers)]  # the blocks' dotted path; the modules holding them are above it
    holding = {i for i, n in names.items() if n == "" or where.startswith(n + ".")}

    def returned(module: Any, args: Any, output: Any) -> None:
        out = output[0] if isinstance(output, tuple) else output
        watch.last = out if isinstance(out, torch.Tensor) else None
        watch.after.clear()

    def called(module: Any, args: Any) -> None:
        if watch.last is not None:
            watch.after.append(module)

    handles = [layers[-1].register_forward_hook(returned)]
    handles += [
        m.register_forward_pre_hook(called)
        for m in decoder.modules()
        if id(m) not in inside and id(m) not in holding
    ]
    try:
        yield watch
    finally:
        for h in handles:
            h.remove()


def _outermost(modules: list[Any]) -> tuple[Any, ...]:
    """``modules`` without those called from inside another of them (a norm's own parts)."""
    within = {id(sub) for m in modules for sub in m.modules() if sub is not m}
    seen: set[int] = set()
    out = []
    for m in modules:
        if id(m) not in within and id(m) not in seen:
            seen.add(id(m))
            out.append(m)
    return tuple(out)


def after_blocks(hf: Any, watch: Watch, n_layers: int) -> tuple[Any, ...] | str:
    """The modules a watched forward (``watching``) of ``hf`` called after its last block, in
    order, without their own parts and up to its output embedding (a model whose decoder is
    itself calls it there): its final norm wherever the model keeps it (and a projection after
    it, if any); or why the blocks could not be found. The bridge's probe and the NDIF
    backend's plan both read a model's final norm here."""
    if watch.last is None or watch.n != n_layers:
        return f"its blocks could not be found (no list of its {n_layers} layers' modules)"
    final = _outermost(watch.after)
    head = hf.get_output_embeddings()
    cut = next((i for i, m in enumerate(final) if m is head), len(final))
    return final[:cut]


@contextmanager
def _experts_batched(hf: Any) -> Iterator[None]:
    """A mixture of experts' layers run as transformers' "batched_mm" (every expert on every
    token: no shape that depends on the routing, so they run on fake tensors), then as before."""
    own: list[Any] = [getattr(m, "config", None) for m in hf.modules()]
    configs = {id(c): c for c in own if hasattr(c, "_experts_implementation_internal")}
    before = {i: c._experts_implementation_internal for i, c in configs.items()}
    try:
        for c in configs.values():
            c._experts_implementation_internal = "batched_mm"
        yield
    finally:
        for i, c in configs.items():
            c._experts_implementation_internal = before[i]


def find_after_blocks(hf: Any, n_layers: int) -> tuple[Any, ...] | str:
    """``after_blocks`` of a forward of ``hf`` on fake tensors (shapes, no numbers: its weights
    may be on the meta device, as an NDIF model's are here, and nothing is computed); or why it
    could not be run or read."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    first = next(hf.parameters(), None)
    device = first.device if first is not None else torch.device("cpu")
    try:
        with _experts_batched(hf), FakeTensorMode(allow_non_fake_inputs=True):
            ids = torch.zeros(1, 4, dtype=torch.long, device=device)  # (1, T)
            with torch.inference_mode(), watching(hf) as watch:
                hf(input_ids=ids, use_cache=False)
    except Exception as exc:  # a model's forward on fake tensors may fail many ways
        return f"its forward could not be run on fake tensors to find its final norm ({exc})"
    return after_blocks(hf, watch, n_layers)


def _close(got: torch.Tensor, want: torch.Tensor) -> bool:
    if got.shape != want.shape:
        return False
    want = want.float()
    err = (got.float().to(want.device) - want).abs().max()
    return bool(err <= HEAD_TOLERANCE * max(1.0, float(want.abs().max())))


def head_path(
    hf: Any, watch: Watch, n_layers: int, last_state: torch.Tensor, logits: Any
) -> HeadPath | str:
    """How ``hf`` made ``logits`` (its forward's, (1, T, V)) of its last block's output
    (``watch``), given ``last_state`` (its forward's last hidden state, (1, T, C)) and its
    ``n_layers``: the modules it called after its last block, its output embedding, soft-cap
    and logit scale, each checked here; or why it cannot be read."""
    head = hf.get_output_embeddings()
    if not isinstance(head, torch.nn.Linear):
        return "it has no output embedding attnviz can read (a linear layer)"
    final = after_blocks(hf, watch, n_layers)
    if isinstance(final, str):
        return final
    assert watch.last is not None
    x = watch.last
    try:
        with torch.inference_mode():
            for module in final:
                x = module(x)
    except (TypeError, RuntimeError, ValueError) as exc:
        return f"what it applies after its last block could not be run alone ({exc})"
    if not _close(x, last_state):
        return (
            "what it applies after its last block does not give its last hidden state back "
            "(its final norm could not be found)"
        )
    if not isinstance(logits, torch.Tensor):
        return "it gives no logits"
    text = hf.config.get_text_config() if hasattr(hf.config, "get_text_config") else hf.config
    cap = getattr(text, "final_logit_softcapping", None) or getattr(
        hf.config, "final_logit_softcapping", None
    )
    with torch.inference_mode():
        made = head(last_state).float()
        if cap:
            made = torch.tanh(made / cap) * cap
        # A logit scale (Cohere's, Granite's): one number for all, as NDIF's trace finds it.
        scale = logit_scale(made, logits, HEAD_TOLERANCE)
    if scale is None:
        return "its logits are not its output embedding of its last hidden state"
    return HeadPath(final, float(cap) if cap else None, scale)


def mark(hf: Any, path: HeadPath | str) -> None:
    """Keep ``path`` on ``hf`` for ``capture.lens.bridged_readout``."""
    setattr(hf, HEAD_MARK, path)
