"""The round trip to a real NDIF: the self-hosted deployment of ``deploy/ndif`` (NDIF 0.1.2's
own API, queue, Ray controller and model actor, on the CPU) runs attnviz's trace of a tiny
random checkpoint, and what comes back equals attnviz's own engine on the same checkpoint
within 1e-4: attentions, hidden states, top-k, the lens, every head's thumbnail; greedy
generation writes the same tokens; the page hears NDIF's statuses; and each failure has its
words: a model the deployment cannot load, a key it refuses, a deployment that is down."""

from __future__ import annotations

import shutil
import time

import pytest
import torch

from attnviz.capture.fields.entropy import entropy
from attnviz.capture.progress import reporting
from attnviz.errors import RemoteError
from attnviz.pretrained.folder import load_folder
from attnviz.pretrained.ndif import open_ndif
from attnviz.pretrained.registry import ModelRegistry
from attnviz.schemas.trace import TextTraceRequest, TraceQuery
from attnviz.services.parts import select
from attnviz.services.text_trace import run_text_trace
from tests.support.checkpoints import make_tiny_llama
from tests.support.ndif import free_port, keyed_api
from tests.support.waits import until

# One worker runs them all, in order: they share the deployment and its model.
pytestmark = [pytest.mark.slow, pytest.mark.ndif]  # one module: one worker (Makefile)
pytest.importorskip("nnsight")

CPU = torch.device("cpu")
TEXT = "the cat sat on the mat, and then the dog sat on the cat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return make_tiny_llama(tmp_path_factory.mktemp("ndif-remote") / "tiny-llama")


@pytest.fixture(scope="module")
def models(folder, ndif_host) -> ModelRegistry:
    return ModelRegistry([open_ndif(str(folder), ndif_host), load_folder(folder, CPU, "native")])


def remote_name(models: ModelRegistry) -> str:
    return next(n for n, m in models.models.items() if m.backend == "ndif")


def test_the_deployments_trace_equals_the_engines(models):
    said: list[str] = []
    with reporting(lambda *_: None, said.append):
        remote = run_text_trace(TextTraceRequest(model=remote_name(models), text=TEXT), models,
                                None)  # fmt: skip
        thumbs = select(remote, TraceQuery(fields="thumbs", thumb=4)).arrays["thumbs"]
    local = run_text_trace(TextTraceRequest(model="native", text=TEXT), models, None)
    # What the page's progress line said while NDIF worked, in order.
    assert said[0] == "NDIF received the request" and "NDIF is running the model" in said
    assert said[-1] == "NDIF is sending the result"
    mine = select(local, TraceQuery(fields="thumbs", thumb=4)).arrays["thumbs"]
    assert (thumbs["values"].int() - mine["values"].int()).abs().max() <= 1
    for fields in ("attentions", "hidden_states", "entropy", "entropy_mean", "score_range"):
        a = select(remote, TraceQuery(fields=fields)).arrays[fields]
        b = select(local, TraceQuery(fields=fields)).arrays[fields]
        assert torch.allclose(a.double(), b.double(), atol=1e-4, rtol=0), fields
    n = remote.tensors.n
    a = select(remote, TraceQuery(fields="top_k,lens", pos_count=n)).arrays
    b = select(local, TraceQuery(fields="top_k,lens", pos_count=n)).arrays
    for part in ("top_k", "lens"):
        assert torch.equal(a[part]["ids"], b[part]["ids"]), part
        assert torch.allclose(a[part]["probs"], b[part]["probs"], atol=1e-4), part


def test_two_traces_go_at_once_and_a_big_ones_pca_is_made_there(models, monkeypatch):
    """Two threads' traces on the deployment at once (as two visitors' on the remote threads),
    one with its states over ``STATES_BYTES``: its trajectories' PCA made there equals the
    engine's, and the other's entropy equals the engine's."""
    from concurrent.futures import ThreadPoolExecutor

    from attnviz.pretrained.ndif import tensors

    monkeypatch.setattr(tensors, "STATES_BYTES", 0)
    other = "a second visitor's text, sent at the same time"
    name = remote_name(models)

    def projection() -> dict:
        t = run_text_trace(TextTraceRequest(model=name, text=TEXT), models, None)
        assert t.tensors.states.is_meta
        return select(t, TraceQuery(fields="projection")).arrays["projection"]

    def entropy() -> torch.Tensor:
        t = run_text_trace(TextTraceRequest(model=name, text=other), models, None)
        return select(t, TraceQuery(fields="entropy")).arrays["entropy"]

    with ThreadPoolExecutor(2) as pool:
        pca, ent = pool.submit(projection), pool.submit(entropy)
        pca_got, ent_got = pca.result(timeout=300), ent.result(timeout=300)
    local = run_text_trace(TextTraceRequest(model="native", text=TEXT), models, None)
    want = select(local, TraceQuery(fields="projection")).arrays["projection"]
    for key in ("mean", "axes", "explained_variance_ratio", "coords"):
        assert torch.allclose(pca_got[key].double(), want[key].double(), atol=1e-4), key
    local = run_text_trace(TextTraceRequest(model="native", text=other), models, None)
    mine = select(local, TraceQuery(fields="entropy")).arrays["entropy"]
    assert torch.allclose(ent_got.double(), mine.double(), atol=1e-4, rtol=0)


