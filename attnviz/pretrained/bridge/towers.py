"""What a vision-language model's vision tower attended over, read back onto the images' tiles
(``capture.vision.TowerLayout``), and the multimodal rotary's position indices of a sequence
(M-RoPE: temporal, height, width), both from the model's own code, never its name.

The tower's order. The processor gives the tiles in order (each image's, row-major, then its
global view) and, in a tile, the patches row by row, or merge window by merge window
(``vision.Tile.blocked``, Qwen). A tower that reorders them into attention windows
(Qwen2.5-VL) says how through its modeling file's window index (transformers'
``get_vision_window_index``, or the tower's own ``get_window_index``): position j of its
sequence is merge unit ``window_index[j // unit]``'s patch ``j % unit``. A tower with a class
token (CLIP) attends over one position more per tile than the tile has patches, the first.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from attnviz.capture.vision import TowerCall, TowerLayout, TowerTile, piece_sizes
from attnviz.pretrained.bridge.record import VISION_MARK
from attnviz.pretrained.bridge.vision import ImageBlock


def _tiles(blocks: Sequence[ImageBlock]) -> list[tuple[TowerTile, list[int]]]:
    """Each tile's patch grid, and the row-major cell of each of its patches in the order the
    processor gave them."""
    out = []
    for block in blocks:
        for t, tile in enumerate(block.tiles):
            rows, cols = tile.rows * tile.merge, tile.cols * tile.merge
            cells = [r * cols + c for r, c in map(tile.patch, range(rows * cols))]
            out.append((TowerTile(block.image, t, rows, cols), cells))
    return out


def _window_index(hf: Any, grid: torch.Tensor) -> list[int] | None:
    """The tower's window index for ``grid`` (image_grid_thw): its merge units in the order it
    reads them, for a tower that reorders its patches into windows; None for any other."""
    for module in hf.modules():
        if not getattr(module, VISION_MARK, False):
            continue
        own = getattr(module, "get_window_index", None)
        if callable(own):
            return [int(w) for w in own(grid)[0]]
        made = getattr(sys.modules.get(type(module).__module__), "get_vision_window_index", None)
        size = getattr(module, "window_size", None)
        if made is not None and size and hasattr(module, "spatial_merge_size"):
            index, _ = made(grid, spatial_merge_size=module.spatial_merge_size, window_size=size,
                            patch_size=module.patch_size)  # fmt: skip
            return [int(w) for w in index]
    return None


def _unit(hf: Any) -> int:
    vision = getattr(hf.config, "vision_config", None)
    merge = getattr(vision, "spatial_merge_size", None) or 1
    return int(merge) ** 2


def tower_layout(hf: Any, blocks: Sequence[ImageBlock], inputs: Mapping[str, torch.Tensor],
                 first: Sequence[TowerCall]) -> TowerLayout | str:  # fmt: skip
    """Where the tower's sequence lies on the ``blocks``' tiles, for a forward on the
    processor's ``inputs`` whose tower's first layer made the calls ``first``; or why its
    weights cannot be put on them."""
    tiles = _tiles(blocks)
    order = [(i, cell) for i, (_, cells) in enumerate(tiles) for cell in cells]  # processor's
    note = ""
    grid = inputs.get("image_grid_thw")
    index = _window_index(hf, grid.cpu()) if grid is not None else None
    if index is not None:
        unit = _unit(hf)
        if len(index) * unit != len(order):
            return (
                f"the vision tower's window index covers {len(index) * unit} patches, not the "
                f"{len(order)} of the images"
            )
        order = [order[w * unit + k] for w in index for k in range(unit)]
        note = "the tower reads the patches window by window; they are put back row by row"
    found = piece_sizes(first)
    sizes = [t.patches for t, _ in tiles]
    class_token = found == [n + 1 for n in sizes]
    if sum(found) - class_token * len(found) != len(order):
        return (
            f"the vision tower attended over {sum(found)} positions in {len(found)} pieces, "
            f"which are not the {len(order)} patches of the images' {len(tiles)} tiles"
        )
    return TowerLayout(
        tiles=tuple(t for t, _ in tiles),
        tile_of=torch.tensor([i for i, _ in order], dtype=torch.long),
        cell_of=torch.tensor([c for _, c in order], dtype=torch.long),
        class_token=class_token,
        note=note,
    )


def mrope_sections(config: Any) -> tuple[list[int], bool] | None:
    """The text model's multimodal rotary sections [temporal, height, width] (and whether they
    are interleaved), from its rope config's ``mrope_section``; None without one."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    for name in ("rope_parameters", "rope_scaling"):
        rope = getattr(text, name, None)
        if isinstance(rope, Mapping) and rope.get("mrope_section"):
            return [int(s) for s in rope["mrope_section"]], bool(rope.get("mrope_interleaved"))
    return None


def rope_index(hf: Any, ids: Sequence[int],
               inputs: Mapping[str, torch.Tensor] | None) -> torch.Tensor | None:  # fmt: skip
    """(3, T) long: the (temporal, height, width) index of every position of a sequence, from
    the model's own ``get_rope_index`` on the processor's ``inputs`` (a text alone: every token
    text), on the CPU; None for a model without multimodal rotary."""
    found = (m for m in (hf, getattr(hf, "model", None)) if hasattr(m, "get_rope_index"))
    owner = next(found, None)
    if mrope_sections(hf.config) is None or owner is None:
        return None
    x = torch.tensor([list(ids)], dtype=torch.long)  # (1, T)
    given = dict(inputs or {})
    given.setdefault("mm_token_type_ids", torch.zeros_like(x))
    params = inspect.signature(owner.get_rope_index).parameters
    kwargs = {k: v.cpu() for k, v in given.items() if k in params and k != "input_ids"}
    with torch.inference_mode():
        positions, _ = owner.get_rope_index(x, **kwargs)  # (3, 1, T)
    return positions[:, 0]  # (3, T)


def mrope_positions(hf: Any, ids: Sequence[int],
                    inputs: Mapping[str, torch.Tensor] | None) -> dict | None:  # fmt: skip
    """``meta.mrope`` of a sequence: the sections and the (temporal, height, width) index of
    every position (``rope_index``); None for a model without multimodal rotary."""
    sections = mrope_sections(hf.config)
    positions = rope_index(hf, ids, inputs)
    if sections is None or positions is None:
        return None
    out: dict[str, Any] = {"sections": sections[0], "positions": positions.tolist()}
    if sections[1]:
        out["interleaved"] = True
    return out
