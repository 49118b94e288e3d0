"""How a served model's heads compose (``engine.composition``: Q-, K- and V-composition of every
earlier head into every later one, from the weights, as TransformerLens computes them), computed
once per model on the compute thread and kept: the last ``CACHE_MODELS`` models', each for the
very model object (a trained run's model that replaces another of its name is computed afresh;
a model that goes away from the registry is never answered again, its entry left to age out).

Native models only: the scores read the engine's own W_Q, W_K, W_V and W_O, which a model run
through transformers (the bridge) does not have in one form; it is refused with the reason. So
is a model whose scores would hold the compute thread too long (``MAX_GFLOP``: the work grows as
(layers x heads x head size)^2 x d_model).
"""

from __future__ import annotations

import math
import threading
import weakref
from collections import OrderedDict

from attnviz.engine.composition import KINDS, Composition, composition_scores, flop
from attnviz.errors import TraceError
from attnviz.pretrained.folder import BACKEND_WORDS, PretrainedModel
from attnviz.pretrained.registry import ServedModel
from attnviz.schemas.composition import CompositionKinds, CompositionResponse, Grid

CACHE_MODELS = 16
DIGITS = 6
# The most arithmetic one answer may take on the compute thread (GFLOP): on a CPU about 15 to 40
# s (GPT-2's 12 x 12 heads take 180 GFLOP, 1.4 s), on an accelerator a 7B model's 2e5.
MAX_GFLOP = {"cpu": 2_000.0, "other": 400_000.0}


def _grid(c: Composition, kind: str) -> Grid:
    """The (L, H, L, H) scores [la, ha, lb, hb] as [lb][hb][la * H + ha] for la < lb."""
    L, H = c.layers, c.heads
    s = c.scores[kind].permute(2, 3, 0, 1).reshape(L, H, L * H).tolist()  # [lb, hb, la H + ha]
    return [
        [[None if math.isnan(x) else round(x, DIGITS) for x in row[: lb * H]] for row in s[lb]]
        for lb in range(L)
    ]


def response(name: str, c: Composition) -> CompositionResponse:
    return CompositionResponse(
        model=name,
        layers=c.layers,
        heads=c.heads,
        names=c.names,
        kinds=CompositionKinds(**{kind: _grid(c, kind) for kind in KINDS}),
        processing=c.processing,
        seconds=round(c.seconds, 3),
    )


def compute(m: ServedModel) -> Composition:
    """The model's composition scores (raises TraceError for one the engine does not run)."""
    if not isinstance(m, PretrainedModel):
        raise TraceError(
            f"model: {m.name} runs through {BACKEND_WORDS[m.backend]} ({m.family}), whose "
            "attention weights are not the engine's W_Q, W_K, W_V and W_O: composition scores "
            "are for models the native engine runs"
        )
    if m.cfg.encoder_layers:
        raise TraceError(
            f"model: {m.name} is an encoder-decoder; composition scores live in one residual "
            "stream and it has two"
        )
    work = flop(m.cfg) / 1e9
    cap = MAX_GFLOP["cpu" if m.device.type == "cpu" else "other"]
    if work > cap:
        raise TraceError(
            f"model: {m.name}'s composition scores ({m.cfg.n_layers} x {m.cfg.n_heads} heads) "
            f"take about {work:,.0f} GFLOP, past the {cap:,.0f} this server computes on its "
            f"{m.device.type}"
        )
    with m.lock:
        return composition_scores(m.model)


class CompositionCache:
    """The last ``size`` models' answers, by name, for the very model object."""

    def __init__(self, size: int = CACHE_MODELS) -> None:
        self.size = size
        self._items: OrderedDict[str, tuple[weakref.ref, CompositionResponse]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, m: ServedModel) -> CompositionResponse | None:
        with self._lock:
            item = self._items.get(m.name)
            if item is None or item[0]() is not m:
                return None
            self._items.move_to_end(m.name)
            return item[1]

    def answer(self, m: ServedModel) -> CompositionResponse:
        """The model's answer, computed on first use (call on the compute thread)."""
        got = self.get(m)
        if got is None:
            got = response(m.name, compute(m))
            with self._lock:
                self._items[m.name] = (weakref.ref(m), got)
                self._items.move_to_end(m.name)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return got


COMPOSITIONS = CompositionCache()
