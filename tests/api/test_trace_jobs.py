"""Trace jobs: a long text trace asked with ``Prefer: respond-async`` runs as a job its
visitor follows (progress, cancel, supersede, its own limit), and the server answers meanwhile.

The model is the SmolLM2-135M shape (30 layers, 9 heads over 3 key/value heads, RoPE base
100,000, tied embeddings) at reduced widths, so that 3,600 tokens take seconds on a CPU."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from attnviz.app import create_app
from attnviz.services.jobs import TraceJob
from attnviz.settings import Settings
from attnviz.wire.constants import COMPACT_MEDIA_TYPE
from tests.api.test_train import events
from tests.support.waits import until

ASYNC = {"Prefer": "respond-async", "Accept": COMPACT_MEDIA_TYPE}
FIRST = {"fields": "thumbs", "thumb": 97, "hide_special": "false", "merge_words": "false"}


def small_smollm(folder: Path, layers: int = 30) -> Path:
    """SmolLM2-135M's config.json with its widths cut (hidden 576 -> 72, intermediate 1536 ->
    192, a 512-token vocabulary), random weights as ``attnviz bench --shape`` writes them."""
    from safetensors.torch import save_file

    from attnviz.bench.shape import checkpoint_tensors, make_tokenizer, shape_config

    hf = shape_config("smollm2-135m", layers)
    hf.update(hidden_size=72, intermediate_size=192, vocab_size=512)
    for key in ("bos_token_id", "eos_token_id"):
        hf.pop(key)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(hf), encoding="utf-8")
    make_tokenizer(hf["vocab_size"]).save(str(folder / "tokenizer.json"))
    save_file(checkpoint_tensors(hf), str(folder / "model.safetensors"), metadata={"format": "pt"})
    return folder


@pytest.fixture(scope="module")
def smol(tmp_path_factory) -> Path:
    return small_smollm(tmp_path_factory.mktemp("models") / "smol")


def text_of(folder: Path, n: int, start: int = 0) -> str:
    from attnviz.bench.harness import text_of as bench_text
    from attnviz.pretrained.tokenize import TextTokenizer

    return bench_text(TextTokenizer.from_file(folder / "tokenizer.json"), n, start=start)


def client_of(folder: Path, **settings) -> TestClient:
    s = Settings(device="cpu", builtin_model=False, models=str(folder), **settings)
    return TestClient(create_app(s))


def follow(c: TestClient, job: dict, seen: list | None = None) -> dict:
    """The job's state, read every 50 ms until it ends; each state read kept in ``seen``."""
    kept = [] if seen is None else seen

    def look() -> dict:
        r = c.get(job["url"])
        assert r.status_code == 200, r.text
        kept.append(r.json())
        return kept[-1]

    return until(
        look, lambda state: state["state"] in ("done", "cancelled", "failed"), "the job's end"
    )


@contextmanager
def another_visitor(c: TestClient) -> Iterator[None]:
    """The enclosed requests come from a new visitor (no cookie), on the same server."""
    saved = c.cookies
    c.cookies = type(saved)()
    try:
        yield
    finally:
        c.cookies = saved


def pace(monkeypatch, seconds: float) -> None:
    """Each layer of a job takes ``seconds`` more, so that a test can act while it runs."""
    listen = TraceJob.listen

    def slowed(self, stage, done, total):
        time.sleep(seconds)
        listen(self, stage, done, total)

    monkeypatch.setattr(TraceJob, "listen", slowed)


@pytest.fixture
def slow_layers(monkeypatch):
    """Each layer of a job takes 0.05 s more: its 60 passes (forward, then thumbnails) at least
    3 s."""
    pace(monkeypatch, 0.05)


@pytest.mark.slow
def test_a_long_text_on_the_smollm2_shape_completes_as_a_job(smol, forwards, monkeypatch):
    """Reduced widths and the real layer count, at 300 tokens: the forward keeps its weights for
    the thumbnails. The rule is the same at any length; the real length (3,600 tokens, about a
    minute on the 2-core machine) is ``attnviz bench --shape``'s."""
    pace(monkeypatch, 0.04)  # its 60 layer passes seen going by, however fast the machine
    check_a_long_job(smol, 300, forwards)


@pytest.mark.slow
def test_a_text_too_long_to_keep_its_weights_completes_as_a_job(smol, forwards, monkeypatch):
    """As from about 800 tokens of this shape (30 layers x 9 heads x T x T past
    ``KEEP_FORWARD_BYTES``): the forward keeps no weights, and the thumbnails recompute each
    layer's from its queries and keys."""
    import attnviz.capture.tensors as store

    monkeypatch.setattr(store, "KEEP_FORWARD_BYTES", 0)
    pace(monkeypatch, 0.04)
    check_a_long_job(smol, 300, forwards)


