"""A model on NDIF through the HTTP API (``ndif:<folder>`` in ATTNVIZ_MODELS, NDIF_HOST=local:
nnsight runs the very trace in this process): /api/models says where it runs, the page's parts
come back (thumbnails, a head, the predictions), what the model cannot give is a 422 that says
why, a trace job reports NDIF's status, and a deployment that is down is a 503 with
Retry-After in plain words, never a 500."""

from __future__ import annotations

import json
import socket

import pytest
import torch
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.errors import RemoteError
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.ndif.client import Deployment, plain_words
from attnviz.services.jobs import TraceJob
from attnviz.settings import Settings
from tests.support.checkpoints import make_tiny_llama
from tests.support.waits import until

pytest.importorskip("nnsight")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("ndif-api") / "tiny-llama")


@pytest.fixture(scope="module")
def ndif_client(folder):
    settings = Settings(device="cpu", builtin_model=False, models=f"ndif:{folder}",
                        ndif_host="local")  # fmt: skip
    with TestClient(create_app(settings)) as c:
        yield c


def test_the_model_list_says_it_runs_on_ndif(ndif_client, folder):
    (model,) = ndif_client.get("/api/models").json()["models"]
    # Named by the folder's name, as a model folder is (its path not told to clients).
    assert model["name"] == "ndif:tiny-llama" and model["backend"] == "ndif"
    assert model["source"] == "NDIF at this process: tiny-llama"
    assert model["placement"] == {"embed": "ndif", "layers": ["ndif", "ndif"], "head": "ndif"}
    assert model["ablate_refused"] is None  # its knock-outs are made on the deployment


def test_the_pages_parts_come_back(ndif_client, folder):
    body = {"model": "ndif:tiny-llama", "text": "the cat sat on the mat"}
    r = ndif_client.post("/api/trace", params={"fields": "thumbs", "thumb": 4}, json=body)
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["backend"] == "ndif" and len(got["thumbs"]["values"]) == 2  # both layers
    r = ndif_client.post("/api/trace", params={"fields": "view", "layer": 1, "head": 3}, json=body)
    view = torch.tensor(r.json()["view"])  # (1, 1, T, T) rows of weights
    assert torch.allclose(view.sum(-1), torch.ones(view.shape[:-1]), atol=1e-5)
    r = ndif_client.post("/api/trace", params={"fields": "top_k", "pos_count": 2}, json=body)
    assert r.status_code == 200 and len(r.json()["top_k"]["ids"]) == 2
    r = ndif_client.post("/api/trace", params={"fields": "value_weighted"}, json=body)
    assert r.status_code == 422 and "NDIF" in r.json()["message"]
    r = ndif_client.post("/api/trace", params={"fields": "top_k"},
                         json={**body, "ablate": [{"layer": 0, "head": 0}]})  # fmt: skip
    assert r.status_code == 200 and r.json()["ablated"][0]["mode"] == "zero"
    r = ndif_client.post("/api/trace", json={**body, "ablate": [{"layer": 5, "head": 0}]})
    assert r.status_code == 422 and r.json()["message"].startswith("ablate[0].layer:")


def test_a_job_tells_ndifs_status_and_stops_there_once_cancelled(ndif_client):
    from attnviz.services.jobs import JobStopped

    # The listener alone: what NDIF said, as the page reads it (its state, and an event).
    job = TraceJob(id="j", owner="v", key="k", asked_for="a", layers=2, thumbs=False,
                   estimate_s=1.0, limit_s=10.0, unknown=True)  # fmt: skip
    said = "Waiting in NDIF's queue: Moved to position 2 in Queue."
    job.hear(said)
    assert job.remote == said
    [(seq, name, data)] = job.events_from(0)
    assert (seq, name, json.loads(data)["remote"]) == (1, "progress", said)
    job.hear(said)  # the same words again: nothing new to tell
    assert job.seq == 1
    job.stop = "cancelled by its visitor"
    with pytest.raises(JobStopped):
        job.hear("NDIF is loading the model")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_deployment_that_is_down_is_a_503_in_plain_words(folder):
    host = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings = Settings(device="cpu", builtin_model=False, models=f"ndif:{folder}",
                        ndif_host=host)  # fmt: skip
    with TestClient(create_app(settings)) as c:
        r = c.post("/api/trace", json={"model": "ndif:tiny-llama", "text": "the cat"})
    assert r.status_code == 503 and r.headers["Retry-After"] == "30"
    assert r.json()["message"].startswith(f"model: the NDIF deployment at {host} is down")


