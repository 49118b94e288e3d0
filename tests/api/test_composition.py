"""GET /api/models/{name}/composition: every earlier head's Q-, K- and V-composition into every
later head, as [lb][hb][la * heads + ha], the engine's scores (tested against TransformerLens in
tests/engine/test_composition.py) to 6 decimals; computed once per model and kept, for the very
model object; 404 naming the model; a model run through transformers is a 422 saying why."""

from __future__ import annotations

import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.engine.composition import KINDS, composition_scores
from attnviz.pretrained.registry import BUILTIN_NAME, load_model
from attnviz.services.composition import CompositionCache
from attnviz.settings import Settings
from tests.conftest import TINY_GPT2
from tests.support.checkpoints_bridge import make_tiny_bloom

CPU = torch.device("cpu")


def test_every_pair_of_heads_as_the_engine_scores_them(client, tiny_gpt2_dir):
    r = client.get(f"/api/models/{TINY_GPT2}/composition")
    assert r.status_code == 200, r.text
    a = r.json()
    assert (a["model"], a["layers"], a["heads"]) == (TINY_GPT2, 2, 4)
    assert a["names"] == [f"L{la}.H{h}" for la in range(2) for h in range(4)]
    assert "LayerNorm" in a["processing"] and "centred" in a["processing"]
    ours = composition_scores(load_model(tiny_gpt2_dir, CPU).model)
    L, H = 2, 4
    assert set(a["kinds"]) == set(KINDS)
    for kind in KINDS:
        grid = a["kinds"][kind]
        assert len(grid) == L and all(len(rows) == H for rows in grid)
        for lb in range(L):
            for hb in range(H):
                row = grid[lb][hb]
                assert len(row) == lb * H  # the heads of layers 0 .. lb - 1
                for i, x in enumerate(row):
                    want = float(ours.scores[kind][i // H, i % H, lb, hb])
                    assert 0 < x < 1 and abs(x - want) <= 5e-7
    # Asked again: the kept answer.
    assert client.get(f"/api/models/{TINY_GPT2}/composition").json() == a


def test_the_default_model_a_post_norm_encoder(client):
    a = client.get(f"/api/models/{BUILTIN_NAME}/composition").json()
    assert (a["layers"], a["heads"]) == (6, 12)
    assert "post-norm" in a["processing"]
    assert [len(rows[0]) for rows in a["kinds"]["v"]] == [12 * lb for lb in range(6)]


def test_an_unknown_model_is_404_naming_it(client):
    r = client.get("/api/models/no-such-model/composition")
    assert r.status_code == 404
    assert "no-such-model" in r.json()["message"] and BUILTIN_NAME in r.json()["message"]


def test_a_model_run_through_transformers_is_refused_saying_why(tmp_path):
    folder = make_tiny_bloom(tmp_path / "tiny-bloom")
    app = create_app(Settings(device="cpu", builtin_model=False, models=str(folder)))
    with TestClient(app) as c:
        r = c.get("/api/models/tiny-bloom/composition")
    assert r.status_code == 422
    message = r.json()["message"]
    assert message.startswith("model: tiny-bloom runs through transformers (bloom)")
    assert "native engine" in message


def test_kept_for_the_very_model_object(tiny_gpt2_dir):
    """A model that replaces another of its name (a trained run's) is computed afresh."""
    cache = CompositionCache(size=1)
    first = load_model(tiny_gpt2_dir, CPU)
    got = cache.answer(first)
    assert cache.get(first) is got
    second = load_model(tiny_gpt2_dir, CPU)
    assert second.name == first.name and cache.get(second) is None
    assert cache.answer(second) is not got
    assert cache.get(first) is None  # one kept: the newer


def test_a_model_past_the_arithmetic_cap_is_refused_saying_how_much(tiny_gpt2_dir, monkeypatch):
    """A server of its own: its model object is not one the cache keeps."""
    from attnviz.services import composition

    monkeypatch.setitem(composition.MAX_GFLOP, "cpu", 1e-6)
    app = create_app(Settings(device="cpu", builtin_model=False, models=str(tiny_gpt2_dir)))
    with TestClient(app) as c:
        r = c.get(f"/api/models/{TINY_GPT2}/composition")
    assert r.status_code == 422
    message = r.json()["message"]
    assert message.startswith(f"model: {TINY_GPT2}'s composition scores (2 x 4 heads) take about")
    assert message.endswith("GFLOP, past the 0 this server computes on its cpu")


def test_a_head_whose_matrix_is_zero_is_null_and_one_layer_has_no_pairs():
    from attnviz.engine import Transformer, TransformerConfig
    from attnviz.services.composition import response

    zeros = Transformer(TransformerConfig(d_model=8, n_layers=3, n_heads=2))  # weights all 0
    a = response("zeros", composition_scores(zeros)).model_dump()
    assert a["kinds"]["q"][2] == [[None] * 4, [None] * 4]
    one = Transformer(TransformerConfig(d_model=8, n_layers=1, n_heads=2))
    a = response("one", composition_scores(one)).model_dump()
    assert a["kinds"] == {kind: [[[], []]] for kind in KINDS} and a["layers"] == 1
