"""Where each image's tokens sit in a vision-language model's sequence, the grid they form, and
the region of the original picture each one stands for: read from the processor's outputs (the
input ids, pixel_values' shape, image_grid_thw), its image processor's settings and the model's
config, never from the model's name.

How a token maps back to the picture. The image processor first resizes the picture (and may
crop or split it); the vision tower cuts what it gets into ``patch`` x ``patch`` pixel patches;
the connector then merges ``merge`` x ``merge`` neighbouring patches into one token of the
language model. Every resize here is a plain stretch of the whole picture (or of its centre
crop), so token (row, col) of a tile covers the rectangle ``Tile.region(row, col)``: the tile's
box in the original picture, cut into rows x cols equal cells.

- Qwen2-VL / 2.5-VL / 3-VL: the picture is stretched to multiples of patch x merge pixels
  (image_grid_thw = (1, H / patch, W / patch)); tokens are the merge x merge windows (merge =
  spatial_merge_size, 2), row-major. The vision tower lists its patches window by window
  (``Tile.blocked``), not row by row.
- Idefics3 / SmolVLM: the picture is stretched so that its longest edge is ``size.longest_edge``
  and each side a multiple of the tile (``max_image_size.longest_edge``), split into rows x cols
  tiles, each with its own grid, then the whole picture squeezed to one tile (the global view,
  last). The pixel shuffle groups scale_factor x scale_factor patches per token.
- Gemma 3: the picture is stretched to the tower's square; its patches are average-pooled
  (mm_tokens_per_image = 256: 64 x 64 patches to 16 x 16 tokens, 4 x 4 patches each).
- LLaVA (CLIP): the shorter side is resized to ``size.shortest_edge``, the centre
  ``crop_size`` is kept, one token per patch (the class token is dropped): the box is the crop.
- PaliGemma: the picture stretched to the tower's square, one token per patch.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

Box = tuple[float, float, float, float]  # (top, left, bottom, right) in the original's pixels


@dataclass(frozen=True)
class Tile:
    """One grid of an image's tokens: ``rows`` x ``cols`` tokens from ``start`` in the sequence,
    row-major (token ``start + r * cols + c`` is cell (r, c)), covering ``box`` of the original
    picture. ``merge``: patches per token along each side; ``blocked``: whether the vision tower
    lists the patches merge window by merge window (Qwen) rather than row by row."""

    start: int
    rows: int
    cols: int
    box: Box
    merge: int = 1
    blocked: bool = False
    label: str = ""  # "row 1, column 2" for a split tile, "global" for the whole picture

    @property
    def stop(self) -> int:
        return self.start + self.rows * self.cols

    def region(self, row: int, col: int) -> Box:
        """The part of the original picture token (row, col) stands for."""
        top, left, bottom, right = self.box
        h, w = (bottom - top) / self.rows, (right - left) / self.cols
        return (top + row * h, left + col * w, top + (row + 1) * h, left + (col + 1) * w)

    def patch(self, index: int) -> tuple[int, int]:
        """The (row, col) on the patch grid (rows x merge by cols x merge) of the vision tower's
        ``index``-th patch of this tile."""
        m, pcols = self.merge, self.cols * self.merge
        if not self.blocked:
            return divmod(index, pcols)
        window, inner = divmod(index, m * m)  # windows row-major, then m x m patches inside
        wr, wc = divmod(window, self.cols)
        ir, ic = divmod(inner, m)
        return wr * m + ir, wc * m + ic


@dataclass(frozen=True)
class Resize:
    """What the image processor did to one picture, read from its outputs: ``resized`` the
    (height, width) it stretched the whole picture to before any crop or split, ``crop`` the
    part of that it kept (top, left, bottom, right in the resized pixels; None: no crop),
    ``view`` each tile's (or the one view's) pixels as the vision tower reads them
    (pixel_values' height and width, or image_grid_thw's times the patch), ``tiles`` the split
    tiles (0: not split) and ``global_view`` whether the whole picture comes too, ``patches``
    and ``tokens`` one view's vision patches and its tokens after merging."""

    resized: tuple[int, int]
    view: tuple[int, int]
    crop: tuple[int, int, int, int] | None = None
    tiles: int = 0
    global_view: bool = False
    patches: int = 0
    tokens: int = 0