def test_the_pages_job_says_what_ndif_said(folder, ndif_host):
    """Through the HTTP API, as the page asks (Prefer: respond-async): a job, whose ``remote``
    is NDIF's last word, and whose result is the part."""
    from fastapi.testclient import TestClient

    from attnviz.app import create_app
    from attnviz.settings import Settings

    settings = Settings(device="cpu", builtin_model=False, models=f"ndif:{folder}",
                        ndif_host=ndif_host)  # fmt: skip
    with TestClient(create_app(settings)) as c:
        r = c.post("/api/trace", params={"fields": "thumbs", "thumb": 4},
                   json={"model": "ndif:tiny-llama", "text": TEXT},
                   headers={"Prefer": "respond-async"})  # fmt: skip
        assert r.status_code == 202, r.text
        url = r.json()["url"]
        job = until(lambda: c.get(url).json(),
                    lambda job: job["state"] in ("done", "failed", "cancelled"), "the job's end",
                    every=0.2)  # fmt: skip
        assert job["state"] == "done" and job["remote"] == "NDIF is sending the result", job
        assert len(c.get(job["result"]).json()["thumbs"]["values"]) == 2


def test_a_knock_out_and_a_patch_made_on_the_deployment(models):
    """A head zeroed and another patched from a source text (whose heads' outputs a clean
    trace there read first): the knocked trace equals the engine's."""
    ablate = [{"layer": 0, "head": 1, "mode": "zero"},
              {"layer": 1, "head": 2, "mode": "patch", "source": "a dog ran"}]  # fmt: skip
    remote = run_text_trace(
        TextTraceRequest(model=remote_name(models), text=TEXT, ablate=ablate), models, None
    )
    local = run_text_trace(TextTraceRequest(model="native", text=TEXT, ablate=ablate), models, None)
    assert remote.meta["ablated"] == local.meta["ablated"]
    for fields in ("attentions", "hidden_states"):
        a = select(remote, TraceQuery(fields=fields)).arrays[fields]
        b = select(local, TraceQuery(fields=fields)).arrays[fields]
        assert torch.allclose(a.double(), b.double(), atol=1e-4, rtol=0), fields


def test_greedy_generation_on_the_deployment(models):
    native = models.get("native")
    remote = models.get(remote_name(models))
    assert native is not None and remote is not None
    ids = list(native.tokenizer("the cat sat").ids)
    assert remote.continue_ids(ids, 5) == native.continue_ids(ids, 5)


def test_a_model_the_deployment_cannot_load(tmp_path, ndif_host):
    folder = make_tiny_llama(tmp_path / "gone-llama", seed=3)
    model = open_ndif(str(folder), ndif_host)  # its config and tokenizer read here
    shutil.rmtree(folder)  # then gone: the deployment has nothing to load
    t = model.trace(list(model.tokenizer("the cat").ids))
    with pytest.raises(RemoteError) as caught:
        entropy(t)
    assert caught.value.status == 502
    assert f"does not host {str(folder)!r}" in str(caught.value)
    assert "Traceback" not in str(caught.value)


def test_a_deployment_that_is_down(folder):
    host = f"http://127.0.0.1:{free_port()}"
    model = open_ndif(str(folder), host)
    with pytest.raises(RemoteError) as caught:
        entropy(model.trace(list(model.tokenizer("the cat").ids)))
    assert caught.value.status == 503 and caught.value.retry_after == 30
    assert f"the NDIF deployment at {host} is down or unreachable" in str(caught.value)


def test_a_key_the_deployment_refuses(folder, ndif_server, ndif_host):
    """A deployment that wants keys (NDIF's API with its key database configured) refuses a
    malformed key and a missing one; each is said as a refused key, NDIF's words kept."""
    if ndif_server is None:  # only when a developer names their own (ATTNVIZ_NDIF_TEST_HOST)
        pytest.skip("a key refused needs the suite's own NDIF: ATTNVIZ_NDIF_TEST_HOST is set")
    with keyed_api(ndif_server) as url:
        for key, words in (("not-a-key", "Invalid API key format"),
                           ("", "Missing or invalid API key")):  # fmt: skip
            model = open_ndif(str(folder), url, key)
            # Two APIs' dispatchers share the deployment's Redis flag of Ray's connection: the
            # second may say "compute backend is reconnecting" (a 503) for a while at first.
            for _ in range(60):
                with pytest.raises(RemoteError) as caught:
                    entropy(model.trace(list(model.tokenizer("the cat").ids)))
                if "reconnecting" not in str(caught.value):
                    break
                time.sleep(1)
            assert caught.value.status == 502
            assert "refused the key (NDIF_API_KEY)" in str(caught.value) and words in str(
                caught.value
            )