# What NDIF 0.1.2 and nnsight 0.8.1 say (deploy/ndif/README.md records each), in plain words.
SAID = [
    ("Failed to send request: Missing or invalid API key. Please visit https://login.ndif.us/",
     502, "refused the key"),
    ("Failed to send request: Invalid API key.", 502, "refused the key"),
    ("Failed to send request: Auth backend unavailable.", 503, "is down or unreachable"),
    ("Could not deploy this model. Repo id must be in the form 'repo_name'\nTraceback (most "
     "recent call last):\n  File ...", 502, "does not host"),
    ("Could not deploy this model. CANT_ACCOMMODATE: placed 0 of 1 new replicas", 502,
     "does not host"),
    ("connection failed: [Errno 111] Connection refused", 503, "is down or unreachable"),
    ("Failed to send request: 429 Too Many Requests", 503, "queue is full"),
    ("RuntimeError: shapes cannot be multiplied", 502, "failed the trace"),
]  # fmt: skip


@pytest.mark.parametrize(("said", "status", "words"), SAID)
def test_each_failure_has_its_own_words(said, status, words):
    err = plain_words(said, Deployment("https://ndif.example"), "meta-llama/Llama-3.1-405B")
    assert isinstance(err, RemoteError) and err.status == status and words in str(err)
    assert "Traceback" not in str(err)
    assert (err.retry_after is not None) == (status == 503)


RECONNECTING = (
    "Failed to send request: Service temporarily unavailable: compute backend is reconnecting. "
    "Please try again in a few minutes."
)  # NDIF 0.1.2's API while its dispatcher reconnects to the cluster


def test_a_request_ndif_refused_while_it_reconnects_is_sent_again_for_a_while(monkeypatch):
    """NDIF's "reconnecting" refusal took nothing: the trace is sent again, the listener told,
    waiting longer each time, until ``RECONNECT_S``; then it is a 503 in plain words. Any other
    refusal is said at once."""
    from nnsight.intervention.backends.remote import RemoteError as Refused

    from attnviz.capture.progress import reporting
    from attnviz.pretrained.ndif import client

    monkeypatch.setattr(client, "RECONNECT_FIRST_S", 0.01)
    where = Deployment("https://ndif.example")
    tries: list[object] = []

    def trace(backend) -> dict:
        tries.append(backend)
        if len(tries) < 3:
            raise Refused(RECONNECTING)
        return {"saved": 1}

    heard: list[str] = []
    with reporting(lambda *_: None, heard.append):
        assert client.run_remote(trace, where, "tiny") == {"saved": 1}
    assert len(tries) == 3 and heard == [client.RECONNECT_WORDS] * 2
    assert len({id(b) for b in tries}) == 3  # a backend of its own each time

    monkeypatch.setattr(client, "RECONNECT_S", 0.05)  # 0.01 + 0.02: two more, then no more
    tries.clear()

    def never(backend) -> dict:
        tries.append(backend)
        raise Refused(RECONNECTING)

    with pytest.raises(RemoteError) as refused:
        client.run_remote(never, where, "tiny")
    assert len(tries) == 3 and refused.value.status == 503
    assert str(refused.value).startswith("model: the NDIF deployment at https://ndif.example is "
                                         "down or unreachable (")  # fmt: skip
    assert "reconnecting" in str(refused.value)
    tries.clear()

    def unauthorised(backend) -> dict:
        tries.append(backend)
        raise Refused("Failed to send request: Invalid API key.")

    with pytest.raises(RemoteError, match="refused the key"):
        client.run_remote(unauthorised, where, "tiny")
    assert len(tries) == 1


def test_no_host_is_refused_at_start_naming_ndif_host(folder):
    from attnviz.pretrained import ModelFolderError

    with pytest.raises(ModelFolderError, match="NDIF_HOST"):
        open_ndif(str(folder), None)
    with pytest.raises(ModelFolderError, match="not an http"):
        open_ndif(str(folder), "ndif.example")


def test_every_backend_has_its_words():
    from typing import get_args

    from attnviz.pretrained.folder import BACKEND_WORDS, Backend

    assert set(BACKEND_WORDS) == set(get_args(Backend))


def test_the_models_other_views_answer_or_say_why(ndif_client):
    """The head atlas and the many-texts view read a model on NDIF as any other; composition
    scores, which read the engine's weights, are refused naming the deployment."""
    name = "ndif%3Atiny-llama"
    r = ndif_client.get(f"/api/models/{name}/atlas")
    assert r.status_code == 200 and r.json()["layers"] == 2
    r = ndif_client.post(f"/api/models/{name}/corpus", json={"source": "examples"})
    assert r.status_code == 200, r.text
    r = ndif_client.get(f"/api/models/{name}/composition")
    assert r.status_code == 422 and "runs through an NDIF deployment" in r.json()["message"]
    r = ndif_client.post("/api/trace", params={"fields": "rollout"},
                         json={"model": "ndif:tiny-llama", "text": "the cat sat"})  # fmt: skip
    assert r.status_code == 200 and len(r.json()["rollout"]) == 2


