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
from tests.support.checkpoints_vlm import (
    make_tiny_gemma3,
    make_tiny_paligemma2,
    make_tiny_qwen2_5_vl,
)
from tests.support.images import data_url, encoded, gradient

TOL = 1e-4
NAMES = ["gemma3", "qwen2_5_vl", "paligemma2"]
# Whether an image's first token sees its last: Gemma 3's images and PaliGemma's prefix see
# themselves both ways; Qwen's are causal.
BOTH_WAYS = {"gemma3": True, "qwen2_5_vl": False, "paligemma2": True}
TEXT = "<image> a cat and <image> a dog"
PICTURES = [gradient(40, 30), gradient(50, 20)]


@pytest.fixture(scope="module")
def clients(tmp_path_factory):
    root = tmp_path_factory.mktemp("native-vlm-api")
    folders = [make_tiny_gemma3(root / "gemma3"), make_tiny_qwen2_5_vl(root / "qwen2_5_vl"),
               make_tiny_paligemma2(root / "paligemma2")]  # fmt: skip
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


@pytest.mark.slow
def test_models_say_native_and_images(clients):
    native, bridge = clients
    ours = {m["name"]: m for m in native.get("/api/models").json()["models"]}
    theirs = {m["name"]: m for m in bridge.get("/api/models").json()["models"]}
    for name in NAMES:
        assert ours[name]["backend"] == "native" and ours[name]["reads_images"] is True
        assert theirs[name]["backend"] == "transformers"
        assert ours[name]["ablate_refused"] is None


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_a_trace_with_images_is_the_bridges(clients, name):
    native, bridge = clients
    ours, theirs = trace(native, name), trace(bridge, name)
    assert len(ours["images"]) == 2
    assert ours["images"] == theirs["images"]
    assert ours["token_ids"] == theirs["token_ids"] and ours["special"] == theirs["special"]
    assert ours.get("mrope") == theirs.get("mrope")
    # Natively, q and k are shown after the engine's rotation, M-RoPE's sections said with it.
    assert theirs["rope"] is None and ours["rope"] is not None
    assert ours["rope"]["sections"] == (ours["mrope"]["sections"] if "mrope" in ours else None)
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


def _scores(client, name: str, layer: int, head: int) -> torch.Tensor:
    r = client.post("/api/trace", params={"fields": "scores", "layer": layer, "head": head},
                    json=_body(name))  # fmt: skip
    assert r.status_code == 200, r.text
    rows = r.json()["scores"][0][0]  # a hidden key's -inf is null in JSON
    return torch.tensor([[-torch.inf if v is None else v for v in row] for row in rows])


@pytest.mark.parametrize("name", NAMES)
def test_attributions_with_images_sum_to_the_score(clients, name):
    """The engine's attributions read the images' layout: a head's score of a key split into
    components sums to the trace's score, an image's first token against its last included
    where the model's mask lets it see it (Gemma 3's image blocks, PaliGemma's prefix), and the trace's scores are
    the bridge's."""
    native, bridge = clients
    scores = _scores(native, name, 1, 0)
    theirs = _scores(bridge, name, 1, 0)
    seen = torch.isfinite(scores)
    assert torch.equal(seen, torch.isfinite(theirs))
    assert (scores[seen] - theirs[seen]).abs().max() < TOL
    image = trace(native, name)["images"][0]
    n = scores.shape[0]
    pairs = [(n - 1, image["start"]), (image["start"], image["stop"] - 1)]
    for query, key in [(q, k) for q, k in pairs if bool(seen[q, k])]:
        r = native.post("/api/trace", json=_body(name), params={
            "fields": "qk_attribution", "layer": 1, "head": 0, "query": query, "key": key})  # fmt: skip
        assert r.status_code == 200, r.text
        a = r.json()["qk_attribution"]
        assert abs(float(torch.tensor(a["matrix"]).sum()) - float(scores[query, key])) < TOL
    later = bool(seen[image["start"], image["stop"] - 1])
    assert later == BOTH_WAYS[name]


@pytest.mark.parametrize("name", NAMES)
def test_a_head_knocked_out_with_images(clients, name):
    native, _ = clients
    clean = torch.tensor(trace(native, name)["hidden_states"])  # (L+1, T, C)
    knocked = trace(native, name, ablate=[{"layer": 0, "head": 1, "mode": "zero"}])
    states = torch.tensor(knocked["hidden_states"])
    assert (states[0] - clean[0]).abs().max() == 0  # the token vectors, images' rows included
    assert (states[1] - clean[1]).abs().max() > 1e-3
