"""A vision-language folder served over HTTP: GET /api/models says it reads images; a trace
of a text and an image (a data URL) has each image's block in meta (its tokens' span, its
grid, the picture's size) and its weights are transformers' own; a text past the cap with
its image is refused naming the images; generation with an image traces what it wrote."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient
from transformers import AutoConfig

from attnviz.app import create_app
from attnviz.pretrained.bridge.multimodal import load_processor
from attnviz.settings import Settings
from tests.support.checkpoints_vlm import (
    make_tiny_gemma3,
    make_tiny_idefics3,
    make_tiny_llava,
    make_tiny_qwen2_5_vl,
)
from tests.support.images import data_url, encoded, noise

TEXT = "what is in <image> this picture"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm-api")
    folders = [make_tiny_llava(root / "tiny-llava"), make_tiny_idefics3(root / "tiny-idefics3"),
               make_tiny_qwen2_5_vl(root / "tiny-qwen2_5_vl"),
               make_tiny_gemma3(root / "tiny-gemma3")]  # fmt: skip
    settings = Settings(device="cpu", builtin_model=False, models=":".join(map(str, folders)))
    with TestClient(create_app(settings)) as c:
        yield c


def trace(client, model: str, images: list[str], text: str = TEXT, **extra):
    body = {"model": model, "text": text, "images": images, **extra}
    return client.post("/api/trace", json=body)


def test_models_say_which_read_images(client):
    models = {m["name"]: m for m in client.get("/api/models").json()["models"]}
    assert models["tiny-llava"]["reads_images"] is True
    assert models["tiny-idefics3"]["reads_images"] is True
    # LLaVA's language model is a Llama: served natively, its tower through transformers.
    assert models["tiny-llava"]["backend"] == "native"


@pytest.mark.parametrize("model", ["tiny-llava", "tiny-idefics3"])
def test_a_text_with_an_image_has_its_block(client, model):
    picture = noise(48, 32)  # width 48, height 32
    r = trace(client, model, [data_url(encoded(picture))])
    assert r.status_code == 200, r.text
    body = r.json()
    meta = body  # the full JSON trace: meta and arrays side by side
    [image] = meta["images"]
    assert (image["width"], image["height"]) == (48, 32)
    assert image["type"] == "png"
    cells = sum(t["rows"] * t["cols"] for t in image["tiles"])
    ids = meta["token_ids"]
    tiles = [ids[t["start"] : t["start"] + t["rows"] * t["cols"]] for t in image["tiles"]]
    # Every cell of every grid is one of the image's tokens, and they are all its tokens.
    image_id = ids[image["tiles"][0]["start"]]
    assert all(i == image_id for tile in tiles for i in tile)
    assert ids.count(image_id) == cells
    assert all(meta["special"][p] for p in range(image["start"], image["stop"]))
    assert meta["n"] == len(ids)
    # The attention's rows sum to one over every position, the image's included.
    weights = torch.tensor(body["attentions"])  # (L, H, T, T)
    assert weights.shape[-1] == meta["n"]
    assert (weights.sum(-1) - 1).abs().max() < 1e-5
    # Offsets index the text as written: its words, in order, around the placeholder.
    spans = "".join(TEXT[a:b] for a, b in meta["offsets"] if b > a)
    assert spans.split() == TEXT.replace("<image>", "").split()


def _hw(size: dict) -> tuple[int, int]:
    return size["height"], size["width"]


@pytest.mark.parametrize("model", ["tiny-llava", "tiny-idefics3", "tiny-qwen2_5_vl", "tiny-gemma3"])
def test_each_image_says_how_the_processor_resized_it(client, model):
    """meta.images[i].resize: the sizes the processor's own outputs report (pixel_values' height
    and width per view, Qwen's image_grid_thw times its patch, Idefics3's rows and columns of
    tiles, LLaVA's picture before its centre crop), and the image tokens they make."""
    picture = noise(100, 60)  # width 100, height 60
    folder = client.app.state.registry.get(model).source
    processor = load_processor(folder)
    mark = processor.image_token
    r = trace(client, model, [data_url(encoded(picture))], text=f"{mark} a picture")
    assert r.status_code == 200, r.text
    t = r.json()
    [image] = t["images"]
    got = image["resize"]
    batch = processor(text=[f"{mark} a picture"], images=[[picture]], return_tensors="pt")
    assert batch["input_ids"][0].tolist() == t["token_ids"]
    image_id = t["token_ids"][image["tiles"][0]["start"]]
    n_image = t["token_ids"].count(image_id)
    views = len(image["tiles"])
    assert got["from"] == {"width": 100, "height": 60}
    assert got["tokens"] * views == n_image  # every view's tokens, all the image's
    assert [t["rows"] * t["cols"] for t in image["tiles"]] == [got["tokens"]] * views
    images = processor.image_processor
    if "image_grid_thw" in batch:  # Qwen: the grid of patches is the stretched picture
        [(frames, gh, gw)] = batch["image_grid_thw"].tolist()
        px = (gh * images.patch_size, gw * images.patch_size)
        assert _hw(got["to"]) == _hw(got["view"]) == px and got["crop"] is None
        assert got["patches"] == frames * gh * gw and got["tokens"] == n_image
        assert (got["tiles"], got["global"]) == (0, False)
    else:
        shape = tuple(batch["pixel_values"].shape)
        assert _hw(got["view"]) == shape[-2:]  # each view's pixels, as the tower reads them
        patch = AutoConfig.from_pretrained(folder).vision_config.patch_size
        assert got["patches"] == (shape[-2] // patch) * (shape[-1] // patch)
    if model == "tiny-idefics3":  # split: the stretched picture is rows x cols tiles
        info = images(images=[[picture]], return_row_col_info=True)
        [[rows]], [[cols]] = info["rows"], info["cols"]
        assert rows * cols > 1 and shape[1] == rows * cols + 1  # the tiles and the global view
        assert _hw(got["to"]) == (rows * shape[-2], cols * shape[-1])
        assert (got["tiles"], got["global"], got["crop"]) == (rows * cols, True, None)
    if model == "tiny-llava":  # resized, then its centre cropped to the view
        whole = images(images=[picture], do_center_crop=False, return_tensors="pt")
        rh, rw = whole["pixel_values"].shape[-2:]
        assert _hw(got["to"]) == (rh, rw)
        crop = got["crop"]
        assert (crop["bottom"] - crop["top"], crop["right"] - crop["left"]) == shape[-2:]
        assert (crop["left"], crop["top"]) == ((rw - shape[-1]) // 2, (rh - shape[-2]) // 2)
    if model == "tiny-gemma3":  # stretched to the tower's square
        assert _hw(got["to"]) == shape[-2:] and got["crop"] is None
    to, view = got["to"], got["view"]
    said = f"resized from 100 x 60 to {to['width']} x {to['height']}"
    if got["crop"]:
        said += f", cropped to its centre {view['width']} x {view['height']}"
    else:
        said += " (no crop)"
    if got["tiles"]:
        said += (f"; {got['tiles']} tiles of {view['width']} x {view['height']} and a global "
                 f"view, {got['tokens']} tokens each ({got['patches']} patches merged)")  # fmt: skip
    elif got["patches"] != got["tokens"]:
        said += f"; {got['patches']} patches merged to {got['tokens']} tokens"
    else:
        said += f"; {got['patches']} patches, {got['tokens']} tokens (one a patch)"
    assert image["resized"] == said


def test_the_cap_counts_the_images_tokens(tmp_path):
    """A request past the cap with images is refused with its figures: the image tokens (each
    image's, as its processor makes them), the text's, against the cap."""
    folder = make_tiny_llava(tmp_path / "tiny-llava")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder), max_text_tokens=40)
    pictures = [noise(16, 16), noise(30, 20)]
    text = "a short text <image> and <image>"
    with TestClient(create_app(settings)) as c:
        r = trace(c, "tiny-llava", [data_url(encoded(p)) for p in pictures], text=text)
    assert r.status_code == 422, r.text
    processor = load_processor(folder)
    batch = processor(text=[text], images=[pictures], return_tensors="pt")
    ids = batch["input_ids"][0].tolist()
    image = ids.count(processor.image_token_id)
    assert image == 2 * 64  # each picture's 8 x 8 tokens
    positions = AutoConfig.from_pretrained(folder).text_config.max_position_embeddings
    assert r.json()["message"] == (
        f"images: the text and its images make {len(ids)} tokens ({image} image tokens (64 + 64) "
        f"for 2 images and {len(ids) - image} of the text) exceed the cap of 40 (model "
        f"tiny-llava allows {positions}, this server 40)"
    )