def check_a_long_job(smol: Path, tokens: int, forwards: list[str]) -> None:
    """The page's first request answers 202 before the job ends, the job tells each layer of the
    forward and then of the thumbnails with the time left, /healthz and the job's state answer
    while it runs, and its result is the trace's first part; the same request asked again (the
    page loaded again) is answered with it at once, and the page's next parts from the cache,
    with no forward run again."""
    text = text_of(smol, tokens)
    with client_of(smol, trace_job_after_s=0.05) as c:
        body = {"model": "smol", "text": text}
        r = c.post("/api/trace", params=FIRST, json=body, headers=ASYNC)
        assert r.status_code == 202, r.text
        job = r.json()
        assert r.headers["location"] == job["url"]
        assert r.headers["preference-applied"] == "respond-async"
        assert job["layers"] == 30 and job["total"] == 60  # forward, then thumbnails
        # Answered before the job ended: the answer says it is still to run or running.
        assert job["estimate_s"] > 0.05 and job["state"] in ("queued", "running")
        seen: list[dict] = []

        def look() -> dict:
            assert c.get("/healthz").status_code == 200
            seen.append(c.get(job["url"]).json())  # read after the health check was answered
            return seen[-1]

        state = until(look, lambda s: s["state"] not in ("queued", "running"), "the job's end")
        assert state["state"] == "done", state
        assert state["layers_done"] == 30 and state["done"] == 60 and state["left_s"] is None
        running = [s for s in seen if s["state"] == "running" and 0 < s["done"] < 60]
        assert running, "no progress was seen while it ran"
        assert all(s["left_s"] is not None and s["left_s"] >= 0 for s in running)
        dones = [s["done"] for s in seen]
        assert dones == sorted(dones)  # it only goes forward
        assert {s["stage"] for s in running} <= {"forward", "thumbnails"}
        # The health check did not wait on the job: the job was still running after it answered.
        assert any(0 < s["done"] < 60 for s in seen[:-1]), "the health check waited on the job"
        r = c.get(job["result"])
        assert r.status_code == 200 and r.headers["content-type"] == COMPACT_MEDIA_TYPE
        again = c.post("/api/trace", params=FIRST, json=body, headers=ASYNC)
        assert again.status_code == 200  # at once, not a job: from the cache
        assert again.content == r.content
        part = c.post("/api/trace", params={"fields": "entropy_mean"}, json=body, headers=ASYNC)
        assert part.status_code == 200  # taken on the way
        assert forwards == [text], "the same text was run again"


def test_a_short_text_is_answered_at_once_even_when_asking_for_a_job(smol):
    with client_of(smol) as c:  # the default threshold: a few seconds
        r = c.post("/api/trace", params=FIRST, json={"model": "smol", "text": "def f(x):"},
                   headers=ASYNC)  # fmt: skip
        assert r.status_code == 200


def test_without_the_preference_a_long_text_is_answered_directly(smol):
    with client_of(smol, trace_job_after_s=0) as c:
        body = {"model": "smol", "text": text_of(smol, 300)}
        r = c.post("/api/trace", params=FIRST, json=body, headers={"Accept": COMPACT_MEDIA_TYPE})
        assert r.status_code == 200


def test_cancel_stops_the_job_at_its_next_layer(smol, slow_layers):
    with client_of(smol, trace_job_after_s=0) as c:
        body = {"model": "smol", "text": text_of(smol, 200)}
        job = c.post("/api/trace", params=FIRST, json=body, headers=ASYNC).json()
        until(lambda: c.get(job["url"]).json()["done"], lambda n: n >= 2, "2 layers done", 0.02)
        r = c.delete(job["url"])
        assert r.status_code == 200
        at_cancel = r.json()["done"]
        state = follow(c, job)
        assert state["state"] == "cancelled"
        assert state["message"] == "cancelled by its page"
        assert 2 <= state["done"] <= at_cancel + 1  # it stopped at its next layer
        r = c.get(job["result"])
        assert r.status_code == 409 and "cancelled" in r.json()["message"]
        # The compute thread is free again: a short text is answered.
        short = c.post("/api/trace", json={"model": "smol", "text": "x = 1"})
        assert short.status_code == 200


