"""Per-address limits over HTTP: a client that keeps no cookie is a new visitor at every request,
so the one-training-one-waiting rule per visitor cannot bound it; the client's address does
(``ATTNVIZ_TRAIN_PER_ADDRESS``). Past it: 429 with Retry-After and a message saying the rule,
while another address (a trusted proxy's ``X-Forwarded-For``) still starts, and the operator
is exempt. The same for recurrent comparisons."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.services.recurrent import RecurrentService
from attnviz.settings import Settings
from tests.api.test_recurrent import small
from tests.api.test_train import TINY

LONG = {"arch": TINY, "opt": {"steps": 5000}, "checkpoints": 2}
QUICK = {"arch": TINY, "opt": {"steps": 20}, "checkpoints": 1}
ADMIN = {"Authorization": "Bearer teacher-token"}


def settings(tmp_path, **more) -> Settings:
    # Every client is trusted to name its address: TestClient's peer stands for a proxy.
    given = {"train_slots": 1, **more}
    return Settings(device="cpu", builtin_model=False, data_dir=tmp_path,
                    admin_token="teacher-token", forwarded_allow_ips="*", **given)  # fmt: skip


def cookieless(client: TestClient, path: str, body: dict, **headers: str):
    """A POST as a client that keeps no cookie: a new visitor every time."""
    client.cookies.clear()
    return client.post(path, json=body, headers=headers)


@pytest.mark.slow
def test_one_address_without_cookies_cannot_fill_the_training_line(tmp_path):
    app = create_app(settings(tmp_path, train_queue=8))
    client = TestClient(app)
    options = client.get("/api/train/options").json()
    cap = options["per_address"]
    assert cap == Settings().train_per_address == 4
    answers = [cookieless(client, "/api/train", LONG if i == 0 else QUICK) for i in range(11)]
    try:
        assert [r.status_code for r in answers] == [202] * cap + [429] * (11 - cap)
        assert [r.json()["state"] for r in answers[:cap]] == ["running"] + ["queued"] * (cap - 1)
        refused = answers[cap]
        assert int(refused.headers["retry-after"]) >= 1
        message = refused.json()["message"]
        assert message.startswith(f"train: {cap} runs are training or waiting from your "
                                  "network address")  # fmt: skip
        assert "as many as this server takes from one address" in message
        assert "ATTNVIZ_" not in message  # a learner reads it: no setting's name
        assert len({r.json()["token"] for r in answers[:cap]}) == cap  # each a new visitor
        load = client.get("/healthz").json()["load"]
        assert (load["training"], load["queued"]) == (1, cap - 1)

        # A real visitor at another address still gets a place in line.
        other = cookieless(client, "/api/train", QUICK, **{"X-Forwarded-For": "10.0.0.2"})
        assert other.status_code == 202 and other.json()["state"] == "queued", other.text
        # The operator is not bound by it.
        teacher = cookieless(client, "/api/train", QUICK, **ADMIN)
        assert teacher.status_code == 202, teacher.text

        # A run of that address cancelled: the address may start one again.
        first = answers[1].json()
        bearer = {"Authorization": f"Bearer {first['token']}"}
        assert client.delete(first["url"], headers=bearer).json()["state"] == "cancelled"
        assert cookieless(client, "/api/train", QUICK).status_code == 202
        assert cookieless(client, "/api/train", QUICK).status_code == 429
    finally:
        for run in client.get("/api/train", headers=ADMIN).json()["runs"]:
            client.delete(f"/api/train/{run['id']}", headers=ADMIN)


@pytest.mark.slow
def test_one_address_without_cookies_cannot_take_every_comparison_slot(tmp_path):
    s = settings(tmp_path, train_slots=3, train_per_address=2)
    app = create_app(s)
    app.state.recurrent = RecurrentService(s, small(steps=2000))
    client = TestClient(app)
    assert client.get("/api/recurrent/options").json()["per_address"] == 2
    body = {"task": "copy"}
    answers = [cookieless(client, "/api/recurrent", body) for _ in range(3)]
    try:
        assert [r.status_code for r in answers] == [202, 202, 429]
        refused = answers[2]
        assert int(refused.headers["retry-after"]) >= 1
        assert "comparisons are running from your network address" in refused.json()["message"]
        assert "ATTNVIZ_" not in refused.json()["message"]
        # Another address takes the third slot; then the slots are full: 503, the server's.
        other = cookieless(client, "/api/recurrent", body, **{"X-Forwarded-For": "10.0.0.3"})
        assert other.status_code == 202, other.text
        full = cookieless(client, "/api/recurrent", body, **{"X-Forwarded-For": "10.0.0.4"})
        assert full.status_code == 503 and "retry-after" in full.headers
    finally:
        for r in client.get("/api/recurrent", headers=ADMIN).json()["comparisons"]:
            client.delete(f"/api/recurrent/{r['id']}", headers=ADMIN)