@dataclass(frozen=True)
class ImageBlock:
    """Image ``image``'s tokens: positions ``start`` to ``stop`` (one past the last image
    token; a split image's tile tags and separators lie inside), its grids in ``tiles`` (one
    for an unsplit picture; a split one's tiles row-major, then its global view), ``size`` the
    original's (height, width)."""

    image: int
    start: int
    stop: int
    rows: int  # the grid of the whole picture: the only tile, or the global view
    cols: int
    tiles: tuple[Tile, ...]
    size: tuple[int, int]
    resize: Resize | None = None  # what the processor did to the picture

    def cell(self, position: int) -> tuple[Tile, int, int] | None:
        """The tile, row and column of sequence position ``position``, or None off the grids."""
        for tile in self.tiles:
            if tile.start <= position < tile.stop:
                row, col = divmod(position - tile.start, tile.cols)
                return tile, row, col
        return None

    def region(self, position: int) -> Box | None:
        found = self.cell(position)
        return None if found is None else found[0].region(found[1], found[2])


@dataclass(frozen=True)
class ImageTokens:
    """The id the model replaces with image features, and the ids the processor puts around or
    between an image's tokens (begin / end of image, tile tags' fake token, vision start / end)."""

    image: int
    around: frozenset[int]


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


def image_token_ids(config: Any, processor: Any = None) -> ImageTokens:
    """From the model's config (image_token_id; image_token_index is its alias), else the
    processor's. The processor's own image_token_id is not always the patch token (Gemma 3's
    is its <start_of_image>), so the config wins."""
    image = _get(config, "image_token_id")
    if image is None:
        image = _get(config, "image_token_index")
    if image is None and processor is not None:
        image = _get(processor, "image_token_id")
    if image is None:
        raise ValueError("neither the config nor the processor names an image token id")
    names = ("boi_token_id", "boi_token_index", "eoi_token_id", "eoi_token_index",
             "vision_start_token_id", "vision_end_token_id")  # fmt: skip
    around = {_get(config, n) for n in names}
    if processor is not None:
        around |= {_get(processor, n) for n in ("fake_image_token_id", "global_image_token_id")}
    return ImageTokens(int(image), frozenset(int(i) for i in around if i is not None) - {image})


def _runs(ids: Sequence[int], token: int) -> list[tuple[int, int]]:
    """The (start, stop) of each run of ``token`` in ``ids``."""
    runs: list[tuple[int, int]] = []
    for i, t in enumerate(ids):
        if t != token:
            continue
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def _split(runs: list[tuple[int, int]], counts: Sequence[int]) -> list[tuple[int, int]]:
    """``runs`` cut into one run per image of ``counts`` tokens each, where images placed side by
    side (no text between their placeholders) made one run of their tokens; ``runs`` as they
    are when their tokens are not those counts."""
    if len(runs) >= len(counts) or sum(b - a for a, b in runs) != sum(counts):
        return runs
    out, queue = [], list(runs)
    for n in counts:
        start, stop = queue.pop(0)
        if stop - start < n:
            return runs
        out.append((start, start + n))
        if stop > start + n:
            queue.insert(0, (start + n, stop))
    return out


def _shape(value: Any) -> tuple[int, ...]:
    return tuple(int(n) for n in value.shape)


def _side(value: Any) -> int:
    return int(value[0] if isinstance(value, (list, tuple)) else value)