def ended(job: dict) -> bool:
    """The job's state is a last one."""
    return job["state"] in ("done", "failed", "cancelled")


def test_a_trace_on_ndif_is_a_job_the_page_follows(ndif_client):
    """Its time is the deployment's, unknown here: asked for one, it is always a job."""
    body = {"model": "ndif:tiny-llama", "text": "a job on the deployment"}
    r = ndif_client.post("/api/trace", params={"fields": "thumbs", "thumb": 4}, json=body,
                         headers={"Prefer": "respond-async"})  # fmt: skip
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["estimate_s"] <= job["limit_s"] and job["left_s"] is None  # unknown here
    url = job["url"]
    job = until(lambda: ndif_client.get(url).json(), ended, "the job's end", every=0.1)
    assert job["state"] == "done", job
    r = ndif_client.get(job["result"])
    assert r.status_code == 200 and len(r.json()["thumbs"]["values"]) == 2


@pytest.fixture
def gated(folder):
    """A server with the NDIF model whose trips to the deployment wait for ``gate`` (set: they
    go), each trip's thread's name noted (``threads``, a list with an ``arrived`` event: set
    once a trip waits at the gate); a job after 0.3 s."""
    import threading

    settings = Settings(device="cpu", builtin_model=False, models=f"ndif:{folder}",
                        ndif_host="local", trace_job_after_s=0.3)  # fmt: skip

    class Trips(list):
        arrived = threading.Event()

    gate, threads = threading.Event(), Trips()
    with TestClient(create_app(settings)) as c:
        model = c.app.state.registry.get("ndif:tiny-llama")
        remote = model._remote

        def slow(trace):
            threads.append(threading.current_thread().name)
            threads.arrived.set()
            assert gate.wait(60)
            return remote(trace)

        model._remote = slow
        try:
            yield c, gate, threads
        finally:
            gate.set()


def test_a_wait_for_ndif_never_holds_the_compute_thread(gated):
    """While a trace waits for its deployment, a toy's (the compute thread's) is answered."""
    import threading

    c, gate, threads = gated
    body = {"model": "ndif:tiny-llama", "text": "the cat sat on the mat"}
    got: list = []
    waiting = threading.Thread(target=lambda: got.append(c.post("/api/trace", json=body)))
    waiting.start()
    try:
        # The text's trace is waiting on its deployment (not still on its way there, as it was
        # once on a busy machine: the toy's answer then proved nothing, and the test failed).
        assert threads.arrived.wait(60)
        toy = c.post("/api/trace", json={"tokens": ["a", "b"], "embeddings": [[1, 0], [0, 1]]})
        assert toy.status_code == 200, toy.text
        assert not got and threads and threads[0].startswith("attnviz-compute-remote")
    finally:
        gate.set()
        waiting.join(60)
    assert got and got[0].status_code == 200, got[0].text


def test_a_part_that_goes_to_ndif_is_a_job_the_page_follows(gated):
    """A kept trace's part that needs a trip (a layer's q, k and v) is a job when it takes
    longer than ATTNVIZ_TRACE_JOB_AFTER_S; one that needs none is answered at once."""
    c, gate, _threads = gated
    body = {"model": "ndif:tiny-llama", "text": "the cat sat on the mat"}
    async_ = {"Prefer": "respond-async"}
    gate.set()
    r = c.post("/api/trace", params={"fields": "entropy"}, json=body)  # the first trace, kept
    assert r.status_code == 200, r.text
    gate.clear()
    part = {"fields": "view", "layer": 1, "head": 3}
    r = c.post("/api/trace", params=part, json=body, headers=async_)
    assert r.status_code == 202, r.text  # waiting for layer 1's q, k and v
    job = r.json()
    assert job["state"] in ("queued", "running") and job["left_s"] is None
    gate.set()
    url = job["url"]
    job = until(lambda: c.get(url).json(), ended, "the job's end")
    assert job["state"] == "done", job
    view = torch.tensor(c.get(job["result"]).json()["view"])
    assert torch.allclose(view.sum(-1), torch.ones(view.shape[:-1]), atol=1e-5)
    gate.clear()  # layer 1 is kept: another of its heads needs no trip
    r = c.post("/api/trace", params={**part, "head": 0}, json=body, headers=async_)
    assert r.status_code == 200, r.text
    assert torch.tensor(r.json()["view"]).shape == view.shape
