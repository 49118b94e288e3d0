"""A vision-language folder served over HTTP: GET /api/models says it reads images; a trace
of a text and an image (a data URL) has each image's block in meta (its tokens' span, its
grid, the picture's size) and its weights are transformers' own; a text past the cap with
its image is refused naming the images; generation with an image traces what it wrote."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.support.checkpoints_vlm import make_tiny_idefics3, make_tiny_llava
from tests.support.images import data_url, encoded, noise

TEXT = "what is in <image> this picture"


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    root = tmp_path_factory.mktemp("vlm-api")
    folders = [make_tiny_llava(root / "tiny-llava"), make_tiny_idefics3(root / "tiny-idefics3")]
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


def test_the_cap_counts_the_images_tokens(tmp_path):
    folder = make_tiny_llava(tmp_path / "tiny-llava")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder), max_text_tokens=40)
    with TestClient(create_app(settings)) as c:
        r = trace(c, "tiny-llava", [data_url(encoded(noise(16, 16)))], text="a short text")
    assert r.status_code == 422, r.text
    message = r.json()["message"]
    assert message.startswith("images: the text and its images make ")
    assert "the images')" in message and "exceed the cap of 40" in message


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
