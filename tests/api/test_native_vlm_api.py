"""A vision-language folder whose text model is a native family, served natively over HTTP
(``--backend auto``: the language model in the engine, the tower through transformers), against
the same folder through the transformers bridge (``--backend transformers``): GET /api/models
says native and that it reads images; a trace of a text with two images has the bridge's
``meta.images`` blocks, tokens and ``meta.mrope``, and its weights, hidden states and vision
tower's weights within 1e-4; generation with an image writes the bridge's tokens."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.support.checkpoints_vlm import make_tiny_gemma3, make_tiny_qwen2_5_vl
from tests.support.images import data_url, encoded, gradient

TOL = 1e-4
NAMES = ["gemma3", "qwen2_5_vl"]
TEXT = "<image> a cat and <image> a dog"
PICTURES = [gradient(40, 30), gradient(50, 20)]


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-vlm-api")
    folders = [make_tiny_gemma3(root / "gemma3"), make_tiny_qwen2_5_vl(root / "qwen2_5_vl")]
    models = ":".join(map(str, folders))
    native = Settings(device="cpu", builtin_model=False, models=models)
    bridge = Settings(device="cpu", builtin_model=False, models=models, backend="transformers")
    with TestClient(create_app(native)) as n, TestClient(create_app(bridge)) as b:
        yield n, b


def trace(client, model: str, **extra) -> dict:
    body = {"model": model, "text": TEXT, "images": [data_url(encoded(p)) for p in PICTURES]}
    r = client.post("/api/trace", json={**body, **extra})
    assert r.status_code == 200, r.text
    return r.json()


def test_models_say_native_and_images(clients):
    native, bridge = clients
    ours = {m["name"]: m for m in native.get("/api/models").json()["models"]}
    theirs = {m["name"]: m for m in bridge.get("/api/models").json()["models"]}
    for name in NAMES:
        assert ours[name]["backend"] == "native" and ours[name]["reads_images"] is True
        assert theirs[name]["backend"] == "transformers"
        assert ours[name]["ablate_refused"] is None


@pytest.mark.parametrize("name", NAMES)
def test_a_trace_with_images_is_the_bridges(clients, name):
    native, bridge = clients
    ours, theirs = trace(native, name), trace(bridge, name)
    assert len(ours["images"]) == 2
    assert ours["images"] == theirs["images"]
    assert ours["token_ids"] == theirs["token_ids"] and ours["special"] == theirs["special"]
    assert ours.get("mrope") == theirs.get("mrope")
    for key in ("attentions", "hidden_states"):
        a, b = torch.tensor(ours[key]), torch.tensor(theirs[key])
        assert a.shape == b.shape and (a - b).abs().max() < TOL, key
    tower = {"fields": "vision", "image": 1, "layer": 0}
    r_ours = native.post("/api/trace", params=tower, json=_body(name))
    r_theirs = bridge.post("/api/trace", params=tower, json=_body(name))
    assert r_ours.status_code == r_theirs.status_code == 200, r_ours.text
    a, b = torch.tensor(r_ours.json()["vision"]), torch.tensor(r_theirs.json()["vision"])
    assert a.shape == b.shape and (a - b).abs().max() < TOL


def _body(name: str) -> dict:
    return {"model": name, "text": TEXT, "images": [data_url(encoded(p)) for p in PICTURES]}


@pytest.mark.parametrize("name", NAMES)
def test_generation_with_images_writes_the_bridges_tokens(clients, name):
    native, bridge = clients
    ours = trace(native, name, generate={"steps": 6})
    theirs = trace(bridge, name, generate={"steps": 6})
    assert ours["generated"] == theirs["generated"]
    assert ours["token_ids"] == theirs["token_ids"] and ours["images"] == theirs["images"]
    a, b = torch.tensor(ours["hidden_states"]), torch.tensor(theirs["hidden_states"])
    assert (a - b).abs().max() < TOL