@pytest.mark.slow
def test_a_jobs_events_are_its_state_as_each_layer_is_done_then_its_end(smol, slow_layers):
    """GET /api/trace/jobs/{id}/events: its state first, then ``progress`` as it starts and as
    each layer pass is done, then ``end``, the state GET then answers; ids never falling; once
    ended, its end alone is kept; another visitor's is a 404, as its state is."""
    with client_of(smol, trace_job_after_s=0) as c:
        body = {"model": "smol", "text": text_of(smol, 200)}
        job = c.post("/api/trace", params=FIRST, json=body, headers=ASYNC).json()
        assert job["events"] == f"{job['url']}/events"
        seen = events(c, job["id"], kind="trace/jobs")
        ids, names = [e[0] for e in seen], [e[1] for e in seen]
        assert names[0] == "state" and names[-1] == "end", names
        assert set(names[1:-1]) == {"progress"} and ids == sorted(ids)
        done = [e[2]["done"] for e in seen]
        # Every pass told up to the last one read before the end (one that ends while its
        # reader is behind keeps its end alone: the reader then gets the end, its whole state).
        told = max(e[2]["done"] for e in seen[:-1])
        assert done == sorted(done) and told > 10 and set(range(1, told + 1)) <= set(done)
        order = ["waiting", "forward", "thumbnails", "encoding", "done"]
        stages = [order.index(e[2]["stage"]) for e in seen]
        assert stages == sorted(stages) and {1, 2, 4} <= set(stages), stages
        end = seen[-1][2]
        assert end["state"] == "done" and end["left_s"] is None
        assert end == c.get(job["url"]).json()
        # Ended, its log keeps its end alone (each event is its whole state): resumed after the
        # event before it, the end; after an earlier one, the state again, the end's.
        assert events(c, job["id"], last=ids[-1] - 1, kind="trace/jobs") == [seen[-1]]
        early = events(c, job["id"], last=ids[5], kind="trace/jobs")
        assert [e[1] for e in early] == ["state"] and early[0][2] == end
        with another_visitor(c):
            gone = c.get(job["events"])
            assert gone.status_code == 404 and "not yours" in gone.json()["message"]
        assert c.get(job["result"]).status_code == 200


@pytest.mark.slow
def test_a_newer_request_of_the_same_visitor_supersedes_its_job(smol, slow_layers):
    with client_of(smol, trace_job_after_s=0) as c:
        first = c.post("/api/trace", params=FIRST, headers=ASYNC,
                       json={"model": "smol", "text": text_of(smol, 200)}).json()  # fmt: skip
        until(
            lambda: c.get(first["url"]).json()["state"], lambda s: s == "running", "its start", 0.02
        )
        # The same text again: the same job.
        same = c.post("/api/trace", params=FIRST, headers=ASYNC,
                      json={"model": "smol", "text": text_of(smol, 200)})  # fmt: skip
        assert same.status_code == 202 and same.json()["id"] == first["id"]
        second = c.post("/api/trace", params=FIRST, headers=ASYNC,
                        json={"model": "smol", "text": text_of(smol, 200, start=5)}).json()  # fmt: skip
        assert second["id"] != first["id"]
        ended = follow(c, first)
        assert ended["state"] == "cancelled"
        assert "newer request" in ended["message"]
        assert follow(c, second)["state"] == "done"


@pytest.mark.slow
def test_another_visitor_gets_404_for_the_job(smol, slow_layers):
    with client_of(smol, trace_job_after_s=0) as c:
        job = c.post("/api/trace", params=FIRST, headers=ASYNC,
                     json={"model": "smol", "text": text_of(smol, 100)}).json()  # fmt: skip
        with another_visitor(c):
            for method, url in (("GET", job["url"]), ("DELETE", job["url"]),
                                ("GET", job["result"])):  # fmt: skip
                r = c.request(method, url)
                assert r.status_code == 404, (method, url, r.text)
        assert c.get(job["url"]).status_code == 200
        assert c.get("/api/trace/jobs/0123456789abcdef0123456789abcdef").status_code == 404
        assert follow(c, job)["state"] == "done"  # the other's cancel did nothing


@pytest.mark.slow
def test_the_job_limit_ends_it_with_a_clear_message(smol, slow_layers):
    with client_of(smol, trace_job_after_s=0, trace_job_s=0.5) as c:
        job = c.post("/api/trace", params=FIRST, headers=ASYNC,
                     json={"model": "smol", "text": text_of(smol, 200)}).json()  # fmt: skip
        assert job["limit_s"] == 0.5
        state = follow(c, job)
        assert state["state"] == "failed"
        assert "limit for one job of 0.5 s; try a shorter text" in state["message"]
        r = c.get(job["result"])
        assert r.status_code == 503 and "limit for one job of 0.5 s" in r.json()["message"]
        assert "ATTNVIZ_" not in r.json()["message"]  # a learner reads it


