"""``run_long``: a model's forward over one long text with every self-attention weighing its
values through ``LongAttend``, kept as a ``LongTrace``, in memory or in a folder
(``attnviz.long.store``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import torch

from attnviz.engine.layout import Layout, spans_of
from attnviz.engine.model import Attention, Transformer
from attnviz.long import store
from attnviz.long.attend import LayerRecord, LongAttend, Plan
from attnviz.long.trace import LongTrace


def twin(model: Transformer) -> Transformer:
    """A second module tree over ``model``'s very weights (shared, not copied): a long run
    sets its attentions' ``attend`` there, so that the model's other users (a trace on another
    thread, its hooks) never meet it, and no lock is held for the minutes a long text takes."""
    if model.placement is not None:
        raise ValueError("a long run reads a model on one device")
    with torch.device("meta"):
        other = Transformer(model.cfg)
    other.load_state_dict(model.state_dict(), assign=True)
    return other.eval()


@contextmanager
def attending(model: Transformer, attend: LongAttend) -> Iterator[None]:
    """The model's self-attentions weigh their values with ``attend`` inside the block."""
    mods = [m for m in model.modules() if isinstance(m, Attention) and not m.cross]
    for m in mods:
        m.attend = attend
    try:
        yield
    finally:
        for m in mods:
            m.attend = None


def run_long(
    model: Transformer,
    ids: torch.Tensor,
    plan: Plan,
    layout: Layout | None = None,
    on_layer: Callable[[int], None] | None = None,
    folder: Path | None = None,
) -> LongTrace:
    """Run ``model`` (its ``twin``) over one text's ``ids`` (T,) without forming any (T, T)
    matrix, keeping what ``plan`` says of every layer: in memory, or with ``folder`` written
    there layer by layer and mapped back (``attnviz.long.store``; its meta last, once every
    layer is there). ``on_layer(layer)`` is called as each layer ends (a job's progress; it may
    raise to cancel)."""
    cfg = model.cfg
    if cfg.encoder_layers:
        raise ValueError("a long run reads a decoder-only or encoder-only model")
    T = int(ids.shape[-1])
    if plan.bounds[-1] != T:
        raise ValueError(f"the plan's blocks cover {plan.bounds[-1]} tokens, not the text's {T}")
    trace = LongTrace(cfg, plan, T, spans_of(layout))

    def keep(layer: int, rec: LayerRecord) -> None:
        trace.layers[layer] = rec if folder is None else store.save_layer(folder, layer, rec)
        if on_layer is not None:
            on_layer(layer)

    net = twin(model)
    with torch.inference_mode(), attending(net, LongAttend(plan, keep)):
        ids = ids.reshape(1, T).to(net.embed_device)
        net(ids) if layout is None else net(ids, layout=layout)
    if folder is not None:
        store.save_meta(trace, folder)
    return trace
