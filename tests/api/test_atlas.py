"""GET /api/models/{name}/atlas: every head's scores as layers x heads grids, with the probe
the page opens (its tokens those a trace of its text has); 404 naming the model; 503 with
Retry-After past the queue, as traces."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from attnviz.app import create_app
from attnviz.pretrained.registry import BUILTIN_NAME
from attnviz.services.atlas import PROBE_BATCH, PROBE_HALF, SCORES
from attnviz.settings import Settings
from tests.conftest import TINY_GPT2
from tests.support.servers import served


@pytest.mark.slow
@pytest.mark.parametrize("model", [BUILTIN_NAME, TINY_GPT2])
def test_every_head_of_a_model_scored_with_its_probe(client, model):
    r = client.get(f"/api/models/{model}/atlas")
    assert r.status_code == 200, r.text
    a = r.json()
    layers, heads = (6, 12) if model == BUILTIN_NAME else (2, 4)
    assert (a["model"], a["layers"], a["heads"]) == (model, layers, heads)
    assert [s["name"] for s in a["scores"]] == list(SCORES)
    for s in a["scores"]:
        assert s["definition"] and len(s["grid"]) == layers
        assert all(len(row) == heads and all(0 <= v <= 1 for v in row) for row in s["grid"])
        assert (s["offsets"] is not None) == (s["name"] == "positional")
    probe = a["probe"]
    assert (probe["half"], probe["strings"]) == (PROBE_HALF, PROBE_BATCH)
    # The page opens the probe as a text: a trace of it has exactly the probe's tokens.
    t = client.post("/api/trace?fields=attentions&layer=0&head=0",
                    json={"model": model, "text": probe["text"]}).json()  # fmt: skip
    assert t["tokens"] == probe["tokens"]
    start, n = probe["start"], probe["half"]
    assert t["token_ids"][start : start + n] == t["token_ids"][start + n : start + 2 * n]
    # Asked again, the same answer, from the cache.
    assert client.get(f"/api/models/{model}/atlas").json() == a


def test_minilms_strongest_previous_token_head_attends_to_the_previous_token_on_the_probe(client):
    """Its top head scores near 1 (over the probe's strings); on the first string alone, as the
    page opens it, that head's rows put most of their weight one token back."""
    a = client.get(f"/api/models/{BUILTIN_NAME}/atlas").json()
    grid = next(s for s in a["scores"] if s["name"] == "previous_token")["grid"]
    best, layer, head = max((v, i, h) for i, row in enumerate(grid) for h, v in enumerate(row))
    assert best > 0.9
    probe = a["probe"]
    t = client.post(f"/api/trace?fields=attentions&layer={layer}&head={head}",
                    json={"model": BUILTIN_NAME, "text": probe["text"]}).json()  # fmt: skip
    w = t["attentions"][0][0]  # [1 layer][1 head][T][T]
    s, n = probe["start"], probe["half"]
    back = [w[q][q - 1] for q in range(s + 1, s + 2 * n)]
    assert sum(back) / len(back) > 0.9


def test_an_unknown_model_is_404_naming_it(client):
    r = client.get("/api/models/no-such-model/atlas")
    assert r.status_code == 404
    assert "no-such-model" in r.json()["message"] and BUILTIN_NAME in r.json()["message"]


@pytest.fixture(scope="module")
def capped(minilm_dir):
    """A server of its own (its models not yet scored) with one waiting request at most."""
    app = create_app(Settings(device="cpu", max_queue=1, max_wait_s=0.3))
    with served(app) as url:
        yield url


@pytest.mark.slow
def test_a_crowd_asking_for_a_new_atlas_gets_503_with_retry_after(capped):
    def ask(_i: int) -> tuple[int, str | None]:
        r = httpx.get(f"{capped}/api/models/{BUILTIN_NAME}/atlas", timeout=120)
        return r.status_code, r.headers.get("retry-after")

    with ThreadPoolExecutor(6) as pool:
        results = list(pool.map(ask, range(6)))
    statuses = sorted(s for s, _ in results)
    assert statuses.count(200) >= 1 and statuses.count(503) >= 1, statuses
    assert set(statuses) <= {200, 503}
    assert all(int(retry) >= 1 for status, retry in results if status == 503)
    # Once computed it is cheap: answered however busy the server is.
    assert httpx.get(f"{capped}/api/models/{BUILTIN_NAME}/atlas", timeout=60).status_code == 200