@pytest.mark.slow
def test_a_job_runs_past_the_request_limit(smol, slow_layers):
    """60 layer passes at 0.05 s each: 3 s at least, past a request limit of 2 s; the job
    finishes."""
    with client_of(smol, trace_job_after_s=0, request_timeout_s=2) as c:
        job = c.post("/api/trace", params=FIRST, headers=ASYNC,
                     json={"model": "smol", "text": text_of(smol, 100)}).json()  # fmt: skip
        state = follow(c, job)
        assert state["state"] == "done" and state["elapsed_s"] > 2
        assert c.get(job["result"]).status_code == 200


@pytest.mark.slow
def test_while_a_job_runs_a_request_behind_it_is_told_how_long_to_wait(smol, slow_layers):
    with client_of(smol, trace_job_after_s=0) as c:
        job = c.post("/api/trace", params=FIRST, headers=ASYNC,
                     json={"model": "smol", "text": text_of(smol, 200)}).json()  # fmt: skip
        until(lambda: c.get(job["url"]).json()["done"], lambda n: n >= 3, "3 layers done", 0.02)
        with another_visitor(c):  # another visitor's short text
            r = c.post("/api/trace", json={"model": "smol", "text": "y = 2"})
        # Told while the job still runs, not after it: the job had layers left.
        assert c.get(job["url"]).json()["state"] == "running"
        assert r.status_code == 503 and int(r.headers["retry-after"]) >= 2
        assert c.get("/healthz").status_code == 200
        assert follow(c, job)["state"] == "done"


@pytest.mark.slow
def test_the_shape_bench_follows_a_job_as_the_page_does(smol):
    """``attnviz bench --shape``'s first request: made a job, followed with the cookie to its
    result, and said in the table."""
    from attnviz.bench.shape import ShapeReport, ShapeRow, first_request, table
    from tests.support.servers import served

    s = Settings(device="cpu", builtin_model=False, models=str(smol), trace_job_after_s=0)
    with served(create_app(s)) as url:
        port = int(url.rsplit(":", 1)[1])
        status, wire, raw, job = first_request(port, {"model": "smol", "text": text_of(smol, 300)})
    assert status == 200 and wire > 0 and raw[:8]
    assert job is not None and job["state"] == "done" and job["total"] == 60
    row = ShapeRow(tokens=300, hf_forward_ms=None, first_request_ms=1.0, ratio=None,
                   first_paint_bytes=wire, peak_rss_bytes=0, health_worst_ms=1.0,
                   health_failures=0, job=job)  # fmt: skip
    report = ShapeReport(shape="smollm2-135m", device="cpu", torch_threads=1, parameters=1,
                         weights_bytes=1, dtype="float32", loaded_rss_bytes=0,
                         load_peak_rss_bytes=0, rows=[row], load_average=[1.0])  # fmt: skip
    assert "300 tokens: computed as a job (done), estimated" in table(report)


def test_a_long_texts_thumbnails_take_each_rows_entropy_on_the_way(tmp_path, monkeypatch):
    """When the forward's weights are not held (a long text), the thumbnails' pass over every
    layer's recomputed weights keeps each row's entropy: the page's last part is then answered
    from it, the very numbers a pass of its own gives, instead of taking every layer's weights
    again (at 3,600 tokens of the 135M shape that took as long as the thumbnails)."""
    import torch

    import attnviz.capture.tensors as store
    from attnviz.capture.fields.entropy import entropy
    from attnviz.engine.analysis import attention_entropy
    from attnviz.pretrained.folder import load_folder
    from attnviz.pretrained.registry import ModelRegistry
    from attnviz.schemas.trace import TextTraceRequest, TraceQuery
    from attnviz.services.trace_service import TraceService

    monkeypatch.setattr(store, "KEEP_FORWARD_BYTES", 0)  # as at 3,600 tokens of 30 layers
    folder = small_smollm(tmp_path / "smol2", layers=2)
    m = load_folder(folder, torch.device("cpu"))
    svc = TraceService(Settings(device="cpu", builtin_model=False), m.device, ModelRegistry([m]))
    req = TextTraceRequest(model=m.name, text=text_of(folder, 300))
    svc.part(req, TraceQuery(**FIRST), True)
    t = svc.computed(req)[0].tensors
    assert t.forward_pattern is None and t.derived("entropy") is not None  # taken on the way
    kept = entropy(t)
    again = torch.stack([torch.cat([attention_entropy(p) for _, p in t.head_chunks(i)])
                         for i in range(t.layers)])  # fmt: skip
    assert torch.equal(kept, again)
    # A part of one layer's thumbnails takes nothing: the entropy then waits to be asked.
    other = TextTraceRequest(model=m.name, text=text_of(folder, 300, start=3))
    svc.part(other, TraceQuery(**FIRST, thumb_layer=1), True)
    assert svc.computed(other)[0].tensors.derived("entropy") is None
