"""The tiny vision-language folders of tests/support/checkpoints_vlm.py load offline and run, and
attnviz.pretrained.bridge.vision finds each image's tokens and maps them back onto the picture:
the grid's shape is what the processor reports, and one bright square lands on its cell
(issue 30's overlay tests), through each processor's own resizing, splitting and merging."""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pytest

from attnviz.pretrained.bridge.vision import ImageBlock, image_blocks, image_token_ids
from tests.support import checkpoints_vlm as vlm

# family -> the prompt, with the family's image placeholder where the picture goes
PROMPTS = {
    "idefics3": "An apple <image> and a dog.",
    "llava": "An apple <image> and a dog.",
    "qwen2_vl": "An apple <|vision_start|><|image_pad|><|vision_end|> and a dog.",
    "qwen2_5_vl": "An apple <|vision_start|><|image_pad|><|vision_end|> and a dog.",
    "qwen3_vl": "An apple <|vision_start|><|image_pad|><|vision_end|> and a dog.",
    "gemma3": "An apple <start_of_image> and a dog.",
    "paligemma2": "<image>describe the dog.",
}
FAMILIES = list(PROMPTS)
SIZE = (90, 120)  # the test picture's (height, width): wider than tall, so resizes matter
SQUARE = (40, 80, 12)  # the bright square's top, left and side in the picture's pixels


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("vlm")
    return {f: getattr(vlm, f"make_tiny_{f}")(root / f) for f in FAMILIES}


@functools.cache
def _loaded(folder: Path):
    """The folder's model (eager attention) and image processor, and its processor where one
    can be built here (not Qwen's: see checkpoints_vlm._save_qwen)."""
    from transformers import AutoImageProcessor, AutoModelForImageTextToText, AutoProcessor

    model = AutoModelForImageTextToText.from_pretrained(
        folder, local_files_only=True, attn_implementation="eager"
    ).eval()
    if folder.name.startswith("qwen"):
        images = AutoImageProcessor.from_pretrained(folder, local_files_only=True)
        return model, images, None
    processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
    return model, processor.image_processor, processor


def picture(square: bool = True):
    from PIL import Image

    pixels = np.zeros((*SIZE, 3), np.uint8)
    if square:
        top, left, side = SQUARE
        pixels[top : top + side, left : left + side] = 255
    return Image.fromarray(pixels)


def _inputs(folder: Path, image) -> dict:
    _, _, processor = _loaded(folder)
    text = PROMPTS[folder.name]
    if processor is None:
        return vlm.qwen_inputs(folder, text, [image])
    return dict(processor(text=[text], images=[image], return_tensors="pt"))


def _blocks(folder: Path, inputs: dict) -> list[ImageBlock]:
    model, images, processor = _loaded(folder)
    ids = inputs["input_ids"][0].tolist()
    return image_blocks(ids, inputs, model.config, images, [SIZE], processor)


@pytest.mark.parametrize("family", FAMILIES)
def test_folder_loads_offline_and_runs_eager(folders, family, monkeypatch):
    import torch

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model, images, _ = _loaded(folders[family])
    assert type(images).__name__.endswith("Pil")  # no torchvision: the PIL processor
    inputs = _inputs(folders[family], picture())
    n = inputs["input_ids"].shape[1]
    with torch.no_grad():
        out = model(**inputs, output_attentions=True)
    assert len(out.attentions) == 2
    for weights in out.attentions:
        assert weights.shape == (1, 4, n, n)
        torch.testing.assert_close(weights.sum(-1), torch.ones(1, 4, n))


