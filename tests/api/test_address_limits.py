"""Per-address limits over HTTP: a client that keeps no cookie is a new visitor at every request,
so the one-training-one-waiting rule per visitor cannot bound it; the client's address does
(``ATTNVIZ_TRAIN_PER_ADDRESS``). Past it: 429 with Retry-After and a message saying the rule,
while another address (a trusted proxy's ``X-Forwarded-For``) still starts, and the operator
is exempt. The same for recurrent comparisons, and for trace jobs
(``ATTNVIZ_TRACE_JOBS_PER_ADDRESS``)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.services.jobs import ENDED, JobStopped, TraceJob
from attnviz.services.recurrent import RecurrentService
from attnviz.settings import Settings
from tests.api.test_recurrent import small
from tests.api.test_trace_jobs import ASYNC, FIRST, small_smollm, text_of
from tests.api.test_train import TINY
from tests.support.waits import until

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
    s = settings(tmp_path, train_slots=3, train_queue=0, train_per_address=2)
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
        assert (
            "comparisons are running or waiting from your network address"
            in refused.json()["message"]
        )
        assert "ATTNVIZ_" not in refused.json()["message"]
        # Another address takes the third slot; then the slots are full and the line holds
        # none (ATTNVIZ_TRAIN_QUEUE=0): 503, the server's.
        other = cookieless(client, "/api/recurrent", body, **{"X-Forwarded-For": "10.0.0.3"})
        assert other.status_code == 202, other.text
        full = cookieless(client, "/api/recurrent", body, **{"X-Forwarded-For": "10.0.0.4"})
        assert full.status_code == 503 and "retry-after" in full.headers
    finally:
        for r in client.get("/api/recurrent", headers=ADMIN).json()["comparisons"]:
            client.delete(f"/api/recurrent/{r['id']}", headers=ADMIN)


@pytest.fixture(scope="module")
def smol(tmp_path_factory) -> Path:
    return small_smollm(tmp_path_factory.mktemp("models") / "smol")


@pytest.fixture
def held_jobs(monkeypatch):
    """Every trace job holds at its first layer until it is stopped (cancelled): the jobs an
    address has going stay going for as long as the test needs, whatever the machine's pace."""

    def held(self, stage, done, total):
        while self.stop is None:
            time.sleep(0.01)
        raise JobStopped(self.stop)

    monkeypatch.setattr(TraceJob, "listen", held)


@pytest.mark.slow
def test_one_address_without_cookies_cannot_fill_the_trace_jobs(tmp_path, smol, held_jobs):
    """Each cookieless request is a new visitor, whose newer trace would cancel its older job:
    nothing but the address bounds it. Past ATTNVIZ_TRACE_JOBS_PER_ADDRESS visitors with jobs
    computing or waiting, a new visitor's job gets 429 with Retry-After, before anything of it starts; another address and the
    operator still get jobs, and a job of that address ended frees its place."""
    cap = 2
    s = settings(tmp_path, models=str(smol), trace_job_after_s=0, trace_jobs_per_address=cap,
                 max_wait_s=600)  # fmt: skip
    assert Settings().trace_jobs_per_address == 4
    texts = iter(range(0, 1000, 7))

    def ask(**headers: str):
        body = {"model": "smol", "text": text_of(smol, 60, start=next(texts))}
        client.cookies.clear()
        return client.post("/api/trace", params=FIRST, json=body, headers={**ASYNC, **headers})

    jobs = create_app(s)
    with TestClient(jobs) as client:
        try:
            answers = [ask() for _ in range(cap + 1)]
            assert [r.status_code for r in answers] == [202] * cap + [429], answers[-1].text
            refused = answers[cap]
            assert int(refused.headers["retry-after"]) >= 1
            message = refused.json()["message"]
            assert message.startswith(f"trace: {cap} visitors from your network address have "
                                      "long traces computing or waiting")  # fmt: skip
            assert "as many as this server takes from one address" in message
            assert "ATTNVIZ_" not in message  # a learner reads it: no setting's name
            assert len(jobs.state.trace_jobs.running) == cap  # nothing of the third started
            assert len({r.json()["token"] for r in answers[:cap]}) == cap  # each a new visitor

            # A visitor of that address who has a job is never refused by it: a page's own
            # jobs (a remote model's parts, a newer text that supersedes its older one).
            mine = {"Authorization": f"Bearer {answers[1].json()['token']}"}
            assert ask(**mine).status_code == 202
            assert len({j.owner for j in jobs.state.trace_jobs.running}) == cap

            # Another address, and the operator, still get jobs.
            assert ask(**{"X-Forwarded-For": "10.0.0.2"}).status_code == 202
            assert ask(**ADMIN).status_code == 202

            # One of that address's jobs cancelled by its visitor: the address may ask again.
            first = answers[0].json()
            bearer = {"Authorization": f"Bearer {first['token']}"}
            assert client.delete(first["url"], headers=bearer).status_code == 200
            until(lambda: client.get(first["url"], headers=bearer).json()["state"],
                  lambda state: state in ENDED, "the cancelled job")  # fmt: skip
            assert ask().status_code == 202
            assert ask().status_code == 429
        finally:
            for job in jobs.state.trace_jobs.running:
                client.delete(f"/api/trace/jobs/{job.id}", headers=ADMIN)
            until(lambda: len(jobs.state.trace_jobs.running), lambda n: n == 0, "the jobs' ends")
