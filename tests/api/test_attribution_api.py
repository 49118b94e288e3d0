"""The attributions over HTTP: ``fields=qk_attribution`` (layer, head, query, key, top) and
``fields=logit_attribution`` (position, token, versus) on the tiny GPT-2, as JSON and in the
compact form, equal to the capture layer's and summing to the trace's score and logit; a
missing parameter, a hidden key and a bridged model are 422s that say why."""

from __future__ import annotations

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.settings import Settings
from attnviz.wire.compact import decode
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.conftest import TINY_GPT2
from tests.support.checkpoints import SENTENCES

TEXT = " ".join(SENTENCES[:2])
BODY = {"model": TINY_GPT2, "text": TEXT}
TOL = 1e-4


def post(client, **params):
    r = client.post("/api/trace", json=BODY, params=params)
    assert r.status_code == 200, r.text
    return r.json()


def test_qk_attribution_sums_to_the_score(client):
    whole = post(client, fields="scores", layer=1, head=2)
    n = whole["n"]
    score = whole["scores"][0][0][n - 1][n - 4]
    got = post(client, fields="qk_attribution", layer=1, head=2, query=n - 1, key=n - 4)
    a = got["qk_attribution"]
    assert (a["layer"], a["head"], a["query"], a["key"]) == (1, 2, n - 1, n - 4)
    names = [c["name"] for c in a["components"]]
    assert names[:2] == ["embed", "pos"] and "L0.H3" in names and names[-1] == "bias"
    assert a["components"][names.index("L0.H3")] == {"name": "L0.H3", "kind": "head",
                                                     "layer": 0, "head": 3}  # fmt: skip
    matrix = torch.tensor(a["matrix"])
    assert matrix.shape == (len(names), len(names))
    assert abs(float(matrix.sum()) - score) < TOL and abs(a["score"] - score) < TOL
    assert a["keys"] == list(range(n))  # GPT-2 has no window: the query sees every key
    assert (torch.tensor(a["by_key"]).sum(1) - torch.tensor(whole["scores"][0][0][n - 1])).abs(
    ).max() < TOL  # fmt: skip
    top = post(client, fields="qk_attribution", layer=1, head=2, query=n - 1, key=n - 4, top=3)
    t = top["qk_attribution"]
    assert len(t["components"]) == 4 and t["components"][-1]["name"] == "rest"
    assert abs(float(torch.tensor(t["matrix"]).sum()) - score) < TOL


def test_logit_attribution_sums_to_the_logit_and_the_difference(client):
    lens = post(client, fields="top_k", k=2)["top_k"]
    got = post(client, fields="logit_attribution", position=5)["logit_attribution"]
    assert got["position"] == 5 and got["token"] == lens["ids"][5][0] and got["versus"] is None
    assert len(got["values"]) == len(got["components"])
    assert abs(sum(got["values"]) - got["logit"]) < 1e-9
    second = lens["ids"][5][1]
    diff = post(client, fields="logit_attribution", position=5, token=got["token"],
                versus=second)["logit_attribution"]  # fmt: skip
    # The two most probable tokens: their probabilities' ratio is exp(logit difference).
    ratio = lens["probs"][5][0] / lens["probs"][5][1]
    assert diff["versus"] == second and abs(diff["logit"] - float(torch.tensor(ratio).log())) < TOL
    last = post(client, fields="logit_attribution")["logit_attribution"]
    assert last["position"] == post(client, fields="scores", layer=0, head=0)["n"] - 1


def test_the_compact_form_carries_the_same_numbers(client):
    r = client.post("/api/trace", json=BODY, headers={"accept": COMPACT_MEDIA_TYPE},
                    params={"fields": "qk_attribution,logit_attribution", "layer": 1, "head": 0,
                            "query": 9, "key": 2, "position": 9})  # fmt: skip
    assert r.status_code == 200, r.text
    meta, arrays = decode(r.content)
    js = post(client, fields="qk_attribution,logit_attribution", layer=1, head=0, query=9, key=2,
              position=9)  # fmt: skip
    assert meta["qk_attribution"]["components"] == js["qk_attribution"]["components"]
    got = arrays["qk_attribution.matrix"].tolist()
    assert torch.allclose(torch.tensor(got), torch.tensor(js["qk_attribution"]["matrix"]))
    assert torch.allclose(arrays["logit_attribution.values"].double(),
                          torch.tensor(js["logit_attribution"]["values"]).double())  # fmt: skip


@pytest.mark.parametrize(
    ("params", "start"),
    [
        ({"fields": "qk_attribution", "layer": 1, "head": 0, "query": 3}, "key: qk_attribution"),
        ({"fields": "qk_attribution", "head": 0, "query": 3, "key": 1}, "layer: qk_attribution"),
        ({"fields": "qk_attribution", "layer": 1, "head": 0, "query": 3, "key": 9},
         "key: query 3 does not see key 9"),
        ({"fields": "qk_attribution", "layer": 1, "head": 0, "query": 3, "key": 1, "top": 0},
         "top"),
        ({"fields": "logit_attribution", "position": 999}, "position: 999 is out of range"),
        ({"fields": "logit_attribution", "token": 10**6}, "token: 1000000 is out of range"),
    ],
)  # fmt: skip
def test_a_bad_request_is_a_422_naming_the_parameter(client, params, start):
    r = client.post("/api/trace", json=BODY, params=params)
    assert r.status_code == 422, r.text
    message = r.json().get("message") or str(r.json())
    assert start in message, message


def test_a_long_text_runs_its_clean_run_when_first_asked(client, monkeypatch):
    """Past RECORD_BYTES the trace's forward records nothing: the first attribution runs a
    forward of its own, with the same numbers."""
    from attnviz.pretrained import folder

    monkeypatch.setattr(folder, "RECORD_BYTES", 0)
    body = {"model": TINY_GPT2, "text": SENTENCES[3]}  # a text no other test traces
    params = {"fields": "scores,qk_attribution", "layer": 1, "head": 1, "query": 7, "key": 4}
    r = client.post("/api/trace", json=body, params=params)
    assert r.status_code == 200, r.text
    got = r.json()
    assert abs(got["qk_attribution"]["score"] - got["scores"][0][0][0][4]) < TOL  # query 7's row


@pytest.fixture(scope="module")
def bridged(tiny_gpt2_dir):
    settings = Settings(device="cpu", builtin_model=False, models=str(tiny_gpt2_dir),
                        backend="transformers")  # fmt: skip
    with TestClient(create_app(settings)) as c:
        yield c


def test_a_bridged_model_says_why_it_has_no_attributions(bridged):
    r = bridged.post("/api/trace", json=BODY, params={"fields": "scores", "layer": 0})
    assert r.status_code == 200 and r.json()["backend"] == "transformers"
    lacking = r.json()["unavailable"]
    for name in ("qk_attribution", "logit_attribution"):
        assert lacking[name].startswith(f"{name}: a model served through transformers keeps")
        params = {"fields": name, "layer": 0, "head": 0, "query": 3, "key": 1}
        refused = bridged.post("/api/trace", json=BODY, params=params)
        assert refused.status_code == 422
        assert refused.json()["message"] == f"fields: {lacking[name]}"
