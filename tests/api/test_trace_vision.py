"""The vision tower's attention over HTTP (``fields=vision``): for each family, each tile's
weights equal transformers' own (eager attention: tests/support/checkpoints_vlm.py's
eager_with_towers), put on the tile's patch grid row by row here, independently of attnviz: a batch
entry per tile (SigLIP, CLIP, Idefics3), a call per image over Qwen's merge windows, or
Qwen2.5-VL's windows over its window-reordered patches (transformers' own window index, the
layer's calls laid on one block-diagonal matrix, then permuted). The class token of LLaVA's
CLIP is dropped. Parameters out of range, and a trace without images, are 422s naming them;
meta.mrope is the model's own get_rope_index."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.pretrained.bridge.multimodal import load_processor
from attnviz.settings import Settings
from attnviz.wire.compact import decode
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.support import checkpoints_vlm
from tests.support.checkpoints_vlm import eager_with_towers
from tests.support.images import data_url, encoded, gradient

TOL = 1e-5
FAMILIES = ["llava", "idefics3", "qwen2_vl", "qwen2_5_vl", "qwen3_vl", "gemma3", "paligemma2"]
# Two pictures of different shapes: Qwen's grids differ (the second one's 4 x 8 patches span two
# of Qwen2.5-VL's windows); Idefics3 splits the first into 2 x 2 tiles, the second into 1 x 2.
PICTURES = [gradient(40, 30), gradient(50, 20)]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("vision-api")
    folders = {n: getattr(checkpoints_vlm, f"make_tiny_{n}")(root / n) for n in FAMILIES}
    settings = Settings(
        device="cpu", builtin_model=False, models=":".join(str(f) for f in folders.values())
    )
    with TestClient(create_app(settings)) as c:
        yield c, folders


def text_for(folder) -> tuple[str, dict]:
    """A text with the model's own placeholder for each picture, and the processor's inputs."""
    processor = load_processor(folder)
    mark = processor.image_token
    text = f"{mark} a cat and {mark} a dog"
    batch = processor(text=[text], images=[list(PICTURES)], return_tensors="pt")
    return text, dict(batch)


def post(client, model: str, text: str, images: bool = True, compact: bool = False, **params):
    body = {"model": model, "text": text}
    if images:
        body["images"] = [data_url(encoded(p)) for p in PICTURES]
    headers = {"accept": COMPACT_MEDIA_TYPE} if compact else {}
    return client.post("/api/trace", json=body, params=params, headers=headers)


def _row_major(rows: int, cols: int, merge: int) -> torch.Tensor:
    """(rows * cols,) the row-major cell of each patch Qwen's processor lists merge window by
    merge window (windows row-major, then merge x merge patches inside)."""
    grid = torch.arange(rows * cols).reshape(rows // merge, merge, cols // merge, merge)
    return grid.permute(0, 2, 1, 3).reshape(-1)  # (rows / m, cols / m, m, m) flattened


def _layers(calls) -> list[list[torch.Tensor]]:
    order = list(dict.fromkeys(mid for mid, _ in calls))
    return [[w for mid, w in calls if mid == layer] for layer in order]


def expected(name: str, folder, inputs: dict) -> list[list[torch.Tensor]]:
    """Per tile (images in order, each's tiles in order): Lv x (H, P, P), row-major on the
    tile's patch grid, from transformers' own forward."""
    out, calls = eager_with_towers(folder, inputs)
    layers = _layers(calls)
    if name.startswith("qwen"):
        return _qwen_tiles(name, folder, inputs, layers)
    tiles: list[list[torch.Tensor]] = []
    for calls_of_layer in layers:
        [call] = calls_of_layer  # one call: a batch entry per tile
        if name == "llava":
            call = call[:, :, 1:, 1:]  # CLIP's class token, first
        for b in range(call.shape[0]):
            if len(tiles) <= b:
                tiles.append([])
            tiles[b].append(call[b])
    return tiles


def _qwen_tiles(name, folder, inputs, layers) -> list[list[torch.Tensor]]:
    from transformers import AutoConfig
    from transformers.vision_utils import get_vision_window_index

    vision = AutoConfig.from_pretrained(folder).vision_config
    merge = vision.spatial_merge_size
    grid = inputs["image_grid_thw"]
    sizes = [int(t * h * w) for t, h, w in grid.tolist()]
    N = sum(sizes)
    # The tower's sequence: position j is the processor's patch order[j] (all images).
    order = torch.arange(N)
    if name == "qwen2_5_vl":
        index, _ = get_vision_window_index(
            grid, spatial_merge_size=merge, window_size=vision.window_size,
            patch_size=vision.patch_size,
        )  # fmt: skip
        unit = merge**2
        order = (index[:, None] * unit + torch.arange(unit)[None, :]).reshape(-1)  # (N,)
    # The processor's patch p -> its image's row-major cell, offset by the image's start.
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    cell = torch.cat(
        [
            s + _row_major(int(h), int(w), merge)
            for s, (_, h, w) in zip(starts, grid.tolist(), strict=True)
        ]
    )
    to_row_major = cell[order]  # (N,) tower position -> global row-major index
    permute = torch.zeros(N, N)
    permute[torch.arange(N), to_row_major] = 1.0  # P[j, g] = 1: position j is index g
    tiles: list[list[torch.Tensor]] = [[] for _ in sizes]
    for calls_of_layer in layers:
        H = calls_of_layer[0].shape[1]
        whole = torch.zeros(H, N, N)
        at = 0
        for call in calls_of_layer:  # (1, H, n, n) each, one after another along the sequence
            n = call.shape[-1]
            whole[:, at : at + n, at : at + n] = call[0]
            at += n
        assert at == N
        ours = permute.T @ whole @ permute  # (H, N, N) in global row-major order
        for i, (s, n) in enumerate(zip(starts, sizes, strict=True)):
            tiles[i].append(ours[:, s : s + n, s : s + n])
    return tiles


@pytest.mark.slow
@pytest.mark.parametrize("name", FAMILIES)
def test_each_tiles_vision_weights_are_transformers_own(served, name):
    client, folders = served
    text, inputs = text_for(folders[name])
    want = expected(name, folders[name], inputs)
    # The summary in meta (in the JSON form the array of the same name replaces it).
    first = post(client, name, text, fields="entropy_mean")
    assert first.status_code == 200, first.text
    meta = first.json()
    assert meta["token_ids"] == inputs["input_ids"][0].tolist()
    summary = meta["vision"]
    assert summary["layers"] == len(want[0])
    assert len(summary["tiles"]) == len(want)
    assert all(t["class_token"] is (name == "llava") for t in summary["tiles"])
    if name == "llava":
        assert "class token" in summary["note"]
    if name == "qwen2_5_vl":
        assert "windows" in summary["note"]
    for k, tile in enumerate(summary["tiles"]):
        r = post(client, name, text, fields="vision", image=tile["image"], tile=tile["tile"])
        assert r.status_code == 200, r.text
        got = torch.tensor(r.json()["vision"])  # (Lv, Hv, P, P)
        P = tile["rows"] * tile["cols"]
        assert got.shape == (summary["layers"], summary["heads"], P, P)
        assert (got - torch.stack(want[k])).abs().max() < TOL
        sums = got.sum(-1)
        if name == "llava":
            assert (sums < 1).all() and (sums > 0).all()  # the class token's share left out
        else:
            assert (sums - 1).abs().max() < 1e-5
    # The tiles match the images' blocks: each tile's patch grid is its token grid x merge.
    for tile in summary["tiles"]:
        block = meta["images"][tile["image"]]["tiles"][tile["tile"]]
        assert (tile["rows"], tile["cols"]) == (
            block["rows"] * block["merge"],
            block["cols"] * block["merge"],
        )


def test_the_compact_form_and_layer_head_pick_one(served):
    client, folders = served
    text, _ = text_for(folders["qwen2_5_vl"])
    full = torch.tensor(post(client, "qwen2_5_vl", text, fields="vision", image=1).json()["vision"])
    r = post(client, "qwen2_5_vl", text, compact=True, fields="vision", image=1, layer=0, head=2)
    assert r.status_code == 200, r.text
    meta, arrays = decode(r.content)
    assert arrays["vision"].shape == (1, 1, *full.shape[-2:])
    assert torch.equal(arrays["vision"][0, 0], full[0, 2])
    # Layer 0 is windowed: the second picture's two windows do not see each other.
    assert (full[0, :, :, :].eq(0)).any()
    assert "0" in meta["vision"]["note"]


@pytest.mark.parametrize(
    ("params", "field", "says"),
    [
        ({"image": 2}, "image", "2 is out of range (2 images: 0 to 1)"),
        ({"tile": 1}, "tile", "1 is out of range (image 0 has 1 tile: 0 to 0)"),
        ({"layer": 9}, "layer", "9 is out of range (2 layers of the vision tower: 0 to 1)"),
        ({"head": 4}, "head", "4 is out of range (4 heads of the vision tower: 0 to 3)"),
    ],
)
def test_out_of_range_is_a_422_naming_the_parameter(served, params, field, says):
    client, folders = served
    text, _ = text_for(folders["llava"])
    r = post(client, "llava", text, fields="vision", **params)
    assert r.status_code == 422, r.text
    assert r.json()["message"] == f"{field}: {says}"


def test_idefics3_tiles_are_counted_per_image(served):
    client, folders = served
    text, _ = text_for(folders["idefics3"])
    ok = post(client, "idefics3", text, fields="vision", image=1, tile=2, layer=1)
    assert ok.status_code == 200, ok.text
    assert ok.json()["images"][1]["tiles"][2]["label"] == "global"
    r = post(client, "idefics3", text, fields="vision", image=1, tile=3)
    assert r.status_code == 422
    assert r.json()["message"] == "tile: 3 is out of range (image 1 has 3 tiles: 0 to 2)"


def test_a_text_alone_has_no_vision(served):
    client, _ = served
    r = post(client, "llava", "a cat and a dog", images=False, fields="vision")
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith("fields: vision: this trace has no images")
    whole = post(client, "llava", "a cat and a dog", images=False, fields="attentions").json()
    assert "vision" not in whole


def test_mrope_is_the_models_own_rope_index(served):
    from transformers import AutoModelForImageTextToText

    client, folders = served
    text, inputs = text_for(folders["qwen2_vl"])
    meta = post(client, "qwen2_vl", text, fields="entropy_mean").json()
    hf = AutoModelForImageTextToText.from_pretrained(folders["qwen2_vl"]).eval()
    positions, _ = hf.model.get_rope_index(
        inputs["input_ids"],
        mm_token_type_ids=inputs["mm_token_type_ids"],
        image_grid_thw=inputs["image_grid_thw"],
    )
    assert meta["mrope"]["sections"] == list(hf.config.text_config.rope_parameters["mrope_section"])
    assert meta["mrope"]["positions"] == positions[:, 0].tolist()
    # An image's tokens share the temporal index and walk the grid in height and width.
    first = meta["images"][0]
    t, h, w = (meta["mrope"]["positions"][a][first["start"] : first["stop"]] for a in range(3))
    assert len(set(t)) == 1 and len(set(h)) == first["rows"] and len(set(w)) == first["cols"]
    # A text alone: every index the token's position.
    alone = post(client, "qwen2_vl", "a cat", images=False, fields="entropy_mean").json()
    n = alone["n"]
    assert alone["mrope"]["positions"] == [list(range(n))] * 3
    # A model without multimodal rotary has none.
    llava_text, _ = text_for(folders["llava"])
    assert "mrope" not in post(client, "llava", llava_text, fields="entropy_mean").json()


def test_interleaved_mrope_says_so(served):
    client, folders = served
    text, inputs = text_for(folders["qwen3_vl"])
    mrope = post(client, "qwen3_vl", text, fields="entropy_mean").json()["mrope"]
    assert mrope["interleaved"] is True and len(mrope["positions"]) == 3
    assert len(mrope["positions"][0]) == inputs["input_ids"].shape[1]
