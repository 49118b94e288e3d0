"""Where each model lives, through the HTTP API: /api/models (each model's ``placement``) and
/healthz (every loaded model's) say the device of the embedding, of each layer and of the head,
for a bridged model spread over the CPU and the disk by a device map (``--device-map``)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings
from tests.support.checkpoints_bridge import make_tiny_electra

# ELECTRA's first block does not fit whole in 60,000 bytes of CPU: accelerate splits it.
SPREAD = {"embed": "cpu", "layers": ["cpu+disk", "disk"], "head": "disk"}


@pytest.fixture(scope="module")
def spread_client(tmp_path_factory):
    root = tmp_path_factory.mktemp("placed-api")
    folder = make_tiny_electra(root / "tiny-electra")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder), device_map="auto",
                        max_memory="cpu=60000", offload_folder=root / "offload")  # fmt: skip
    with TestClient(create_app(settings)) as c:
        yield c


def test_models_and_healthz_say_where_each_layer_lives(spread_client):
    (model,) = spread_client.get("/api/models").json()["models"]
    assert (model["name"], model["backend"], model["device"]) == ("tiny-electra", "transformers",
                                                                 "cpu")  # fmt: skip
    assert model["placement"] == SPREAD
    assert spread_client.get("/healthz").json()["placement"] == {"tiny-electra": SPREAD}
    r = spread_client.post(
        "/api/trace", json={"model": "tiny-electra", "text": "a bank by a river"}
    )
    assert r.status_code == 200, r.text
    assert len(r.json()["hidden_states"]) == 3  # the embeddings and both layers'


def test_a_model_without_a_device_map_is_all_on_its_device(client):
    models = client.get("/api/models").json()["models"]
    health = client.get("/healthz").json()["placement"]
    assert set(health) == {m["name"] for m in models if m["run"] is None}
    for m in models:
        every = {"embed": "cpu", "layers": ["cpu"] * m["layers"], "head": "cpu"}
        assert m["placement"] == health[m["name"]] == every


@pytest.mark.slow
def test_a_native_model_is_placed_by_the_engine_and_refused_with_figures(tmp_path):
    from tests.support.checkpoints import make_tiny_gpt2

    folder = make_tiny_gpt2(tmp_path / "tiny-gpt2")
    settings = Settings(device="cpu", builtin_model=False, models=str(folder), backend="native",
                        device_map="balanced", max_memory="cpu=1GiB")  # fmt: skip
    with TestClient(create_app(settings)) as c:
        (model,) = c.get("/api/models").json()["models"]
        assert model["backend"] == "native"
        placed = {"embed": "cpu", "layers": ["cpu"] * model["layers"], "head": "cpu"}
        assert model["placement"] == placed == c.get("/healthz").json()["placement"]["tiny-gpt2"]
        r = c.post("/api/trace", json={"model": "tiny-gpt2", "text": "a bank by a river"})
        assert r.status_code == 200, r.text
    # Too little room for the weights: refused at start, with the figures.
    tight = Settings(device="cpu", builtin_model=False, models=str(folder), backend="native",
                     device_map="balanced", max_memory="cpu=1000")  # fmt: skip
    with (
        pytest.raises(Exception, match=r"needs [0-9.]+ [KMG]?B") as err,
        TestClient(create_app(tight)),
    ):
        pass
    assert "cpu" in str(err.value)