def _pooled(n: int, prows: int, pcols: int) -> int:
    """The merge k with (prows / k) x (pcols / k) == n tokens."""
    for k in range(1, max(prows, pcols) + 1):
        if prows % k == 0 and pcols % k == 0 and (prows // k) * (pcols // k) == n:
            return k
    raise ValueError(f"{n} image tokens do not tile a {prows} x {pcols} patch grid")


def _crop(size: tuple[int, int], images: Any) -> tuple[tuple[int, int], Box] | None:
    """A resize then centre crop: the (height, width) the picture is resized to and the part
    of that the crop keeps (top, left, bottom, right); None when the processor stretches the
    picture instead."""
    h, w = size
    crop, resize = _get(images, "crop_size"), _get(images, "size")
    if not _get(images, "do_center_crop") or crop is None:
        return None
    short = _get(resize, "shortest_edge") if resize is not None else None
    rh, rw = (h, w)
    if short:  # the shorter side to ``short``, the longer in proportion (rounded down)
        rh, rw = (short, int(short * w / h)) if h <= w else (int(short * h / w), short)
    ch, cw = int(_get(crop, "height")), int(_get(crop, "width"))
    top, left = max((rh - ch) // 2, 0), max((rw - cw) // 2, 0)
    return (rh, rw), (float(top), float(left), float(min(top + ch, rh)), float(min(left + cw, rw)))


def _crop_box(size: tuple[int, int], images: Any) -> Box:
    """The part of the original a resize then centre crop keeps (the whole picture if the
    processor stretches it instead)."""
    h, w = size
    found = _crop(size, images)
    if found is None:
        return (0.0, 0.0, float(h), float(w))
    (rh, rw), (top, left, bottom, right) = found
    sy, sx = h / rh, w / rw
    return (top * sy, left * sx, bottom * sy, right * sx)


def _one_view(size: tuple[int, int], view: tuple[int, int], images: Any, tile: Tile) -> Resize:
    """An unsplit picture's resize: stretched to the view, or resized then centre cropped."""
    found = _crop(size, images)
    patches, tokens = tile.rows * tile.cols * tile.merge * tile.merge, tile.rows * tile.cols
    if found is None:
        return Resize(view, view, patches=patches, tokens=tokens)
    (rh, rw), (top, left, bottom, right) = found
    crop = (int(top), int(left), int(bottom), int(right))
    return Resize((rh, rw), view, crop, patches=patches, tokens=tokens)


def _qwen_block(index: int, run: tuple[int, int], thw: Sequence[int], merge: int,
                size: tuple[int, int], patch: int) -> ImageBlock:  # fmt: skip
    t, gh, gw = (int(n) for n in thw)
    rows, cols = gh // merge, gw // merge
    if run[1] - run[0] != t * rows * cols:
        raise ValueError(f"image {index + 1}: {run[1] - run[0]} tokens, grid {t}x{gh}x{gw}")
    box = (0.0, 0.0, float(size[0]), float(size[1]))
    tile = Tile(run[0], rows, cols, box, merge=merge, blocked=True)
    px = (gh * patch, gw * patch)  # the picture as stretched: the grid's patches' pixels
    resize = Resize(px, px, patches=t * gh * gw, tokens=t * rows * cols)
    return ImageBlock(index, run[0], run[1], rows, cols, (tile,), size, resize)


def _split_tiles(runs: list[tuple[int, int]], grid: tuple[int, int], size: tuple[int, int],
                 tile_px: tuple[int, int], patch: int) -> tuple[Tile, ...]:  # fmt: skip
    """A split picture's tiles (rows x cols, then the global view), one run each; an unsplit
    one (0 x 0) has its global view only."""
    rows, cols = grid
    h, w = size
    th, tw = (
        h / max(rows, 1),
        w / max(cols, 1),
    )  # the original's share per tile: the split is of a stretch
    tiles = []
    for i, (start, stop) in enumerate(runs):
        ph, pw = tile_px[0] // patch, tile_px[1] // patch
        k = _pooled(stop - start, ph, pw)
        if i < rows * cols:
            r, c = divmod(i, cols)
            box = (r * th, c * tw, (r + 1) * th, (c + 1) * tw)
            label = f"row {r + 1}, column {c + 1}"
        else:
            box, label = (0.0, 0.0, float(h), float(w)), "global"
        tiles.append(Tile(start, ph // k, pw // k, box, merge=k, label=label))
    return tuple(tiles)


def image_blocks(input_ids: Sequence[int], outputs: Mapping[str, Any], config: Any,
                 image_processor: Any, sizes: Sequence[tuple[int, int]],
                 processor: Any = None) -> list[ImageBlock]:  # fmt: skip
    """Each image's block in one sequence ``input_ids`` (a list of ints), from the processor's
    ``outputs`` for it (pixel_values, image_grid_thw when present), the model's ``config``, its
    ``image_processor`` (or its settings as a dict) and ``sizes``, the original pictures'
    (height, width) in order.

    - image_grid_thw given: one run of image tokens per image, its grid from the row;
    - more runs of image tokens than images: the picture was split into tiles; the image
      processor's get_number_of_image_patches(height, width) says into how many rows and
      columns, and each tile (and the global view) is a run;
    - else one run per image, its grid from the patches of pixel_values' height and width and
      the number of tokens (a pooled or pixel-shuffled grid is a whole factor smaller)."""
    tokens = image_token_ids(config, processor)
    runs = _runs(list(input_ids), tokens.image)
    vision = _get(config, "vision_config")
    patch = _side(_get(vision, "patch_size"))
    if outputs.get("image_grid_thw") is not None:
        grid = [list(map(int, row)) for row in outputs["image_grid_thw"]]
        merge = int(_get(vision, "spatial_merge_size") or _get(image_processor, "merge_size") or 1)
        runs = _split(runs, [t * h * w // (merge * merge) for t, h, w in grid])
        if len(grid) != len(runs) or len(sizes) != len(runs):
            raise ValueError(f"{len(runs)} runs of image tokens for {len(grid)} images")
        return [
            _qwen_block(i, r, g, merge, s, patch)
            for i, (r, g, s) in enumerate(zip(runs, grid, sizes, strict=True))
        ]
    px = _shape(outputs["pixel_values"])
    tile_px = (px[-2], px[-1])  # a tile's height and width in pixels
    if len(runs) < len(sizes):  # images side by side, each of the same size once prepared
        total = sum(b - a for a, b in runs)
        if total % len(sizes) == 0:
            runs = _split(runs, [total // len(sizes)] * len(sizes))
    if len(runs) == len(sizes):  # one grid per image
        blocks = []
        for i, ((start, stop), size) in enumerate(zip(runs, sizes, strict=True)):
            ph, pw = tile_px[0] // patch, tile_px[1] // patch
            k = _pooled(stop - start, ph, pw)
            tile = Tile(start, ph // k, pw // k, _crop_box(size, image_processor), merge=k)
            resize = _one_view(size, tile_px, image_processor, tile)
            blocks.append(ImageBlock(i, start, stop, tile.rows, tile.cols, (tile,), size, resize))
        return blocks
    count = _get(image_processor, "get_number_of_image_patches")
    if count is None:
        raise ValueError(f"{len(runs)} runs of image tokens for {len(sizes)} images")
    blocks, at = [], 0
    for i, size in enumerate(sizes):
        _, rows, cols = count(size[0], size[1], {})
        n = rows * cols + 1 if rows else 1
        mine = runs[at : at + n]
        at += n
        if len(mine) != n:
            raise ValueError(f"image {i + 1}: {len(mine)} runs of image tokens, {n} expected")
        tiles = _split_tiles(mine, (rows, cols), size, tile_px, patch)
        g = tiles[-1]
        # Split: the picture stretched to rows x cols tiles, then the whole squeezed to one;
        # unsplit: the whole stretched to the one view.
        resized = (rows * tile_px[0], cols * tile_px[1]) if rows else tile_px
        patches = g.rows * g.cols * g.merge * g.merge
        resize = Resize(resized, tile_px, None, rows * cols, bool(rows), patches, g.rows * g.cols)
        blocks.append(ImageBlock(i, mine[0][0], mine[-1][1], g.rows, g.cols, tiles, size, resize))
    return blocks