@pytest.mark.parametrize("family", FAMILIES)
def test_grid_shape_is_what_the_processor_reports(folders, family):
    folder = folders[family]
    model, images, processor = _loaded(folder)
    inputs = _inputs(folder, picture())
    ids = inputs["input_ids"][0].tolist()
    (block,) = _blocks(folder, inputs)
    image = image_token_ids(model.config, processor).image
    cells = sum(t.rows * t.cols for t in block.tiles)
    assert cells == ids.count(image) == sum(t.stop - t.start for t in block.tiles)
    assert all(ids[p] == image for t in block.tiles for p in range(t.start, t.stop))
    assert ids[block.start] == ids[block.stop - 1] == image
    if "image_grid_thw" in inputs:  # Qwen: the patches of the grid, merged 2 x 2
        t, h, w = inputs["image_grid_thw"][0].tolist()
        assert cells == t * h * w // images.merge_size**2
        assert (block.rows, block.cols) == (h // 2, w // 2)
    elif family == "idefics3":  # 2 x 2 tiles (128 x 128 after the resize) and the global view
        assert [t.label for t in block.tiles] == [
            "row 1, column 1", "row 1, column 2", "row 2, column 1", "row 2, column 2", "global",
        ]  # fmt: skip
        assert all(t.rows * t.cols == processor.image_seq_len for t in block.tiles)
        assert inputs["pixel_values"].shape[1] == len(block.tiles)
    elif family == "gemma3":  # 8 x 8 patches pooled to mm_tokens_per_image
        assert (block.rows, block.cols) == (4, 4) and block.tiles[0].merge == 2
        assert cells == model.config.mm_tokens_per_image
    else:  # one token per patch of the 64 x 64 tower input
        assert (block.rows, block.cols) == (8, 8) and block.tiles[0].merge == 1


def _brightest_patches(folder: Path, inputs: dict, block: ImageBlock):
    """Per tile, the (row, col) on the vision tower's patch grid of its brightest patch, or None
    where the tile is all dark."""
    model, _, _ = _loaded(folder)
    patch = model.config.vision_config.patch_size
    pixels = inputs["pixel_values"].float()
    if "image_grid_thw" in inputs:  # flat (patches, C x frames x p x p), window-ordered
        means = [pixels.mean(-1)]
    else:  # (tiles, C, H, W) or (1, tiles, C, H, W): mean of each p x p patch, row-major
        tiles = pixels.reshape(-1, *pixels.shape[-3:])  # (tiles, C, H, W)
        c, h, w = tiles.shape[1:]
        cut = tiles.reshape(-1, c, h // patch, patch, w // patch, patch)
        means = list(cut.mean((1, 3, 5)).flatten(1))  # per tile: (H/p x W/p)
    found = []
    for tile, m in zip(block.tiles, means, strict=True):
        bright = int(m.argmax())
        found.append(tile.patch(bright) if m[bright] > m.min() + 0.5 else None)
    return found


def _clip(box, other):
    """The intersection of two (top, left, bottom, right) boxes, or None."""
    top, left = max(box[0], other[0]), max(box[1], other[1])
    bottom, right = min(box[2], other[2]), min(box[3], other[3])
    return (top, left, bottom, right) if bottom > top and right > left else None


def _area(box) -> float:
    return 0.0 if box is None else (box[2] - box[0]) * (box[3] - box[1])


@pytest.mark.parametrize("family", FAMILIES)
def test_a_bright_square_lands_on_its_cell(folders, family):
    """Per tile (Idefics3's square straddles two of its 2 x 2 tiles, and is in its global view
    too), the brightest patch of pixel_values, through the merge, is a token cell whose region of
    the original picture covers the square (the part of it in the tile), and the cell
    diagonally across the grid does not."""
    folder = folders[family]
    inputs = _inputs(folder, picture())
    (block,) = _blocks(folder, inputs)
    top, left, side = SQUARE
    square = (top, left, top + side, left + side)
    hits = 0
    for tile, at in zip(block.tiles, _brightest_patches(folder, inputs, block), strict=True):
        mine = _clip(tile.box, square)  # the part of the square this tile shows
        if at is None:
            assert _area(mine) < 0.1 * side**2, f"{tile.label}: no bright patch"
            continue
        assert mine is not None, f"{tile.label}: bright, though the square is not in it"
        row, col = at[0] // tile.merge, at[1] // tile.merge
        region = tile.region(row, col)
        assert _area(_clip(region, mine)) > 0.2 * _area(mine), (tile.label, region, mine)
        far = (tile.rows - 1 - row, tile.cols - 1 - col)
        assert far == (row, col) or _clip(tile.region(*far), square) is None
        hits += 1
    assert hits == (3 if family == "idefics3" else 1)


def test_llava_region_is_the_centre_crop(folders):
    """CLIP's processor keeps the centre square of the resized picture: the grid's box is that
    crop, in the original's pixels (90 x 120 -> 64 x 85, columns 10 to 74 kept)."""
    folder = folders["llava"]
    (block,) = _blocks(folder, _inputs(folder, picture()))
    top, left, bottom, right = block.tiles[0].box
    assert (top, bottom) == (0.0, 90.0)
    assert left == pytest.approx(10 * 120 / 85) and right == pytest.approx(74 * 120 / 85)


def test_image_token_ids_come_from_the_config(folders):
    """Gemma 3's processor calls <start_of_image> its image token; the model replaces
    <image_soft_token>, which the config names."""
    model, _, processor = _loaded(folders["gemma3"])
    tokens = image_token_ids(model.config, processor)
    tok = processor.tokenizer
    assert tokens.image == tok.convert_tokens_to_ids("<image_soft_token>")
    assert tok.convert_tokens_to_ids("<start_of_image>") in tokens.around
    assert processor.image_token_id != tokens.image


@pytest.mark.parametrize("family", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_mrope_positions_follow_the_grid(folders, family):
    """The model's own M-RoPE index (get_rope_index: (3, batch, seq), time / height / width)
    gives image token (row, col) of vision.py's grid the positions (t0, t0 + row, t0 + col)."""
    folder = folders[family]
    model, _, _ = _loaded(folder)
    inputs = _inputs(folder, picture())
    (block,) = _blocks(folder, inputs)
    keys = ("input_ids", "mm_token_type_ids", "image_grid_thw", "attention_mask")
    positions = model.model.get_rope_index(**{k: inputs[k] for k in keys})[0][:, 0]  # (3, S)
    tile = block.tiles[0]
    t0 = int(positions[0, tile.start])
    for p in range(tile.start, tile.stop):
        _, row, col = block.cell(p)
        assert positions[:, p].tolist() == [t0, t0 + row, t0 + col]
