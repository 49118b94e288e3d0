"""A vision-language model's vision tower (``attnviz.capture.vision``): its attention weights
over one tile's patches; ``image`` and ``tile`` pick the tile, ``layer`` and ``head`` the
tower's own layer and head (not the language model's)."""

from __future__ import annotations

import torch

from attnviz.capture.fields.base import Ask, Pick, TraceField, TraceSource, index, register
from attnviz.capture.vision import TowerLayout, tile_weights
from attnviz.errors import TraceError


def _tower(t: TraceSource) -> TowerLayout:
    """The trace's vision tower's layout, or a TraceError saying why it has none."""
    if t.vision is None:
        raise TraceError(
            "fields: vision: this trace has no images, so no vision tower ran (a text with "
            "images, on a model that reads them, has one)"
        )
    if not isinstance(t.tower, TowerLayout):
        raise TraceError(
            "fields: vision: the vision tower's weights could not be put on the images' tiles "
            f"({t.tower or 'no layout'})"
        )
    return t.tower


def _vision(pick: Pick) -> torch.Tensor:
    """(Lv', Hv', P, P): the tower's weights over tile ``tile`` of image ``image``, of its
    ``layer`` and ``head`` (all by default)."""
    t, ask = pick.source, pick.ask
    tower = _tower(t)
    assert t.vision is not None
    tile = tower.index(ask.image, ask.tile)
    layers = index(ask.layer, len(t.vision), "layer", "layers of the vision tower")
    heads = index(ask.head, int(t.vision[0][0].shape[1]), "head", "heads of the vision tower")
    return torch.stack([tile_weights(t.vision[i], tower, tile, i)[heads] for i in layers])


def numbers(source: TraceSource, ask: Ask) -> int:
    """How many numbers ``vision`` would hold of ``source`` (0 where it is refused)."""
    if source.vision is None or not isinstance(source.tower, TowerLayout):
        return 0
    P = max(tile.patches for tile in source.tower.tiles)
    Lv = len(source.vision) if ask.layer is None else 1
    Hv = int(source.vision[0][0].shape[1]) if ask.head is None else 1
    return Lv * Hv * P * P


register(
    TraceField(
        "vision",
        "[layers][heads][P][P]: the vision tower's attention weights over one tile's patches "
        "(image, tile), P = rows x cols of its patch grid, row-major; the class token, if any, "
        "dropped (meta.vision says so); 0 between the windows of a windowed layer.",
        lambda ask, shape: shape.vision,
        _vision,
        params=("image", "tile", "layer", "head"),
        tower=True,
        words="vision tower's weights",
    )
)
