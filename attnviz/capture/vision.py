"""A vision tower's attention, one image tile at a time, over the tile's patch grid row by row.

A tower attends in its own order: several tiles at once (a batch: SigLIP, CLIP, Idefics3), each
image apart (Qwen2-VL), or window by window over patches reordered into windows (Qwen2.5-VL);
some (CLIP) put a class token before the patches. ``TowerLayout`` says where each position of
the tower's sequence (every piece of every call of a layer, one after another) lies: which tile,
which cell of its patch grid (row-major). ``tile_weights`` puts a layer's pieces back into one
tile's P x P matrix: zeros between windows (what the windowed attention's mask gives), the class
token dropped from rows and columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from attnviz.errors import TraceError


@dataclass
class TowerCall:
    """One call of a vision tower's attention over B pieces (images, tiles or windows) of P
    patches each. Kept as its queries and keys, from which its weights are made again as eager
    attention made them (the scaled product plus the call's mask, softmax in float32, in the
    model's dtype): a layer's weights take B x H x P x P numbers, its q and k 2 x B x H x P x hs
    (a real Gemma 3 tower: 29 GB against 1 GB). Where q and k do not give the weights back
    (checked as the call is recorded), the weights themselves are kept (``kept``)."""

    shape: tuple[int, int, int, int]  # (B, H, P, P)
    q: torch.Tensor | None = None  # (B, H, P, hs)
    k: torch.Tensor | None = None  # (B, H_kv, P, hs)
    scaling: float = 1.0
    mask: torch.Tensor | None = None  # added to the scores, broadcast to (B, H, P, P)
    kept: torch.Tensor | None = None  # (B, H, P, P) float32, when q and k do not give them

    @classmethod
    def of(cls, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
           scaling: float, weights: torch.Tensor) -> TowerCall:  # fmt: skip
        """The call as recorded: q and k when they give ``weights`` back, else the weights."""
        # Checked on the first and last head of the first and last piece (the rule is the same
        # for every head: a whole check would cost as much as the tower's attention again).
        B, H = weights.shape[:2]
        checks = {(b, h): weights[b, h] for b, h in {(0, 0), (B - 1, H - 1)}}
        call = cls.checked(query, key, mask, scaling, tuple(weights.shape), checks)
        return call if call.kept is None else cls(call.shape, kept=weights.detach().float())

    @classmethod
    def checked(cls, query: torch.Tensor, key: torch.Tensor, mask: torch.Tensor | None,
                scaling: float, shape: tuple[int, ...],
                checks: Mapping[tuple[int, int], torch.Tensor]) -> TowerCall:  # fmt: skip
        """The call of ``shape`` (B, H, P, P) kept as q and k when they give back the weights
        ``checks`` holds of some (piece, head) pairs (each (P, P), as the forward made them);
        else a call marked ``kept`` with no weights yet (the caller keeps the forward's)."""
        if mask is not None and mask.dtype == torch.bool:
            mask = torch.zeros((), dtype=query.dtype, device=query.device).masked_fill(
                ~mask, torch.finfo(query.dtype).min
            )  # True where a key is seen -> an additive mask, as eager reads it
        if mask is not None:
            mask = mask[..., : key.shape[-2]]  # eager's slice to the keys
        call = cls(tuple(shape), query.detach(), key.detach(), float(scaling),  # type: ignore[arg-type]
                   None if mask is None else mask.detach())  # fmt: skip
        for (b, h), want in checks.items():
            if (call.head(b, h) - want.float()).abs().max() > GIVE_BACK:
                return cls(tuple(shape), kept=torch.empty(0))  # type: ignore[arg-type]
        return call

    def head(self, b: int, h: int) -> torch.Tensor:
        """(P, P) float32: piece ``b``'s head ``h``'s weights."""
        if self.kept is not None:
            return self.kept[b, h]
        assert self.q is not None and self.k is not None
        kv = h // (self.q.shape[1] // self.k.shape[1])  # the key head query head h reads
        q, k = self.q[b : b + 1, h : h + 1], self.k[b : b + 1, kv : kv + 1]  # (1, 1, P, hs)
        scores = torch.matmul(q, k.transpose(2, 3)) * self.scaling  # (1, 1, P, P)
        if self.mask is not None:
            mask = self.mask
            mask = mask[b : b + 1] if mask.dim() == 4 and mask.shape[0] > 1 else mask
            mask = mask[:, h : h + 1] if mask.dim() == 4 and mask.shape[1] > 1 else mask
            scores = scores + mask
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype).float()[0, 0]

    def weights(self) -> torch.Tensor:
        """(B, H, P, P) float32, the call's weights."""
        if self.kept is not None:
            return self.kept
        assert self.q is not None and self.k is not None
        k = self.k.repeat_interleave(self.q.shape[1] // self.k.shape[1], dim=1)  # (B, H, P, hs)
        scores = torch.matmul(self.q, k.transpose(2, 3)) * self.scaling  # (B, H, P, P)
        if self.mask is not None:
            scores = scores + self.mask
        return torch.softmax(scores, dim=-1, dtype=torch.float32).to(self.q.dtype).float()

    def tensors(self) -> list[torch.Tensor]:
        """What the call keeps (for the trace's bytes)."""
        kept = [self.kept] if self.kept is not None else [self.q, self.k, self.mask]
        return [t for t in kept if t is not None]


# How far weights made again from q and k may be from the forward's (float32) to keep q and k.
GIVE_BACK = 1e-6


@dataclass(frozen=True)
class TowerTile:
    """One tile of one image as the tower saw it: ``rows`` x ``cols`` patches."""

    image: int
    tile: int
    rows: int
    cols: int

    @property
    def patches(self) -> int:
        return self.rows * self.cols


@dataclass(frozen=True)
class TowerLayout:
    """Where the tower's sequence lies on the tiles: position j (of every tile's patches, in
    the order the tower read them) is cell ``cell_of[j]`` (row * cols + col) of tile
    ``tile_of[j]`` (an index into ``tiles``). ``class_token``: each tile's piece starts with a
    class token (dropped); ``reordered``: the tower read the patches in another order than the
    processor gave them (windows), said in ``note``."""

    tiles: tuple[TowerTile, ...]
    tile_of: torch.Tensor  # (N,) long
    cell_of: torch.Tensor  # (N,) long
    class_token: bool = False
    note: str = ""

    def index(self, image: int, tile: int) -> int:
        """The position in ``tiles`` of ``image``'s ``tile``; a TraceError naming the parameter
        out of range."""
        images = 1 + max(t.image for t in self.tiles)
        if image >= images:
            raise TraceError(f"image: {image} is out of range ({images} images: 0 to {images - 1})")
        mine = [i for i, t in enumerate(self.tiles) if t.image == image]
        if tile >= len(mine):
            raise TraceError(
                f"tile: {tile} is out of range (image {image} has {len(mine)} tile"
                f"{'s' if len(mine) != 1 else ''}: 0 to {len(mine) - 1})"
            )
        return mine[tile]


def pieces(calls: Sequence[TowerCall]) -> list[torch.Tensor]:
    """A layer's calls as its pieces' weights, each (H, P, P), in the tower's order."""
    return [w[b] for w in (c.weights() for c in calls) for b in range(w.shape[0])]


def piece_sizes(calls: Sequence[TowerCall]) -> list[int]:
    """How many patches each piece of a layer's calls attends over, in the tower's order."""
    return [c.shape[-1] for c in calls for _ in range(c.shape[0])]


def tile_weights(calls: Sequence[TowerCall], layout: TowerLayout, index: int,
                 layer: int) -> torch.Tensor:  # fmt: skip
    """(H, P, P) float32: layer ``layer``'s weights (its ``calls``) over tile ``index``'s P
    patches, row-major on its patch grid, zero where the layer's attention did not reach (the
    key in another window)."""
    found = pieces(calls)
    if layout.class_token:
        found = [p[:, 1:, 1:] for p in found]  # (H, P, P): the class token's row and column out
    total = sum(p.shape[-1] for p in found)
    if total != layout.tile_of.numel():
        raise TraceError(
            f"fields: vision: layer {layer} of the vision tower attended over {total} patches, "
            f"not the {layout.tile_of.numel()} of the images' tiles"
        )
    tile = layout.tiles[index]
    heads = found[0].shape[0]
    out = torch.zeros(heads, tile.patches, tile.patches, dtype=torch.float32)
    at = 0
    for p in found:
        n = p.shape[-1]
        mine = layout.tile_of[at : at + n] == index  # (n,)
        if bool(mine.any()):
            if not bool(mine.all()):
                raise TraceError(
                    f"fields: vision: layer {layer} of the vision tower attended over patches "
                    "of two tiles at once"
                )
            cells = layout.cell_of[at : at + n]  # (n,) row-major cells of the tile
            out[:, cells[:, None], cells[None, :]] = p.float().cpu()
        at += n
    return out


def windowed_layers(vision: Sequence[Sequence[TowerCall]], layout: TowerLayout) -> list[int]:
    """The layers whose attention was over parts of tiles (windows), not whole tiles."""
    whole = {t.patches + layout.class_token for t in layout.tiles}
    return [
        layer
        for layer, calls in enumerate(vision)
        if any(n not in whole for n in piece_sizes(calls))
        or len(piece_sizes(calls)) > len(layout.tiles)
    ]


def vision_meta(vision: Sequence[Sequence[TowerCall]], layout: TowerLayout | str) -> dict:
    """``meta.vision``: the tower's layers and heads, each tile's patch grid, and a note of how
    its weights were put on the grids (or, when they could not be, why: ``tiles`` is then
    empty)."""
    heads = vision[0][0].shape[1] if vision and vision[0] else 0
    if isinstance(layout, str):
        return {"layers": len(vision), "heads": heads, "tiles": [], "note": layout}
    notes = [layout.note] if layout.note else []
    if layout.class_token:
        notes.append(
            "the tower's class token is dropped from rows and columns: each row sums to 1 "
            "minus the class token's share"
        )
    windowed = windowed_layers(vision, layout)
    if windowed:
        which = ", ".join(map(str, windowed))
        which = f"layers {which} attend" if len(windowed) > 1 else f"layer {which} attends"
        notes.append(f"{which} within windows: a patch's weights outside its window are 0")
    return {
        "layers": len(vision),
        "heads": heads,
        "tiles": [
            {
                "image": t.image,
                "tile": t.tile,
                "rows": t.rows,
                "cols": t.cols,
                "class_token": layout.class_token,
            }
            for t in layout.tiles
        ],  # fmt: skip
        "note": "; ".join(notes) + "." if notes else "",
    }