def test_generation_with_an_image_traces_what_it_wrote(client):
    """Generation with images was refused until the bridge could continue a text and its
    images (issue 30): now the trace is of the text, the image and what the model wrote, its
    hidden states transformers' forward on the whole sequence with the image."""
    from transformers import AutoModelForImageTextToText, AutoProcessor

    picture = noise(16, 16)
    r = trace(client, "tiny-llava", [data_url(encoded(picture))], generate={"steps": 5})
    assert r.status_code == 200, r.text
    t = r.json()
    g = t["generated"]
    n = g["start"]
    assert g["steps"] == 5 and g["asked"] == 5 and t["n"] == n + 5
    [image] = t["images"]
    assert image["stop"] <= n  # the image's tokens are all before what was written
    folder = client.app.state.registry.get("tiny-llava").source
    processor = AutoProcessor.from_pretrained(folder, local_files_only=True)
    batch = processor(text=[TEXT], images=[[picture]], return_tensors="pt")
    assert batch["input_ids"][0].tolist() == t["token_ids"][:n]
    hf = AutoModelForImageTextToText.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        out = hf(
            input_ids=torch.tensor([t["token_ids"]]), pixel_values=batch["pixel_values"],
            output_hidden_states=True,
        )  # fmt: skip
    states = torch.tensor(t["hidden_states"])  # (L+1, T, C)
    assert (states - torch.stack([h[0] for h in out.hidden_states])).abs().max() < 1e-4
    # Greedy: each written token is the forward's first choice after what comes before it.
    assert out.logits[0, n - 1 : -1].argmax(-1).tolist() == t["token_ids"][n:]
